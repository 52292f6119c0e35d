// The scenario loader's own types, shared by its files (not installed; the public entry points are
// scenario/loader.hpp). One Loader reads one scenario text: load() parses it, applies the --set overrides, walks
// the table of keys (scenario/schema.hpp) and reports every error with its position.
//
// The files, one responsibility each:
//   loader_positions.cpp   where a key was written, and the finished error list
//   loader_overrides.cpp   --set KEY=VALUE written into the parsed tree, and --set values read as TOML
//   loader_reads.cpp       the generic reads (a string, an integer, a duration ...), each registering its key
//   loader_languages.cpp   the compound value languages (commit, ttl_eviction, poll, backoff, schedule, [expect])
//   loader_rows.cpp        the row forms schema::visit_schema calls (table, key, required_key, array)
//   loader_rules.cpp       the cross-field rules (schema::Rule), and the `between` of a partition or link
//   loader_protocol.cpp    the keys of [protocol] that the chosen kind declares (protocol/registry.hpp)
//   loader_preset.cpp      protocol.preset written out into [protocol] (protocol/presets.hpp)
//   loader_expect.cpp      [expect]
//   loader_explore.cpp     [explore]
//   loader.cpp             load(), the unknown keys, and the public entry points of scenario/loader.hpp
//
// Ownership: a Loader owns the configuration it fills and the nodes parsed from --set values; a Table points into
// the parsed tree, which lives for the whole of load().
#pragma once

#include <fmt/format.h>

#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/config.hpp"
#include "core/result.hpp"
#include "protocol/registry.hpp"
#include "scenario/loader.hpp"
#include "scenario/schema.hpp"
#include "scenario/text.hpp"
#include "scenario/toml.hpp"
#include "sim/time.hpp"

namespace scenario::detail {

using lethe::ScenarioConfig;
using sim::Duration;

using schema::kExpectationAllowed;
using schema::Words;

// [expect] compares a result field by its kind (lethe::result_fields()).
using lethe::FieldKind;

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

// The value a node holds, for messages: "string \"5x\"", "integer 3", "a table".
std::string describe(const toml::node& node);

inline std::string join_path(const std::string& prefix, std::string_view key) {
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

// One component of an override key: a name and an optional [index].
struct KeyPart {
  std::string name;
  std::optional<std::size_t> index;
};

// One --set KEY=VALUE taken apart: the key, the value (unquoted when written in quotes) and the argument as written.
struct Override {
  std::string key;
  std::string value;
  std::string set_text;  // "--set KEY=VALUE"
};
class Loader {
 public:
  Loader(std::string display_name, std::filesystem::path base_dir, bool check_explore = true)
      : display_name_(std::move(display_name)), base_dir_(std::move(base_dir)), check_explore_(check_explore) {}

  LoadResult load(std::string_view toml_text, const std::vector<std::string>& overrides);

  // ---- the row forms schema::visit_schema calls (scenario/schema.hpp; loader_rows.cpp)
  // Walks the whole table into config_, key by key (schema::visit_schema(*this, config_)).
  void read_schema();
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
  // ---- the keys of [protocol] that its kind declares (protocol/registry.hpp; loader_protocol.cpp)
  template <class T, class Type>
  void read_setting(const lethe::SettingKey& key, const Type& type, lethe::StrategySettings& settings);
  void check_unread_keys(const lethe::StrategyInfo& strategy);

  // ---- positions, errors (loader_positions.cpp)
  Where where_node(const std::string& path, const toml::node* node) const;
  Where where_key(const std::string& path, const toml::key& key) const;
  Where where_table(const Table& table) const;
  Where where_in(const Table& table, std::string_view key) const;
  void error(Where where, const std::string& key, std::string message) {
    errors_.push_back({std::move(where), key + ": " + message});
  }
  std::vector<LoadError> finished_errors();

  // ---- overrides (loader_overrides.cpp)
  // One --set argument: checked, then written into the tree as a string (or kept for [expect]); its errors are
  // reported. The apply_override parts below report their own errors and return nullopt / null after one.
  void apply_override(toml::table& root, const std::string& text);
  std::optional<Override> read_override(const std::string& argument);
  // The table named by `part` inside `table` (created when absent); `path` is the part's path.
  toml::table* enter_table(toml::table& table, const KeyPart& part, const std::string& set_text,
                           const std::string& path);
  // The entry part.index of the array of tables `part` (index == size adds one); appends "[i]" to `path`.
  toml::table* enter_entry(toml::table& table, const KeyPart& part, const std::string& set_text, std::string& path);
  // The value written as `last` in `table` (at `path`), remembered as written by the --set.
  void write_override(toml::table& table, const std::string& path, const KeyPart& last, const Override& set);
  void set_error(const std::string& set_text, std::string text) {
    errors_.push_back({Where{0, 0, set_text}, std::move(text)});
  }
  bool is_set(const std::string& path) const { return set_origin_.count(path) != 0; }

  // ---- protocol.preset (loader_preset.cpp): after the overrides, before the table of keys is read, a known
  // preset's kind and keys are written into [protocol] where neither the file nor --set wrote them (and for keys
  // the resulting kind reads only). An unknown or ill-typed preset is left to the `preset` row, which reports it.
  void apply_preset(toml::table& root);
  const toml::node* coerce(const std::string& path, const toml::node* node, Want want);

  // ---- generic reads (loader_reads.cpp; the templates below the class): each registers the key; returns false
  // only when a present value is invalid
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
  bool read_bound(const Table& table, std::string_view key, std::optional<std::uint64_t>& out);
  template <class E>
  bool read_enum(const Table& table, std::string_view key, const Words<E>& words, E& out);
  // A value in a small language: `parse` returns the value or nullopt and an optional reason.
  template <class T>
  bool read_parsed(const Table& table, std::string_view key, const std::string& allowed,
                   const std::function<std::optional<T>(const std::string&, std::string&)>& parse, T& out);
  // Reports a missing required key, unless the table holds a near-typo of it (reported as an unknown key).
  void missing(const Table& table, std::string_view key, Where where, const std::string& what);

  // ---- value languages (loader_languages.cpp)
  std::optional<Duration> duration_in(const std::string& text, Duration min, std::string& problem) const;
  std::optional<sim::Distribution> distribution_in(const std::string& text, bool allow_negative, bool positive_mean,
                                                   std::string& problem) const;
  std::optional<lethe::Commit> parse_commit(const std::string& text, std::string& problem) const;
  std::optional<lethe::TtlEviction> parse_ttl_eviction(const std::string& text, std::string& problem) const;
  std::optional<lethe::Poll> parse_poll(const std::string& text, std::string& problem) const;
  std::optional<lethe::PollRead> parse_poll_read(const std::string& text, std::string& problem) const;
  std::optional<lethe::LocalCache> parse_local_cache(const std::string& text, std::string& problem) const;
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
  bool read_value(const Table& table, std::string_view key, const schema::Probability&, std::optional<double>& out) {
    if (!has(table, key)) {
      get(table, key);  // registers the key
      return true;
    }
    double value = 0.0;
    if (!read_probability(table, key, value)) return false;
    out = value;
    return true;
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
  bool read_value(const Table& table, std::string_view key, const schema::Bound&, std::optional<std::uint64_t>& out) {
    return read_bound(table, key, out);
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
  std::optional<lethe::LocalCache> parse_language(const std::string& text, std::string& problem,
                                                  const lethe::LocalCache&) const {
    return parse_local_cache(text, problem);
  }
  std::optional<lethe::Backoff> parse_language(const std::string& text, std::string& problem,
                                               const lethe::Backoff&) const {
    return parse_backoff(text, problem);
  }
  std::optional<lethe::Schedule> parse_language(const std::string& text, std::string& problem,
                                                const lethe::Schedule&) const {
    return parse_schedule(text, problem);
  }

  // ---- the cross-field rules (schema::Rule), each where the table places it (loader_rules.cpp)
  bool valid(const std::string& path) const { return invalid_.count(path) == 0; }
  // topology.consumers x the nodes per consumer, one fiber stack each, within the address-space limit.
  void check_consumers_fit(const lethe::TopologySection& section);
  void check(schema::Rule rule, const lethe::TopologySection& section);
  void check(schema::Rule rule, const lethe::WorkloadSection& section);
  void check(schema::Rule rule, const lethe::ProtocolSection& section);
  void check(schema::Rule rule, const lethe::SagaSection& section);
  void check(schema::Rule rule, const lethe::RedeliverySection& section);
  void check(schema::Rule rule, const lethe::ExternalSection& section);
  template <class Window>  // lethe::NetworkPartition, lethe::SinkOutage
  void check(schema::Rule rule, const Window& window);

  void read_expect(const Table& root);  // loader_expect.cpp
  // [explore] (scenario/explore.hpp; loader_explore.cpp): its entries into config_.explore, then (when everything
  // else loaded) each value an entry can give loaded as --set KEY=VALUE would be.
  void read_explore(const Table& root);
  std::optional<lethe::ExploreEntry> read_explore_entry(const std::string& key, const toml::node& value);
  void check_explore_values(std::string_view toml_text, const std::vector<std::string>& overrides);
  // `between` of a [[network.partition]] or [[network.link]]. `producer_clients`: the group "clients" is also
  // allowed when the source is not "clients" (the producer sits there).
  bool read_between(const Table& entry, std::string_view key, bool producer_clients, lethe::PartitionGroup& first,
                    lethe::PartitionGroup& second);
  void check_unknown_keys();  // loader.cpp
  void check_expectation(const std::string& key, const std::string& value, Where where, const Where& key_where);

  std::string display_name_;
  std::filesystem::path base_dir_;
  bool check_explore_ = true;  // false in the loads that check one [explore] value (no recursion)
  ScenarioConfig config_;
  std::vector<Error> errors_;
  std::map<std::string, std::string> set_origin_;               // path -> "--set KEY=VALUE" that wrote it
  std::set<std::string> protocol_left_out_;                     // [protocol] keys --set KEY=off left out
  std::string preset_kind_;  // the preset that chose protocol.kind ("" when the file or --set wrote it)
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

// ---- the generic reads that are templates (every file that reads a key instantiates them)

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

}  // namespace scenario::detail
