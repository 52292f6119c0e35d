// scenario/explore.hpp — a seed's configuration drawn from a scenario's [explore] ranges (docs/explore.md).
//
// [explore] names scenario keys and what each seed draws them from: an integer range "1..16", a real range
// "0..0.2", or a list of values. draw_configuration() draws one value per entry, each from its own stream
// ("explore:KEY" of the seed, lethe's generator: adding an entry never shifts another's draw), and, with
// `swarm` (the default), switches fault kinds off as swarm testing does (world/faults.hpp's
// draw_fault_switches, stream "explore.swarm"). load_drawn() loads the file with each drawn value as
// `--set KEY=VALUE` (before the command line's own --set, which win), so the one table of keys validates it,
// then removes the faults of the kinds switched off. The result is a plain configuration:
// scenario::render_scenario_toml() writes it as a file that `lethe run FILE --seed N` replays exactly.
//
// Steering: each entry's values fall in bins (a choice each; a range in up to kRangeBins equal parts). A bin
// is drawn with probability proportional to its weight times its width, then a value uniformly inside it;
// with every weight equal that is a uniform draw over the range. Without weights (nullptr) the draw is a pure
// function of ([explore], seed); `lethe run` draws so.
//
// Does not: run anything, or decide weights (runner/explore.cpp does, from the coverage of earlier seeds).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "scenario/loader.hpp"
#include "world/faults.hpp"

namespace scenario {

inline constexpr std::size_t kRangeBins = 4;

// The bins of an entry: one per choice; min(kRangeBins, values) for an integer range; kRangeBins for a real one.
std::size_t bin_count(const lethe::ExploreEntry& entry);
// A bin's name for the coverage table: the choice, or its part of the range ("1..4", "0..0.05").
std::string bin_name(const lethe::ExploreEntry& entry, std::size_t bin);

// The values of an entry the loader loads once each to check them: every choice; every value of an integer range
// of at most kCheckEveryValue values; for a longer one its ends, the kCheckNearEnds values next to each end and
// every bin edge (where rules of lethe's keys change: 0, 1, a cap); for a real range its ends (first, so an end
// past what the key allows is the value reported), bin edges and bin middles. Text as --set writes it.
inline constexpr std::uint64_t kCheckEveryValue = 256;
inline constexpr std::uint64_t kCheckNearEnds = 64;
std::vector<std::string> explore_values_to_check(const lethe::ExploreEntry& entry);

// weights[entry][bin], each >= 1; empty = every weight 1.
using ExploreWeights = std::vector<std::vector<std::uint32_t>>;

struct Draw {
  std::vector<std::string> overrides;  // "KEY=VALUE", one per [explore] entry, in file order
  std::vector<std::size_t> bins;       // the bin each entry's value fell in
  lethe::FaultSwitches switches;       // every kind on unless [explore] swarm
  std::vector<std::string> swarm_off;  // filled by load_drawn: kinds the configuration had and this seed has off
};

// REQUIRES: weights empty or shaped as bin_count() says.
Draw draw_configuration(const lethe::ExploreSection& explore, std::uint64_t seed, const ExploreWeights& weights = {});

// The seed's configuration: FILE loaded with the draw's overrides, then `sets`, then the swarm's switches
// applied (the faults of a kind that is off removed). Errors as load_scenario gives them; a drawn combination
// that breaks a cross-field rule is reported under its --set KEY=VALUE.
LoadResult load_drawn(const std::filesystem::path& file, const std::vector<std::string>& sets, Draw& draw);

// The draw as the result's `drawn` field and `lethe run` print it: "KEY=VALUE" each, then "swarm_off=a,b".
std::vector<std::string> describe(const Draw& draw);

// True when the file has an [explore] table that draws anything.
inline bool explores(const lethe::ScenarioConfig& config) {
  return !config.explore.entries.empty() || config.explore.swarm_line != 0;
}

}  // namespace scenario
