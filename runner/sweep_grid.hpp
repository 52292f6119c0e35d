// runner/sweep_grid.hpp — a sweep's identity (what sweep.json records) and its grid of cells.
//
// Internal to `lethe sweep` / `lethe merge` (runner/sweep.hpp is the interface): the identity is what makes two
// folders hold the same sweep; the grid is the row-major product of the --vary axes. sweep.json is written first
// and read back by --resume and merge.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config.hpp"
#include "runner/sweep.hpp"

namespace runner::sweep_detail {

inline constexpr const char* kFormat = "lethe-sweep/1";
inline constexpr const char* kResultsName = "results.jsonl";
inline constexpr const char* kSweepName = "sweep.json";

// "k1=v1, k2=v2"
std::string params_text(const Params& params);
nlohmann::ordered_json params_json(const Params& params);
// The whole file, or nullopt when it cannot be read.
std::optional<std::string> read_text(const std::filesystem::path& path);

struct CellDefinition {
  Params params;
  std::int64_t seeds = 0;
  std::size_t processors = 1;
};

struct Identity {
  std::string scenario_file;
  std::string scenario_name;
  std::string scenario_text;
  std::vector<std::string> sets;
  std::vector<VarySpec> vary;
  std::int64_t seeds_option = 0;  // --seeds, 0 = each cell's run.seeds
  std::vector<CellDefinition> cells;
};

// What makes two folders hold the same sweep (not the file path, the shard or the command lines).
std::optional<std::string> identity_difference(const Identity& a, const Identity& b);
nlohmann::ordered_json sweep_json(const Identity& id, const Shard& shard, const std::string& command_line);
// Reads sweep.json back. Throws nlohmann::json::exception on a malformed file.
Identity identity_from_json(const nlohmann::ordered_json& j, Shard& shard);
// The params of every cell of a grid, row-major over the axes.
std::vector<Params> grid_params(const std::vector<VarySpec>& vary);
// The same key/value pairs, in any order.
bool same_params(const Params& a, const Params& b);
// The canonical number of each cell's first (cell, seed) pair; `total` gets the number of pairs.
std::vector<std::size_t> first_pairs(const Identity& id, std::size_t& total);
// Builds the identity and every cell's config; prints the errors and returns false if anything is invalid.
bool build_grid(const SweepSpec& spec, Identity& id, std::vector<lethe::ScenarioConfig>& configs,
                std::ostream& messages);
// DIR/sweep.json as JSON and as an identity; prints why and returns nullopt when it is missing or malformed.
std::optional<nlohmann::ordered_json> read_sweep_json(const std::filesystem::path& dir, Identity& id, Shard& shard,
                                                       std::ostream& messages);
// `out`, or std::cerr when null.
std::ostream& messages_of(std::ostream* out);

}  // namespace runner::sweep_detail
