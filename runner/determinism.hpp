// runner/determinism.hpp — `lethe run --check-determinism`: the same seed run twice, compared.
//
// Both runs keep every line exchanged with external nodes (WorldOptions::external_lines). Same trace hash: the
// run is reproducible (exit 0). Otherwise the first line where a node's behaviour differed is named (node,
// incarnation, turn, the two lines); when every line agrees, the first differing trace record is (exit 1 either
// way). A bad node or lethe's error in either run exits as `lethe run` would (2, 3).
// Does not: prove determinism; two equal runs only fail to show a difference.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.hpp"

namespace runner {

int check_determinism(const lethe::ScenarioConfig& config, std::uint64_t seed, const std::string& file,
                      const std::vector<std::string>& sets);

}  // namespace runner
