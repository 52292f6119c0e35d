// Scenario loading: TOML -> lethe::ScenarioConfig, with every check of docs/scenarios.md.
//
// How it works: toml++ parses the text into a tree whose nodes carry their
// line and column; --set overrides are written into that tree as strings
// (remembering which paths they own); then one pass walks the table of keys
// (scenario/schema.hpp), key by key. Each read registers the key as known,
// converts and range-checks the value and records its position. Unknown keys
// are found at the end by comparing each table with the keys read from it, so
// the schema lives in one place: the table. Cross-field rules run where the
// table places them, after the keys they relate.
#include "scenario/loader.hpp"

#include "scenario/toml.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <type_traits>
#include <utility>
#include <variant>

#include "core/result.hpp"
#include "protocol/registry.hpp"
#include "scenario/explore.hpp"
#include "scenario/input_check.hpp"
#include "scenario/schema.hpp"
#include "scenario/text.hpp"
#include "sim/text.hpp"
#include "sim/regular_file.hpp"
#include "world/names.hpp"

namespace scenario {
namespace {

using lethe::ScenarioConfig;
using sim::Duration;

using schema::kExpectationAllowed;
using schema::Words;

// [expect] compares a result field by its kind (lethe::result_fields()).
using lethe::FieldKind;

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

// ---------------------------------------------------------------- positions and errors

// Where something was written: a file position, or a --set argument.
struct Where {
  int line = 1;
  int column = 1;
  std::string set_text;  // non-empty: "--set KEY=VALUE"
};

struct Error {
  Where where;
  std::string text;  // "key: what was found; what is allowed"
};

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

std::string join_path(const std::string& prefix, std::string_view key) {
  return prefix.empty() ? std::string(key) : prefix + "." + std::string(key);
}

// A table being read: the node (null when the file leaves it out), its path in
// messages ("network.partition[0]") and its schema path ("network.partition").
struct Table {
  const toml::table* node = nullptr;
  std::string path;
  std::string schema;
  bool valid = true;  // false: the file has something else than a table there (already reported)
};

enum class Want { Integer, Number, Boolean, StringArray };

class Loader {
 public:
  Loader(std::string display_name, std::filesystem::path base_dir, bool check_explore = true)
      : display_name_(std::move(display_name)), base_dir_(std::move(base_dir)), check_explore_(check_explore) {}

  LoadResult load(std::string_view toml_text, const std::vector<std::string>& overrides);

  // ---- the row forms schema::visit_schema calls (scenario/schema.hpp)
  void table(std::string_view path);
  template <class Type, class Field>
  void key(std::string_view name, const Type& type, Field&& field, std::string_view description);
  template <class Type, class Field>
  void required_key(std::string_view name, const Type& type, Field&& field, std::string_view description);
  template <class Entry, class Keys>
  void array(std::string_view path, std::vector<Entry>& entries, Keys keys);
  template <class Object>
  void rule(schema::Rule rule, const Object& object) {
    check(rule, object);
  }
  void expect(const std::vector<lethe::Expectation>&, std::string_view) { read_expect(root_); }
  void strategy_keys(lethe::ProtocolSection& protocol);

 private:
  // ---- the keys of [protocol] that its kind declares (protocol/registry.hpp)
  template <class T, class Type>
  void read_setting(const lethe::SettingKey& key, const Type& type, lethe::StrategySettings& settings);
  void check_unread_keys(const lethe::StrategyInfo& strategy);

  // ---- positions, errors
  Where where_node(const std::string& path, const toml::node* node) const;
  Where where_key(const std::string& path, const toml::key& key) const;
  Where where_table(const Table& table) const;
  Where where_in(const Table& table, std::string_view key) const;
  void error(Where where, const std::string& key, std::string message) {
    errors_.push_back({std::move(where), key + ": " + message});
  }
  std::vector<LoadError> finished_errors();

  // ---- overrides
  void apply_override(toml::table& root, const std::string& text);
  bool is_set(const std::string& path) const { return set_origin_.count(path) != 0; }
  const toml::node* coerce(const std::string& path, const toml::node* node, Want want);

  // ---- generic reads: each registers the key; returns false only when a present value is invalid
  const toml::node* get(const Table& table, std::string_view key);
  bool has(const Table& table, std::string_view key) const { return table.node && table.node->get(key); }
  Table subtable(const Table& parent, std::string_view key);
  std::vector<Table> table_array(const Table& parent, std::string_view key);
  std::optional<std::string> read_text(const Table& table, std::string_view key, const std::string& allowed);
  bool read_string(const Table& table, std::string_view key, std::string& out);
  bool read_strings(const Table& table, std::string_view key, std::vector<std::string>& out, bool at_least_one,
                    bool distinct = true, const std::string& allowed_text = "");
  template <class T>
  bool read_int(const Table& table, std::string_view key, const schema::Integer& type, T& out);
  bool read_bool(const Table& table, std::string_view key, bool& out);
  bool read_probability(const Table& table, std::string_view key, double& out);
  bool read_duration(const Table& table, std::string_view key, const schema::Duration& type, Duration& out);
  bool read_distribution(const Table& table, std::string_view key, const schema::Distribution& type,
                         sim::Distribution& out);
  bool read_distribution(const Table& table, std::string_view key, const schema::Distribution& type,
                         std::optional<sim::Distribution>& out);
  bool read_rate(const Table& table, std::string_view key, lethe::Rate& out);
  template <class E>
  bool read_enum(const Table& table, std::string_view key, const Words<E>& words, E& out);
  // A value in a small language: `parse` returns the value or nullopt and an optional reason.
  template <class T>
  bool read_parsed(const Table& table, std::string_view key, const std::string& allowed,
                   const std::function<std::optional<T>(const std::string&, std::string&)>& parse, T& out);
  // Reports a missing required key, unless the table holds a near-typo of it (reported as an unknown key).
  void missing(const Table& table, std::string_view key, Where where, const std::string& what);

  // ---- value languages
  std::optional<Duration> duration_in(const std::string& text, Duration min, std::string& problem) const;
  std::optional<sim::Distribution> distribution_in(const std::string& text, bool allow_negative, bool positive_mean,
                                                   std::string& problem) const;
  std::optional<lethe::Commit> parse_commit(const std::string& text, std::string& problem) const;
  std::optional<lethe::TtlEviction> parse_ttl_eviction(const std::string& text, std::string& problem) const;
  std::optional<lethe::Poll> parse_poll(const std::string& text, std::string& problem) const;
  std::optional<lethe::PollRead> parse_poll_read(const std::string& text, std::string& problem) const;
  std::optional<lethe::Backoff> parse_backoff(const std::string& text, std::string& problem) const;
  std::optional<lethe::Schedule> parse_schedule(const std::string& text, std::string& problem) const;
  std::optional<lethe::Expectation> parse_expectation(const std::string& key, const std::string& text,
                                                      std::string& problem) const;

  // ---- one key, by its value type (the table's TYPE column)
  bool read_value(const Table& table, std::string_view key, const schema::Text&, std::string& out) {
    return read_string(table, key, out);
  }
  bool read_value(const Table& table, std::string_view key, const schema::Name& type, std::string& out);
  bool read_value(const Table& table, std::string_view key, const schema::Names& type, std::vector<std::string>& out) {
    return read_strings(table, key, out, type.at_least_one, type.distinct,
                        type.distinct ? "" : schema::allowed(type));
  }
  template <class T>
  bool read_value(const Table& table, std::string_view key, const schema::Integer& type, T& out) {
    return read_int(table, key, type, out);
  }
  bool read_value(const Table& table, std::string_view key, const schema::Boolean&, bool& out) {
    return read_bool(table, key, out);
  }
  bool read_value(const Table& table, std::string_view key, const schema::Probability&, double& out) {
    return read_probability(table, key, out);
  }
  template <class T>
  bool read_value(const Table& table, std::string_view key, const schema::Duration& type, T& out) {
    return read_duration(table, key, type, out);
  }
  template <class T>
  bool read_value(const Table& table, std::string_view key, const schema::Distribution& type, T& out) {
    return read_distribution(table, key, type, out);
  }
  bool read_value(const Table& table, std::string_view key, const schema::Rate&, lethe::Rate& out) {
    return read_rate(table, key, out);
  }
  template <class E>
  bool read_value(const Table& table, std::string_view key, const schema::Choice<E>& type, E& out) {
    return read_enum(table, key, type.words, out);
  }
  template <class T>
  bool read_value(const Table& table, std::string_view key, const schema::Language& type, T& out) {
    std::function<std::optional<T>(const std::string&, std::string&)> parse =
        [this, &out](const std::string& text, std::string& problem) { return parse_language(text, problem, out); };
    return read_parsed<T>(table, key, type.allowed, parse, out);
  }
  bool read_value(const Table& table, std::string_view key, const schema::Groups& type,
                  schema::GroupPair<lethe::PartitionGroup> out) {
    return read_between(table, key, type.producer_clients, out.first, out.second);
  }
  // The parser of each Language type, picked by the type of the field it fills.
  std::optional<lethe::Commit> parse_language(const std::string& text, std::string& problem,
                                              const lethe::Commit&) const {
    return parse_commit(text, problem);
  }
  std::optional<lethe::TtlEviction> parse_language(const std::string& text, std::string& problem,
                                                   const lethe::TtlEviction&) const {
    return parse_ttl_eviction(text, problem);
  }
  std::optional<lethe::Poll> parse_language(const std::string& text, std::string& problem, const lethe::Poll&) const {
    return parse_poll(text, problem);
  }
  std::optional<lethe::PollRead> parse_language(const std::string& text, std::string& problem,
                                                const lethe::PollRead&) const {
    return parse_poll_read(text, problem);
  }
  std::optional<lethe::Backoff> parse_language(const std::string& text, std::string& problem,
                                               const lethe::Backoff&) const {
    return parse_backoff(text, problem);
  }
  std::optional<lethe::Schedule> parse_language(const std::string& text, std::string& problem,
                                                const lethe::Schedule&) const {
    return parse_schedule(text, problem);
  }

  // ---- the cross-field rules (schema::Rule), each where the table places it
  bool valid(const std::string& path) const { return invalid_.count(path) == 0; }
  void check(schema::Rule rule, const lethe::TopologySection& section);
  void check(schema::Rule rule, const lethe::WorkloadSection& section);
  void check(schema::Rule rule, const lethe::ProtocolSection& section);
  void check(schema::Rule rule, const lethe::SagaSection& section);
  void check(schema::Rule rule, const lethe::RedeliverySection& section);
  void check(schema::Rule rule, const lethe::ExternalSection& section);
  template <class Window>  // lethe::NetworkPartition, lethe::SinkOutage
  void check(schema::Rule rule, const Window& window);

  void read_expect(const Table& root);
  // [explore] (scenario/explore.hpp): its entries into config_.explore, then (when everything else loaded)
  // each value an entry can give loaded as --set KEY=VALUE would be.
  void read_explore(const Table& root);
  std::optional<lethe::ExploreEntry> read_explore_entry(const std::string& key, const toml::node& value);
  void check_explore_values(std::string_view toml_text, const std::vector<std::string>& overrides);
  // `between` of a [[network.partition]] or [[network.link]]. `producer_clients`: the group "clients" is also
  // allowed when the source is not "clients" (the producer sits there).
  bool read_between(const Table& entry, std::string_view key, bool producer_clients, lethe::PartitionGroup& first,
                    lethe::PartitionGroup& second);
  void check_unknown_keys();
  void check_expectation(const std::string& key, const std::string& value, Where where, const Where& key_where);

  std::string display_name_;
  std::filesystem::path base_dir_;
  bool check_explore_ = true;  // false in the loads that check one [explore] value (no recursion)
  ScenarioConfig config_;
  std::vector<Error> errors_;
  std::map<std::string, std::string> set_origin_;               // path -> "--set KEY=VALUE" that wrote it
  std::deque<toml::table> coerced_;                             // owns nodes parsed from --set values
  std::map<std::string, std::vector<std::string>> known_keys_;  // schema path -> keys, in schema order
  std::vector<Table> tables_to_check_;
  struct ExpectOverride {
    std::string key;
    std::string value;
    std::string set_text;
  };
  std::vector<ExpectOverride> expect_overrides_;
  Table root_;
  Table current_;                        // the table the keys being read are in
  std::map<std::string, Table> tables_;  // path -> table, for the subtables and arrays inside it
  std::set<std::string> invalid_;        // paths of keys whose written value was refused
};

// ---------------------------------------------------------------- positions, errors

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

// ---------------------------------------------------------------- overrides

// One component of an override key: a name and an optional [index].
struct KeyPart {
  std::string name;
  std::optional<std::size_t> index;
};

std::optional<std::vector<KeyPart>> split_key(std::string_view key) {
  std::vector<KeyPart> parts;
  std::size_t start = 0;
  while (start <= key.size()) {
    std::size_t dot = key.find('.', start);
    std::string_view part = key.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    KeyPart parsed;
    std::size_t bracket = part.find('[');
    parsed.name = std::string(part.substr(0, bracket));
    if (bracket != std::string_view::npos) {
      if (part.back() != ']' || part.size() < bracket + 3) return std::nullopt;
      std::string_view digits = part.substr(bracket + 1, part.size() - bracket - 2);
      if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
          digits.size() > 6) {
        return std::nullopt;
      }
      parsed.index = static_cast<std::size_t>(std::stoul(std::string(digits)));
    }
    if (parsed.name.empty()) return std::nullopt;
    parts.push_back(std::move(parsed));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return parts;
}

void Loader::apply_override(toml::table& root, const std::string& argument) {
  const std::string set_text = "--set " + argument;
  std::size_t equals = argument.find('=');
  std::string key(lethe::text::trim(std::string_view(argument).substr(0, std::min(equals, argument.size()))));
  if (equals == std::string::npos || key.empty()) {
    errors_.push_back({Where{0, 0, set_text}, (key.empty() ? argument : key) +
                                                  ": found no KEY=VALUE; allowed: --set KEY=VALUE, e.g. "
                                                  "--set protocol.max_processing_time=5s"});
    return;
  }
  std::string value(lethe::text::trim(std::string_view(argument).substr(equals + 1)));
  // The key and the value (read as TOML below) within the limits of a file's (scenario/input_check.hpp).
  std::optional<std::string> limit = check_override_key(key);
  // A misplaced non-ASCII character is fine in a verbatim string: coerce does not hand it to toml++.
  std::optional<InputProblem> problem = check_scenario_input("v = " + value);
  if (!limit && problem && problem->kind == InputProblem::Kind::Limit) limit = problem->text;
  if (!limit && problem && problem->kind == InputProblem::Kind::NotUtf8) {
    limit = fmt::format("found a byte at byte offset {} of the value that is not UTF-8; allowed: UTF-8 text",
                        problem->byte_offset - 4);  // "v = " comes first
  }
  if (limit) {
    errors_.push_back({Where{0, 0, set_text}, key + ": " + *limit});
    return;
  }
  // Quotes are optional: a quoted value is read as a TOML string.
  if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front() &&
      !problem) {
    try {
      toml::table parsed = toml::parse("v = " + value);
      if (const toml::node* node = parsed.get("v"); node && node->is_string()) value = node->as_string()->get();
    } catch (const toml::parse_error&) {
      // Left as written: the key's reader reports what is wrong with it.
    }
  }
  if (key.rfind("expect.", 0) == 0 && key.size() > 7) {
    expect_overrides_.push_back({key.substr(7), value, set_text});
    return;
  }
  std::optional<std::vector<KeyPart>> parts = split_key(key);
  if (!parts) {
    errors_.push_back({Where{0, 0, set_text}, key + ": found a malformed key; allowed: a dotted key such as "
                                                    "protocol.ttl or network.partition[0].at"});
    return;
  }
  toml::table* table = &root;
  std::string path;
  for (std::size_t i = 0; i + 1 < parts->size(); ++i) {
    const KeyPart& part = (*parts)[i];
    path = join_path(path, part.name);
    toml::node* node = table->get(part.name);
    if (!part.index) {
      if (node == nullptr) {
        node = &table->insert_or_assign(part.name, toml::table{}).first->second;
        set_origin_.emplace(path, set_text);
      }
      if (!node->is_table()) {
        errors_.push_back({Where{0, 0, set_text}, path + ": found " + describe(*node) +
                                                      " in the file, not a table; allowed: a key inside a table"});
        return;
      }
      table = node->as_table();
      continue;
    }
    if (node == nullptr) node = &table->insert_or_assign(part.name, toml::array{}).first->second;
    toml::array* array = node->as_array();
    if (array == nullptr || !(array->empty() || array->is_array_of_tables())) {
      errors_.push_back(
          {Where{0, 0, set_text}, path + ": found " + describe(*node) + " in the file; allowed: an array of tables"});
      return;
    }
    std::size_t index = *part.index;
    path += fmt::format("[{}]", index);
    if (index > array->size()) {
      errors_.push_back({Where{0, 0, set_text},
                         path + fmt::format(": found index {}; allowed: 0 to {} (an existing entry, or {} to add one)",
                                            index, array->size(), array->size())});
      return;
    }
    if (index == array->size()) {
      array->push_back(toml::table{});
      set_origin_.emplace(path, set_text);
    }
    table = array->get(index)->as_table();
  }
  const KeyPart& last = parts->back();
  std::string full = join_path(path, last.name);
  if (last.index) {
    errors_.push_back({Where{0, 0, set_text}, full + fmt::format("[{}]", *last.index) +
                                                  ": found a whole table; allowed: one key of it, e.g. " + full +
                                                  fmt::format("[{}].at=1m", *last.index)});
    return;
  }
  if (const toml::node* existing = table->get(last.name);
      existing && (existing->is_table() || existing->is_array_of_tables())) {
    errors_.push_back({Where{0, 0, set_text}, full + ": found " + describe(*existing) +
                                                  " in the file; allowed: --set sets one value, e.g. " + full +
                                                  ".KEY=VALUE"});
    return;
  }
  // protocol.KEY=off leaves a strategy key out (the file's key for another kind, when --set switches the kind).
  if (path == "protocol" && last.name != "kind" && value == "off") {
    table->erase(last.name);
    return;
  }
  table->insert_or_assign(last.name, value);
  set_origin_[full] = set_text;
}

// A --set value arrives as a string; a key that wants another type reads it as TOML.
const toml::node* Loader::coerce(const std::string& path, const toml::node* node, Want want) {
  if (node == nullptr || !node->is_string() || !is_set(path)) return node;
  const std::string& raw = node->as_string()->get();
  if (want == Want::StringArray && (raw.empty() || raw.front() != '[')) {
    toml::array items;
    std::size_t start = 0;
    while (start <= raw.size()) {
      std::size_t comma = raw.find(',', start);
      std::string item = std::string(lethe::text::trim(
          std::string_view(raw).substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
      items.push_back(item);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    toml::table holder;
    holder.insert_or_assign("v", std::move(items));
    coerced_.push_back(std::move(holder));
    return coerced_.back().get("v");
  }
  if (check_scenario_input("v = " + raw)) return node;  // not for toml++ (scenario/input_check.hpp): a string
  try {
    toml::table parsed = toml::parse("v = " + raw);
    if (parsed.size() == 1 && parsed.get("v") != nullptr) {
      coerced_.push_back(std::move(parsed));
      return coerced_.back().get("v");
    }
  } catch (const toml::parse_error&) {
    // Not a TOML value: the reader reports the string as found.
  }
  return node;
}

// ---------------------------------------------------------------- generic reads

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

template <class T>
bool Loader::read_int(const Table& table, std::string_view key, const schema::Integer& type, T& out) {
  std::string path = join_path(table.path, key);
  const toml::node* node = coerce(path, get(table, key), Want::Integer);
  if (node == nullptr) return true;
  const std::string allowed = schema::allowed(type);
  if (!node->is_integer()) {
    error(where_node(path, node), path, fmt::format("found {}; allowed: {}", describe(*node), allowed));
    return false;
  }
  std::int64_t value = node->as_integer()->get();
  if (value < type.min || value > type.max) {
    error(where_node(path, node), path, fmt::format("found {}; allowed: {}", value, allowed));
    return false;
  }
  out = static_cast<T>(value);
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

template <class E>
bool Loader::read_enum(const Table& table, std::string_view key, const Words<E>& words, E& out) {
  std::function<std::optional<E>(const std::string&, std::string&)> parse =
      [&](const std::string& text, std::string& problem) -> std::optional<E> {
    std::vector<std::string> names;
    for (const auto& [name, value] : words) {
      if (name == text) return value;
      names.push_back(name);
    }
    std::string near = text::nearest(text, names);
    if (!near.empty()) problem = fmt::format("did you mean \"{}\"?", near);
    return std::nullopt;
  };
  return read_parsed<E>(table, key, schema::quoted_words(words), parse, out);
}

template <class T>
bool Loader::read_parsed(const Table& table, std::string_view key, const std::string& allowed,
                         const std::function<std::optional<T>(const std::string&, std::string&)>& parse, T& out) {
  std::optional<std::string> value = read_text(table, key, allowed);
  if (!value) return !has(table, key);
  std::string problem;
  std::optional<T> parsed = parse(*value, problem);
  if (!parsed) {
    std::string path = join_path(table.path, key);
    std::string reason = problem.empty() ? "" : " (" + problem + ")";
    error(where_in(table, key), path, fmt::format("found \"{}\"{}; allowed: {}", *value, reason, allowed));
    return false;
  }
  out = std::move(*parsed);
  return true;
}

void Loader::missing(const Table& table, std::string_view key, Where where, const std::string& what) {
  if (table.node != nullptr) {
    for (auto&& [written, value] : *table.node) {
      if (!text::nearest(written.str(), {std::string(key)}).empty()) return;
    }
  }
  error(std::move(where), join_path(table.path, key), "missing; " + what);
}

// ---------------------------------------------------------------- compound value languages

std::optional<lethe::Commit> Loader::parse_commit(const std::string& value, std::string& problem) const {
  if (value == "after-each") return lethe::Commit{};
  std::optional<text::Call> call = text::parse_call(value);
  if (!call || call->name != "interval") return std::nullopt;
  std::optional<std::vector<std::string>> arguments = text::bind_arguments(*call, {"every"}, problem);
  if (!arguments) return std::nullopt;
  std::optional<Duration> every = duration_in((*arguments)[0], 1, problem);
  if (!every) return std::nullopt;
  return lethe::Commit{lethe::CommitMode::Interval, *every};
}

std::optional<lethe::TtlEviction> Loader::parse_ttl_eviction(const std::string& value, std::string& problem) const {
  if (value == "exact") return lethe::TtlEviction{};
  std::optional<text::Call> call = text::parse_call(value);
  if (!call || call->name != "lazy") return std::nullopt;
  std::optional<std::vector<std::string>> arguments = text::bind_arguments(*call, {"max"}, problem);
  if (!arguments) return std::nullopt;
  std::optional<Duration> max = duration_in((*arguments)[0], 0, problem);
  if (!max) return std::nullopt;
  return lethe::TtlEviction{lethe::TtlEvictionKind::Lazy, *max};
}

std::optional<lethe::Poll> Loader::parse_poll(const std::string& value, std::string& problem) const {
  std::optional<text::Call> call = text::parse_call(value);
  if (!call || call->name != "backoff") {
    std::optional<sim::Distribution> interval = distribution_in(value, false, true, problem);
    if (!interval) return std::nullopt;
    lethe::Poll poll;
    poll.interval = *interval;
    return poll;
  }
  std::optional<std::vector<std::string>> arguments = text::bind_arguments(*call, {"base", "factor", "cap"}, problem);
  if (!arguments) return std::nullopt;
  lethe::Poll poll;
  poll.kind = lethe::PollKind::Backoff;
  std::optional<Duration> base = duration_in((*arguments)[0], 1, problem);
  if (!base) {
    problem = "base: " + problem;
    return std::nullopt;
  }
  std::optional<double> factor = text::parse_number((*arguments)[1]);
  if (!factor || *factor < 1.0 || *factor > 1000.0) {
    problem = fmt::format("factor \"{}\" must be a number from 1 to 1000", (*arguments)[1]);
    return std::nullopt;
  }
  std::optional<Duration> cap = duration_in((*arguments)[2], *base, problem);
  if (!cap) {
    problem = "cap: " + problem;
    return std::nullopt;
  }
  poll.backoff_base = *base;
  poll.backoff_factor = *factor;
  poll.backoff_cap = *cap;
  return poll;
}

std::optional<lethe::PollRead> Loader::parse_poll_read(const std::string& value, std::string& problem) const {
  if (value == "consistent") return lethe::PollRead{};
  std::optional<text::Call> call = text::parse_call(value);
  if (!call || call->name != "eventual") return std::nullopt;
  std::optional<std::vector<std::string>> arguments = text::bind_arguments(*call, {"lag"}, problem);
  if (!arguments) return std::nullopt;
  std::optional<sim::Distribution> lag = distribution_in((*arguments)[0], false, false, problem);
  if (!lag) {
    problem = "lag: " + problem;
    return std::nullopt;
  }
  return lethe::PollRead{lethe::PollReadKind::Eventual, *lag};
}

std::optional<lethe::Backoff> Loader::parse_backoff(const std::string& value, std::string& problem) const {
  if (value == "none") return lethe::Backoff{};
  std::optional<text::Call> call = text::parse_call(value);
  if (!call) return std::nullopt;
  lethe::Backoff backoff;
  if (call->name == "constant") {
    std::optional<std::vector<std::string>> arguments = text::bind_arguments(*call, {"delay"}, problem);
    if (!arguments) return std::nullopt;
    std::optional<Duration> delay = duration_in((*arguments)[0], 0, problem);
    if (!delay) return std::nullopt;
    backoff.kind = lethe::BackoffKind::Constant;
    backoff.delay = *delay;
    return backoff;
  }
  if (call->name == "exponential") {
    std::optional<std::vector<std::string>> arguments = text::bind_arguments(*call, {"base", "cap"}, problem);
    if (!arguments) return std::nullopt;
    std::optional<Duration> base = duration_in((*arguments)[0], 1, problem);
    if (!base) {
      problem = "base: " + problem;
      return std::nullopt;
    }
    std::optional<Duration> cap = duration_in((*arguments)[1], *base, problem);
    if (!cap) {
      problem = "cap: " + problem;
      return std::nullopt;
    }
    backoff.kind = lethe::BackoffKind::Exponential;
    backoff.base = *base;
    backoff.cap = *cap;
    return backoff;
  }
  return std::nullopt;
}

std::optional<lethe::Schedule> Loader::parse_schedule(const std::string& value, std::string& problem) const {
  if (value == "fifo") return lethe::Schedule{};
  if (value == "random") return lethe::Schedule{lethe::ScheduleKind::Random};
  std::optional<text::Call> call = text::parse_call(value);
  if (!call || call->name != "pct") return std::nullopt;
  std::optional<std::vector<std::string>> arguments = text::bind_arguments(*call, {"depth"}, problem);
  if (!arguments) return std::nullopt;
  std::optional<double> depth = text::parse_number((*arguments)[0]);
  // The range first: a cast of a number out of int's range is undefined.
  if (!depth || *depth < 1 || *depth > lethe::kMaxPctDepth || *depth != static_cast<double>(static_cast<int>(*depth))) {
    problem = fmt::format("depth \"{}\" must be a whole number from 1 to {}", (*arguments)[0], lethe::kMaxPctDepth);
    return std::nullopt;
  }
  return lethe::Schedule{lethe::ScheduleKind::Pct, static_cast<int>(*depth)};
}

std::optional<lethe::Expectation> Loader::parse_expectation(const std::string& key, const std::string& value,
                                                            std::string& problem) const {
  std::optional<FieldKind> kind = lethe::expectation_kind(key);
  std::string body(lethe::text::trim(value));
  lethe::Expectation expectation;
  expectation.key = key;
  static const std::vector<std::pair<std::string, lethe::ExpectationOp>> ops = {
      {"==", lethe::ExpectationOp::Equal},     {"!=", lethe::ExpectationOp::NotEqual},
      {"<=", lethe::ExpectationOp::LessEqual}, {">=", lethe::ExpectationOp::GreaterEqual},
      {"<", lethe::ExpectationOp::Less},       {">", lethe::ExpectationOp::Greater},
  };
  bool found_op = false;
  for (const auto& [word, op] : ops) {
    if (body.rfind(word, 0) == 0 && !(word.size() == 1 && body.size() > 1 && body[1] == '=')) {
      expectation.op = op;
      body = std::string(lethe::text::trim(std::string_view(body).substr(word.size())));
      found_op = true;
      break;
    }
  }
  if (!found_op || body.empty() || body.front() == '=') {
    problem = found_op ? "no NUMBER after the operator" : "it does not start with an operator";
    return std::nullopt;
  }
  if (body.back() == '%') {
    if (kind != FieldKind::Count) {
      problem = "% (of messages) is only for counts";
      return std::nullopt;
    }
    expectation.percent = true;
    body = std::string(lethe::text::trim(std::string_view(body).substr(0, body.size() - 1)));
  }
  std::optional<double> number = text::parse_number(body);
  if (!number && kind == FieldKind::Time) {
    std::string reason;
    if (std::optional<Duration> duration = sim::parse_duration(body, reason)) number = static_cast<double>(*duration);
  }
  if (!number) {
    problem = kind == FieldKind::Time ? fmt::format("\"{}\" is neither a number (of ns) nor a duration", body)
                                      : fmt::format("\"{}\" is not a number", body);
    return std::nullopt;
  }
  if (kind == FieldKind::Boolean &&
      (!(*number == 0.0 || *number == 1.0) ||
       !(expectation.op == lethe::ExpectationOp::Equal || expectation.op == lethe::ExpectationOp::NotEqual))) {
    problem = fmt::format("{} is compared with == or != against 1 (true) or 0 (false)", key);
    return std::nullopt;
  }
  expectation.number = *number;
  return expectation;
}

// ---------------------------------------------------------------- the row forms of the table

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

// ---------------------------------------------------------------- the cross-field rules

void Loader::check(schema::Rule, const lethe::TopologySection& section) {
  const bool source_valid = valid("topology.source");
  if (source_valid && valid("topology.partitions") && section.source == "kafka" && section.partitions < 1) {
    error(where_in(current_, "partitions"), "topology.partitions",
          fmt::format("found {}; allowed: an integer >= 1 when topology.source is \"kafka\"", section.partitions));
  }
  if (source_valid && valid("topology.clients") && section.source == "clients" && section.clients < 1) {
    error(where_in(current_, "clients"), "topology.clients",
          fmt::format("found {}; allowed: an integer >= 1 when topology.source is \"clients\"", section.clients));
  }
}

void Loader::check(schema::Rule, const lethe::WorkloadSection& section) {
  if (valid("workload.messages") && valid("workload.rate") && section.messages > 0 &&
      !(section.rate.per_second > 0.0)) {
    error(where_in(current_, "rate"), "workload.rate",
          fmt::format("found \"{}/s\"; allowed: a rate above 0 when workload.messages > 0, e.g. \"50/s\"",
                      section.rate.per_second));
  }
}

void Loader::check(schema::Rule, const lethe::RedeliverySection& section) {
  if (!valid("workload.redelivery.copies")) return;
  const std::size_t entries = section.copy_delays.size();
  if (entries <= static_cast<std::size_t>(section.copies)) return;
  error(where_in(current_, "copies"), "workload.redelivery.copies",
        fmt::format("found {} with {} [[workload.redelivery.copy]] entries; allowed: at least as many copies as "
                    "entries, e.g. copies = {} (entry i is the delay of copy i)",
                    section.copies, entries, entries));
}

template <class Window>
void Loader::check(schema::Rule, const Window& window) {
  if (window.for_duration > 0 && window.at > std::numeric_limits<Duration>::max() - window.for_duration) {
    error(where_in(current_, "for"), join_path(current_.path, "for"),
          fmt::format("found \"{}\", which ends the window after the last representable instant; allowed: at + for "
                      "below 292 years",
                      sim::format_duration(window.for_duration)));
  }
}

void Loader::check(schema::Rule, const lethe::ProtocolSection& section) {
  const lethe::StrategyInfo* strategy = lethe::find_strategy(section.kind);
  if (!valid("protocol.kind") || !current_.valid || strategy == nullptr) return;
  const Where kind_where = where_in(current_, "kind");
  // When the kind is not written, say that mnemosyne is the default: the user may not know they chose it.
  const std::string kind_note = has(current_, "kind") ? "" : ", the default kind";
  for (const lethe::SettingKey& key : strategy->keys) {
    if (key.default_value || has(current_, key.name)) continue;
    const std::string allowed = schema::with_setting_type(key, [](const auto& type, auto*) { return schema::allowed(type); });
    missing(current_, key.name, kind_where,
            fmt::format("it is required when protocol.kind is \"{}\"{} (no default, by design): {}; {}: {}",
                        section.kind, kind_note, allowed, key.name, key.description));
  }
}

void Loader::strategy_keys(lethe::ProtocolSection& protocol) {
  const lethe::StrategyInfo* strategy = valid("protocol.kind") ? lethe::find_strategy(protocol.kind) : nullptr;
  if (strategy == nullptr) {
    // The kind is refused already: every strategy's keys are known, so that the kind's error stands alone.
    for (const std::string& kind : lethe::strategy_names()) {
      for (const lethe::SettingKey& key : lethe::strategy_info(kind).keys) get(current_, key.name);
    }
    return;
  }
  for (const lethe::SettingKey& key : strategy->keys) {
    schema::with_setting_type(key, [&](const auto& type, auto* value_type) {
      read_setting<std::remove_pointer_t<decltype(value_type)>>(key, type, protocol.settings);
    });
  }
  check_unread_keys(*strategy);
}

template <class T, class Type>
void Loader::read_setting(const lethe::SettingKey& key, const Type& type, lethe::StrategySettings& settings) {
  T value{};
  if (key.default_value) value = std::get<T>(*key.default_value);
  const bool written = has(current_, key.name);
  if (!read_value(current_, key.name, type, value)) {
    invalid_.insert(join_path(current_.path, key.name));
    return;
  }
  if (written || key.default_value) settings.set(key.name, std::move(value));  // a required key left out: unset
}

void Loader::check_unread_keys(const lethe::StrategyInfo& strategy) {
  if (current_.node == nullptr) return;
  std::vector<std::string> known{"kind"};
  for (const lethe::SettingKey& key : strategy.keys) known.push_back(key.name);
  for (auto&& [key, value] : *current_.node) {
    const std::string name(key.str());
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    const std::vector<std::string> readers = lethe::strategies_reading(name);
    if (readers.empty()) continue;  // no kind reads it: an unknown key (check_unknown_keys)
    const std::string path = join_path(current_.path, name);
    invalid_.insert(path);  // reported here, not again as unknown
    error(where_key(path, key), path,
          fmt::format("found a key that protocol.kind \"{}\" does not read (read by {}); allowed in [protocol] with "
                      "kind \"{}\": {}",
                      strategy.name, schema::quoted_words(readers), strategy.name, text::join(known, ", ")));
  }
}

void Loader::check(schema::Rule, const lethe::ExternalSection& section) {
  std::error_code failed;  // an empty base_dir (a text without a file) stays empty: the nodes then run in lethe's
  const std::filesystem::path base = base_dir_.empty() ? base_dir_ : std::filesystem::absolute(base_dir_, failed);
  config_.external.base_dir = failed ? base_dir_.string() : base.lexically_normal().string();
  // Paths relative to the scenario file become absolute, so that a rendered copy elsewhere (lethe shrink's
  // output) still runs the same program in the same folder.
  if (!config_.external.base_dir.empty() && !section.command.empty()) {
    const std::filesystem::path folder = config_.external.base_dir;
    config_.external.cwd = (folder / section.cwd).lexically_normal().string();
    std::string& program = config_.external.command.front();
    if (program.find('/') != std::string::npos) program = (folder / program).lexically_normal().string();
  }
  if (!valid("protocol.kind") || !valid("external.command")) return;
  const bool external = config_.protocol.kind == "external";
  if (external && section.command.empty()) {
    const Table& protocol = tables_.count("protocol") != 0 ? tables_.at("protocol") : root_;
    missing(current_, "command", current_.node != nullptr ? where_table(current_) : where_in(protocol, "kind"),
            "protocol.kind = \"external\" needs external.command, the program each consumer node runs, e.g. "
            "command = [\"python3\", \"consumer.py\"] (docs/external.md)");
  }
  if (!external && !section.command.empty()) {
    error(where_in(current_, "command"), "external.command",
          fmt::format("is set but protocol.kind is \"{}\"; allowed only with protocol.kind = \"external\"",
                      config_.protocol.kind));
  }
  if (external && config_.saga.steps > 0 && valid("saga.steps")) {
    error(where_in(current_, "command"), "saga.steps",
          fmt::format("found {}; allowed with protocol.kind = \"external\": 0 (external nodes run plain messages)",
                      config_.saga.steps));
  }
}

void Loader::check(schema::Rule, const lethe::SagaSection& section) {
  if (!valid("saga.steps")) return;
  const lethe::StrategyInfo* strategy = lethe::find_strategy(config_.protocol.kind);
  if (section.steps == 0) {
    if (valid("protocol.kind") && strategy != nullptr && strategy->saga) {
      const Table& protocol = tables_.count("protocol") != 0 ? tables_.at("protocol") : root_;
      error(where_in(protocol, "kind"), "protocol.kind",
            fmt::format("found \"{}\", which drives sagas only; allowed with saga.steps from 2 to 8 (docs/sagas.md)",
                        config_.protocol.kind));
    }
    return;
  }
  const Where steps_where = where_in(current_, "steps");
  if (section.steps == 1) {
    error(steps_where, "saga.steps", "found 1; allowed: 0 (plain messages) or 2 to 8 (a saga needs a step to undo)");
    return;
  }
  if (config_.topology.processors.size() != 1) {
    error(steps_where, "saga.steps",
          fmt::format("found {} with {} processors; allowed: sagas with exactly one processor in topology.processors",
                      section.steps, config_.topology.processors.size()));
  }
  if (valid("protocol.kind") && strategy != nullptr && strategy->effect_in_store_transaction) {
    error(steps_where, "saga.steps",
          fmt::format("found {} with protocol.kind \"{}\", whose effect is a store transaction; allowed: sagas with a "
                      "kind whose effect is a provider call",
                      section.steps, config_.protocol.kind));
  }
}

bool Loader::read_between(const Table& entry, std::string_view key, bool producer_clients,
                          lethe::PartitionGroup& first, lethe::PartitionGroup& second) {
  using lethe::PartitionGroup;
  const Words<PartitionGroup> groups = schema::group_words();
  const std::string allowed = schema::allowed(schema::Groups{producer_clients});
  const std::string path = join_path(entry.path, key);
  std::vector<std::string> names;
  if (!read_strings(entry, key, names, true, /*distinct=*/false,
                    "an array of " + allowed + ", e.g. [\"consumers\", \"store\"]")) {
    return false;
  }
  if (names.size() != 2) {
    error(where_in(entry, key), path,
          fmt::format("found {} group{}; allowed: {}, e.g. [\"consumers\", \"store\"]", names.size(),
                      names.size() == 1 ? "" : "s", allowed));
    return false;
  }
  std::vector<std::string> group_names;
  for (const auto& group : groups) group_names.push_back(group.first);
  const toml::node* between = entry.node->get(key);
  const toml::array* items = between->as_array();  // null when given with --set as "a,b"
  const bool source_valid = valid("topology.source");
  std::vector<PartitionGroup> chosen;
  for (std::size_t i = 0; i < 2; ++i) {
    std::string item_path = fmt::format("{}[{}]", path, i);
    Where where = is_set(path) || items == nullptr ? where_node(path, between) : where_node(item_path, items->get(i));
    auto found = std::find(group_names.begin(), group_names.end(), names[i]);
    if (found == group_names.end()) {
      std::string near = text::nearest(names[i], group_names);
      error(where, item_path,
            fmt::format("found \"{}\"{}; allowed: {}", names[i],
                        near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near),
                        schema::quoted_words(groups)));
      continue;
    }
    PartitionGroup group = groups[static_cast<std::size_t>(found - group_names.begin())].second;
    // A group this topology does not have would make the partition a silent no-op.
    bool has_clients = config_.topology.source == "clients";
    if (source_valid && ((group == PartitionGroup::Broker && has_clients) ||
                         (group == PartitionGroup::Clients && !has_clients && !producer_clients))) {
      error(where, item_path,
            fmt::format("found \"{}\", but topology.source is \"{}\", which has no {}; allowed: a group that exists "
                        "in this topology",
                        names[i], config_.topology.source, names[i]));
      continue;
    }
    chosen.push_back(group);
  }
  if (chosen.size() != 2) return false;
  if (chosen[0] == chosen[1]) {
    error(where_in(entry, key), path, fmt::format("found the same group twice; allowed: {}", allowed));
    return false;
  }
  first = chosen[0];
  second = chosen[1];
  return true;
}

void Loader::check_expectation(const std::string& key, const std::string& value, Where where, const Where& key_where) {
  std::string path = "expect." + key;
  if (!lethe::expectation_kind(key)) {
    const std::vector<std::string>& names = lethe::expectation_field_names();
    std::string near = text::nearest(key, names);
    error(key_where, path,
          fmt::format("found an unknown result field{}; allowed: {}",
                      near.empty() ? "" : fmt::format(" (did you mean `{}`?)", near), text::join(names, ", ")));
    return;
  }
  std::string problem;
  std::optional<lethe::Expectation> expectation = parse_expectation(key, value, problem);
  if (!expectation) {
    error(where, path, fmt::format("found \"{}\" ({}); allowed: {}", value, problem, kExpectationAllowed));
    return;
  }
  expectation->line = where.set_text.empty() ? where.line : 0;
  expectation->column = where.set_text.empty() ? where.column : 0;
  auto same = std::find_if(config_.expect.begin(), config_.expect.end(),
                           [&](const lethe::Expectation& e) { return e.key == key; });
  if (same != config_.expect.end() && where.set_text.empty()) {
    // Both "duplicates.expired" = ... and [expect.duplicates] expired = ...: TOML allows it, we do not.
    error(where, path,
          fmt::format("found a second expectation for this field (the first is on line {}); allowed: "
                      "one per field",
                      same->line));
    return;
  }
  if (same != config_.expect.end()) {
    *same = *expectation;
  } else {
    config_.expect.push_back(*expectation);
  }
  config_.positions[path] = lethe::SourcePosition{expectation->line, expectation->column};
}

void Loader::read_expect(const Table& root) {
  const toml::node* node = get(root, "expect");
  if (node != nullptr && !node->is_table()) {
    error(where_node("expect", node), "expect",
          fmt::format("found {}; allowed: a table, written [expect]", describe(*node)));
  }
  struct Leaf {
    std::string key;
    const toml::node* value;
    Where where;
    Where key_where;
  };
  std::vector<Leaf> leaves;
  // Keys may be written quoted ("duplicates.expired" = ...) or as nested tables/dotted keys: flatten both.
  std::function<void(const toml::table&, const std::string&)> flatten = [&](const toml::table& table,
                                                                            const std::string& prefix) {
    for (auto&& [key, value] : table) {
      std::string flat = join_path(prefix, key.str());
      if (value.is_table()) {
        flatten(*value.as_table(), flat);
      } else {
        leaves.push_back({flat, &value, where_node("expect." + flat, &value), where_key("expect." + flat, key)});
      }
    }
  };
  if (node != nullptr && node->is_table()) flatten(*node->as_table(), "");
  std::stable_sort(leaves.begin(), leaves.end(), [](const Leaf& a, const Leaf& b) {
    return std::pair{a.where.line, a.where.column} < std::pair{b.where.line, b.where.column};
  });
  for (const Leaf& leaf : leaves) {
    if (leaf.key == "defaults") {  // not a result field: whether lethe's default invariants are checked
      if (!leaf.value->is_boolean()) {
        error(leaf.where, "expect.defaults", fmt::format("found {}; allowed: true or false", describe(*leaf.value)));
        continue;
      }
      config_.expect_defaults = leaf.value->as_boolean()->get();
      continue;
    }
    if (!leaf.value->is_string()) {
      error(leaf.where, "expect." + leaf.key,
            fmt::format("found {}; allowed: a string {}", describe(*leaf.value), kExpectationAllowed));
      continue;
    }
    check_expectation(leaf.key, leaf.value->as_string()->get(), leaf.where, leaf.key_where);
  }
  for (const ExpectOverride& set : expect_overrides_) {
    Where where{0, 0, set.set_text};
    if (set.key == "defaults") {
      if (set.value != "true" && set.value != "false") {
        error(where, "expect.defaults", fmt::format("found \"{}\"; allowed: true or false", set.value));
        continue;
      }
      config_.expect_defaults = set.value == "true";
      continue;
    }
    check_expectation(set.key, set.value, where, where);
  }
}

// ---------------------------------------------------------------- [explore]

namespace {
constexpr char kExploreAllowed[] =
    "an integer range \"LOW..HIGH\" (\"1..16\"), a real range (\"0..0.2\"), or an array of values "
    "([\"exponential(mean=10s)\", \"off\"]), each a value the key takes with --set";

std::optional<std::int64_t> whole_number(std::string_view text) {
  std::optional<double> number = text::parse_number(text);
  if (!number || text.find_first_of(".eE") != std::string_view::npos) return std::nullopt;
  if (!(*number >= -9.0e18 && *number <= 9.0e18)) return std::nullopt;
  return static_cast<std::int64_t>(*number);
}

// A choice written as a TOML string, integer, float or boolean, as --set would take it.
std::optional<std::string> choice_text(const toml::node& item) {
  if (item.is_string()) return item.as_string()->get();
  if (item.is_integer()) return fmt::format("{}", item.as_integer()->get());
  if (item.is_floating_point()) return text::format_number(item.as_floating_point()->get());
  if (item.is_boolean()) return std::string(item.as_boolean()->get() ? "true" : "false");
  return std::nullopt;
}
}  // namespace

std::optional<lethe::ExploreEntry> Loader::read_explore_entry(const std::string& key, const toml::node& value) {
  lethe::ExploreEntry entry;
  entry.key = key;
  if (const toml::array* array = value.as_array()) {
    entry.kind = lethe::ExploreEntry::Kind::Choices;
    for (std::size_t i = 0; i < array->size(); ++i) {
      std::optional<std::string> choice = choice_text(*array->get(i));
      if (!choice || choice->empty()) return std::nullopt;
      entry.choices.push_back(*choice);
      entry.written += (i == 0 ? "" : ", ") + *choice;
    }
    entry.written = "[" + entry.written + "]";
    return entry.choices.empty() ? std::nullopt : std::optional(entry);
  }
  if (!value.is_string()) return std::nullopt;
  entry.written = value.as_string()->get();
  const std::size_t dots = entry.written.find("..");
  if (dots == std::string::npos) return std::nullopt;
  const std::string low(lethe::text::trim(std::string_view(entry.written).substr(0, dots)));
  const std::string high(lethe::text::trim(std::string_view(entry.written).substr(dots + 2)));
  if (auto low_int = whole_number(low), high_int = whole_number(high); low_int && high_int) {
    if (*low_int > *high_int) return std::nullopt;
    entry.kind = lethe::ExploreEntry::Kind::Integers;
    entry.integer_low = *low_int;
    entry.integer_high = *high_int;
    return entry;
  }
  std::optional<double> low_real = text::parse_number(low);
  std::optional<double> high_real = text::parse_number(high);
  if (!low_real || !high_real || !(*low_real <= *high_real)) return std::nullopt;
  entry.kind = lethe::ExploreEntry::Kind::Reals;
  entry.real_low = *low_real;
  entry.real_high = *high_real;
  return entry;
}

void Loader::read_explore(const Table& root) {
  const toml::node* node = get(root, "explore");
  if (node == nullptr) return;
  if (!node->is_table()) {
    error(where_node("explore", node), "explore",
          fmt::format("found {}; allowed: a table, written [explore]", describe(*node)));
    return;
  }
  for (auto&& [key, value] : *node->as_table()) {
    const std::string name(key.str());
    const std::string path = "explore." + name;
    const Where where = where_node(path, &value);
    if (name == "swarm") {
      if (!value.is_boolean()) {
        error(where, path, fmt::format("found {}; allowed: true or false", describe(value)));
        continue;
      }
      config_.explore.swarm = value.as_boolean()->get();
      config_.explore.swarm_line = where.line;
      continue;
    }
    if (name.find('.') == std::string::npos) {
      error(where_key(path, key), path,
            "found a key that is not a scenario key; allowed: `swarm`, or a dotted scenario key written in quotes "
            "(\"topology.consumers\" = \"1..16\")");
      continue;
    }
    std::optional<lethe::ExploreEntry> entry = read_explore_entry(name, value);
    if (!entry) {
      error(where, path, fmt::format("found {}; allowed: {}", describe(value), kExploreAllowed));
      continue;
    }
    entry->line = where.line;
    entry->column = where.column;
    config_.explore.entries.push_back(std::move(*entry));
  }
  // toml++ keeps a table's keys sorted by name; the draw and its messages follow the file.
  std::stable_sort(config_.explore.entries.begin(), config_.explore.entries.end(),
                   [](const lethe::ExploreEntry& a, const lethe::ExploreEntry& b) {
                     return std::pair{a.line, a.column} < std::pair{b.line, b.column};
                   });
}

// Every value an entry can give (scenario/explore.hpp explore_values_to_check), loaded as the drawn configuration
// will be: the file with --set KEY=VALUE first, then the command line's overrides.
void Loader::check_explore_values(std::string_view toml_text, const std::vector<std::string>& overrides) {
  for (const lethe::ExploreEntry& entry : config_.explore.entries) {
    for (const std::string& value : scenario::explore_values_to_check(entry)) {
      std::vector<std::string> with_value{entry.key + "=" + value};
      with_value.insert(with_value.end(), overrides.begin(), overrides.end());
      LoadResult loaded = Loader(display_name_, base_dir_, false).load(toml_text, with_value);
      const auto* errors = std::get_if<std::vector<LoadError>>(&loaded);
      if (errors == nullptr || errors->empty()) continue;
      // The first message, without its "--set KEY=VALUE: " origin (the entry's position replaces it).
      std::string why = errors->front().message;
      const std::string origin = "--set " + with_value.front() + ": ";
      if (why.rfind(origin, 0) == 0) why.erase(0, origin.size());
      error(Where{entry.line, entry.column, ""}, "explore.\"" + entry.key + "\"",
            fmt::format("found {}, whose value {} does not load ({}); allowed: {}", entry.written, value, why,
                        kExploreAllowed));
      break;
    }
  }
}

void Loader::check_unknown_keys() {
  // Every key the schema knows, by table, for suggestions across tables.
  std::vector<std::string> all_keys;
  for (const auto& [schema, keys] : known_keys_) {
    for (const std::string& key : keys) all_keys.push_back(join_path(schema, key));
  }
  for (const Table& table : tables_to_check_) {
    const std::vector<std::string>& known = known_keys_[table.schema];
    for (auto&& [key, value] : *table.node) {
      const std::string name(key.str());
      if (std::find(known.begin(), known.end(), name) != known.end()) continue;
      std::string path = join_path(table.path, name);
      if (!valid(path)) continue;  // reported already (a key another protocol kind reads)
      // A one-letter typo in this table, else the exact key of another table ("ttl" under [store], "seeds" at
      // the top), else a bigger typo in this table, else a one-letter typo of another table's key.
      std::string same_table = text::nearest(name, known);
      std::string exact_elsewhere;
      std::string near_elsewhere;
      for (const std::string& candidate : all_keys) {
        if (name.size() > text::kMaxSuggestedWordLength) break;
        if (candidate.find('.') == std::string::npos) continue;
        std::string_view leaf = std::string_view(candidate).substr(candidate.rfind('.') + 1);
        // The distance is at least the difference in length: only leaves within one can be 0 or 1 away.
        if (leaf.size() + 1 < name.size() || name.size() + 1 < leaf.size()) continue;
        std::size_t distance = text::edit_distance(leaf, name);
        if (distance == 0 && exact_elsewhere.empty()) exact_elsewhere = candidate;
        if (distance == 1 && name.size() > 4 && near_elsewhere.empty()) near_elsewhere = candidate;
      }
      std::string suggestion = near_elsewhere;
      if (!same_table.empty()) suggestion = same_table;
      if (!exact_elsewhere.empty() && (same_table.empty() || text::edit_distance(same_table, name) > 1)) {
        suggestion = exact_elsewhere;
      }
      std::string hint = suggestion.empty() ? "" : fmt::format(" (did you mean `{}`?)", suggestion);
      std::string what = table.schema.empty() && value.is_table() ? "unknown table" : "unknown key";
      std::string allowed = table.schema.empty()
                                ? "allowed tables: " + text::join(known, ", ")
                                : fmt::format("allowed in [{}]: {}", table.schema, text::join(known, ", "));
      error(where_key(path, key), path, fmt::format("found an {}{}; {}", what, hint, allowed));
    }
  }
}

LoadResult Loader::load(std::string_view toml_text, const std::vector<std::string>& overrides) {
  // Limits toml++ cannot be trusted with (scenario/input_check.hpp), before it sees the text.
  if (std::optional<InputProblem> problem = check_scenario_input(toml_text)) {
    errors_.push_back({Where{problem->line, problem->column, ""}, problem->key + ": " + problem->text});
    return finished_errors();
  }
  toml::table root;
  try {
    root = toml::parse(toml_text, display_name_);
  } catch (const toml::parse_error& failure) {
    Where where{static_cast<int>(failure.source().begin.line), static_cast<int>(failure.source().begin.column), ""};
    if (where.line == 0) where = Where{};
    errors_.push_back({where, fmt::format("toml: found a TOML syntax error: {}; allowed: TOML 1.0 (https://toml.io)",
                                          failure.description())});
    return finished_errors();
  }
  config_.source_name = display_name_;
  for (const std::string& argument : overrides) apply_override(root, argument);

  root_ = Table{&root, "", ""};
  tables_to_check_.push_back(root_);
  schema::visit_schema(*this, config_);
  read_explore(root_);
  check_unknown_keys();
  if (errors_.empty() && check_explore_) check_explore_values(toml_text, overrides);
  if (!errors_.empty()) return finished_errors();
  return std::move(config_);
}

}  // namespace

const std::vector<std::string>& expectation_keys() { return lethe::expectation_field_names(); }

LoadResult load_scenario_text(std::string_view toml_text, const std::string& display_name,
                              const std::filesystem::path& base_dir, const std::vector<std::string>& overrides,
                              bool check_explore) {
  try {
    Loader loader(display_name, base_dir, check_explore);
    return loader.load(toml_text, overrides);
  } catch (const std::exception& failure) {
    // Not expected (every input error is reported above); never let it escape as a crash.
    return std::vector<LoadError>{
        LoadError{fmt::format("{}:1:1: scenario: internal error while loading: {}", display_name, failure.what())}};
  }
}

LoadResult load_scenario(const std::filesystem::path& file, const std::vector<std::string>& overrides,
                         bool check_explore) {
  std::string display_name = file.string();
  sim::FileReadFailure failure;
  std::optional<std::string> content = sim::read_regular_file(file, kMaxScenarioBytes, failure);
  if (!content) {
    using Failure = sim::FileReadFailure::Kind;
    std::string found = failure.kind == Failure::Missing || failure.kind == Failure::Unreadable
                            ? "no readable file; allowed: a readable scenario file (.toml)"
                            : sim::describe(failure, kMaxScenarioBytes) + "; allowed: a scenario file (.toml)";
    return std::vector<LoadError>{LoadError{fmt::format("{}:1:1: scenario: found {}", display_name, found)}};
  }
  std::filesystem::path base_dir = file.parent_path();
  if (base_dir.empty()) base_dir = ".";
  return load_scenario_text(*content, display_name, base_dir, overrides, check_explore);
}

}  // namespace scenario
