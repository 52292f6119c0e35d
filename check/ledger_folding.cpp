#include "check/ledger_folding.hpp"

#include <algorithm>

namespace lethe {

std::vector<AttemptId>& LedgerFolding::active_on(std::uint32_t node) {
  if (node >= active_attempts_.size()) active_attempts_.resize(node + 1);
  return active_attempts_[node];
}

AttemptRecord LedgerFolding::fresh(MessageId id, ProcessorId processor, std::uint32_t node) {
  AttemptRecord record;
  record.id = id;
  record.processor = processor;
  record.node = node;
  return record;
}

AttemptId LedgerFolding::begin(MessageId id, ProcessorId processor, std::uint32_t node) {
  const AttemptRecord record = fresh(id, processor, node);
  const AttemptId attempt = ledger_.attempts.add(record);
  opened(attempt, record);
  return attempt;
}

void LedgerFolding::begin_recorded(AttemptId attempt, MessageId id, ProcessorId processor, std::uint32_t node) {
  const AttemptRecord record = fresh(id, processor, node);
  ledger_.attempts.add_with_id(attempt, record);
  opened(attempt, record);
}

void LedgerFolding::opened(AttemptId attempt, const AttemptRecord& record) {
  active_on(record.node).push_back(attempt);
  if (folding_) {
    const std::uint64_t key = group_key(record.id, record.processor);
    if (!kept_groups_.contains(key)) {
      OpenGroup& group = open_groups_[key];
      ++group.running;
      group.attempts.push_back(attempt);
    }
  }
}

AttemptRecord LedgerFolding::end(AttemptId attempt, const ProtectResult& result, sim::Time now) {
  auto& record = ledger_.attempt(attempt);
  record.ended_at = now;
  record.outcome = static_cast<std::int8_t>(result.outcome);
  if (result.outcome != Outcome::Failed && result.value) record.set_returned_value(*result.value);
  const AttemptRecord ended_record = record;
  ended(attempt);
  return ended_record;
}

void LedgerFolding::ended(AttemptId attempt) {
  const AttemptRecord& record = ledger_.attempt(attempt);
  auto& active = active_on(record.node);
  active.erase(std::remove(active.begin(), active.end(), attempt), active.end());
  if (folding_) attempt_over(record);
}

void LedgerFolding::node_crashed(std::uint32_t node, sim::Time now) {
  std::vector<AttemptId>& active = active_on(node);
  for (AttemptId a : active) {
    AttemptRecord& record = ledger_.attempt(a);
    record.crashed_at = now;
    if (folding_) attempt_over(record);
  }
  active.clear();
}

AttemptId LedgerFolding::running(std::uint32_t node, MessageId id, ProcessorId processor) const {
  if (node >= active_attempts_.size()) return 0;
  for (const AttemptId a : active_attempts_[node]) {
    const AttemptRecord& record = ledger_.attempt(a);
    if (record.id == id && record.processor == processor) return a;
  }
  return 0;
}

void LedgerFolding::record_execution(const ExecutionRecord& execution) {
  if (observer_ != nullptr) observer_->execution(execution);
  if (folding_) {
    const auto open = open_groups_.find(group_key(execution.id, execution.processor));
    if (open != open_groups_.end()) {
      open->second.executions.push_back(execution);
      return;
    }
  }
  ledger_.executions.push_back(execution);  // a kept group, or one that is not open (a late duplicate request)
}

void LedgerFolding::record_eviction(Key key, sim::Time at) {
  const EvictionRecord eviction{key, at, {}, EvictionRecord::kUnknown};
  if (observer_ != nullptr) observer_->eviction(eviction);
  if (!fold_eviction(key, at)) ledger_.evictions.push_back(eviction);
}

void LedgerFolding::record_wait(const WaitRecord& wait) {
  if (observer_ != nullptr) observer_->wait(wait);
  ledger_.waits.push_back(wait);
}

void LedgerFolding::record_capacity_eviction(const EvictionRecord& eviction) {
  ledger_.capacity_evictions.push_back(eviction);
}

bool LedgerFolding::fold_eviction(Key key, sim::Time at) {
  const Table table = key_table(key);
  if (!folding_ || (table != Table::Dedupe && table != Table::Inbox)) return false;
  const auto settled = ledger_.settled.find(group_key(key_message(key), key_processor(key)));
  if (settled == ledger_.settled.end()) return false;
  SettledGroup& group = settled->second;
  if (!group.evicted_at || at < *group.evicted_at) group.evicted_at = at;
  return true;
}

void LedgerFolding::attempt_over(const AttemptRecord& record) {
  const std::uint64_t key = group_key(record.id, record.processor);
  const auto open = open_groups_.find(key);
  if (open == open_groups_.end()) return;  // a kept group
  if (--open->second.running > 0) return;
  close_group(key, open->second);
  open_groups_.erase(open);
}

// Folds the group if it settled cleanly (SettledGroup says what that means), or keeps its records whole for good.
void LedgerFolding::close_group(std::uint64_t key, OpenGroup& group) {
  const auto prior = ledger_.settled.lower_bound(key);  // where a new summary goes, if it is not there
  const bool was_settled = prior != ledger_.settled.end() && prior->first == key;
  const ExecutionRecord* effect = nullptr;
  bool fold = false;
  std::uint64_t value = 0;
  if (was_settled) {
    fold = group.executions.empty();
    value = prior->second.value;
  } else if (group.executions.size() == 1 && group.executions.front().call_number == 1) {
    effect = &group.executions.front();
    fold = true;
    value = effect->value;
  }
  bool runner_seen = effect == nullptr;
  for (std::size_t i = 0; fold && i < group.attempts.size(); ++i) {
    const AttemptRecord& r = ledger_.attempt(group.attempts[i]);
    if (r.crashed_at || !r.ended_at || !r.has_returned_value || r.returned != value) fold = false;
    else if (effect != nullptr && r.attempt == effect->attempt) {
      runner_seen = true;
      fold = r.outcome == static_cast<std::int8_t>(Outcome::Executed) && r.completion_applied && r.completed_at &&
             r.decided_to_process && r.decided_basis != Basis::StaleTakeover &&
             r.decided_basis != Basis::MaxWaitProcess && r.node == effect->node;
    } else {
      fold = r.outcome == static_cast<std::int8_t>(Outcome::Skipped) && !r.completion_applied &&
             !r.decided_to_process;
    }
  }
  if (fold && runner_seen) {
    if (effect != nullptr) {
      const AttemptRecord& runner = ledger_.attempt(effect->attempt);
      ledger_.settled.emplace_hint(prior, key, SettledGroup{effect->attempt, effect->at, *runner.completed_at, value,
                                                            {}, effect->node});
    }
    for (const AttemptId a : group.attempts) {
      if (observer_ != nullptr) {
        const AttemptRecord& record = ledger_.attempt(a);
        observer_->attempt_folded(record, ledger_.process_decision(record));
      }
      ledger_.fold_attempt(a);
    }
    return;
  }
  for (const ExecutionRecord& e : group.executions) ledger_.executions.push_back(e);
  kept_groups_.insert(key);
}

void LedgerFolding::flush() {
  // Groups with an attempt still running when the run ended: kept whole.
  for (auto& [key, group] : open_groups_) {
    for (const ExecutionRecord& e : group.executions) ledger_.executions.push_back(e);
  }
  open_groups_.clear();
}

}  // namespace lethe
