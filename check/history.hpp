// check/history.hpp — recorded histories read from files, for the linearizability checker.
//
// Three formats (docs/formats.md, "Store histories" and "Jepsen histories"):
//   lethe       lethe's JSON-lines store history, one operation per line (`lethe run --history` writes it);
//   jepsen-edn  Jepsen EDN histories, one op map per line ({:type :invoke/:ok/:fail/:info, :f, :value,
//               :process, :time, and :key for key-value ops}), as Porcupine's kv/*.txt;
//   jepsen-log  Jepsen log lines ("INFO jepsen.util - PROCESS :TYPE :F VALUE"), as Porcupine's jepsen/etcd_*.log.
// Models: the lethe store (check/store_model.hpp, lethe format only), a register (read / write / cas,
// check/register_model.hpp) and a key-value map of strings (get / put / append, check/kv_model.hpp).
//
// Contract:
// - Pairing: a process has at most one operation in flight; its next :ok / :fail / :info answers it.
//   :ok is a response; :info, and no response before the end of the file, mean an unknown outcome (returned_at ==
//   lin::kNever: it may or may not have taken effect). :fail means it did not apply: a cas that failed is a
//   response "cas -> fail" (its compare found another value), any other failed operation is dropped.
// - Time: Jepsen's :time (nanoseconds) when every op line has one; otherwise the position of the line (line
//   numbers are then the instants, so no two events are simultaneous). The lethe format carries nanoseconds.
// - Keys: every distinct key name gets an id in sorted order of names, so partitions come out in key order.
// - Bad input (a truncated line, an unknown op, a response without an invocation, a value of the wrong type)
//   throws history::Error naming the file, the line and what was expected; nothing is guessed.
// - Determinism: the result depends only on the text.
//
// Does not: read Jepsen's independent-key tuples ([key value] inside :value), or nemesis operations (lines whose
// :process is a keyword such as :nemesis are skipped).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "check/kv_model.hpp"
#include "check/linearizability.hpp"
#include "check/register_model.hpp"
#include "check/store_model.hpp"

namespace lethe::history {

enum class Format { Auto, Lethe, JepsenEdn, JepsenLog };
enum class ModelKind { Auto, Store, Register, Kv };

std::string_view to_string(Format format);
std::string_view to_string(ModelKind model);

// "FILE:LINE: what was found; what was expected" (LINE 0: the file as a whole).
class Error : public std::runtime_error {
 public:
  Error(const std::string& file, std::size_t line, const std::string& what);
  const std::string& file() const { return file_; }
  std::size_t line() const { return line_; }

 private:
  std::string file_;
  std::size_t line_;
};

// Where an operation came from: the lines of its invocation and of its response (0: none).
struct OpOrigin {
  std::size_t invoke_line = 0;
  std::size_t return_line = 0;
};

template <class Input, class Output>
struct History {
  using OpType = lin::Operation<Input, Output>;
  std::vector<lin::Operation<Input, Output>> ops;  // in invocation order
  std::vector<OpOrigin> origins;                   // one per op
  std::vector<std::string> key_names;              // key id -> the key as written (Jepsen formats)
  bool raw_keys = false;                           // the lethe format: keys are the store's own, unnamed
  bool timed = false;  // invoked_at / returned_at are nanoseconds; false: they are line numbers
};

using RegisterHistory = History<RegisterInput, RegisterOutput>;
using KvHistory = History<KvInput, KvOutput>;
using StoreHistory = History<Op, ObservedReply>;
using AnyHistory = std::variant<RegisterHistory, KvHistory, StoreHistory>;

// The format of `text` from its first non-empty line: '{"' lethe, '{' or '[' jepsen-edn, a line naming
// jepsen.util jepsen-log. Throws Error when none fits.
Format detect_format(const std::string& file, std::string_view text);

// Reads `text` (the contents of `file`, named in errors). Format::Auto detects it; ModelKind::Auto takes the
// store for the lethe format and, for Jepsen, the register or key-value map from the ops' :f names.
AnyHistory read_history(const std::string& file, std::string_view text, Format format = Format::Auto,
                        ModelKind model = ModelKind::Auto);

// The lethe format: one line per operation of `history` (the simulated store's, every reply field observed).
void write_store_history(std::ostream& out, const std::vector<StoreOperation>& history);

namespace detail {
RegisterHistory read_jepsen_register(const std::string& file, std::string_view text, Format format);
KvHistory read_jepsen_kv(const std::string& file, std::string_view text, Format format);
ModelKind jepsen_model(const std::string& file, std::string_view text, Format format);
StoreHistory read_lethe(const std::string& file, std::string_view text);
}  // namespace detail

}  // namespace lethe::history
