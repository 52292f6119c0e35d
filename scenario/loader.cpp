// Scenario loading: TOML -> lethe::ScenarioConfig, with every check of docs/scenarios.md.
//
// How it works: toml++ parses the text into a tree whose nodes carry their
// line and column; --set overrides are written into that tree as strings
// (remembering which paths they own); then one pass walks the table of keys
// (scenario/schema.hpp), key by key. Each read registers the key as known,
// converts and range-checks the value and records its position. Unknown keys
// are found at the end by comparing each table with the keys read from it, so
// the schema lives in one place: the table. Cross-field rules run where the
// table places them, after the keys they relate. The Loader and its files:
// scenario/loader_impl.hpp.
#include "scenario/loader_impl.hpp"

#include <algorithm>
#include <exception>

#include "scenario/input_check.hpp"
#include "sim/regular_file.hpp"

namespace scenario::detail {

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
  apply_preset(root);

  root_ = Table{&root, "", ""};
  tables_to_check_.push_back(root_);
  read_schema();
  read_explore(root_);
  check_unknown_keys();
  if (errors_.empty() && check_explore_) check_explore_values(toml_text, overrides);
  if (!errors_.empty()) return finished_errors();
  return std::move(config_);
}

}  // namespace scenario::detail

namespace scenario {

const std::vector<std::string>& expectation_keys() { return lethe::expectation_field_names(); }

LoadResult load_scenario_text(std::string_view toml_text, const std::string& display_name,
                              const std::filesystem::path& base_dir, const std::vector<std::string>& overrides,
                              bool check_explore) {
  try {
    detail::Loader loader(display_name, base_dir, check_explore);
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
