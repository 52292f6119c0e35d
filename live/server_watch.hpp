// live/server_watch.hpp — whether the server still answers a live run, and how long a worker waits before it
// tries to reconnect.
//
// ServerWatch: the workers report every answer of the server (a reply, an error the server sent, a new
// connection) and every failure that was not injected (a refused or timed-out connection, a broken socket, a
// client-side timeout). The server is gone when, since its last answer, failures alone came and they span at
// least `limit` from the first to the latest: a run that merely sends nothing for a while (workers busy in their
// effects) never declares the server gone, and one answer resets the streak. Thread-safe. Times are the run's
// (nanoseconds since it began), passed in by the caller.
//
// reconnect_delay(n): the wait before the next connection attempt after n failed ones in a row: none after none,
// then kFirstReconnectDelay doubling up to kMaxReconnectDelay. Against a dead server each worker tries at most
// about twice a second (no busy loop); a server that comes back is found within kMaxReconnectDelay.
//
// Does not: read a clock, sleep, or stop the run (live/run.cpp asks gone() and stops it).
#pragma once

#include <algorithm>
#include <cstdint>
#include <fmt/format.h>
#include <mutex>
#include <optional>
#include <string>

#include "sim/time.hpp"

namespace live {

inline constexpr sim::Duration kFirstReconnectDelay = 5 * sim::kMillisecond;
inline constexpr sim::Duration kMaxReconnectDelay = 500 * sim::kMillisecond;

inline sim::Duration reconnect_delay(std::uint64_t failed_attempts) {
  if (failed_attempts == 0) return 0;
  const std::uint64_t doublings = std::min<std::uint64_t>(failed_attempts - 1, 16);
  return std::min(kMaxReconnectDelay, kFirstReconnectDelay << doublings);
}

class ServerWatch {
 public:
  void answered() {
    std::lock_guard<std::mutex> lock(mutex_);
    failing_since_.reset();
    failures_ = 0;
  }
  void failed(sim::Time now, const std::string& what) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failing_since_) failing_since_ = now;
    latest_failure_ = now;
    ++failures_;
    what_ = what;
  }
  // Why the server counts as gone (the span, the failures, the latest one), or nullopt while it does not.
  std::optional<std::string> gone(sim::Duration limit) const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failing_since_ || latest_failure_ - *failing_since_ < limit) return std::nullopt;
    return fmt::format("the server answered nothing for {:.1f}s ({} failed operations and connection attempts in a "
                       "row; the latest: {})",
                       static_cast<double>(latest_failure_ - *failing_since_) / 1e9, failures_, what_);
  }

 private:
  mutable std::mutex mutex_;
  std::optional<sim::Time> failing_since_;
  sim::Time latest_failure_ = 0;
  std::uint64_t failures_ = 0;
  std::string what_;
};

}  // namespace live
