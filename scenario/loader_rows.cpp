// The scenario loader's row forms: what schema::visit_schema calls for each row of the table of keys
// (scenario/schema.hpp), and the walk over the table itself (scenario/loader_impl.hpp).
#include "scenario/loader_impl.hpp"

namespace scenario::detail {

void Loader::table(std::string_view path) {
  const std::size_t dot = path.rfind('.');
  const Table parent = dot == std::string_view::npos ? root_ : tables_.at(std::string(path.substr(0, dot)));
  current_ = subtable(parent, dot == std::string_view::npos ? path : path.substr(dot + 1));
  tables_[std::string(path)] = current_;
}

template <class Type, class Field>
void Loader::key(std::string_view name, const Type& type, Field&& field, std::string_view /*description*/) {
  if (!read_value(current_, name, type, std::forward<Field>(field))) invalid_.insert(join_path(current_.path, name));
}

template <class Type, class Field>
void Loader::required_key(std::string_view name, const Type& type, Field&& field, std::string_view description) {
  if (has(current_, name)) {
    key(name, type, std::forward<Field>(field), description);
    return;
  }
  get(current_, name);  // registers the key
  missing(current_, name, where_table(current_),
          fmt::format("every [[{}]] needs `{}`: {}", current_.schema, name, schema::language(type)));
}

template <class Entry, class Keys>
void Loader::array(std::string_view path, std::vector<Entry>& entries, Keys keys) {
  const std::size_t dot = path.rfind('.');
  const Table parent = tables_.at(std::string(path.substr(0, dot)));
  const Table outer = current_;
  for (const Table& entry_table : table_array(parent, path.substr(dot + 1))) {
    current_ = entry_table;
    Entry entry;
    keys(*this, entry);
    entries.push_back(entry);
  }
  current_ = outer;
}

bool Loader::read_value(const Table& table, std::string_view key, const schema::Name& type, std::string& out) {
  const std::string path = join_path(table.path, key);
  if (!has(table, key)) {
    get(table, key);
    if (table.valid) {
      missing(table, key, where_table(table),
              fmt::format("it is required: {}, e.g. {} = {} under [{}]", schema::allowed(type), key, type.example,
                          table.schema));
    }
    return true;
  }
  if (!read_string(table, key, out)) return false;
  if (!out.empty()) return true;
  error(where_in(table, key), path, "found an empty string; allowed: " + schema::allowed(type));
  return false;
}

void Loader::read_schema() { schema::visit_schema(*this, config_); }

}  // namespace scenario::detail
