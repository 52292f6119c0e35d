#include "protocol/decision.hpp"

#include <cstdint>

namespace lethe {

bool is_stale(sim::Time started_at, sim::Time now, sim::Duration max_processing_time) {
  if (started_at > now) return false;  // negative age (clock skew): recent, never stale
  // 0 <= now - started_at < 2^64: exact in unsigned arithmetic (two's complement wrap-around).
  const std::uint64_t age = static_cast<std::uint64_t>(now) - static_cast<std::uint64_t>(started_at);
  if (max_processing_time <= 0) return true;
  return age >= static_cast<std::uint64_t>(max_processing_time);
}

DecisionAndBasis decide_with_basis(const std::optional<Item>& previous, sim::Time now,
                                   sim::Duration max_processing_time, bool expired_wins) {
  if (!previous.has_value()) return {Decision::Process, Basis::Absent};
  const Item& record = *previous;
  if (expired_wins && record.expired_at(now)) {
    return {Decision::Process, record.completed_at.has_value() ? Basis::ExpiredCompleted : Basis::Absent};
  }
  if (record.completed_at.has_value()) return {Decision::Skip, Basis::Completed};
  if (!record.started_at.has_value()) return {Decision::Process, Basis::Absent};
  if (is_stale(*record.started_at, now, max_processing_time)) return {Decision::Process, Basis::StaleTakeover};
  return {Decision::Wait, Basis::InFlightRecent};
}

DecisionAndBasis decide_with_precedence(const std::optional<Item>& previous, sim::Time now,
                                        sim::Duration max_processing_time, Precedence precedence) {
  if (precedence != Precedence::CompletedFirst) {
    return decide_with_basis(previous, now, max_processing_time, precedence == Precedence::ExpiredFirst);
  }
  if (!previous.has_value()) return {Decision::Process, Basis::Absent};
  const Item& record = *previous;
  if (record.completed_at.has_value()) return {Decision::Skip, Basis::Completed};
  if (!record.started_at.has_value()) return {Decision::Process, Basis::Absent};
  if (record.expired_at(now)) return {Decision::Process, Basis::StaleTakeover};
  if (is_stale(*record.started_at, now, max_processing_time)) return {Decision::Process, Basis::StaleTakeover};
  return {Decision::Wait, Basis::InFlightRecent};
}

Decision decide(const std::optional<Item>& previous, sim::Time now, sim::Duration max_processing_time) {
  return decide_with_basis(previous, now, max_processing_time, /*expired_wins=*/false).decision;
}

}  // namespace lethe
