#include "live/memory.hpp"

#include <chrono>
#include <stdexcept>
#include <thread>

namespace live {

namespace {

class MemoryStore;

class MemoryConnection final : public Connection {
 public:
  MemoryConnection(MemoryStore& store, bool atomic) : store_(store), atomic_(atomic) {}
  std::optional<lethe::Reply> execute(const lethe::Op& op, const DropPlan& drop) override;
  bool broken() const override { return broken_; }

 private:
  MemoryStore& store_;
  bool atomic_;
  bool broken_ = false;
};

class MemoryStore final : public LiveStore {
 public:
  explicit MemoryStore(bool atomic) : atomic_(atomic) {}
  std::unique_ptr<Connection> connect() override { return std::make_unique<MemoryConnection>(*this, atomic_); }
  bool stall(sim::Duration) override { return false; }
  void teardown() override {}
  std::string location() const override { return "process memory"; }

  lethe::Reply apply_atomically(const lethe::Op& op) {
    std::lock_guard<std::mutex> lock(mutex_);
    return lethe::apply(state_, op);
  }
  std::optional<lethe::Item> read(lethe::Key key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = state_.find(key);
    if (it == state_.end()) return std::nullopt;
    return it->second;
  }
  void write(lethe::Key key, const std::optional<lethe::Item>& item) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (item.has_value()) {
      state_[key] = *item;
    } else {
      state_.erase(key);
    }
  }

 private:
  bool atomic_;
  std::mutex mutex_;
  lethe::StoreState state_;
};

std::optional<lethe::Reply> MemoryConnection::execute(const lethe::Op& op, const DropPlan& drop) {
  require_supported(op, "memory");
  if (drop.before_send) {
    broken_ = true;
    return std::nullopt;
  }
  lethe::Reply reply;
  if (atomic_ || op.kind == lethe::OpKind::Get) {
    reply = store_.apply_atomically(op);
  } else {
    const std::optional<lethe::Item> current = store_.read(op.key);
    // The window between the read and the write that naive client code has (a round trip to the server).
    std::this_thread::sleep_for(std::chrono::microseconds(100));
    LocalStep step = apply_locally(op, current);
    if (step.changed) store_.write(op.key, step.after);
    reply = step.reply;
  }
  if (drop.after_request > 0) {
    broken_ = true;
    return std::nullopt;
  }
  return reply;
}

}  // namespace

std::unique_ptr<LiveStore> open_memory_store(const StoreOptions& options) {
  if (options.variant == "atomic") return std::make_unique<MemoryStore>(true);
  if (options.variant == "read-then-write") return std::make_unique<MemoryStore>(false);
  throw std::invalid_argument("memory store: unknown variant \"" + options.variant + "\"");
}

}  // namespace live
