// check/history.hpp — recorded histories read from files, for the linearizability and queue checkers.
//
// Formats (docs/check.md, "Formats"):
//   lethe        lethe's JSON-lines store history, one operation per line (`lethe run --history` writes it);
//   jepsen-edn   Jepsen EDN histories: op maps {:type :invoke/:ok/:fail/:info, :f, :value, :process, :time, and
//                :key for key-value ops}, one per line or spread over lines, bare or inside one vector or list
//                (Knossos's data/, Jepsen's history.edn, Porcupine's kv/*.txt), read by check/history_edn.hpp;
//   jepsen-log   Jepsen log lines ("INFO jepsen.util - PROCESS :TYPE :F VALUE"), as Porcupine's jepsen/etcd_*.log;
//   jepsen-txt   Jepsen's history.txt: "PROCESS<TAB>:TYPE<TAB>:F<TAB>VALUE[<TAB>ERROR]" per line.
// Models (ModelKind, docs/check.md "Models and readings"): the lethe store; Knossos's register, cas-register,
// multi-register, mutex, set, unordered-queue and fifo-queue with Knossos's meanings; etcd-register, Porcupine's
// reading of etcd logs; kv, Porcupine's key-value map; total-queue, Jepsen's queue checker (not linearizability).
//
// Contract:
// - Pairing: a process has at most one operation in flight; its next :ok / :fail / :info answers it. :ok is a
//   response and its :value completes the operation (what a read returned, what a dequeue took). :info, and no
//   response before the end of the file, mean an unknown outcome (returned_at == lin::kNever: it may or may not
//   have taken effect). :fail means it did not happen and the operation is dropped, except under etcd-register,
//   where a failed cas is a response "cas -> fail" (its compare found another value).
// - Knossos's reads of nil: under register, cas-register and multi-register an :ok read of nil says nothing
//   about the value (it matches any); under etcd-register and kv it reads an absent value.
// - Initial value: Options::initial (EDN text), written to every key before the first operation; none: nil.
// - Independent keys: when every client op's :value is a vector [K V] (Jepsen's independent tuples), K is the key
//   and V the value (Options::independent == Auto); the key of an op is otherwise its :key, or none.
// - Time: Jepsen's :time (nanoseconds) when every op has one; otherwise the line of the op (so no two events are
//   simultaneous). The lethe format carries nanoseconds.
// - Keys: every distinct key gets an id in sorted order of names, so partitions come out in key order.
// - Nemesis ops (a :process that is not an integer) are skipped; a file of nemesis ops only has no operations.
// - Bad input (invalid UTF-8, a truncated value, an unknown op, a response without an invocation, a value of the
//   wrong type) throws history::Error naming the file, the line (and column where known) and what was expected;
//   nothing is guessed. Parsing keeps its own stack (no recursion that the input controls).
// - Determinism: the result depends only on the text and the options.
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
#include "check/linearizability_core.hpp"
#include "check/object_model.hpp"
#include "check/register_model.hpp"
#include "check/store_model.hpp"

namespace lethe::history {

enum class Format { Auto, Lethe, JepsenEdn, JepsenLog, JepsenTxt };
enum class ModelKind {
  Auto, Store, Register, CasRegister, EtcdRegister, Kv, MultiRegister, Mutex, Set, UnorderedQueue, FifoQueue,
  TotalQueue
};
enum class Independent { Auto, Yes, No };

inline constexpr Format kFormats[] = {Format::Auto, Format::Lethe, Format::JepsenEdn, Format::JepsenLog,
                                      Format::JepsenTxt};
inline constexpr ModelKind kModels[] = {
    ModelKind::Auto,          ModelKind::Store,     ModelKind::Register, ModelKind::CasRegister,
    ModelKind::EtcdRegister,  ModelKind::Kv,        ModelKind::MultiRegister, ModelKind::Mutex,
    ModelKind::Set,           ModelKind::UnorderedQueue, ModelKind::FifoQueue, ModelKind::TotalQueue};

std::string_view to_string(Format format);
std::string_view to_string(ModelKind model);

// "FILE:LINE: what was found; what was expected" (LINE 0: the file as a whole).
class Error : public std::runtime_error {
 public:
  Error(const std::string& file, std::size_t line, const std::string& what);
  Error(const std::string& file, std::size_t line, std::size_t column, const std::string& what);
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
  std::vector<std::string> key_names;              // key id -> the key as EDN prints it (Jepsen formats)
  bool raw_keys = false;                           // the lethe format: keys are the store's own, unnamed
  bool timed = false;  // invoked_at / returned_at are nanoseconds; false: they are line numbers
  ModelKind model = ModelKind::Auto;  // the model it was read for (read_history sets it)
};

using RegisterHistory = History<RegisterInput, RegisterOutput>;
using KvHistory = History<KvInput, KvOutput>;
using StoreHistory = History<Op, ObservedReply>;
using ObjectHistory = History<ObjectInput, ObjectOutput>;

// Jepsen's total-queue: what was offered, acknowledged and taken, each value with the line it was seen on.
struct QueueHistory {
  struct Entry {
    std::string value;  // canonical EDN text
    std::size_t line = 0;
  };
  std::vector<Entry> attempted;  // :invoke :enqueue
  std::vector<Entry> enqueued;   // :ok :enqueue
  std::vector<Entry> dequeued;   // :ok :dequeue, and each element of an :ok :drain
  ModelKind model = ModelKind::TotalQueue;
};

using AnyHistory = std::variant<RegisterHistory, KvHistory, StoreHistory, ObjectHistory, QueueHistory>;

struct Options {
  Format format = Format::Auto;
  ModelKind model = ModelKind::Auto;
  std::optional<std::string> initial;  // EDN text of the initial value of every key
  Independent independent = Independent::Auto;
};

// The model the history was read for.
ModelKind model_of(const AnyHistory& history);

// The format of `text` from its first line that is not blank or a ';' comment (after a UTF-8 byte order mark):
// '{"' lethe, '{' '[' '(' '#' jepsen-edn, a line naming jepsen.util jepsen-log, "INTEGER<TAB>:" jepsen-txt.
// Throws Error when none fits.
Format detect_format(const std::string& file, std::string_view text);

// Throws Error at the line and column of the first byte of `text` that is not valid UTF-8.
void check_utf8(const std::string& file, std::string_view text);

// Reads `text` (the contents of `file`, named in errors), parsing it once. Format::Auto detects it;
// ModelKind::Auto takes the store for the lethe format and, for Jepsen, the model from the ops' :f names
// (read/write/cas: cas-register, or etcd-register for jepsen-log; get/put/append: kv; txn: multi-register;
// acquire/release: mutex; add: set; enqueue/dequeue/drain: total-queue).
AnyHistory read_history(const std::string& file, std::string_view text, const Options& options);
inline AnyHistory read_history(const std::string& file, std::string_view text, Format format = Format::Auto,
                               ModelKind model = ModelKind::Auto) {
  return read_history(file, text, Options{format, model, std::nullopt, Independent::Auto});
}

// The lethe format: one line per operation of `history` (the simulated store's, every reply field observed), in
// any order (a reader orders them by invocation).
void write_store_history(std::ostream& out, const std::vector<StoreOperation>& history);
// One such line.
void write_store_operation(std::ostream& out, const StoreOperation& operation);

namespace detail {
AnyHistory read_jepsen(const std::string& file, std::string_view text, const Options& options);
StoreHistory read_lethe(const std::string& file, std::string_view text);
}  // namespace detail

}  // namespace lethe::history
