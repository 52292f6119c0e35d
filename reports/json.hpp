// reports/json.hpp — RunResult as JSON, with the field names of docs/results.md.
//
// One object per seed (JSON lines for `--json`). The keys and their order come from lethe::result_fields():
// every field that is not an extension in table order, then the extensions in table order. Fields with parts
// are nested objects: "duplicates.expired" is {"duplicates": {"expired": n}}.
// Renders only: runs nothing.
#pragma once

#include <nlohmann/json.hpp>

#include "core/result.hpp"

namespace reports {

nlohmann::ordered_json to_json(const lethe::RunResult& result);

// The JSON Schema (draft 2020-12) of what to_json writes, built from lethe::result_fields(): one property per
// row, its type from the row's kind (counts and times integers, ratios numbers, the hash 16 hex digits), every
// row required but the Words ones (left out when empty), no other key. docs/result.schema.json is this,
// dump(2); a test fails when the committed file differs.
nlohmann::ordered_json result_schema();
// Parses what to_json wrote (for merging shards and reading results back); a field left out keeps its default.
lethe::RunResult result_from_json(const nlohmann::json& json);

// A Quantiles value as {"p50", "p99", "max", "count"} (lethe::kQuantileParts), and back. `required`: a part
// left out throws nlohmann::json::out_of_range instead of reading as 0.
nlohmann::ordered_json quantiles_json(const lethe::Quantiles& quantiles);
lethe::Quantiles quantiles_from_json(const nlohmann::json& json, bool required);

}  // namespace reports
