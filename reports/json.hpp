// reports/json.hpp — RunResult as JSON, with the field names of docs/results.md.
//
// One object per seed (JSON lines for `--json`). Dotted result names are
// nested objects: "duplicates.expired" is {"duplicates": {"expired": n}}.
// Renders only: runs nothing.
#pragma once

#include <nlohmann/json.hpp>

#include "core/result.hpp"

namespace reports {

nlohmann::ordered_json to_json(const lethe::RunResult& result);
// Parses what to_json wrote (for merging shards and reading results back).
lethe::RunResult result_from_json(const nlohmann::json& json);

}  // namespace reports
