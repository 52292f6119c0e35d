#include "world/store_sweeper.hpp"

#include <algorithm>
#include <utility>

namespace lethe {

Sweeper::Sweeper(sim::Simulation& simulation, TtlEvictionKind kind, sim::Duration lazy_max, sim::Rng rng,
                 Evict evict)
    : simulation_(simulation), kind_(kind), lazy_max_(lazy_max), rng_(std::move(rng)), evict_(std::move(evict)) {}

bool Sweeper::arm(Key key, sim::Time expires_on) {
  if (expires_on == sim::kTimeMax) return false;  // never expires (ttl = "none"): no eviction to arm
  auto pending = pending_.lower_bound(key);  // one descent: the entry, or where it goes
  const bool found = pending != pending_.end() && pending->first == key;
  // A pending eviction armed for an earlier-or-equal expiry runs no later than this one needs (it re-arms if
  // the item is not expired by then).
  if (found && pending->second.for_expires_on <= expires_on) return false;
  sim::Time at = expires_on;
  if (kind_ == TtlEvictionKind::Lazy && lazy_max_ > 0) {
    const sim::Duration delay = rng_.between(0, lazy_max_);
    at = expires_on > sim::kTimeMax - delay ? sim::kTimeMax : expires_on + delay;
  }
  at = std::max(at, simulation_.now());
  const std::uint64_t token = next_token_++;
  if (found) {
    pending->second = Pending{expires_on, token};
  } else {
    pending_.emplace_hint(pending, key, Pending{expires_on, token});
  }
  schedule(Sweep{at, token, key});
  return true;
}

void Sweeper::schedule(const Sweep& sweep) {
  if (fifo_.empty() || fifo_.back().at <= sweep.at) {
    fifo_.push_back(sweep);  // tokens grow, so the fifo stays sorted by (at, token)
  } else {
    heap_.push_back(sweep);
    std::push_heap(heap_.begin(), heap_.end(), SweepLater{});
  }
  if (!sweeping_) arm_timer();
}

bool Sweeper::heap_first() const {
  return !heap_.empty() && (fifo_.empty() || SweepLater{}(fifo_.front(), heap_.front()));
}

bool Sweeper::next(Sweep& out) const {
  if (fifo_.empty() && heap_.empty()) return false;
  out = heap_first() ? heap_.front() : fifo_.front();
  return true;
}

void Sweeper::pop() {
  if (heap_first()) {
    std::pop_heap(heap_.begin(), heap_.end(), SweepLater{});
    heap_.pop_back();
  } else {
    fifo_.pop_front();
  }
}

void Sweeper::arm_timer() {
  Sweep upcoming;
  if (!next(upcoming) || upcoming.at >= timer_at_) return;  // the live timer fires early enough
  timer_at_ = upcoming.at;
  const std::uint64_t generation = ++timer_generation_;
  simulation_.at(upcoming.at, [this, generation] {
    if (generation != timer_generation_) return;  // superseded by an earlier one
    timer_at_ = sim::kTimeMax;
    run_due();
  });
}

void Sweeper::run_due() {
  sweeping_ = true;
  Sweep due;
  while (next(due) && due.at <= simulation_.now()) {
    pop();
    run(due);
  }
  sweeping_ = false;
  arm_timer();
}

void Sweeper::run(const Sweep& sweep) {
  auto pending = pending_.find(sweep.key);
  if (pending == pending_.end() || pending->second.token != sweep.token) return;  // superseded
  pending_.erase(pending);
  evict_(sweep.key);
}

}  // namespace lethe
