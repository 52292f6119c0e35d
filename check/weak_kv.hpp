// check/weak_kv.hpp — the histories of Maelstrom's seq-kv and lww-kv (docs/external.md, "Services"), judged
// against their own models and against linearizability.
//
// An operation is a read, write or cas on one key (keys and values are JSON texts, compared as written), with the
// answer its node got: 0 (ok, a read's value), 20 (absent) or 22 (cas: the value differs; `found` is it). One whose
// answer never came (a timeout) may or may not have taken effect, at any time after it was sent. Each key is
// judged alone:
//   - linearizable: one order of the key's operations, each taking effect between its send and its answer, in
//     which a single register gives every answer (what lin-kv promises; neither seq-kv nor lww-kv does);
//   - sequentially consistent: one such order in which each node's operations keep the node's own order (an
//     operation before another of the same node when it was answered before that one was sent), at any time
//     otherwise: what seq-kv promises (checked per key, so a violation that needs two keys to show passes);
//   - reads from writes: every value a read or a refused cas found was written to that key by a write or cas sent
//     no later than the answer (nothing out of thin air, nothing from the future): what lww-kv promises beyond that its
//     replicas converge.
// A key with more than kMaxOpsPerKey operations, or a search past kMaxStatesPerKey, is unknown, and the verdict
// says which key and why.
//
// Does not: see the services' replicas or versions (only what the nodes were answered), or judge lin-tso.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "check/linearizability_core.hpp"
#include "core/result.hpp"

namespace lethe {

enum class WeakKvType : std::uint8_t { Read, Write, Cas };

struct WeakKvOp {
  std::uint32_t client = 0;               // the node that sent it
  lin::Time invoked_at = 0;               // sent
  lin::Time returned_at = lin::kNever;    // answered; kNever: no answer came
  std::string key;
  WeakKvType type = WeakKvType::Read;
  std::string value;                      // write: the value; cas: `to`
  std::string from;                       // cas
  bool create = false;                    // cas: create_if_not_exists
  int code = 0;                           // the answer: 0, 20 or 22 (ignored when returned_at is kNever)
  std::optional<std::string> found;       // read (code 0): the value; cas refused with 22: the value found
};

struct WeakKvVerdict {
  std::optional<bool> holds;  // null: unknown (`why` says why)
  std::string why;            // the first key that fails, or why the verdict is unknown; empty when it holds
};

inline constexpr std::size_t kMaxOpsPerKey = 24;
inline constexpr std::size_t kMaxStatesPerKey = 200'000;

WeakKvVerdict check_weak_kv_linearizable(const std::vector<WeakKvOp>& history);
WeakKvVerdict check_weak_kv_sequential(const std::vector<WeakKvOp>& history);
WeakKvVerdict check_weak_kv_reads_from_writes(const std::vector<WeakKvOp>& history);

// Judges each service's history ("seq-kv", "lww-kv" -> its operations): seq-kv as sequentially consistent,
// lww-kv as reading from writes, both as linearizable, and writes `result.kv_checks` (a line per service, in name
// order) and `result.kv_consistent` (every service held its own model; null when one is unknown and none failed,
// or when `histories` is empty).
void judge_weak_kv(const std::map<std::string, std::vector<WeakKvOp>>& histories, RunResult& result);

}  // namespace lethe
