#include "sim/simulation.hpp"

#include <algorithm>
#include <boost/fiber/algo/algorithm.hpp>
#include <boost/fiber/context.hpp>
#include <boost/fiber/fiber.hpp>
#include <boost/context/stack_context.hpp>
#include <boost/fiber/operations.hpp>
#include <boost/fiber/type.hpp>
#include <chrono>
#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <exception>
#include <fmt/format.h>
#include <new>
#include <sys/mman.h>
#include <system_error>
#include <unistd.h>

#include "sim/assert.hpp"
#include "sim/node.hpp"

namespace sim {

namespace {
thread_local Simulation* t_current = nullptr;
thread_local KernelAlgorithm* t_algorithm = nullptr;

// A broken kernel invariant. Where unwinding is safe (a fiber's own code, a callback timer, the caller of
// run_until) it throws InternalError: the run stops, the fiber or the loop turns it into the run's failure and
// the runner reports it with the seed and the replay command (exit 3). Where it is not (Boost's scheduling hooks
// are noexcept, the destructor, a fiber's exit after its last catch), kernel_abort prints it with the seed and
// aborts: an exception there would only reach std::terminate.
[[noreturn]] void kernel_failure(const char* what) {
  throw InternalError(std::string("lethe kernel: ") + what);
}
[[noreturn]] void kernel_abort(const char* what) {
  if (t_current != nullptr) {
    std::fprintf(stderr, "lethe kernel: %s (seed %llu)\n", what, static_cast<unsigned long long>(t_current->seed()));
  } else {
    std::fprintf(stderr, "lethe kernel: %s\n", what);
  }
  std::abort();
}
#define LETHE_KERNEL_ASSERT(cond) \
  do {                            \
    if (!(cond)) kernel_failure("assertion failed: " #cond); \
  } while (false)
// For the places where an exception cannot unwind (see kernel_failure).
#define LETHE_KERNEL_ASSERT_OR_ABORT(cond) \
  do {                                     \
    if (!(cond)) kernel_abort("assertion failed: " #cond); \
  } while (false)
}  // namespace

// The Boost.Fiber scheduling algorithm installed once per thread. It keeps the
// dispatcher and main contexts apart from simulated fibers: simulated fibers
// first (the Simulation's ready queue), then the dispatcher, then main.
class KernelAlgorithm final : public boost::fibers::algo::algorithm {
 public:
  KernelAlgorithm() { t_algorithm = this; }
  ~KernelAlgorithm() override {
    if (t_algorithm == this) t_algorithm = nullptr;
  }

  void awakened(boost::fibers::context* ctx) noexcept override {
    if (ctx->is_context(boost::fibers::type::dispatcher_context)) {
      dispatcher_ = ctx;
    } else if (ctx->is_context(boost::fibers::type::main_context)) {
      main_ = ctx;
    } else {
      LETHE_KERNEL_ASSERT_OR_ABORT(simulation_ != nullptr);
      Simulation& simulation = *simulation_;
      std::uint32_t slot = simulation.spawning_slot_;
      if (slot != Simulation::kNoSlot) {
        // A new fiber: Boost readies it inside its constructor, which materialize() runs for the slot it picked.
        simulation.slots_[slot].context = ctx;
        return;
      }
      slot = simulation.slot_of(ctx);  // a fiber that yielded through Boost (not a kernel await point)
      LETHE_KERNEL_ASSERT_OR_ABORT(slot != Simulation::kNoSlot);
      simulation.ready_.push_back(Simulation::Ready{ctx, slot});
    }
  }

  boost::fibers::context* pick_next() noexcept override {
    if (simulation_ != nullptr && !simulation_->ready_.empty()) {
      if (simulation_->exits_since_release_ >= Simulation::kExitsBeforeRelease && dispatcher_ != nullptr) {
        simulation_->exits_since_release_ = 0;  // the dispatcher frees the ended fibers' stacks, then picks
        auto* ctx = dispatcher_;
        dispatcher_ = nullptr;
        simulation_->current_slot_ = Simulation::kNoSlot;
        return ctx;
      }
      simulation_->current_slot_ = Simulation::kNoSlot;
      if (auto* ctx = simulation_->pick_next()) return ctx;
    }
    if (dispatcher_ != nullptr) {
      auto* ctx = dispatcher_;
      dispatcher_ = nullptr;
      if (simulation_ != nullptr) simulation_->current_slot_ = Simulation::kNoSlot;
      return ctx;
    }
    if (main_ != nullptr) {
      auto* ctx = main_;
      main_ = nullptr;
      if (simulation_ != nullptr) simulation_->current_slot_ = Simulation::kNoSlot;
      return ctx;
    }
    return nullptr;
  }

  bool has_ready_fibers() const noexcept override {
    return (simulation_ != nullptr && !simulation_->ready_.empty()) || dispatcher_ != nullptr || main_ != nullptr;
  }

  // Reached from the dispatcher when nothing is ready: this is where virtual
  // time advances. A finite `until` means some code used a real-time wait.
  void suspend_until(std::chrono::steady_clock::time_point const& until) noexcept override {
    if (until != (std::chrono::steady_clock::time_point::max)()) {
      kernel_abort("a fiber used a real-time wait (sleep_for, wait_for, ...); use sim::sleep and kernel await points");
    }
    if (simulation_ == nullptr || !simulation_->running_) {
      kernel_abort("no simulated fiber is ready and no simulation is running: deadlock outside the kernel");
    }
    try {
      simulation_->advance();
    } catch (const std::exception& e) {
      // A broken invariant or an allocation that failed while time advanced: the run's failure, not a terminate.
      simulation_->fail(e.what());
      simulation_->finish_run();
    }
  }

  void notify() noexcept override {}

  void make_main_ready(boost::fibers::context* ctx) { main_ = ctx; }

  Simulation* simulation_ = nullptr;

 private:
  boost::fibers::context* dispatcher_ = nullptr;
  boost::fibers::context* main_ = nullptr;
};

// Fiber stacks, carved from chunks mapped straight from the OS (not malloc) and marked MADV_NOHUGEPAGE: a parked
// fiber keeps resident only the 4 KiB pages its frames touched (about 5.5 KiB), whatever the allocator does with
// the heap. (With malloc'd stacks and an allocator on 2 MiB pages, 100,000 consumers committed their whole
// 64 KiB stacks: 6.6 GB.) Stacks are reused LIFO (the last freed is the warmest); a chunk holds many stacks, so
// 100,000 fibers are a few hundred mappings, far from vm.max_map_count (protected_fixedsize_stack's guard
// pages would cost two mappings per fiber). No guard page: measure stack depth in tests (KERNEL-NOTES.md).
class StackPool {
 public:
  // Thrown by take() when the OS refuses a new chunk (an address-space limit, no memory left).
  struct StackMapFailed {
    int error;
  };
  explicit StackPool(std::size_t stack_bytes) {
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    stack_bytes_ = (std::max<std::size_t>(stack_bytes, page) + page - 1) / page * page;
  }
  StackPool(const StackPool&) = delete;
  StackPool& operator=(const StackPool&) = delete;
  ~StackPool() {
    for (void* chunk : chunks_) ::munmap(chunk, chunk_bytes());
  }
  std::size_t stack_bytes() const { return stack_bytes_; }
  std::size_t mapped_bytes() const { return chunks_.size() * chunk_bytes(); }
  std::size_t chunk_bytes() const { return stack_bytes_ * kStacksPerChunk; }
  void* take() {
    if (free_.empty()) grow();
    void* base = free_.back();
    free_.pop_back();
    return base;
  }
  void give(void* base) { free_.push_back(base); }

 private:
  static constexpr std::size_t kStacksPerChunk = 256;
  void grow() {
    void* chunk = ::mmap(nullptr, chunk_bytes(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                         -1, 0);
    if (chunk == MAP_FAILED) throw StackMapFailed{errno};
    ::madvise(chunk, chunk_bytes(), MADV_NOHUGEPAGE);
    chunks_.push_back(chunk);
    for (std::size_t i = kStacksPerChunk; i-- > 0;) free_.push_back(static_cast<char*>(chunk) + i * stack_bytes_);
  }
  std::size_t stack_bytes_ = 0;
  std::vector<void*> chunks_;
  std::vector<void*> free_;
};

namespace {
// boost::context's StackAllocator concept over the pool.
struct PooledStack {
  std::shared_ptr<StackPool> pool;
  boost::context::stack_context allocate() {
    boost::context::stack_context context;
    context.size = pool->stack_bytes();
    context.sp = static_cast<char*>(pool->take()) + context.size;  // stacks grow down
    return context;
  }
  void deallocate(boost::context::stack_context& context) {
    pool->give(static_cast<char*>(context.sp) - context.size);
  }
};
}  // namespace

Simulation::Simulation(SimulationOptions options)
    : options_(options),
      stack_pool_(std::make_shared<StackPool>(options.stack_bytes)),
      scheduler_(options.seed, options.policy, options.pct_depth, options.pct_steps) {
  LETHE_ASSERT(t_current == nullptr, "one Simulation per thread at a time");
  if (t_algorithm == nullptr) boost::fibers::use_scheduling_algorithm<KernelAlgorithm>();
  LETHE_KERNEL_ASSERT(t_algorithm != nullptr);
  algorithm_ = t_algorithm;
  algorithm_->simulation_ = this;
  t_current = this;
}

Simulation::~Simulation() {
  // Unwind every remaining fiber as a crash, without advancing time.
  shutting_down_ = true;
  for (auto& node : nodes_) kill_fibers_of(*node);
  if (live_fibers_ > 0 && !running_) {
    failure_.clear();  // reported by the run that failed; kept, it would stop this unwinding run before it starts
    try {
      run_until(now_);
    } catch (const InternalError&) {
      // Already reported by the run that failed.
    }
  }
  LETHE_KERNEL_ASSERT_OR_ABORT(live_fibers_ == 0);
  algorithm_->simulation_ = nullptr;
  t_current = nullptr;
}

Simulation& Simulation::current() {
  LETHE_KERNEL_ASSERT(t_current != nullptr);
  return *t_current;
}

GroupId Simulation::group_id(std::string_view group) {
  for (std::size_t i = 0; i < group_names_.size(); ++i) {
    if (group_names_[i] == group) return static_cast<GroupId>(i);
  }
  group_names_.emplace_back(group);
  return static_cast<GroupId>(group_names_.size() - 1);
}

Node& Simulation::add_node(std::string name, std::string_view group) {
  auto id = static_cast<NodeId>(nodes_.size());
  trace_.set_node_name(id, name);
  nodes_.push_back(std::make_unique<Node>(*this, id, std::move(name), group_id(group)));
  return *nodes_.back();
}

Time Simulation::not_before_now(Time time) {
  if (time >= now_) return time;
  // Fails the run at the next advance (run_until throws InternalError); the timer is kept, due now, so every
  // invariant of the queue holds until then.
  fail("a timer was set for " + std::to_string(time) + " ns, before the current instant " + std::to_string(now_) +
       " ns (a sum of virtual time wrapped around)");
  return now_;
}

void Simulation::push_timer(Time time, Waker waker, std::function<void()> fn) {
  time = not_before_now(time);
  if (fn) {
    timers_.push_callback(now_, time, std::move(fn));
  } else {
    timers_.push_wakeup(now_, time, waker.slot, waker.wait_id);
  }
  if (timers_.worth_compacting()) {
    timers_.compact([this](const TimerQueue::Timer& timer) { return !waiting(Waker{timer.slot, timer.payload}); });
  }
}

void Simulation::at(Time time, std::function<void()> fn) {
  push_timer(time, Waker{kNoSlot, 0}, std::move(fn));
}

void Simulation::at(Time time, TimerPlace place, std::function<void()> fn) {
  timers_.push_callback_sequenced(not_before_now(time), place.sequence, std::move(fn));
}

Waker Simulation::waker() const {
  LETHE_KERNEL_ASSERT(current_slot_ != kNoSlot);
  const FiberSlot& slot = slots_[current_slot_];
  return Waker{current_slot_, slot.next_wait_id};
}

bool Simulation::waiting(Waker w) const {
  if (w.slot >= slots_.size()) return false;
  const FiberSlot& slot = slots_[w.slot];
  return slot.in_use && slot.wait_id != 0 && slot.wait_id == w.wait_id;
}

bool Simulation::wake(Waker w) {
  if (!waiting(w)) return false;
  make_ready(w.slot);
  return true;
}

void Simulation::make_ready(std::uint32_t slot_index) {
  FiberSlot& slot = slots_[slot_index];
  LETHE_KERNEL_ASSERT(slot.wait_id != 0);
  slot.wait_id = 0;
  if (slot.deadline_armed) {
    slot.deadline_armed = false;
    timers_.note_stale();
  }
  ready_.push_back(Ready{slot.stackless ? nullptr : slot.context, slot_index});
}

std::uint32_t Simulation::slot_of(boost::fibers::context* ctx) const {
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].in_use && slots_[i].context == ctx) return static_cast<std::uint32_t>(i);
  }
  return kNoSlot;
}

void Simulation::checkpoint() {
  LETHE_KERNEL_ASSERT(current_slot_ != kNoSlot);
  if (slots_[current_slot_].killed && std::uncaught_exceptions() == 0) throw Crash{};
}

Node& Simulation::this_node() {
  LETHE_KERNEL_ASSERT(current_slot_ != kNoSlot);
  return *slots_[current_slot_].node;
}

bool Simulation::park(Time deadline) {
  const std::uint32_t self = current_slot_;
  LETHE_KERNEL_ASSERT(self != kNoSlot);
  FiberSlot& slot = slots_[self];
  LETHE_KERNEL_ASSERT(!slot.stackless);  // an await point after park_then()
  if (slot.killed) {
    if (std::uncaught_exceptions() == 0) throw Crash{};
    return false;  // unwinding already: never block a dying fiber
  }
  begin_wait(self, deadline);
  suspend_current(self);
  current_slot_ = self;
  FiberSlot& resumed = slots_[self];  // slots_ may have grown while suspended
  const bool woken = !resumed.timed_out;
  if (resumed.killed) {
    if (std::uncaught_exceptions() == 0) throw Crash{};
    return false;
  }
  handle_pause(self);
  return woken;
}

void Simulation::begin_wait(std::uint32_t self, Time deadline) {
  FiberSlot& slot = slots_[self];
  if (deadline < now_) {
    fail("a fiber parked with a deadline of " + std::to_string(deadline) + " ns, before the current instant " +
         std::to_string(now_) + " ns (a sum of virtual time wrapped around)");
    deadline = now_;
  }
  slot.wait_id = slot.next_wait_id;
  slot.next_wait_id = ++wait_counter_;
  slot.timed_out = false;
  slot.deadline_armed = deadline != kTimeMax;
  if (deadline != kTimeMax) push_timer(deadline, Waker{self, slot.wait_id}, nullptr);
}

void Simulation::park_then(Time deadline, std::function<void(bool)> then) {
  const std::uint32_t self = current_slot_;
  LETHE_KERNEL_ASSERT(self != kNoSlot);
  FiberSlot& slot = slots_[self];
  LETHE_KERNEL_ASSERT(!slot.stackless);  // one wait per turn
  if (slot.killed) {
    if (std::uncaught_exceptions() == 0) throw Crash{};
    return;
  }
  begin_wait(self, deadline);
  continuations_[self] = std::move(then);
  slot.stackless = true;  // the fiber ends when it returns; the slot waits on (fiber_exited)
}

std::size_t Simulation::stack_bytes_mapped() const { return stack_pool_->mapped_bytes(); }

bool Simulation::parked_without_stack() const {
  return current_slot_ != kNoSlot && slots_[current_slot_].stackless;
}

void Simulation::handle_pause(std::uint32_t self) {
  // A fiber of a paused node does not return from an await point until the pause ends.
  while (slots_[self].node->paused_until_ > now_) {
    FiberSlot& slot = slots_[self];
    slot.wait_id = slot.next_wait_id;
    slot.next_wait_id = ++wait_counter_;
    slot.deadline_armed = true;
    push_timer(slot.node->paused_until_, Waker{self, slot.wait_id}, nullptr);
    suspend_current(self);
    current_slot_ = self;
    if (slots_[self].killed) {
      if (std::uncaught_exceptions() == 0) throw Crash{};
      return;
    }
  }
}

void Simulation::suspend_current(std::uint32_t self) {
  boost::fibers::context* ctx = slots_[self].context;
  if (options_.fast_path && ready_.empty()) {
    advance();
    // advance() ran here, in this fiber, so this fiber may itself be ready now.
    // Make the pick pick_next() would make; if it is this fiber, keep running
    // (no switch); otherwise remember the pick (Boost must never be asked to
    // resume the active context) so the random stream sees the same draws.
    const auto self_position =
        std::find_if(ready_.begin(), ready_.end(), [ctx](const Ready& ready) { return ready.context == ctx; });
    if (self_position != ready_.end()) {
      const std::size_t chosen = choose_ready_index();
      if (ready_[chosen].context == ctx) {
        if (chosen == 0) {
          ready_.pop_front();
        } else {
          ready_.erase(ready_.begin() + static_cast<std::ptrdiff_t>(chosen));
        }
        return;
      }
      preselected_ = chosen;
    }
  }
  ++switches_;
  ctx->suspend();
}

std::size_t Simulation::choose_ready_index() {
  return scheduler_.choose(ready_.size(), [this](std::size_t i) -> std::uint64_t& { return slots_[ready_[i].slot].priority; });
}

void Simulation::advance() {
  LETHE_KERNEL_ASSERT(ready_.empty());
  if (shutting_down_ || !failure_.empty()) {
    finish_run();
    return;
  }
  while (ready_.empty()) {
    const TimerQueue::Timer* next = timers_.earliest();
    // A timer due at kTimeMax is "never" (a saturated sum): firing it would leave time stuck at its end.
    if (next == nullptr || next->time > limit_ || next->time == kTimeMax) {
      finish_run();
      return;
    }
    const Time instant = next->time;
    LETHE_KERNEL_ASSERT(instant >= now_);  // virtual time never goes backwards
    now_ = instant;
    while (next != nullptr && next->time == instant) {
      const TimerQueue::Timer timer = timers_.pop();
      if (timer.slot == TimerQueue::kCallback) {
        run_callback(timers_.take_callback(timer));
        if (!failure_.empty()) {
          finish_run();
          return;
        }
      } else if (waiting(Waker{timer.slot, timer.payload})) {
        slots_[timer.slot].timed_out = true;
        slots_[timer.slot].deadline_armed = false;
        make_ready(timer.slot);
      } else {
        timers_.popped_stale();
      }
      next = timers_.earliest();
    }
  }
}

void Simulation::run_callback(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::bad_alloc&) {
    fail("out of memory: an allocation failed in a callback timer (std::bad_alloc)");
  } catch (const std::exception& e) {
    fail(std::string("a callback timer failed: ") + e.what());
  }
}

void Simulation::finish_run() {
  if (finished_) return;
  finished_ = true;
  if (main_waiting_ != nullptr) {
    algorithm_->make_main_ready(main_waiting_);
    main_waiting_ = nullptr;
  }
}

boost::fibers::context* Simulation::pick_next() {
  while (!ready_.empty()) {
    ++switches_;
    std::size_t index;
    if (preselected_ != kNoPick) {
      index = preselected_;
      preselected_ = kNoPick;
    } else {
      index = choose_ready_index();
    }
    LETHE_KERNEL_ASSERT_OR_ABORT(index < ready_.size());
    const Ready ready = ready_[index];
    if (index == 0) {
      ready_.pop_front();
    } else {
      ready_.erase(ready_.begin() + static_cast<std::ptrdiff_t>(index));
    }
    if (ready.context != nullptr) return ready.context;
    if (auto* ctx = materialize(ready.slot)) return ctx;
  }
  return nullptr;  // no fiber could be given a stack: the run has failed
}

boost::fibers::context* Simulation::materialize(std::uint32_t index) {
  FiberSlot& slot = slots_[index];
  std::function<void(bool)> then = std::move(continuations_[index]);
  continuations_[index] = nullptr;
  slot.stackless = false;
  const bool woken = !slot.timed_out;
  try {
    spawning_slot_ = index;
    start_fiber(index, std::move(then), woken);
    spawning_slot_ = kNoSlot;
    return slots_[index].context;
  } catch (...) {
    spawning_slot_ = kNoSlot;
    Node& node = *slots_[index].node;
    fail(out_of_memory_message(node, std::current_exception()));
    // No fiber exists: give the slot back, or the destructor would wait for a fiber that never runs.
    std::erase(node.fiber_slots_, index);
    slots_[index] = FiberSlot{};
    free_slots_.push_back(index);
    --live_fibers_;
    if (live_fibers_ == 0 && shutting_down_) finish_run();
    return nullptr;
  }
}

void Simulation::run_until(Time limit) {
  LETHE_KERNEL_ASSERT(!running_);
  LETHE_KERNEL_ASSERT(current_slot_ == kNoSlot);
  if (!failure_.empty()) throw InternalError(failure_);
  if (!schedule_recorded_) {
    schedule_recorded_ = true;
    if (options_.policy != SchedulePolicy::Fifo) {
      const bool pct = options_.policy == SchedulePolicy::Pct;
      trace_.record(now_, kinds::kSchedule, kSimulationNode, pct ? 2 : 1, pct ? static_cast<std::uint64_t>(options_.pct_depth) : 0,
                    pct ? options_.pct_steps : 0);
    }
  }
  limit_ = limit;
  running_ = true;
  finished_ = false;
  // The first advance runs here, on the caller's context, before it suspends: if it finishes the run at once
  // (only callback timers, or nothing due before `limit`), there is nobody to wake. main_waiting_ stays null
  // until the caller really suspends: finish_run() marking a context that never suspended as ready left it in
  // the thread's scheduling algorithm, and the NEXT simulation on this thread was resumed in its first idle
  // moment, ending its run early with timers still pending.
  main_waiting_ = nullptr;
  if (ready_.empty()) {
    try {
      advance();
    } catch (const std::exception& e) {
      fail(e.what());  // stops the run below; running_ must not stay set, or the destructor cannot unwind
      finish_run();
    }
  }
  if (!finished_) {
    main_waiting_ = boost::fibers::context::active();
    main_waiting_->suspend();
  }
  running_ = false;
  current_slot_ = kNoSlot;
  if (!failure_.empty()) throw InternalError(failure_);
}

void Simulation::fail(std::string message) {
  if (failure_.empty()) failure_ = std::move(message);
}

void Simulation::spawn_fiber(Node& node, std::function<void()> body) {
  std::uint32_t index;
  if (!free_slots_.empty()) {
    index = free_slots_.back();
    free_slots_.pop_back();
  } else {
    index = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  FiberSlot& slot = slots_[index];
  slot = FiberSlot{};
  slot.in_use = true;
  slot.node = &node;
  slot.next_wait_id = ++wait_counter_;
  node.fiber_slots_.push_back(index);
  ++live_fibers_;
  slot.priority = scheduler_.spawn_priority();
  if (continuations_.size() < slots_.size()) continuations_.resize(slots_.size());
  continuations_[index] = [body = std::move(body)](bool) { body(); };
  slot.stackless = true;
  ready_.push_back(Ready{nullptr, index});  // where Boost would have readied a fiber made now
}

std::string Simulation::out_of_memory_message(const Node& node, std::exception_ptr error) const {
  constexpr std::size_t kMiB = 1024 * 1024;
  try {
    std::rethrow_exception(error);
  } catch (const StackPool::StackMapFailed& failed) {
    return fmt::format(
        "out of memory: could not map {} KiB more of fiber stacks ({} stacks of {} KiB) for a fiber of node {} ({}; "
        "{} fibers live, {} MiB of stacks mapped)",
        stack_pool_->chunk_bytes() / 1024, stack_pool_->chunk_bytes() / stack_pool_->stack_bytes(),
        stack_pool_->stack_bytes() / 1024, node.name(), std::error_code(failed.error, std::generic_category()).message(), live_fibers_,
        stack_pool_->mapped_bytes() / kMiB);
  } catch (const std::bad_alloc&) {
    return fmt::format("out of memory: an allocation failed (std::bad_alloc) while starting a fiber of "
                       "node {} ({} fibers live, {} MiB of stacks mapped)",
                       node.name(), live_fibers_, stack_pool_->mapped_bytes() / kMiB);
  } catch (...) {
    return "out of memory: starting a fiber of node " + node.name() + " failed";
  }
}

void Simulation::start_fiber(std::uint32_t index, std::function<void(bool)> then, bool woken) {
  boost::fibers::fiber fiber(
      std::allocator_arg, PooledStack{stack_pool_},
      [this, index, then = std::move(then), woken]() mutable {
        current_slot_ = index;
        slots_[index].context = boost::fibers::context::active();
        try {
          if (slots_[index].killed) throw Crash{};
          handle_pause(index);
          then(woken);
        } catch (const Crash&) {
          // Normal end of a crashed fiber.
        } catch (const InternalError& e) {
          fail(e.what());
        } catch (const std::bad_alloc&) {
          fail("out of memory: an allocation failed (std::bad_alloc) in a fiber of node " + slots_[index].node->name());
        } catch (const std::exception& e) {
          fail(std::string("a simulated fiber failed: ") + e.what());
        } catch (...) {
          fail("a simulated fiber failed with a non-standard exception");
        }
        then = nullptr;  // release captured state while the fiber still exists
        fiber_exited(index);
      });
  fiber.detach();
}

void Simulation::fiber_exited(std::uint32_t index) {
  FiberSlot& slot = slots_[index];
  ++exits_since_release_;
  if (slot.stackless) {  // park_then(): the fiber ends, its slot waits on
    slot.context = nullptr;
    current_slot_ = kNoSlot;
    return;
  }
  Node& node = *slot.node;
  auto it = std::find(node.fiber_slots_.begin(), node.fiber_slots_.end(), index);
  LETHE_KERNEL_ASSERT_OR_ABORT(it != node.fiber_slots_.end());
  node.fiber_slots_.erase(it);
  slot = FiberSlot{};
  free_slots_.push_back(index);
  --live_fibers_;
  current_slot_ = kNoSlot;
  if (live_fibers_ == 0 && shutting_down_) finish_run();
}

void Simulation::kill_fibers_of(Node& node) {
  for (std::uint32_t index : node.fiber_slots_) {
    FiberSlot& slot = slots_[index];
    slot.killed = true;
    if (slot.wait_id != 0) make_ready(index);
  }
}

void sleep(Duration duration) {
  Simulation& simulation = Simulation::current();
  simulation.park(saturating_add(simulation.now(), std::max<Duration>(duration, 0)));
}

void sleep_until(Time time) {
  Simulation& simulation = Simulation::current();
  simulation.park(std::max(time, simulation.now()));
}

// --- Node ---

void Node::start() {
  LETHE_ASSERT(main_, "Node::start REQUIRES a main function set (node " + name_ + ")");
  simulation_.trace().record(simulation_.now(), kinds::kSpawn, id_, incarnation_);
  simulation_.spawn_fiber(*this, main_);
}

void Node::spawn(std::function<void()> body) { simulation_.spawn_fiber(*this, std::move(body)); }

void Node::crash() {
  if (!alive_) return;
  alive_ = false;
  ++crashes_;
  simulation_.trace().record(simulation_.now(), kinds::kCrash, id_, incarnation_);
  simulation_.kill_fibers_of(*this);
}

void Node::restart() {
  if (alive_) return;
  alive_ = true;
  ++incarnation_;
  paused_until_ = 0;
  simulation_.trace().record(simulation_.now(), kinds::kRestart, id_, incarnation_);
  if (main_) simulation_.spawn_fiber(*this, main_);
}

void Node::pause_for(Duration duration) {
  const Time until = saturating_add(simulation_.now(), std::max<Duration>(duration, 0));
  if (until <= paused_until_) return;
  paused_until_ = until;
  simulation_.trace().record(simulation_.now(), kinds::kPause, id_, static_cast<std::uint64_t>(duration));
}

}  // namespace sim
