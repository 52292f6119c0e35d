// sim/timer_queue.hpp — the kernel's timer queue: fiber wake-ups and callback timers in (time, sequence) order.
//
// A binary heap plus "lanes", FIFO queues of timers pushed with one same delay (time - now at the push: an RPC
// timeout, a constant latency, a TTL). Virtual time never goes back and sequence numbers grow, so each lane is
// sorted by (time, sequence) as it is filled, and the earliest timer is the least of the heap's top and the
// lanes' fronts: the same order as one heap, at O(1) per push and pop for the common delays (a heap holding 100k
// TTL timers made every RPC pay two ~17-level sifts). A delay gets a lane the second time it is seen among the
// last kRecentDelays heap pushes (random delays never repeat); an empty lane is reassigned when every lane is
// taken.
//
// Contract: timers pop in (time, sequence) order, ties by push order. The queue knows nothing of fibers: a fiber
// wake-up is an opaque (slot, wait id) pair; the owner says when one went stale (its wait ended another way) and
// which ones are stale when the queue compacts. Owned by one sim::Simulation; not thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "sim/time.hpp"

namespace sim {

class TimerQueue {
 public:
  // The slot of a callback timer (a fiber wake-up carries its fiber's slot).
  static constexpr std::uint32_t kCallback = UINT32_MAX;

  // Trivially copyable (32 bytes): a fiber wake-up (slot != kCallback, payload = its wait id) or a callback
  // (slot == kCallback, payload = the callback's index, for take_callback()).
  struct Timer {
    Time time;
    std::uint64_t sequence;
    std::uint64_t payload;
    std::uint32_t slot;
  };

  TimerQueue();

  // REQUIRES: time >= now (the caller's current instant; the lanes key on time - now).
  void push_wakeup(Time now, Time time, std::uint32_t slot, std::uint64_t wait_id);
  void push_callback(Time now, Time time, std::function<void()> fn);
  // A sequence number taken now for a callback pushed later with push_callback_sequenced().
  std::uint64_t take_sequence() { return sequence_++; }
  // As push_callback, ordered among the timers due at `time` by `sequence` (from take_sequence()), as if it had
  // been pushed when the sequence was taken. REQUIRES: time >= now; each sequence pushed at most once.
  void push_callback_sequenced(Time time, std::uint64_t sequence, std::function<void()> fn);

  bool empty() const { return count_ == 0; }
  std::size_t size() const { return count_; }
  // The earliest timer, or nullptr when none is pending. Valid until the next push or pop.
  const Timer* earliest() const;
  // REQUIRES: !empty(). Removes and returns the earliest timer.
  Timer pop();
  // The callback of a popped callback timer; its index is reused. REQUIRES: timer.slot == kCallback.
  std::function<void()> take_callback(const Timer& timer);

  // Stale wake-ups: fiber timers whose wait already ended. The owner counts them in (one per wait that ended
  // with its timer still queued) and out (one per such timer popped); past a threshold it compacts.
  void note_stale() { ++stale_; }
  void popped_stale() {
    if (stale_ > 0) --stale_;
  }
  bool worth_compacting() const { return stale_ > 1024 && stale_ * 2 > count_; }
  // Drops every fiber wake-up for which is_stale(timer) is true; keeps the order of the rest.
  void compact(const std::function<bool(const Timer&)>& is_stale);

 private:
  struct Later {
    bool operator()(const Timer& x, const Timer& y) const {
      return x.time != y.time ? x.time > y.time : x.sequence > y.sequence;
    }
  };
  struct Lane {
    Duration delay = 0;
    std::vector<Timer> items;  // [head, end) pending, sorted
    std::size_t head = 0;
    bool empty() const { return head == items.size(); }
    const Timer& front() const { return items[head]; }
    void pop_front();
  };
  static constexpr std::size_t kMaxLanes = 8;
  // Timers a vector keeps room for after it drained (2 MiB); past it, a drained burst's capacity is given back.
  static constexpr std::size_t kKeptCapacity = 65536;
  static constexpr std::size_t kRecentDelays = 8;
  static constexpr std::size_t kHeapSource = SIZE_MAX - 1;
  static constexpr std::size_t kNoSource = SIZE_MAX;

  void insert(Time now, const Timer& timer);
  std::uint32_t store_callback(std::function<void()> fn);  // its index, for Timer::payload
  // Where the earliest pending timer is: a lane index, kHeapSource, or kNoSource when none is pending.
  std::size_t earliest_source() const;
  void activate_lane(std::size_t lane);  // REQUIRES: the lane just got its first timer
  void reorder_lanes();                  // after compact()

  std::vector<Timer> heap_;  // binary heap with Later (timers not in a lane)
  std::vector<Lane> lanes_;  // at most kMaxLanes
  std::array<Duration, kRecentDelays> recent_delays_{};
  std::size_t recent_next_ = 0;
  std::size_t count_ = 0;  // heap + lanes
  std::uint64_t sequence_ = 0;
  // The non-empty lanes, ordered by their fronts (earliest first): the earliest timer is the heap's top or
  // lanes_[active_lanes_[0]].front(), found in O(1); a pop moves its lane back past the lanes now earlier.
  std::array<std::uint8_t, kMaxLanes> active_lanes_{};
  std::size_t active_count_ = 0;
  std::size_t stale_ = 0;
  std::vector<std::function<void()>> callbacks_;
  std::vector<std::uint32_t> free_callbacks_;
};

inline std::size_t TimerQueue::earliest_source() const {
  if (active_count_ == 0) return heap_.empty() ? kNoSource : kHeapSource;
  const std::size_t lane = active_lanes_[0];
  if (!heap_.empty() && Later{}(lanes_[lane].front(), heap_.front())) return kHeapSource;
  return lane;
}

inline const TimerQueue::Timer* TimerQueue::earliest() const {
  const std::size_t source = earliest_source();
  if (source == kNoSource) return nullptr;
  return source == kHeapSource ? &heap_.front() : &lanes_[source].front();
}

}  // namespace sim
