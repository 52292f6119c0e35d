// world/source_support.hpp — small helpers the simulated sources share (internal to world/).
//
// Does not: hold state.
#pragma once

#include <cstdint>
#include <stdexcept>

#include "sim/distribution.hpp"
#include "sim/network.hpp"
#include "sim/node.hpp"

namespace lethe::source_support {

// Two 32-bit fields in one trace word.
inline std::uint64_t pack(std::uint64_t high, std::uint64_t low) { return (high << 32) | (low & 0xffffffffull); }

// A broker service that answers at the instant a request arrives (draws nothing from its Rng).
inline sim::Service zero_time_service(sim::Node& node) { return sim::Service{&node, sim::Distribution{}, false, 0}; }

}  // namespace lethe::source_support
