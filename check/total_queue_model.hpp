// check/total_queue_model.hpp — Jepsen's total-queue checker: what goes in must come out.
//
// Counted as Jepsen's checker counts them, over multisets of values (canonical EDN text):
//   attempted   every :invoke :enqueue;        acknowledged  every :ok :enqueue;
//   dequeued    every :ok :dequeue value and every element of an :ok :drain;
//   lost        acknowledged - dequeued        (enqueued for sure, never came out);
//   unexpected  dequeued - attempted           (came out more often than anyone offered it: never offered, or
//                                               a copy beyond the offers);
//   duplicated  values dequeued more than once (each listed with how many extra times);
//   recovered   (dequeued ∩ attempted) - acknowledged  (offered with an unknown outcome, and came out).
// Valid iff nothing is lost and nothing unexpected (Jepsen's :valid?). Only meaningful when the history drains
// the queue at its end; a value still queued when the history stops counts as lost.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "check/history.hpp"

namespace lethe {

struct QueueCount {
  std::string value;
  std::size_t count = 0;  // how many (lost, unexpected, recovered) or how many extra (duplicated)
  std::size_t line = 0;   // a line that shows it (the enqueue's acknowledgement, the dequeue)
};

struct QueueVerdict {
  bool valid = true;
  std::size_t attempted = 0;
  std::size_t acknowledged = 0;
  std::size_t dequeued = 0;
  std::vector<QueueCount> lost, unexpected, duplicated, recovered;  // each sorted by value
};

QueueVerdict judge_total_queue(const history::QueueHistory& history);

}  // namespace lethe
