#include "sim/timer_queue.hpp"

#include <algorithm>
#include <utility>

namespace sim {

TimerQueue::TimerQueue() {
  heap_.reserve(1024);
  lanes_.reserve(kMaxLanes);
  recent_delays_.fill(-1);  // delays are >= 0
}

void TimerQueue::push_wakeup(Time now, Time time, std::uint32_t slot, std::uint64_t wait_id) {
  insert(now, Timer{time, sequence_++, wait_id, slot});
}

std::uint32_t TimerQueue::store_callback(std::function<void()> fn) {
  std::uint32_t index;
  if (!free_callbacks_.empty()) {
    index = free_callbacks_.back();
    free_callbacks_.pop_back();
    callbacks_[index] = std::move(fn);
  } else {
    index = static_cast<std::uint32_t>(callbacks_.size());
    callbacks_.push_back(std::move(fn));
  }
  return index;
}

void TimerQueue::push_callback(Time now, Time time, std::function<void()> fn) {
  const std::uint32_t index = store_callback(std::move(fn));
  insert(now, Timer{time, sequence_++, index, kCallback});
}

void TimerQueue::push_callback_sequenced(Time time, std::uint64_t sequence, std::function<void()> fn) {
  // The heap, not a lane: a lane is filled in sequence order, and this sequence is older than the latest.
  const std::uint32_t index = store_callback(std::move(fn));
  ++count_;
  heap_.push_back(Timer{time, sequence, index, kCallback});
  std::push_heap(heap_.begin(), heap_.end(), Later{});
}

std::function<void()> TimerQueue::take_callback(const Timer& timer) {
  std::function<void()> fn = std::move(callbacks_[timer.payload]);
  free_callbacks_.push_back(static_cast<std::uint32_t>(timer.payload));
  if (free_callbacks_.size() == callbacks_.size() && callbacks_.capacity() > kKeptCapacity) {
    // Every callback ran: a burst (a backlog published at once) would otherwise keep its peak for the whole run.
    std::vector<std::function<void()>>().swap(callbacks_);
    std::vector<std::uint32_t>().swap(free_callbacks_);
  }
  return fn;
}

void TimerQueue::insert(Time now, const Timer& timer) {
  ++count_;
  const Duration delay = timer.time - now;
  for (std::size_t i = 0; i < lanes_.size(); ++i) {
    Lane& lane = lanes_[i];
    if (lane.delay == delay) {
      const bool was_empty = lane.empty();
      lane.items.push_back(timer);
      if (was_empty) activate_lane(i);
      return;
    }
  }
  if (std::find(recent_delays_.begin(), recent_delays_.end(), delay) != recent_delays_.end()) {
    std::size_t free_lane = kNoSource;
    if (lanes_.size() < kMaxLanes) {
      lanes_.emplace_back();
      free_lane = lanes_.size() - 1;
    } else {
      const auto empty = std::find_if(lanes_.begin(), lanes_.end(), [](const Lane& lane) { return lane.empty(); });
      if (empty != lanes_.end()) free_lane = static_cast<std::size_t>(empty - lanes_.begin());
    }
    if (free_lane != kNoSource) {
      lanes_[free_lane].delay = delay;
      lanes_[free_lane].items.push_back(timer);
      activate_lane(free_lane);
      return;
    }
  } else {
    recent_delays_[recent_next_] = delay;
    recent_next_ = (recent_next_ + 1) % kRecentDelays;
  }
  heap_.push_back(timer);
  std::push_heap(heap_.begin(), heap_.end(), Later{});
}

void TimerQueue::activate_lane(std::size_t lane) {
  // Insertion into the ordered list of non-empty lanes.
  const Timer& front = lanes_[lane].front();
  std::size_t position = active_count_;
  while (position > 0 && Later{}(lanes_[active_lanes_[position - 1]].front(), front)) {
    active_lanes_[position] = active_lanes_[position - 1];
    --position;
  }
  active_lanes_[position] = static_cast<std::uint8_t>(lane);
  ++active_count_;
}

void TimerQueue::reorder_lanes() {
  active_count_ = 0;
  for (std::size_t i = 0; i < lanes_.size(); ++i) {
    if (!lanes_[i].empty()) activate_lane(i);
  }
}

void TimerQueue::Lane::pop_front() {
  ++head;
  if (head == items.size()) {
    items.clear();
    head = 0;
  } else if (head >= 4096 && head * 2 >= items.size()) {
    items.erase(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(head));
    head = 0;
  } else {
    return;
  }
  // A lane that held a burst (every publish of a backlog at once) gives its peak back once it has drained.
  if (items.capacity() > kKeptCapacity && items.capacity() > 4 * items.size()) items.shrink_to_fit();
}

TimerQueue::Timer TimerQueue::pop() {
  const std::size_t source = earliest_source();
  --count_;
  if (source == kHeapSource) {
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    const Timer timer = heap_.back();
    heap_.pop_back();
    if (heap_.capacity() > kKeptCapacity && heap_.capacity() > 4 * heap_.size()) heap_.shrink_to_fit();
    return timer;
  }
  // `source` is the earliest lane: active_lanes_[0].
  Lane& lane = lanes_[source];
  const Timer timer = lane.front();
  lane.pop_front();
  if (lane.empty()) {
    std::copy(active_lanes_.begin() + 1, active_lanes_.begin() + static_cast<std::ptrdiff_t>(active_count_),
              active_lanes_.begin());
    --active_count_;
  } else {
    const Timer& front = lane.front();
    std::size_t position = 0;
    while (position + 1 < active_count_ && Later{}(front, lanes_[active_lanes_[position + 1]].front())) {
      active_lanes_[position] = active_lanes_[position + 1];
      ++position;
    }
    active_lanes_[position] = static_cast<std::uint8_t>(source);
  }
  return timer;
}

void TimerQueue::compact(const std::function<bool(const Timer&)>& is_stale) {
  const auto stale = [&is_stale](const Timer& timer) { return timer.slot != kCallback && is_stale(timer); };
  std::erase_if(heap_, stale);
  std::make_heap(heap_.begin(), heap_.end(), Later{});
  count_ = heap_.size();
  for (Lane& lane : lanes_) {
    lane.items.erase(lane.items.begin(), lane.items.begin() + static_cast<std::ptrdiff_t>(lane.head));
    lane.head = 0;
    std::erase_if(lane.items, stale);  // keeps the order
    count_ += lane.items.size();
  }
  stale_ = 0;
  reorder_lanes();
}

}  // namespace sim
