// sim/channel.hpp — fiber mailboxes and signals on virtual time.
//
// Channel<T>: an unbounded FIFO mailbox. push() never blocks (it may be called
// from a callback timer); pop() parks the calling fiber until an item arrives;
// pop_until(deadline) gives up at a virtual deadline. Items are handed out in
// push order; waiters are served in the order they started waiting.
//
// Signal: a level-free notification: wait() parks until a notify_one() picks
// it (longest waiting first) or the deadline.
//
// Waiters are registered as Wakers (slot, wait id), never as pointers, so a
// waiter that timed out, crashed or was destroyed is simply skipped: nothing
// dangles and nothing needs deregistering during unwinding.
//
// Does not: bound capacity or apply backpressure; model code does that.
#pragma once

#include <algorithm>
#include <deque>
#include <functional>
#include <optional>
#include <utility>

#include "sim/simulation.hpp"

namespace sim {

template <class T>
class Channel {
 public:
  void push(T item) {
    items_.push_back(std::move(item));
    wake_one();
  }

  // Parks until an item is available. Throws Crash if the node crashes meanwhile.
  T pop() {
    auto item = pop_until(kTimeMax);
    return std::move(*item);
  }

  // Parks until an item is available or `deadline` passes (nullopt).
  std::optional<T> pop_until(Time deadline) {
    Simulation& simulation = Simulation::current();
    while (items_.empty()) {
      if (simulation.now() >= deadline) return std::nullopt;
      prune();
      waiters_.push_back(simulation.waker());
      simulation.park(deadline);
    }
    T item = std::move(items_.front());
    items_.pop_front();
    if (!items_.empty()) wake_one();  // another waiter may take the next one
    return item;
  }

  std::optional<T> try_pop() {
    if (items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    return item;
  }

  std::size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  void clear() { items_.clear(); }

 private:
  void wake_one() {
    Simulation& simulation = Simulation::current();
    while (!waiters_.empty()) {
      Waker w = waiters_.front();
      waiters_.pop_front();
      if (simulation.wake(w)) return;
    }
  }
  void prune() {
    Simulation& simulation = Simulation::current();
    while (!waiters_.empty() && !simulation.waiting(waiters_.front())) waiters_.pop_front();
  }

  std::deque<T> items_;
  std::deque<Waker> waiters_;
};

class Signal {
 public:
  // Parks until notify_one() picks this fiber or `deadline`. Returns true if notified.
  bool wait(Time deadline = kTimeMax) {
    Simulation& simulation = Simulation::current();
    if (simulation.now() >= deadline) return false;
    enlist(simulation);
    return simulation.park(deadline);
  }
  // wait(deadline) without the fiber's stack (Simulation::park_then): false, and `then` dropped, when the
  // deadline has passed; otherwise the fiber is listed as wait() lists it and true is returned: the caller must
  // return at once, and then(notified) runs in a new fiber of its slot.
  bool wait_then(Time deadline, std::function<void(bool notified)> then) {
    Simulation& simulation = Simulation::current();
    if (simulation.now() >= deadline) return false;
    enlist(simulation);
    simulation.park_then(deadline, std::move(then));
    return true;
  }
  // Wakes the longest-waiting fiber still parked here (FIFO, as a long-polling broker hands a new message to
  // one waiting receiver). Returns false if none was.
  bool notify_one() {
    Simulation& simulation = Simulation::current();
    while (!waiters_.empty()) {
      const Waker w = waiters_.front();
      waiters_.pop_front();
      if (simulation.wake(w)) return true;
    }
    return false;
  }

 private:
  // Lists the calling fiber's next wait. Waiters that timed out stay queued (notify_one() skips them); they are
  // dropped when the queue has doubled since the last sweep: amortized O(1) per wait, and memory bounded by the
  // fibers really waiting.
  void enlist(Simulation& simulation) {
    if (waiters_.size() >= sweep_at_) {
      std::erase_if(waiters_, [&simulation](Waker w) { return !simulation.waiting(w); });
      sweep_at_ = std::max<std::size_t>(64, 2 * waiters_.size());
    }
    waiters_.push_back(simulation.waker());
  }

  std::deque<Waker> waiters_;
  std::size_t sweep_at_ = 64;
};

}  // namespace sim
