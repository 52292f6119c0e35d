// sim/simulation.hpp — the deterministic virtual-time kernel.
//
// A Simulation owns virtual time, the timer queue, the nodes and their fibers,
// and the trace. Every simulated activity is a Boost.Fiber fiber on the ONE
// thread that runs the simulation, scheduled by a custom algorithm:
//   - ready fibers run in FIFO order, in a seeded-random order (SchedulePolicy::Random), or by PCT priorities
//     (SchedulePolicy::Pct), to explore other interleavings of fibers ready at the same virtual instant (the
//     policy never changes when anything happens, only which of the fibers ready now runs first);
//   - fibers block only through the kernel's await points (park(), sleep(),
//     Channel, Signal, Network::call); virtual time advances to the earliest
//     timer only when no fiber is ready;
//   - callback timers (at()) run on the loop at their instant and must not block.
//
// Invariants (checked with assertions that stay on):
//   - virtual time never goes backwards;
//   - timers fire in (time, sequence) order: ties break by insertion order;
//   - nothing here reads a real clock, sleeps, or uses pointer values to order
//     anything: the same seed gives the same trace hash on every run and build.
//
// Fibers without a stack: a fiber exists as a slot (its node, its wait, its scheduling priority) and gets a Boost
// fiber, with a stack from the pool, only while it runs. spawn_fiber() makes the slot ready; the stack is taken
// when the slot is first picked. A fiber that waits with park_then() instead of park() gives its stack back: the
// slot waits exactly as a parked fiber would (the same Waker, the same deadline timer, the same place in the
// ready queue when woken), and its continuation runs in a new stack when the slot is picked. So a million nodes
// that are started, or that wait long (idle consumers in a long poll), cost a slot each, not a stack each, and
// the run is the same as with parked fibers: the same picks, the same trace.
//
// Crashes: Node::crash() marks every fiber of the node; each throws sim::Crash
// (which does not derive from std::exception) at its current or next await
// point, so stacks unwind and RAII runs. A fiber blocked in a Boost mutex,
// condition variable, future or join cannot be crashed: simulated code must
// block only through this kernel.
//
// Threads: one Simulation per thread at a time. Several simulations may run on
// several threads (each thread gets its own scheduling algorithm), which is
// how runner/ runs seeds in parallel. Nothing here spawns a thread.
//
// Does not: know anything about messages, stores or dedupe (that is protocol/ and world/).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sim/random.hpp"
#include "sim/scheduler.hpp"
#include "sim/time.hpp"
#include "sim/timer_queue.hpp"
#include "sim/trace.hpp"

namespace boost::fibers {
class context;
}

namespace sim {

class Node;
class KernelAlgorithm;
class StackPool;

// Thrown at an await point of a fiber whose node crashed. Deliberately not a
// std::exception, so `catch (const std::exception&)` in code under test does
// not swallow it. If user code swallows it with catch (...), the next await
// point throws again.
struct Crash {};

// Raised by Simulation::run_until when a fiber failed with an exception other
// than Crash, or a kernel invariant broke: lethe's own bug (exit code 3). Also
// raised when memory runs out (a fiber stack that cannot be mapped, a failed
// allocation): the message then starts with "out of memory:" and says what.
struct InternalError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// SchedulePolicy (which ready fiber runs next) is in sim/scheduler.hpp.

using NodeId = std::uint32_t;
using GroupId = std::uint32_t;

// Identifies one wait of one fiber; wake() on a stale Waker does nothing.
struct Waker {
  std::uint32_t slot = 0;
  std::uint64_t wait_id = 0;
};

struct SimulationOptions {
  std::uint64_t seed = 1;
  SchedulePolicy policy = SchedulePolicy::Fifo;
  std::size_t stack_bytes = 64 * 1024;
  bool fast_path = true;  // skip the dispatcher when the parking fiber is next anyway (traces are identical)
  // Pct only: d (>= 1; d - 1 change points) and k, the number of steps the change points are drawn among
  // (>= 1 when d > 1; an estimate of the run's schedule_steps(): change points past the run's end never happen).
  // The constructor throws std::invalid_argument otherwise.
  int pct_depth = 3;
  std::uint64_t pct_steps = 0;
};

class Simulation {
 public:
  explicit Simulation(SimulationOptions options = {});
  ~Simulation();  // unwinds every remaining fiber (as a crash), then releases everything
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  // The simulation running on this thread. REQUIRES: one exists.
  static Simulation& current();

  Time now() const { return now_; }
  std::uint64_t seed() const { return options_.seed; }
  // A named random stream derived from the seed: independent of every other name.
  Rng rng(std::string_view stream_name) const { return Rng::derive(options_.seed, stream_name); }
  Trace& trace() { return trace_; }

  // Nodes. Groups name sets of nodes for link settings and partitions.
  Node& add_node(std::string name, std::string_view group);
  Node& node(NodeId id) { return *nodes_[id]; }
  std::size_t node_count() const { return nodes_.size(); }
  GroupId group_id(std::string_view group);  // interns the name
  const std::string& group_name(GroupId id) const { return group_names_[id]; }

  // Callback timers: `fn` runs on the loop at `time` (>= now). It must not block. A time before now is lethe's
  // bug (a sum that wrapped around): the run fails with InternalError, never an abort. after() saturates: a
  // delay past kTimeMax is kTimeMax, "never" (a timer due at kTimeMax never fires).
  void at(Time time, std::function<void()> fn);
  void after(Duration delay, std::function<void()> fn) { at(saturating_add(now_, delay), std::move(fn)); }
  // A callback timer's place among the timers due at one instant, taken before the timer is set: at(time,
  // place, fn) runs fn where a timer set with at(time, fn) when the place was taken would run. An owner of many
  // future timers of which most become pointless (a visibility timeout whose message was deleted) keeps them in
  // its own queue and sets only the earliest, with the same order, and so the same run, as setting all of them.
  struct TimerPlace {
    std::uint64_t sequence = 0;
  };
  TimerPlace reserve_timer_place() { return TimerPlace{timers_.take_sequence()}; }
  // REQUIRES: `place` from reserve_timer_place(), used once. A time before now fails the run, as at() does.
  void at(Time time, TimerPlace place, std::function<void()> fn);

  // Runs until nothing is ready and no timer is due at or before `limit`.
  // Time ends at the last event processed (not at `limit`).
  // Throws InternalError if a fiber failed with an unexpected exception.
  void run_until(Time limit = kTimeMax);
  void run() { run_until(kTimeMax); }
  bool has_pending_timers() const { return !timers_.empty(); }
  std::size_t pending_timers() const { return timers_.size(); }  // stale fiber wake-ups included
  std::size_t live_fibers() const { return live_fibers_; }  // slots waiting without a stack included
  std::size_t stack_bytes_mapped() const;                      // the fiber stacks' address space so far

  // --- await points (call only from a simulated fiber) ---
  // Parks the current fiber until wake(waker()) or `deadline` (kTimeMax = none).
  // Returns true if woken, false on the deadline. Throws Crash if the node crashed. A deadline before now fails
  // the run (InternalError from run_until) and returns false.
  bool park(Time deadline = kTimeMax);
  // park(deadline) without the stack: the slot waits as park() would, and when the wait ends, then(woken) runs
  // (woken as park() would have returned) in a new fiber of the same slot, with the same node, after the node's
  // pause, as the parked fiber would have returned. REQUIRES: the calling fiber returns at once, reaching no
  // other await point (that fails the run). Throws Crash if the node crashed. A crash while it waits drops
  // `then` unrun, in the slot's next turn, where the parked fiber would have unwound.
  void park_then(Time deadline, std::function<void(bool woken)> then);
  // True if the current fiber has called park_then() (it must return now).
  bool parked_without_stack() const;
  // The Waker for the current fiber's NEXT park(). Take it, register it, then park().
  Waker waker() const;
  // True if that wait is still in progress (its fiber is parked in it).
  bool waiting(Waker w) const;
  // Makes the fiber ready if it is still parked in that wait. Returns whether it was.
  bool wake(Waker w);
  // Throws Crash if the current fiber's node crashed; otherwise returns.
  void checkpoint();
  // The node of the current fiber.
  Node& this_node();
  bool in_fiber() const { return current_slot_ != kNoSlot; }

  // Internal: used by Node. The slot is ready at once; its stack is taken when it first runs (then a stack that
  // cannot be mapped fails the run: InternalError "out of memory: ..." from run_until).
  void spawn_fiber(Node& node, std::function<void()> body);
  void kill_fibers_of(Node& node);
  std::uint64_t context_switches() const { return switches_; }
  // Scheduling decisions so far: how many times a ready fiber was picked to run (one per await point a fiber
  // left and per fiber start), whatever the policy; the same with and without the fast path.
  std::uint64_t schedule_steps() const { return scheduler_.steps(); }
  // Pct: the steps the change points were drawn at, ascending (empty for the other policies).
  const std::vector<std::uint64_t>& pct_change_points() const { return scheduler_.change_points(); }

 private:
  friend class KernelAlgorithm;
  static constexpr std::uint32_t kNoSlot = UINT32_MAX;

  struct FiberSlot {
    boost::fibers::context* context = nullptr;
    Node* node = nullptr;
    std::uint64_t wait_id = 0;       // nonzero while parked
    std::uint64_t next_wait_id = 0;  // the id its next park() will use
    bool killed = false;
    bool timed_out = false;
    bool deadline_armed = false;  // its current wait has a timer in timers_
    bool in_use = false;
    bool stackless = false;  // no Boost fiber: continuations_[slot] runs when the slot is next picked
    std::uint64_t priority = 0;  // Pct: higher runs first (drawn at spawn, lowered at a change point)
  };
  // A ready fiber: its context (null: a slot without a stack, given one when picked) and its slot (the slot
  // carries the Pct priority).
  struct Ready {
    boost::fibers::context* context;
    std::uint32_t slot;
  };
  // Queues a wake-up of `waker` (fn empty) or the callback fn at `time`; a time before now fails the run.
  void push_timer(Time time, Waker waker, std::function<void()> fn);
  // `time`, or now when it is before now (then the run fails at the next advance: a sum that wrapped around).
  Time not_before_now(Time time);
  // Pops every timer due at the earliest instant (repeating while nothing became
  // ready). Sets finished_ when there is nothing left before the limit.
  void advance();
  // Runs a callback timer; what it throws (std::exception) becomes the run's failure.
  void run_callback(const std::function<void()>& fn);
  void make_ready(std::uint32_t slot);
  void suspend_current(std::uint32_t slot);
  void fiber_exited(std::uint32_t slot);
  // Gives a slot without a stack its Boost fiber, which runs then(woken): its context, or null when no stack
  // could be had (the run fails, the slot is freed).
  boost::fibers::context* materialize(std::uint32_t slot);
  void start_fiber(std::uint32_t slot, std::function<void(bool)> then, bool woken);
  // Starts a wait of the current fiber (park and park_then): wait ids, the deadline's timer.
  void begin_wait(std::uint32_t slot, Time deadline);
  // What starting a fiber of `node` threw, as the run's "out of memory: ..." message.
  std::string out_of_memory_message(const Node& node, std::exception_ptr error) const;
  // Boost frees a finished fiber's stack only when its dispatcher runs: after this many fibers ended since it
  // last did, the dispatcher gets the next turn (it picks the same fiber next), so that a million fibers that
  // each end after one step do not hold a million stacks.
  static constexpr std::uint32_t kExitsBeforeRelease = 64;
  std::uint32_t exits_since_release_ = 0;
  void finish_run();
  void handle_pause(std::uint32_t slot);
  void fail(std::string message);
  boost::fibers::context* pick_next();
  std::size_t choose_ready_index();  // one scheduling step among ready_
  static constexpr std::size_t kNoPick = SIZE_MAX;
  std::size_t preselected_ = kNoPick;
  bool has_ready() const;

  SimulationOptions options_;
  Time now_ = 0;
  Time limit_ = kTimeMax;
  std::uint64_t wait_counter_ = 0;
  std::uint64_t switches_ = 0;
  TimerQueue timers_;
  std::deque<Ready> ready_;
  std::uint32_t spawning_slot_ = kNoSlot;  // the slot whose Boost fiber is being constructed (materialize)
  std::uint32_t slot_of(boost::fibers::context* ctx) const;  // kNoSlot when no slot holds it
  std::vector<FiberSlot> slots_;
  std::vector<std::function<void(bool)>> continuations_;  // by slot: what a stackless slot runs when picked
  std::vector<std::uint32_t> free_slots_;
  std::uint32_t current_slot_ = kNoSlot;
  std::size_t live_fibers_ = 0;
  std::vector<std::unique_ptr<Node>> nodes_;
  // Fiber stacks (sim/simulation.cpp): shared with every live fiber's stack allocator, since Boost may release
  // a finished fiber's stack after the simulation is gone.
  std::shared_ptr<StackPool> stack_pool_;
  std::vector<std::string> group_names_;
  Trace trace_;
  Scheduler scheduler_;
  bool schedule_recorded_ = false;  // the policy's trace record (not for Fifo) is written
  KernelAlgorithm* algorithm_ = nullptr;
  boost::fibers::context* main_waiting_ = nullptr;
  bool running_ = false;
  bool finished_ = false;
  bool shutting_down_ = false;
  std::string failure_;
};

// Free functions for code running in a simulated fiber.
inline Time now() { return Simulation::current().now(); }
// Sleeps max(duration, 0), saturated at kTimeMax (a sleep past it never ends).
void sleep(Duration duration);
void sleep_until(Time time);

}  // namespace sim
