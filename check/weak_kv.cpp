#include "check/weak_kv.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>

namespace lethe {

namespace {

constexpr int kAbsent = 20;
constexpr int kDiffers = 22;

using KeyOps = std::vector<const WeakKvOp*>;
using Register = std::optional<std::string>;

std::map<std::string, KeyOps> by_key(const std::vector<WeakKvOp>& history) {
  std::map<std::string, KeyOps> keys;
  for (const WeakKvOp& op : history) keys[op.key].push_back(&op);
  return keys;
}

// `op` applied to the register `state`: whether it gives the answer its node got (any answer when none came), and
// the register after it.
bool apply(const WeakKvOp& op, Register& state) {
  int code = 0;
  Register found;
  Register next = state;
  switch (op.type) {
    case WeakKvType::Read:
      code = state.has_value() ? 0 : kAbsent;
      found = state;
      break;
    case WeakKvType::Write: next = op.value; break;
    case WeakKvType::Cas:
      if (!state.has_value()) {
        code = op.create ? 0 : kAbsent;
        if (op.create) next = op.value;
      } else if (*state != op.from) {
        code = kDiffers;
        found = state;
      } else {
        next = op.value;
      }
      break;
  }
  if (op.returned_at != lin::kNever) {
    if (code != op.code) return false;
    const bool compares_found = (op.type == WeakKvType::Read && code == 0) || code == kDiffers;
    if (compares_found && found != op.found) return false;
  }
  state = std::move(next);
  return true;
}

// A search for one order of a key's operations that gives every answer, each placed after every operation that
// must precede it. Memoised on (operations placed, register).
class OrderSearch {
 public:
  using Precedes = bool (*)(const WeakKvOp& a, const WeakKvOp& b);
  OrderSearch(const KeyOps& ops, Precedes precedes) : ops_(ops), precedes_(precedes) {
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (ops[i]->returned_at != lin::kNever) answered_ |= 1u << i;
    }
  }

  std::optional<bool> found() { return search(0, Register()); }

 private:
  std::optional<bool> search(std::uint32_t placed, const Register& state) {
    if ((placed & answered_) == answered_) return true;  // operations that got no answer may never take effect
    if (!seen_.insert({placed, state.has_value() ? "1" + *state : "0"}).second) return false;
    if (seen_.size() > kMaxStatesPerKey) return std::nullopt;
    for (std::size_t i = 0; i < ops_.size(); ++i) {
      if ((placed >> i & 1u) != 0 || !ready(placed, i)) continue;
      Register next = state;
      if (!apply(*ops_[i], next)) continue;
      const std::optional<bool> done = search(placed | 1u << i, next);
      if (!done.has_value() || *done) return done;
    }
    return false;
  }

  bool ready(std::uint32_t placed, std::size_t i) const {
    for (std::size_t j = 0; j < ops_.size(); ++j) {
      if (j != i && (placed >> j & 1u) == 0 && precedes_(*ops_[j], *ops_[i])) return false;
    }
    return true;
  }

  const KeyOps& ops_;
  Precedes precedes_;
  std::uint32_t answered_ = 0;
  std::set<std::pair<std::uint32_t, std::string>> seen_;
};

bool real_time(const WeakKvOp& a, const WeakKvOp& b) { return a.returned_at < b.invoked_at; }
bool node_order(const WeakKvOp& a, const WeakKvOp& b) { return a.client == b.client && a.returned_at < b.invoked_at; }

static_assert(kMaxOpsPerKey <= 32, "a key's operations are a 32-bit set");

WeakKvVerdict check_orders(const std::vector<WeakKvOp>& history, OrderSearch::Precedes precedes,
                           const char* order) {
  WeakKvVerdict verdict{true, ""};
  for (const auto& [key, ops] : by_key(history)) {
    if (ops.size() > kMaxOpsPerKey) {
      verdict = {std::nullopt, fmt::format("key {} has {} operations, more than the {} a key is searched with",
                                           key, ops.size(), kMaxOpsPerKey)};
      continue;
    }
    const std::optional<bool> found = OrderSearch(ops, precedes).found();
    if (!found.has_value()) {
      verdict = {std::nullopt, fmt::format("key {}: the search passed {} states", key, kMaxStatesPerKey)};
    } else if (!*found) {
      return {false, fmt::format("key {}: no order of its {} operations, {}, gives every answer they got", key,
                                 ops.size(), order)};
    }
  }
  return verdict;
}

}  // namespace

WeakKvVerdict check_weak_kv_linearizable(const std::vector<WeakKvOp>& history) {
  return check_orders(history, real_time, "each taking effect between its send and its answer");
}

WeakKvVerdict check_weak_kv_sequential(const std::vector<WeakKvOp>& history) {
  return check_orders(history, node_order, "each node's in the order it sent and was answered them");
}

WeakKvVerdict check_weak_kv_reads_from_writes(const std::vector<WeakKvOp>& history) {
  for (const auto& [key, ops] : by_key(history)) {
    for (const WeakKvOp* op : ops) {
      if (op->returned_at == lin::kNever || !op->found.has_value()) continue;
      const bool written = std::any_of(ops.begin(), ops.end(), [op](const WeakKvOp* w) {
        const bool writes = w->type == WeakKvType::Write ||
                            (w->type == WeakKvType::Cas && (w->returned_at == lin::kNever || w->code == 0));
        return w != op && writes && w->value == *op->found && w->invoked_at <= op->returned_at;
      });
      if (!written) {
        return {false, fmt::format("key {}: a {} found {}, which no write sent by its answer wrote", key,
                                   op->type == WeakKvType::Read ? "read" : "cas", *op->found)};
      }
    }
  }
  return {true, ""};
}

namespace {
std::string verdict_text(const WeakKvVerdict& verdict) {
  if (!verdict.holds.has_value()) return "unknown (" + verdict.why + ")";
  return *verdict.holds ? "yes" : "NO (" + verdict.why + ")";
}
}  // namespace

void judge_weak_kv(const std::map<std::string, std::vector<WeakKvOp>>& histories, RunResult& result) {
  bool failed = false;
  bool unknown = false;
  for (const auto& [service, history] : histories) {
    const bool seq = service == "seq-kv";
    const WeakKvVerdict own = seq ? check_weak_kv_sequential(history) : check_weak_kv_reads_from_writes(history);
    failed = failed || own.holds == false;
    unknown = unknown || !own.holds.has_value();
    const WeakKvVerdict linear = check_weak_kv_linearizable(history);
    const char* model = seq ? "sequentially consistent per key" : "reads from writes";
    result.kv_checks.push_back(fmt::format("{} history ({} operations): {}: {}; linearizable: {}{}", service,
                                           history.size(), model, verdict_text(own), verdict_text(linear),
                                           linear.holds == false ? ", which " + service + " does not promise" : ""));
  }
  if (histories.empty()) return;
  if (failed) {
    result.kv_consistent = false;
  } else if (!unknown) {
    result.kv_consistent = true;
  }
}

}  // namespace lethe
