// check/linearizability_incremental.hpp — the incremental linearizability checker (the in-run check).
#pragma once


#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>


#include "check/linearizability_core.hpp"
#include "core/btree.hpp"

namespace lethe::lin {

// ---------------------------------------------------------------- incremental checking
//
// IncrementalChecker checks the same property as check() while the history is being recorded, so that what it keeps
// follows what is in flight, not the length of the history. It is fed events (invoke, respond, abandon, instant) in
// non-decreasing time order, except that events may be held back: advance(watermark) promises that no event earlier
// than `watermark` will come, and only events before it are processed. finish() processes the rest and gives the
// verdict.
//
// Algorithm: Lowe's just-in-time linearization, breadth first. Each key group (keys joined by a multi-key
// operation) keeps the set of configurations it may be in: the model state, the in-flight operations already
// linearized (with the output the model gave them) and the unanswered operations already linearized. An operation
// is linearized only when a response needs it: at the response of o, each configuration is extended by every
// sequence of pending operations that change the state, then o. An operation that leaves the state unchanged where
// it is linearized (a read, a conditional write whose condition failed) is never linearized ahead of its response:
// each configuration keeps the states it went through since the oldest in-flight operation was invoked (its path),
// and at the response such an operation is matched against the path states it may have seen. That keeps many
// concurrent readers from multiplying configurations. A group with no operation in flight keeps only its possible
// states (and the unanswered operations still able to take effect); a single-key group with one possible state and
// nothing pending keeps only that state, and none when it is Model::initial(). Same pruning as check() for
// unanswered operations (no effect: dropped; overwritten by a sibling: dropped), plus dominance between
// configurations (same state, same in-flight part, fewer unanswered operations used), and unanswered operations with
// the same input taken in one order only (they are interchangeable).
//
// Contract:
// - The verdict equals check()'s on the same history whenever both decide (Linearizable or NotLinearizable), with
//   the same real-time rule (equal instants are concurrent) and the same meaning of an unanswered operation.
// - Model needs, beyond SequentialModel: merge(State&, const State&) (the union of two groups' states over disjoint
//   keys). Optionally read_only(Input): true if the operation never changes any state (it is then dropped when
//   unanswered; nothing else depends on it).
// - Budget: `steps_per_response` Model::step calls for the search at one response, `total_steps` over the whole
//   history, and `states` configurations alive at once (kept by every group, plus the visited set of the search
//   under way). Any of them running out makes the verdict Unknown with the reason in Result::explanation; checking
//   stops there and frees what it kept.
// - After the verdict is NotLinearizable or Unknown, further events are ignored. Result::offending_ops stays empty
//   (the window is not recorded); the explanation names the response that could not be explained.
// - Determinism: only ordered containers are iterated; the verdict and steps depend only on the events.
// - Memory: O(configurations x path length) per group with operations in flight, one state per single-key group
//   whose state is not initial, plus each unanswered operation that changes state (it stays a candidate forever).

struct IncrementalBudget {
  std::uint64_t steps_per_response = 20'000'000;
  std::uint64_t states = 100'000;  // about 1-3 KB each for the store model: a few hundred MB at most
  // Model::step calls over the whole history: a bound on the time of the check (some seconds), so that a history
  // whose every response needs a long search (heavy-tailed latencies keep many operations in flight) ends in
  // Unknown with its reason instead of running for minutes.
  std::uint64_t total_steps = 200'000'000;
};

namespace detail {
template <class M, class Input>
constexpr bool read_only_input(const Input& input) {
  if constexpr (requires { { M::read_only(input) } -> std::convertible_to<bool>; }) {
    return M::read_only(input);
  } else {
    return false;
  }
}
// What a settled single-key group keeps of its state (one per key the history left in a state other than the
// initial one, so millions in a long run): the state itself, or Model::Settled when the model has a smaller form
// of a single-key state, with Model::settle(key, State&&) -> Settled, Model::unsettle(key, Settled&&) -> State and
// Model::step_settled(key, std::optional<Settled>&, input, observed) -> bool. step: if stepping `input` at the
// settled state (nullopt: the initial one) gives `observed`, it becomes the state after (nullopt when initial) and
// the result is true; otherwise it is left as it was and the result is false.
template <class M, class Input, class Output>
struct SettledForm {
  using State = typename M::State;
  using Type = State;
  static Type settle(std::uint64_t /*key*/, State&& state) { return std::move(state); }
  static State unsettle(std::uint64_t /*key*/, Type&& settled) { return std::move(settled); }
  static bool step(std::uint64_t /*key*/, std::optional<Type>& settled, const Input& input, const Output& observed) {
    auto [next, output] = M::step(settled.has_value() ? *settled : M::initial(), input);
    if (!M::output_matches(output, observed)) return false;
    if (next == M::initial()) {
      settled.reset();
    } else {
      settled = std::move(next);
    }
    return true;
  }
};
template <class M, class Input, class Output>
  requires requires { typename M::Settled; }
struct SettledForm<M, Input, Output> {
  using State = typename M::State;
  using Type = typename M::Settled;
  static Type settle(std::uint64_t key, State&& state) { return M::settle(key, std::move(state)); }
  static State unsettle(std::uint64_t key, Type&& settled) { return M::unsettle(key, std::move(settled)); }
  static bool step(std::uint64_t key, std::optional<Type>& settled, const Input& input, const Output& observed) {
    return M::step_settled(key, settled, input, observed);
  }
};
}  // namespace detail

template <class Model, class Input, class Output>
  requires SequentialModel<Model, Input, Output> &&
           requires(typename Model::State& into, const typename Model::State& from) { Model::merge(into, from); }
class IncrementalChecker {
 public:
  using State = typename Model::State;
  using OpId = std::uint64_t;
  using Form = detail::SettledForm<Model, Input, Output>;
  using Settled = typename Form::Type;

  explicit IncrementalChecker(IncrementalBudget budget = {}) : budget_(budget) {}

  // An invocation at `at`. The id names the operation in respond()/abandon().
  OpId invoke(std::uint32_t client, std::vector<std::uint64_t> keys, Time at, Input input) {
    const OpId id = next_op_++;
    if (stopped()) return id;
    if (keys.empty()) throw std::invalid_argument("linearizability: an operation touches no key");
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    OpRecord record;
    record.client = client;
    record.keys = std::move(keys);
    record.invoked_at = at;
    record.read_only = detail::read_only_input<Model>(input);
    record.input = std::move(input);
    insert_recycled(ops_, spare_ops_, id, std::move(record));
    push(Event{at, 0, id, EventKind::Invoke});
    return id;
  }
  // Its response, observed at `at` (>= its invocation).
  void respond(OpId id, Time at, Output output) {
    if (stopped()) return;
    auto found = ops_.find(id);
    if (found == ops_.end()) throw std::logic_error("linearizability: response of an unknown operation");
    if (at < found->second.invoked_at) throw std::invalid_argument("linearizability: a response before its invocation");
    found->second.output = std::move(output);
    push(Event{at, 1, id, EventKind::Return});
  }
  // No response will come: the operation may or may not take effect, at any time after its invocation.
  void abandon(OpId id, Time at) {
    if (stopped()) return;
    if (ops_.find(id) == ops_.end()) throw std::logic_error("linearizability: abandon of an unknown operation");
    push(Event{at, 1, id, EventKind::Abandon});
  }
  // An operation invoked and answered at one instant (executed by the server, observed by no client).
  void instant(std::uint32_t client, std::vector<std::uint64_t> keys, Time at, Input input, Output output) {
    const OpId id = invoke(client, std::move(keys), at, std::move(input));
    respond(id, at, std::move(output));
  }

  // Processes every event earlier than `watermark`; no later call may bring an event earlier than it.
  void advance(Time watermark) {
    if (stopped()) return;
    if (watermark < watermark_) throw std::logic_error("linearizability: the watermark went back");
    watermark_ = watermark;
    while (!stopped() && !events_.empty() && events_.front().at < watermark) {
      const Event event = events_.front();
      events_.pop_front();
      process(event);
    }
  }

  // Processes everything; operations still without a response count as unanswered.
  Result finish() {
    if (finished_) return result_;
    advance(kNever);
    while (!stopped() && !events_.empty()) {  // events at kNever itself
      const Event event = events_.front();
      events_.pop_front();
      process(event);
    }
    if (result_.verdict == Verdict::Linearizable) result_.partitions = groups_created_;
    finished_ = true;
    release();
    return result_;
  }

  const Result& result() const { return result_; }
  // True once the verdict is final: not linearizable, unknown, or finish() was called. Later events are ignored.
  bool stopped() const { return finished_ || result_.verdict != Verdict::Linearizable; }
  // What is kept (memory checks): live operations, groups with operations in flight or several possible states,
  // single-key groups settled in one state, queued events, configurations.
  std::size_t live_operations() const { return ops_.size(); }
  std::size_t open_groups() const { return groups_.size() + alone_.size(); }  // an operation alone counts as one
  std::size_t settled_keys() const { return settled_.size(); }
  std::size_t queued_events() const { return events_.size(); }
  std::uint64_t configurations() const { return configurations_; }
  std::uint64_t max_steps_per_response() const { return max_steps_; }

 private:
  enum class EventKind : std::uint8_t { Invoke, Return, Abandon };
  struct Event {
    Time at;
    int order;  // invocations (0) before responses and abandons (1) at one instant: equal instants are concurrent
    OpId op;
    EventKind kind;
  };
  enum class Status : std::uint8_t { Queued, InFlight, Unanswered };
  struct OpRecord {
    std::uint32_t client = 0;
    std::vector<std::uint64_t> keys;
    Time invoked_at = 0;
    Input input{};
    Output output{};
    std::uint64_t seq = 0;  // invocation number, once processed
    bool read_only = false;
    bool abandoned = false;  // the abandon was processed (or came before the invocation was processed)
    Status status = Status::Queued;
    // Unanswered: its class of interchangeable operations (same keys and input), named by the first one carried
    // when it joined, so a search tells twins apart in one lookup instead of comparing every pair.
    OpId twin = 0;
  };
  struct PathEntry {
    State state;
    std::uint64_t until = kOpen;  // invocations processed when another state followed it (kOpen: current)
  };
  static constexpr std::uint64_t kOpen = UINT64_MAX;
  static constexpr OpId kNoOp = UINT64_MAX;
  struct Config {
    std::vector<PathEntry> path;                 // back(): the current state
    std::vector<std::pair<OpId, Output>> done;   // in-flight operations linearized, with the model's output; sorted
    std::vector<OpId> used;                      // unanswered operations linearized; sorted
    const State& state() const { return path.back().state; }
  };
  struct Group {
    std::vector<std::uint64_t> keys;  // sorted
    std::vector<Config> configs;
    std::vector<OpId> inflight;       // invoked (processed), response not yet processed; sorted
    std::vector<OpId> carried;        // unanswered, may change state: candidates forever; sorted
  };

  void push(const Event& event) {
    if (event.at < watermark_) throw std::logic_error("linearizability: an event before the watermark");
    auto before = [](const Event& x, const Event& y) { return x.at != y.at ? x.at < y.at : x.order < y.order; };
    // Events come nearly in order: search from the back.
    auto position = events_.end();
    while (position != events_.begin() && before(event, *std::prev(position))) --position;
    events_.insert(position, event);
  }

  void process(const Event& event) {
    switch (event.kind) {
      case EventKind::Invoke: on_invoke(event.op); break;
      case EventKind::Return: on_return(event.op, event.at); break;
      case EventKind::Abandon: on_abandon(event.op); break;
    }
  }

  static void insert_sorted(std::vector<OpId>& ids, OpId id) { ids.insert(std::lower_bound(ids.begin(), ids.end(), id), id); }
  static void erase_sorted(std::vector<OpId>& ids, OpId id) {
    auto found = std::lower_bound(ids.begin(), ids.end(), id);
    if (found != ids.end() && *found == id) ids.erase(found);
  }
  static bool contains(const std::vector<OpId>& ids, OpId id) { return std::binary_search(ids.begin(), ids.end(), id); }
  static const std::pair<OpId, Output>* find_done(const Config& config, OpId id) {
    auto found = std::lower_bound(config.done.begin(), config.done.end(), id,
                                  [](const auto& entry, OpId wanted) { return entry.first < wanted; });
    return found != config.done.end() && found->first == id ? &*found : nullptr;
  }

  // The group holding `key`, creating a single-key one (from its settled state, or the initial one) if needed.
  std::uint64_t group_for(std::uint64_t key) {
    auto found = group_of_.find(key);
    if (found != group_of_.end()) return found->second;
    if (auto lone = alone_.find(key); lone != alone_.end()) return open_alone(lone);
    const std::uint64_t id = next_group_++;
    ++groups_created_;
    ++configurations_;
    return open_group(key, id);
  }
  // Group `id` for `key` from its settled state (or the initial one); the caller has counted it.
  std::uint64_t open_group(std::uint64_t key, std::uint64_t id) {
    // A spare group's vectors are empty, with their capacity (a settled one keeps its first configuration).
    Group& group = insert_recycled(groups_, spare_groups_, id, Group{})->second;
    group.keys.push_back(key);
    if (group.configs.empty()) group.configs.emplace_back();
    Config& config = group.configs.front();
    auto settled = settled_.find(key);
    if (settled != settled_.end()) {  // a key in an open group has no settled entry
      config.path.push_back(PathEntry{Form::unsettle(key, std::move(settled->second)), kOpen});
      settled_.erase(settled);
    } else {
      config.path.push_back(PathEntry{Model::initial(), kOpen});
    }
    insert_recycled(group_of_, spare_group_of_, key, std::uint64_t{id});
    return id;
  }

  // --- a single-key operation alone on its key, without a group
  //
  // Nearly every operation is invoked on a key with nothing in flight and answered before anything else touches the
  // key. Its group would hold one configuration (the key's settled state) and the operation in flight, and be
  // settled at the response by one model step (return_alone). Such an operation is kept in alone_ instead, with the
  // group id and the counts the group would have taken, and its key's state stays where it is settled: the
  // response steps it there. Anything else touching the key before the response (another invocation, the
  // operation's abandon) or a response the one step cannot explain opens the group it would have had, with the same
  // id, so every later step, verdict and explanation is the group's.
  struct Alone {
    OpId op;
    std::uint64_t group;  // the id its group takes if it is opened
  };
  using AloneMap = BTreeMap<std::uint64_t, Alone>;

  // True if `op` (invoked, not abandoned) is now alone on its key.
  bool begin_alone(OpId id, OpRecord& op) {
    if (op.abandoned || op.keys.size() != 1) return false;
    const std::uint64_t key = op.keys.front();
    if (group_of_.find(key) != group_of_.end() || alone_.find(key) != alone_.end()) return false;
    const std::uint64_t group = next_group_++;
    ++groups_created_;
    ++configurations_;
    alone_.emplace(key, Alone{id, group});
    op.status = Status::InFlight;
    return true;
  }

  // Opens the group of the operation alone on `lone`'s key, with that operation in flight; returns its id.
  std::uint64_t open_alone(typename AloneMap::iterator lone) {
    const std::uint64_t key = lone->first;
    const Alone alone = lone->second;
    alone_.erase(lone);
    const std::uint64_t id = open_group(key, alone.group);
    groups_.at(id).inflight.push_back(alone.op);
    return id;
  }

  // The fast paths' one step: the search would make it with these budget checks and count it so.
  bool one_step_fits() const {
    return budget_.steps_per_response >= 1 && result_.steps + 1 <= budget_.total_steps &&
           1 + configurations_ <= budget_.states;
  }
  void count_one_step() {
    result_.steps += 1;
    max_steps_ = std::max<std::uint64_t>(max_steps_, 1);
  }

  // The response of the operation alone on its key: return_alone's step, on the settled state in place. False
  // (nothing changed) when it does not explain the response or a budget would run out: the group is then opened.
  bool return_alone_in_place(OpId id, const OpRecord& o) {
    const std::uint64_t key = o.keys.front();
    auto lone = alone_.find(key);
    if (lone == alone_.end() || lone->second.op != id) return false;
    if (!one_step_fits()) {
      open_alone(lone);
      return false;
    }
    auto settled = settled_.find(key);
    const bool found = settled != settled_.end();
    std::optional<Settled> form;
    if (found) form.emplace(std::move(settled->second));
    if (!Form::step(key, form, o.input, o.output)) {
      if (found) settled->second = std::move(*form);  // unchanged: the group opens from it
      open_alone(lone);
      return false;
    }
    alone_.erase(lone);
    count_one_step();
    configurations_ -= 1;
    if (form.has_value() && found) {
      settled->second = std::move(*form);
    } else if (form.has_value()) {
      settled_.emplace(key, std::move(*form));
    } else if (found) {
      settled_.erase(settled);
    }
    erase_recycled(ops_, spare_ops_, ops_.find(id));
    return true;
  }

  // Joins group `from` into `into`: every pair of configurations, states merged (their keys are disjoint).
  void merge_groups(std::uint64_t into_id, std::uint64_t from_id) {
    Group& into = groups_.at(into_id);
    Group from = std::move(groups_.at(from_id));
    groups_.erase(from_id);
    std::vector<Config> merged;
    for (const Config& a : into.configs) {
      for (const Config& b : from.configs) {
        Config config;
        for (std::size_t index = 0; index + 1 < a.path.size(); ++index) {
          PathEntry entry = a.path[index];
          Model::merge(entry.state, b.state());
          config.path.push_back(std::move(entry));
        }
        for (std::size_t index = 0; index + 1 < b.path.size(); ++index) {
          PathEntry entry{a.state(), b.path[index].until};
          Model::merge(entry.state, b.path[index].state);
          config.path.push_back(std::move(entry));
        }
        PathEntry current{a.state(), kOpen};
        Model::merge(current.state, b.state());
        config.path.push_back(std::move(current));
        config.done = a.done;
        config.done.insert(config.done.end(), b.done.begin(), b.done.end());
        std::sort(config.done.begin(), config.done.end(),
                  [](const auto& x, const auto& y) { return x.first < y.first; });
        config.used = a.used;
        config.used.insert(config.used.end(), b.used.begin(), b.used.end());
        std::sort(config.used.begin(), config.used.end());
        merged.push_back(std::move(config));
      }
    }
    configurations_ -= into.configs.size() + from.configs.size();
    configurations_ += merged.size();
    into.configs = std::move(merged);
    for (std::uint64_t key : from.keys) group_of_[key] = into_id;
    into.keys.insert(into.keys.end(), from.keys.begin(), from.keys.end());
    std::sort(into.keys.begin(), into.keys.end());
    into.inflight.insert(into.inflight.end(), from.inflight.begin(), from.inflight.end());
    std::sort(into.inflight.begin(), into.inflight.end());
    into.carried.insert(into.carried.end(), from.carried.begin(), from.carried.end());
    std::sort(into.carried.begin(), into.carried.end());
    check_states_budget(0, into);
  }

  // `id` becomes unanswered: a candidate of the group's searches from now on. Its twins are looked for among the
  // kTwinScan latest unanswered operations (retries of one request come close together); one missed among more
  // makes the search larger, never wrong, where comparing with every one made a history of many unanswered
  // operations quadratic in them.
  static constexpr std::size_t kTwinScan = 256;
  void carry(Group& group, OpId id) {
    OpRecord& op = ops_.at(id);
    op.twin = id;
    if constexpr (std::equality_comparable<Input>) {
      const std::size_t scanned = std::min(group.carried.size(), kTwinScan);
      for (std::size_t back = 1; back <= scanned; ++back) {
        const OpRecord& candidate = ops_.at(group.carried[group.carried.size() - back]);
        if (candidate.keys == op.keys && candidate.input == op.input) {
          op.twin = candidate.twin;
          break;
        }
      }
    }
    insert_sorted(group.carried, id);
  }

  void on_invoke(OpId id) {
    OpRecord& op = ops_.at(id);
    op.seq = ++invocations_;
    if (op.abandoned && op.read_only) {  // an unanswered read: it explains nothing and changes nothing
      erase_recycled(ops_, spare_ops_, ops_.find(id));
      return;
    }
    if (begin_alone(id, op)) return;
    std::uint64_t group_id = group_for(op.keys.front());
    for (std::size_t index = 1; index < op.keys.size() && !stopped(); ++index) {
      const std::uint64_t other = group_for(op.keys[index]);
      if (other != group_id) merge_groups(std::min(group_id, other), std::max(group_id, other));
      group_id = std::min(group_id, other);
    }
    if (stopped()) return;
    Group& group = groups_.at(group_id);
    if (op.abandoned) {
      op.status = Status::Unanswered;
      carry(group, id);
    } else {
      op.status = Status::InFlight;
      insert_sorted(group.inflight, id);
    }
  }

  void on_abandon(OpId id) {
    OpRecord& op = ops_.at(id);
    op.abandoned = true;
    if (op.status == Status::Queued) return;  // its invocation comes first
    if (op.status != Status::InFlight) return;
    const std::uint64_t group_id = group_for(op.keys.front());  // opens the group of an operation alone
    Group& group = groups_.at(group_id);
    erase_sorted(group.inflight, id);
    if (op.read_only) {
      erase_recycled(ops_, spare_ops_, ops_.find(id));
    } else {
      op.status = Status::Unanswered;
      carry(group, id);
      for (Config& config : group.configs) {
        auto found = std::lower_bound(config.done.begin(), config.done.end(), id,
                                      [](const auto& entry, OpId wanted) { return entry.first < wanted; });
        if (found != config.done.end() && found->first == id) {
          config.done.erase(found);
          insert_sorted(config.used, id);
        }
      }
    }
    tidy(group);
    settle(group_id);
  }

  // --- the search at one response

  struct Search {
    OpId op;
    std::vector<Config> out;
    std::map<std::uint64_t, std::vector<std::size_t>> out_index;  // hash -> indices into `out`
    std::map<std::uint64_t, std::vector<Config>> visited;          // hash -> configurations expanded
    std::size_t visited_count = 0;
    std::uint64_t steps = 0;
    bool out_of_steps = false;
    bool out_of_states = false;
    bool out_of_total = false;
  };

  std::pair<State, Output> step(Search& search, const State& state, const Input& input) {
    ++search.steps;
    if (search.steps > budget_.steps_per_response) search.out_of_steps = true;
    if (result_.steps + search.steps > budget_.total_steps) search.out_of_total = true;
    return Model::step(state, input);
  }

  static std::uint64_t hash_config(const Config& config) {
    std::uint64_t hash = 0x8f1bbcdcca62c1d6ULL;
    for (const PathEntry& entry : config.path) {
      hash = detail::mix64(hash ^ Model::hash(entry.state));
      hash = detail::mix64(hash ^ entry.until);
    }
    for (const auto& [id, output] : config.done) hash = detail::mix64(hash ^ (id * 0x9e3779b97f4a7c15ULL));
    for (OpId id : config.used) hash = detail::mix64(hash ^ (id * 0xc2b2ae3d27d4eb4fULL) ^ 1);
    return hash;
  }
  static bool same_path_and_done(const Config& x, const Config& y) {
    if (x.path.size() != y.path.size() || x.done.size() != y.done.size()) return false;
    for (std::size_t index = 0; index < x.path.size(); ++index) {
      const PathEntry& a = x.path[index];
      const PathEntry& b = y.path[index];
      if (a.until != b.until || !(a.state == b.state)) return false;
    }
    for (std::size_t index = 0; index < x.done.size(); ++index) {
      if (x.done[index].first != y.done[index].first ||
          !Model::output_matches(x.done[index].second, y.done[index].second)) {
        return false;
      }
    }
    return true;
  }
  static bool same_config(const Config& x, const Config& y) { return x.used == y.used && same_path_and_done(x, y); }

  void emit(Search& search, Config config) {
    const std::uint64_t hash = hash_config(config);
    auto& bucket = search.out_index[hash];
    for (std::size_t index : bucket) {
      if (same_config(search.out[index], config)) return;
    }
    bucket.push_back(search.out.size());
    search.out.push_back(std::move(config));
    if (search.out.size() + search.visited_count + configurations_ > budget_.states) search.out_of_states = true;
  }

  // Appends `next` as the current state of `config` (the previous one is left at the current invocation count),
  // then drops the earlier states no pending operation could leave unchanged (other than `returning`, matched
  // against them at the root of its search): configurations that differ only there are then one.
  void advance_path(Config& config, State next, const Group& group, OpId returning, std::uint64_t& steps) const {
    config.path.back().until = invocations_;
    config.path.push_back(PathEntry{std::move(next), kOpen});
    prune_path(config, group, returning, steps);
  }
  void prune_path(Config& config, const Group& group, OpId returning, std::uint64_t& steps) const {
    if (config.path.size() <= 1) return;
    std::vector<PathEntry> kept;
    for (std::size_t index = 0; index + 1 < config.path.size(); ++index) {
      PathEntry& entry = config.path[index];
      bool useful = false;
      for (OpId id : group.inflight) {
        if (id == returning || find_done(config, id) != nullptr) continue;
        const OpRecord& pending = ops_.at(id);
        if (entry.until < pending.seq) continue;
        if (pending.read_only) {
          useful = true;
        } else {
          ++steps;
          useful = Model::step(entry.state, pending.input).first == entry.state;
        }
        if (useful) break;
      }
      if (useful) kept.push_back(std::move(entry));
    }
    kept.push_back(std::move(config.path.back()));
    config.path = std::move(kept);
  }

  // Every configuration reachable from `from` by pending state-changing operations, then the answered `o`.
  void expand(Search& search, const Group& group, const Config& from, const OpRecord& o) {
    struct Frame {
      Config config;
      OpId entered_by;      // kNone for the root
      bool entered_unanswered;
      std::vector<OpId> candidates;
      std::size_t next = 0;
    };
    constexpr OpId kNone = UINT64_MAX;
    std::vector<Frame> frames;
    auto candidates_of = [&](const Config& config) {
      std::vector<OpId> ids;
      for (OpId id : group.inflight) {
        if (id != search.op && !ops_.at(id).read_only && find_done(config, id) == nullptr) ids.push_back(id);
      }
      // Unanswered operations with the same keys and input are interchangeable (each may take effect at any
      // time, its output unseen): of those this configuration has not used, only the first is a candidate.
      std::set<OpId> twins_seen;
      for (OpId id : group.carried) {
        if (contains(config.used, id)) continue;
        if (twins_seen.insert(ops_.at(id).twin).second) ids.push_back(id);
      }
      return ids;
    };
    auto place_o = [&](const Config& config, bool root) {
      // o now: taking effect, or without effect at the current state.
      auto [next, output] = step(search, config.state(), o.input);
      const bool matches = Model::output_matches(output, o.output);
      bool matched = matches && next == config.state();
      if (matches && !matched) {
        Config placed = config;
        advance_path(placed, std::move(next), group, search.op, search.steps);
        emit(search, std::move(placed));
      }
      // o without effect at an earlier state of the path it may have seen (below the root they were tried there).
      for (std::size_t index = 0; root && !matched && index + 1 < config.path.size(); ++index) {
        const PathEntry& entry = config.path[index];
        if (entry.until < o.seq) continue;
        auto [earlier, earlier_output] = step(search, entry.state, o.input);
        matched = earlier == entry.state && Model::output_matches(earlier_output, o.output);
      }
      if (matched) emit(search, config);
    };
    auto visit = [&](const Config& config) {  // true if not seen before in this search
      const std::uint64_t hash = hash_config(config);
      auto& bucket = search.visited[hash];
      for (const Config& seen : bucket) {
        if (same_config(seen, config)) return false;
      }
      bucket.push_back(config);
      ++search.visited_count;
      if (search.out.size() + search.visited_count + configurations_ > budget_.states) search.out_of_states = true;
      return true;
    };

    place_o(from, true);
    std::vector<OpId> root_candidates = candidates_of(from);
    if (root_candidates.empty() || !visit(from)) return;  // (the common case: nothing else pending)
    frames.push_back(Frame{from, kNone, false, std::move(root_candidates), 0});
    while (!frames.empty() && !search.out_of_steps && !search.out_of_states && !search.out_of_total) {
      Frame& frame = frames.back();
      if (frame.next == frame.candidates.size()) {
        frames.pop_back();
        continue;
      }
      const OpId x = frame.candidates[frame.next++];
      const OpRecord& candidate = ops_.at(x);
      const bool unanswered = candidate.status == Status::Unanswered;
      auto [next, output] = step(search, frame.config.state(), candidate.input);
      if (next == frame.config.state()) continue;  // no effect here: matched at its response if it needs to be
      if (frame.entered_unanswered && frames.size() >= 2) {
        // Taking x instead of the unanswered operation that entered this frame gives the same: that sibling covers it.
        const Config& parent = frames[frames.size() - 2].config;
        auto [sibling, sibling_output] = step(search, parent.state(), candidate.input);
        if (sibling == next && (unanswered || Model::output_matches(sibling_output, output))) continue;
      }
      Config child = frame.config;
      advance_path(child, std::move(next), group, search.op, search.steps);
      if (unanswered) {
        insert_sorted(child.used, x);
      } else {
        auto at = std::lower_bound(child.done.begin(), child.done.end(), x,
                                   [](const auto& entry, OpId wanted) { return entry.first < wanted; });
        child.done.insert(at, {x, std::move(output)});
      }
      if (!visit(child)) continue;
      place_o(child, false);
      std::vector<OpId> next_candidates = candidates_of(child);
      frames.push_back(Frame{std::move(child), x, unanswered, std::move(next_candidates), 0});
    }
  }

  void on_return(OpId id, Time at) {
    OpRecord& o = ops_.at(id);
    if (o.status != Status::InFlight) {
      throw std::logic_error("linearizability: a response of an operation that is not in flight");
    }
    if (return_alone_in_place(id, o)) return;
    const std::uint64_t group_id = group_of_.at(o.keys.front());
    Group& group = groups_.at(group_id);
    if (return_alone(id, o, group_id, group)) return;
    Search search;
    search.op = id;
    for (const Config& config : group.configs) {
      if (const auto* done = find_done(config, id)) {
        if (!Model::output_matches(done->second, o.output)) continue;
        Config kept = config;
        kept.done.erase(kept.done.begin() + (done - config.done.data()));
        emit(search, std::move(kept));
        continue;
      }
      expand(search, group, config, o);
      if (search.out_of_steps || search.out_of_states || search.out_of_total) break;
    }
    result_.steps += search.steps;
    max_steps_ = std::max(max_steps_, search.steps);
    if (search.out_of_steps || search.out_of_states || search.out_of_total) {
      const std::string what =
          search.out_of_total ? "the step budget of " + std::to_string(budget_.total_steps) + " steps for the whole history"
          : search.out_of_steps ? "the step budget of " + std::to_string(budget_.steps_per_response) +
                                      " steps for the search at one response"
                                : "the memory budget of " + std::to_string(budget_.states) + " search states";
      stop(Verdict::Unknown, "unknown: " + what + " ran out at the response of " + describe(id, at) + " (keys " +
                                 detail::describe_keys(group.keys) + ", " + std::to_string(group.inflight.size()) +
                                 " operations in flight, " + std::to_string(group.carried.size()) +
                                 " unanswered); everything before was linearizable");
      return;
    }
    if (search.out.empty()) {
      stop(Verdict::NotLinearizable,
           "not linearizable: no order of the operations before it that respects real time explains the response "
           "of " + describe(id, at) + " (keys " + detail::describe_keys(group.keys) + ", " +
               std::to_string(group.inflight.size() - 1) + " other operations in flight, " +
               std::to_string(group.carried.size()) + " unanswered)");
      return;
    }
    configurations_ -= group.configs.size();
    group.configs = std::move(search.out);
    configurations_ += group.configs.size();
    erase_sorted(group.inflight, id);
    erase_recycled(ops_, spare_ops_, ops_.find(id));
    tidy(group);
    settle(group_id);
  }

  // The common response: o is its group's only operation in flight, and the group has one configuration with
  // nothing linearized and a path of one state. The search would step o once at that state and keep the one
  // configuration that gives (the state after o, or the same one when o changed nothing), with the same steps
  // and budget checks; this does exactly that without building a search. False (nothing changed) when o's output
  // does not match or a budget would run out: the search then says so.
  bool return_alone(OpId id, const OpRecord& o, std::uint64_t group_id, Group& group) {
    if (group.inflight.size() != 1 || !group.carried.empty() || group.configs.size() != 1) return false;
    Config& config = group.configs.front();
    if (!config.done.empty() || !config.used.empty() || config.path.size() != 1) return false;
    if (!one_step_fits()) return false;
    auto [next, output] = Model::step(config.state(), o.input);
    if (!Model::output_matches(output, o.output)) return false;
    if (!(next == config.state())) config.path.front() = PathEntry{std::move(next), kOpen};
    count_one_step();
    group.inflight.clear();
    erase_recycled(ops_, spare_ops_, ops_.find(id));
    settle(group_id);
    return true;
  }

  std::string describe(OpId id, Time at) const {
    const OpRecord& op = ops_.at(id);
    return "client " + std::to_string(op.client) + " [" + detail::format_time(op.invoked_at) + ", " + detail::format_time(at) + "] " +
           Model::describe(op.input, op.output);
  }

  // Drops path states no in-flight operation may have seen, then repeated and dominated configurations.
  void tidy(Group& group) {
    for (Config& config : group.configs) prune_path(config, group, kNoOp, result_.steps);
    const std::size_t before = group.configs.size();
    std::vector<Config> kept;
    kept.reserve(group.configs.size());
    // Exact repeats were merged by the search; here configurations that another makes redundant (same path and
    // in-flight part, a subset of its unanswered operations used) go, for small sets (the pairwise test is square).
    if (group.configs.size() <= 256) {
      std::stable_sort(group.configs.begin(), group.configs.end(),
                       [](const Config& x, const Config& y) { return x.used.size() < y.used.size(); });
      for (Config& config : group.configs) {
        bool dominated = false;
        for (const Config& other : kept) {
          if (other.used.size() <= config.used.size() &&
              std::includes(config.used.begin(), config.used.end(), other.used.begin(), other.used.end()) &&
              same_path_and_done(other, config)) {
            dominated = true;
            break;
          }
        }
        if (!dominated) kept.push_back(std::move(config));
      }
      group.configs = std::move(kept);
    }
    configurations_ -= before;
    configurations_ += group.configs.size();
    // Unanswered operations every configuration used are no candidates any more.
    std::vector<OpId> carried;
    for (OpId id : group.carried) {
      bool everywhere = true;
      for (const Config& config : group.configs) everywhere = everywhere && contains(config.used, id);
      if (!everywhere) {
        carried.push_back(id);
        continue;
      }
      for (Config& config : group.configs) erase_sorted(config.used, id);
      erase_recycled(ops_, spare_ops_, ops_.find(id));
    }
    group.carried = std::move(carried);
  }

  // A single-key group with nothing pending and one possible state keeps only that state (none if initial).
  void settle(std::uint64_t group_id) {
    Group& group = groups_.at(group_id);
    if (!group.inflight.empty() || !group.carried.empty() || group.configs.size() != 1) return;
    Config& config = group.configs.front();
    if (!config.done.empty() || !config.used.empty() || config.path.size() != 1) return;
    const bool initial = config.state() == Model::initial();
    if (!initial && group.keys.size() != 1) return;
    for (std::uint64_t key : group.keys) erase_recycled(group_of_, spare_group_of_, group_of_.find(key));
    if (!initial) {  // (the keys of an open group have no settled entry: an initial state needs none)
      const std::uint64_t key = group.keys.front();
      settled_.insert_or_assign(key, Form::settle(key, std::move(config.path.front().state)));
    }
    configurations_ -= 1;
    config.path.clear();
    group.keys.clear();
    erase_recycled(groups_, spare_groups_, groups_.find(group_id));
  }

  // Map nodes are recycled: nearly every operation opens a single-key group at its invocation and settles it at its
  // response, and allocating the operation's, the group's and the key's map nodes and the group's vectors afresh
  // each time was a tenth of a run's time. A spare node is emptied (its vectors keep their capacity) and reused
  // under a new key. At most kSpareNodes are kept per map.
  static constexpr std::size_t kSpareNodes = 64;
  template <class Map>
  static typename Map::iterator insert_recycled(Map& map, std::vector<typename Map::node_type>& spares,
                                                typename Map::key_type key, typename Map::mapped_type&& value) {
    if (spares.empty()) return map.emplace(key, std::move(value)).first;
    typename Map::node_type node = std::move(spares.back());
    spares.pop_back();
    node.key() = key;
    if constexpr (!std::is_same_v<typename Map::mapped_type, Group>) node.mapped() = std::move(value);
    return map.insert(std::move(node)).position;
  }
  template <class Map>
  static void erase_recycled(Map& map, std::vector<typename Map::node_type>& spares, typename Map::iterator at) {
    if (at == map.end()) return;
    if (spares.size() >= kSpareNodes) {
      map.erase(at);
      return;
    }
    typename Map::node_type node = map.extract(at);
    if constexpr (std::is_same_v<typename Map::mapped_type, Group>) {
      Group& group = node.mapped();
      group.keys.clear();
      group.inflight.clear();
      group.carried.clear();
      if (group.configs.size() > 1) group.configs.resize(1);
      for (Config& config : group.configs) {
        config.path.clear();
        config.done.clear();
        config.used.clear();
      }
    }
    spares.push_back(std::move(node));
  }

  void check_states_budget(std::uint64_t extra, const Group& group) {
    if (configurations_ + extra <= budget_.states) return;
    stop(Verdict::Unknown, "unknown: the memory budget of " + std::to_string(budget_.states) +
                               " search states ran out joining the keys " + detail::describe_keys(group.keys) +
                               "; everything before was linearizable");
  }

  void stop(Verdict verdict, std::string why) {
    result_.verdict = verdict;
    result_.explanation = std::move(why);
    result_.partitions = groups_created_;
    release();
  }

  // Frees everything the search holds; only the result stays.
  void release() {
    ops_.clear();
    events_.clear();
    groups_.clear();
    group_of_.clear();
    settled_.clear();
    alone_.clear();
    spare_ops_.clear();
    spare_groups_.clear();
    spare_group_of_.clear();
    configurations_ = 0;
  }

  IncrementalBudget budget_;
  Result result_;
  bool finished_ = false;
  OpId next_op_ = 0;
  std::uint64_t next_group_ = 0;
  std::uint64_t groups_created_ = 0;
  std::uint64_t invocations_ = 0;
  std::uint64_t configurations_ = 0;
  std::uint64_t max_steps_ = 0;
  Time watermark_ = INT64_MIN;
  std::map<OpId, OpRecord> ops_;
  std::vector<typename std::map<OpId, OpRecord>::node_type> spare_ops_;
  std::deque<Event> events_;
  std::map<std::uint64_t, Group> groups_;
  std::vector<typename std::map<std::uint64_t, Group>::node_type> spare_groups_;
  std::map<std::uint64_t, std::uint64_t> group_of_;  // key -> group, for keys of open groups
  AloneMap alone_;  // key -> its operation alone (as many as operations in flight)
  std::vector<typename std::map<std::uint64_t, std::uint64_t>::node_type> spare_group_of_;
  // key -> its one possible state (single-key, nothing pending, not the initial state), in its settled form: one
  // entry per key the run left written, so a B-tree (a red-black tree's node per key cost a cache miss per level at
  // every lookup of millions of keys), searched by bisection within a node (SettledOrder). A key in an open group
  // has no entry; a key with an operation alone keeps its entry, stepped in place at the response.
  struct SettledOrder {  // std::less; a comparator of its own makes absl search a node by bisection, not linearly
    bool operator()(std::uint64_t x, std::uint64_t y) const { return x < y; }
  };
  absl::container_internal::btree_map_container<absl::container_internal::btree<absl::container_internal::map_params<
      std::uint64_t, Settled, SettledOrder, std::allocator<std::pair<const std::uint64_t, Settled>>, 1024, false>>>
      settled_;
};

}  // namespace lethe::lin
