#include "world/observations.hpp"

#include <fmt/format.h>

namespace lethe {

void Observations::merge_counted() {
  for (int p = 0; p < kCrashPointCount; ++p) {
    const char* name = to_string(static_cast<CrashPoint>(p));
    const auto index = static_cast<std::size_t>(p);
    if (crash_points_reached_[index] > 0) cover(fmt::format("crash_point.{}.reached", name), crash_points_reached_[index]);
    if (crash_points_fired_[index] > 0) cover(fmt::format("crash_point.{}.fired", name), crash_points_fired_[index]);
  }
  for (std::size_t b = 0; b < decisions_by_basis_.size(); ++b) {
    if (decisions_by_basis_[b] > 0) cover(fmt::format("decision.{}", to_string(static_cast<Basis>(b))), decisions_by_basis_[b]);
  }
}

}  // namespace lethe
