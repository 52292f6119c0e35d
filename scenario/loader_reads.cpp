// The scenario loader's generic reads: a string, strings, an integer, a boolean, a probability, a duration, a
// distribution, a rate, a word of a list. Each registers its key (for the unknown-key check) and reports a
// refused value with its position (scenario/loader_impl.hpp).
#include "scenario/loader_impl.hpp"

#include <algorithm>

#include "scenario/input_check.hpp"
#include "sim/text.hpp"

namespace scenario::detail {

namespace {

// sim's parse errors are whole sentences that repeat the text and list the
// allowed forms; our messages already say both, so keep only the reason. If a
// sentence does not have the expected shape it is kept whole.
std::string reason_only(const std::string& found, std::string reason) {
  const std::string prefix = "in distribution \"" + found + "\": ";
  if (reason.rfind(prefix, 0) == 0) reason.erase(0, prefix.size());
  for (const char* tail : {"; allowed: ", "; a distribution is written as one of"}) {
    std::size_t at = reason.find(tail);
    if (at != std::string::npos) reason.erase(at);
  }
  const std::string inner = ", found \"" + found + "\" (";
  std::size_t at = reason.find(inner);
  if (reason.rfind("expected a duration", 0) == 0 && at != std::string::npos && !reason.empty() &&
      reason.back() == ')') {
    reason = reason.substr(at + inner.size(), reason.size() - at - inner.size() - 1);
  }
  return reason;
}

}  // namespace

const toml::node* Loader::get(const Table& table, std::string_view key) {
  std::vector<std::string>& known = known_keys_[table.schema];
  if (std::find(known.begin(), known.end(), key) == known.end()) known.emplace_back(key);
  if (table.node == nullptr) return nullptr;
  const toml::node* node = table.node->get(key);
  if (node != nullptr) {
    std::string path = join_path(table.path, key);
    Where where = where_node(path, node);
    config_.positions[path] =
        where.set_text.empty() ? lethe::SourcePosition{where.line, where.column} : lethe::SourcePosition{0, 0};
  }
  return node;
}

Table Loader::subtable(const Table& parent, std::string_view key) {
  const toml::node* node = get(parent, key);
  Table table{nullptr, join_path(parent.path, key), join_path(parent.schema, key)};
  if (node == nullptr) return table;
  if (!node->is_table()) {
    error(where_node(table.path, node), table.path,
          fmt::format("found {}; allowed: a table, written [{}]", describe(*node), table.path));
    table.valid = false;
    return table;
  }
  table.node = node->as_table();
  tables_to_check_.push_back(table);
  return table;
}

std::vector<Table> Loader::table_array(const Table& parent, std::string_view key) {
  const toml::node* node = get(parent, key);
  std::string path = join_path(parent.path, key);
  std::string schema = join_path(parent.schema, key);
  known_keys_[schema];  // the entries' keys are registered as they are read
  std::vector<Table> entries;
  if (node == nullptr) return entries;
  const toml::array* array = node->as_array();
  if (array == nullptr || !(array->empty() || array->is_array_of_tables())) {
    error(where_node(path, node), path,
          fmt::format("found {}; allowed: an array of tables, each written [[{}]]", describe(*node), path));
    return entries;
  }
  if (array->size() > kMaxListEntries) {  // the file's [[tables]] within it, then one added by a --set
    error(where_node(path, node), path, too_many_list_entries());
    return entries;
  }
  for (std::size_t i = 0; i < array->size(); ++i) {
    Table entry{array->get(i)->as_table(), fmt::format("{}[{}]", path, i), schema};
    Where where = where_node(entry.path, entry.node);
    config_.positions[entry.path] =
        where.set_text.empty() ? lethe::SourcePosition{where.line, where.column} : lethe::SourcePosition{0, 0};
    tables_to_check_.push_back(entry);
    entries.push_back(entry);
  }
  return entries;
}

std::optional<std::string> Loader::read_text(const Table& table, std::string_view key, const std::string& allowed) {
  const toml::node* node = get(table, key);
  if (node == nullptr) return std::nullopt;
  std::string path = join_path(table.path, key);
  if (!node->is_string()) {
    error(where_node(path, node), path, fmt::format("found {}; allowed: {}", describe(*node), allowed));
    return std::nullopt;
  }
  return node->as_string()->get();
}

bool Loader::read_string(const Table& table, std::string_view key, std::string& out) {
  const toml::node* node = get(table, key);
  if (node == nullptr) return true;
  std::string path = join_path(table.path, key);
  if (!node->is_string()) {
    error(where_node(path, node), path, fmt::format("found {}; allowed: a string", describe(*node)));
    return false;
  }
  out = node->as_string()->get();
  return true;
}

bool Loader::read_strings(const Table& table, std::string_view key, std::vector<std::string>& out, bool at_least_one,
                          bool distinct, const std::string& allowed_text) {
  std::string path = join_path(table.path, key);
  const toml::node* node = coerce(path, get(table, key), Want::StringArray);
  if (node == nullptr) return true;
  std::string allowed = !allowed_text.empty() ? allowed_text
                        : at_least_one        ? "an array of one or more distinct non-empty strings, e.g. [\"billing\"]"
                                       : "an array of distinct non-empty strings, e.g. [\"incident\", \"payments\"]";
  const toml::array* array = node->as_array();
  if (array == nullptr) {
    error(where_node(path, node), path, fmt::format("found {}; allowed: {}", describe(*node), allowed));
    return false;
  }
  if (at_least_one && array->empty()) {
    error(where_node(path, node), path, fmt::format("found an empty array; allowed: {}", allowed));
    return false;
  }
  // A file's lists are bounded before parsing (input_check.hpp); a --set "a,b,..." list is bounded here.
  if (array->size() > kMaxListEntries) {
    error(where_node(path, node), path, too_many_list_entries());
    return false;
  }
  std::vector<std::string> values;
  std::set<std::string_view> seen;  // views into the array's strings: distinctness in n log n, not n^2
  for (std::size_t i = 0; i < array->size(); ++i) {
    const toml::node& item = *array->get(i);
    std::string item_path = fmt::format("{}[{}]", path, i);
    Where where = is_set(path) ? where_node(path, node) : where_node(item_path, &item);
    if (!item.is_string() || item.as_string()->get().empty()) {
      error(where, item_path, fmt::format("found {}; allowed: {}", describe(item), allowed));
      return false;
    }
    const std::string& value = item.as_string()->get();
    if (distinct && !seen.insert(value).second) {
      error(where, item_path, fmt::format("found \"{}\" twice; allowed: {}", value, allowed));
      return false;
    }
    values.push_back(value);
  }
  out = std::move(values);
  return true;
}

bool Loader::read_bool(const Table& table, std::string_view key, bool& out) {
  std::string path = join_path(table.path, key);
  const toml::node* node = coerce(path, get(table, key), Want::Boolean);
  if (node == nullptr) return true;
  if (!node->is_boolean()) {
    error(where_node(path, node), path, fmt::format("found {}; allowed: true or false", describe(*node)));
    return false;
  }
  out = node->as_boolean()->get();
  return true;
}

bool Loader::read_probability(const Table& table, std::string_view key, double& out) {
  std::string path = join_path(table.path, key);
  const toml::node* node = coerce(path, get(table, key), Want::Number);
  if (node == nullptr) return true;
  const std::string allowed = schema::allowed(schema::Probability{});
  double value = 0.0;
  if (node->is_integer()) {
    value = static_cast<double>(node->as_integer()->get());
  } else if (node->is_floating_point()) {
    value = node->as_floating_point()->get();
  } else {
    error(where_node(path, node), path, fmt::format("found {}; allowed: {}", describe(*node), allowed));
    return false;
  }
  if (!(value >= 0.0 && value <= 1.0)) {  // also refuses nan
    error(where_node(path, node), path, fmt::format("found {}; allowed: {}", value, allowed));
    return false;
  }
  out = value;
  return true;
}

std::optional<Duration> Loader::duration_in(const std::string& text, Duration min, std::string& problem) const {
  std::string reason;
  std::optional<Duration> value = sim::parse_duration(text, reason, /*allow_negative=*/false);
  if (!value) {
    problem = reason_only(text, reason);
    return std::nullopt;
  }
  if (*value < min) {
    problem = min == 1 ? "it must be more than 0" : fmt::format("it must be at least {}", sim::format_duration(min));
    return std::nullopt;
  }
  if (*value > sim::kDurationMax) {
    problem = schema::above_duration_max(*value);
    return std::nullopt;
  }
  return value;
}

bool Loader::read_duration(const Table& table, std::string_view key, const schema::Duration& type, Duration& out) {
  const std::string allowed = schema::allowed(type);
  std::function<std::optional<Duration>(const std::string&, std::string&)> parse =
      [&](const std::string& text, std::string& problem) -> std::optional<Duration> {
    if (type.none && text == "none") return lethe::kTtlNone;
    return duration_in(text, type.min, problem);
  };
  return read_parsed<Duration>(table, key, allowed, parse, out);
}

std::optional<sim::Distribution> Loader::distribution_in(const std::string& text, bool allow_negative,
                                                         bool positive_mean, std::string& problem) const {
  std::string reason;
  std::optional<sim::Distribution> value = sim::Distribution::parse(text, base_dir_, reason, allow_negative);
  if (!value) {
    problem = reason_only(text, reason);
    return std::nullopt;
  }
  if (value->largest_magnitude() > sim::kDurationMax) {
    problem = schema::above_duration_max(value->largest_magnitude());
    return std::nullopt;
  }
  if (positive_mean && !(value->mean_ns() > 0.0)) {
    problem = "its mean is 0, which would repeat without time passing";
    return std::nullopt;
  }
  return value;
}

bool Loader::read_distribution(const Table& table, std::string_view key, const schema::Distribution& type,
                               sim::Distribution& out) {
  std::function<std::optional<sim::Distribution>(const std::string&, std::string&)> parse = [&](const std::string& text,
                                                                                                std::string& problem) {
    std::optional<sim::Distribution> value = distribution_in(text, type.allow_negative, type.positive_mean, problem);
    if (value && value->mean_ns() < static_cast<double>(type.min_mean)) {
      problem = fmt::format("its mean is {}, under {}, the shortest mean interval of a fault loop (each draw "
                            "wakes the loop once)",
                            sim::format_duration(static_cast<sim::Duration>(value->mean_ns())),
                            sim::format_duration(type.min_mean));
      return std::optional<sim::Distribution>();
    }
    return value;
  };
  return read_parsed<sim::Distribution>(table, key, schema::allowed(type), parse, out);
}

bool Loader::read_distribution(const Table& table, std::string_view key, const schema::Distribution& type,
                               std::optional<sim::Distribution>& out) {
  if (!has(table, key)) {
    get(table, key);
    return true;
  }
  // "off" is the same as leaving the key out: [explore] draws it among the choices (scenario/explore.hpp).
  if (const toml::node* node = get(table, key); node->is_string() && node->as_string()->get() == "off") {
    out.reset();
    return true;
  }
  sim::Distribution value;
  if (!read_distribution(table, key, type, value)) return false;
  out = value;
  return true;
}

bool Loader::read_rate(const Table& table, std::string_view key, lethe::Rate& out) {
  std::function<std::optional<lethe::Rate>(const std::string&, std::string&)> parse =
      [](const std::string& text, std::string& problem) -> std::optional<lethe::Rate> {
    std::optional<double> per_second = text::parse_rate_per_second(text);
    if (!per_second) return std::nullopt;
    if (!schema::rate_in_range(*per_second)) {
      problem = "outside the rates lethe simulates";
      return std::nullopt;
    }
    return lethe::Rate{*per_second};
  };
  return read_parsed<lethe::Rate>(table, key, schema::allowed(schema::Rate{}), parse, out);
}

bool Loader::read_bound(const Table& table, std::string_view key, std::optional<std::uint64_t>& out) {
  std::string path = join_path(table.path, key);
  const toml::node* node = coerce(path, get(table, key), Want::Integer);
  if (node == nullptr) return true;
  const std::string allowed = schema::allowed(schema::Bound{});
  if (node->is_string() && node->as_string()->get() == "unbounded") {
    out.reset();
    return true;
  }
  if (node->is_integer() && node->as_integer()->get() >= 1) {
    out = static_cast<std::uint64_t>(node->as_integer()->get());
    return true;
  }
  const std::string found = node->is_integer()   ? fmt::format("{}", node->as_integer()->get())
                            : node->is_string() ? fmt::format("\"{}\"", node->as_string()->get())
                                                : describe(*node);
  error(where_node(path, node), path, fmt::format("found {}; allowed: {}", found, allowed));
  return false;
}

void Loader::missing(const Table& table, std::string_view key, Where where, const std::string& what) {
  if (table.node != nullptr) {
    for (auto&& [written, value] : *table.node) {
      if (!text::nearest(written.str(), {std::string(key)}).empty()) return;
    }
  }
  error(std::move(where), join_path(table.path, key), "missing; " + what);
}

}  // namespace scenario::detail
