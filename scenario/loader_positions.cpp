// The scenario loader: where a key was written (a file position or a --set argument), and the finished error
// list (scenario/loader_impl.hpp).
#include "scenario/loader_impl.hpp"

#include <algorithm>

namespace scenario::detail {

std::string describe(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string: return fmt::format("string \"{}\"", node.as_string()->get());
    case toml::node_type::integer: return fmt::format("integer {}", node.as_integer()->get());
    case toml::node_type::floating_point: return fmt::format("float {}", node.as_floating_point()->get());
    case toml::node_type::boolean: return node.as_boolean()->get() ? "boolean true" : "boolean false";
    case toml::node_type::array: return "an array";
    case toml::node_type::table: return "a table";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    case toml::node_type::none: break;
  }
  return "nothing";
}

Where Loader::where_node(const std::string& path, const toml::node* node) const {
  auto origin = set_origin_.find(path);
  if (origin != set_origin_.end()) return Where{0, 0, origin->second};
  if (node == nullptr || node->source().begin.line == 0) return Where{};
  return Where{static_cast<int>(node->source().begin.line), static_cast<int>(node->source().begin.column), ""};
}

Where Loader::where_key(const std::string& path, const toml::key& key) const {
  auto origin = set_origin_.find(path);
  if (origin != set_origin_.end()) return Where{0, 0, origin->second};
  if (key.source().begin.line == 0) return Where{};
  return Where{static_cast<int>(key.source().begin.line), static_cast<int>(key.source().begin.column), ""};
}

Where Loader::where_table(const Table& table) const {
  if (table.node == nullptr) return Where{};
  return where_node(table.path, table.node);
}

Where Loader::where_in(const Table& table, std::string_view key) const {
  const toml::node* node = table.node ? table.node->get(key) : nullptr;
  if (node == nullptr) return where_table(table);
  return where_node(join_path(table.path, key), node);
}

std::vector<LoadError> Loader::finished_errors() {
  // --set errors first (they have no line), then by position in the file.
  std::stable_sort(errors_.begin(), errors_.end(), [](const Error& a, const Error& b) {
    auto rank = [](const Error& e) {
      return e.where.set_text.empty() ? std::pair{e.where.line, e.where.column} : std::pair{0, 0};
    };
    return rank(a) < rank(b);
  });
  std::vector<LoadError> out;
  for (const Error& e : errors_) {
    std::string origin = e.where.set_text.empty() ? fmt::format("{}:{}:{}", display_name_, e.where.line, e.where.column)
                                                  : e.where.set_text;
    out.push_back(LoadError{origin + ": " + e.text});
  }
  return out;
}

}  // namespace scenario::detail
