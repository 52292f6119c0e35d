#include "check/total_queue_model.hpp"

#include <map>

namespace lethe {

namespace {

struct Tally {
  std::size_t count = 0;
  std::size_t line = 0;  // the first line seen
};

using Multiset = std::map<std::string, Tally>;

Multiset tally(const std::vector<history::QueueHistory::Entry>& entries) {
  Multiset set;
  for (const auto& entry : entries) {
    Tally& tally = set[entry.value];
    if (tally.count++ == 0) tally.line = entry.line;
  }
  return set;
}

std::size_t count_in(const Multiset& set, const std::string& value) {
  const auto found = set.find(value);
  return found == set.end() ? 0 : found->second.count;
}

// a - b, as multisets.
std::vector<QueueCount> minus(const Multiset& a, const Multiset& b) {
  std::vector<QueueCount> out;
  for (const auto& [value, tally] : a) {
    const std::size_t other = count_in(b, value);
    if (tally.count > other) out.push_back(QueueCount{value, tally.count - other, tally.line});
  }
  return out;
}

}  // namespace

QueueVerdict judge_total_queue(const history::QueueHistory& history) {
  const Multiset attempted = tally(history.attempted);
  const Multiset acknowledged = tally(history.enqueued);
  const Multiset dequeued = tally(history.dequeued);
  QueueVerdict verdict;
  verdict.attempted = history.attempted.size();
  verdict.acknowledged = history.enqueued.size();
  verdict.dequeued = history.dequeued.size();
  verdict.lost = minus(acknowledged, dequeued);
  verdict.unexpected = minus(dequeued, attempted);
  Multiset ok;  // dequeued ∩ attempted
  for (const auto& [value, tally] : dequeued) {
    const std::size_t both = std::min(tally.count, count_in(attempted, value));
    if (both > 0) ok[value] = Tally{both, tally.line};
    if (tally.count > 1) verdict.duplicated.push_back(QueueCount{value, tally.count - 1, tally.line});
  }
  verdict.recovered = minus(ok, acknowledged);
  verdict.valid = verdict.lost.empty() && verdict.unexpected.empty();
  return verdict;
}

}  // namespace lethe
