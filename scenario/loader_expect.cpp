// The scenario loader's [expect]: one comparison per result field, from the file and from --set expect.KEY=...
// (scenario/loader_impl.hpp).
#include "scenario/loader_impl.hpp"

#include <algorithm>

namespace scenario::detail {

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

}  // namespace scenario::detail
