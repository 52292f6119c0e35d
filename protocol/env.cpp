#include "protocol/env.hpp"

namespace lethe {

const char* to_string(CrashPoint point) {
  switch (point) {
    case CrashPoint::AfterStartBeforeEffect: return "after_start_before_effect";
    case CrashPoint::AfterEffectBeforeComplete: return "after_effect_before_complete";
    case CrashPoint::AfterCompleteBeforeAck: return "after_complete_before_ack";
  }
  return "?";
}

const char* to_string(Basis basis) {
  switch (basis) {
    case Basis::Unprotected: return "unprotected";
    case Basis::Absent: return "absent";
    case Basis::Completed: return "completed";
    case Basis::ExpiredCompleted: return "expired_completed";
    case Basis::InFlightRecent: return "in_flight_recent";
    case Basis::StaleTakeover: return "stale_takeover";
    case Basis::TakeoverLost: return "takeover_lost";
    case Basis::MaxWaitProcess: return "max_wait_process";
    case Basis::MaxWaitError: return "max_wait_error";
    case Basis::StoreUnavailable: return "store_unavailable";
    case Basis::InboxDuplicate: return "inbox_duplicate";
    case Basis::WeakStore: return "weak_store";
  }
  return "?";
}

const char* to_string(Decision decision) {
  switch (decision) {
    case Decision::Process: return "process";
    case Decision::Skip: return "skip";
    case Decision::Wait: return "wait";
  }
  return "?";
}

}  // namespace lethe
