// The scenario loader's cross-field rules (schema::Rule), each run where the table places it, after the keys it
// relates; and the `between` of a [[network.partition]] or [[network.link]] (scenario/loader_impl.hpp).
#include "scenario/loader_impl.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <sys/resource.h>
#include <unistd.h>

#include "protocol/registry.hpp"
#include "sim/simulation.hpp"
#include "world/source.hpp"

namespace scenario::detail {

namespace {

// The address space this process may still map: RLIMIT_AS less what is mapped now (/proc/self/statm), or
// nullopt when no limit is set or it cannot be read.
std::optional<std::uint64_t> address_space_left() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return std::nullopt;
  unsigned long long pages = 0;
  std::FILE* statm = std::fopen("/proc/self/statm", "re");
  if (statm == nullptr) return std::nullopt;
  const bool read = std::fscanf(statm, "%llu", &pages) == 1;
  std::fclose(statm);
  if (!read) return std::nullopt;
  const std::uint64_t mapped = pages * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  return limit.rlim_cur > mapped ? limit.rlim_cur - mapped : 0;
}

}  // namespace

// A consumer node of a source whose idle workers keep their fibers holds a fiber stack of its own, so a topology
// whose stacks alone exceed the address-space limit cannot run: said here, at the key, instead of running out of
// memory mid-run (requests in flight need more fibers still, so a topology that passes may still run out: exit
// code 5). A source whose idle workers wait without a stack (the queue) needs stacks only for the busy ones.
void Loader::check_consumers_fit(const lethe::TopologySection& section) {
  if (!valid("topology.consumers") || !valid("topology.source") || !valid("topology.processors")) return;
  const lethe::SourceEntry* source = lethe::source_registry().find(section.source);
  if (source != nullptr && source->idle_workers_stackless) return;
  const std::optional<std::uint64_t> left = address_space_left();
  if (!left.has_value()) return;
  const std::uint64_t per_consumer =
      source != nullptr && source->workers == lethe::WorkerLayout::PerProcessor
          ? std::max<std::uint64_t>(1, section.processors.size())
          : 1;
  const std::uint64_t stack = sim::SimulationOptions{}.stack_bytes;
  const std::uint64_t fit = *left / stack / per_consumer;
  if (static_cast<std::uint64_t>(section.consumers) <= fit) return;
  error(where_in(current_, "consumers"), "topology.consumers",
        fmt::format("found {}; allowed: at most {} under this process's address-space limit ({} MiB left to map; "
                    "each consumer node{} runs on a fiber stack of {} KiB): lower it, or raise the limit (ulimit -v)",
                    section.consumers, fit, *left >> 20,
                    per_consumer > 1 ? fmt::format(", {} per consumer (one per processor),", per_consumer) : "",
                    stack >> 10));
}

void Loader::check(schema::Rule, const lethe::TopologySection& section) {
  check_consumers_fit(section);
  const bool source_valid = valid("topology.source");
  if (source_valid && valid("topology.partitions") && section.source == "kafka" && section.partitions < 1) {
    error(where_in(current_, "partitions"), "topology.partitions",
          fmt::format("found {}; allowed: an integer >= 1 when topology.source is \"kafka\"", section.partitions));
  }
  if (source_valid && valid("topology.clients") && section.source == "clients" && section.clients < 1) {
    error(where_in(current_, "clients"), "topology.clients",
          fmt::format("found {}; allowed: an integer >= 1 when topology.source is \"clients\"", section.clients));
  }
}

void Loader::check(schema::Rule, const lethe::WorkloadSection& section) {
  if (valid("workload.messages") && valid("workload.rate") && section.messages > 0 &&
      !(section.rate.per_second > 0.0)) {
    error(where_in(current_, "rate"), "workload.rate",
          fmt::format("found \"{}/s\"; allowed: a rate above 0 when workload.messages > 0, e.g. \"50/s\"",
                      section.rate.per_second));
  }
}

void Loader::check(schema::Rule, const lethe::RedeliverySection& section) {
  if (!valid("workload.redelivery.copies")) return;
  const std::size_t entries = section.copy_delays.size();
  if (entries <= static_cast<std::size_t>(section.copies)) return;
  error(where_in(current_, "copies"), "workload.redelivery.copies",
        fmt::format("found {} with {} [[workload.redelivery.copy]] entries; allowed: at least as many copies as "
                    "entries, e.g. copies = {} (entry i is the delay of copy i)",
                    section.copies, entries, entries));
}

template <class Window>
void Loader::check(schema::Rule, const Window& window) {
  if (window.for_duration > 0 && window.at > std::numeric_limits<Duration>::max() - window.for_duration) {
    error(where_in(current_, "for"), join_path(current_.path, "for"),
          fmt::format("found \"{}\", which ends the window after the last representable instant; allowed: at + for "
                      "below 292 years",
                      sim::format_duration(window.for_duration)));
  }
}

// The windows the table checks with Rule::WindowFits (scenario/schema.hpp), instantiated here for the row forms.
template void Loader::check(schema::Rule, const lethe::NetworkPartition&);
template void Loader::check(schema::Rule, const lethe::SinkOutage&);

void Loader::check(schema::Rule, const lethe::ExternalSection& section) {
  std::error_code failed;  // an empty base_dir (a text without a file) stays empty: the nodes then run in lethe's
  const std::filesystem::path base = base_dir_.empty() ? base_dir_ : std::filesystem::absolute(base_dir_, failed);
  config_.external.base_dir = failed ? base_dir_.string() : base.lexically_normal().string();
  // Paths relative to the scenario file become absolute, so that a rendered copy elsewhere (lethe shrink's
  // output) still runs the same program in the same folder.
  if (!config_.external.base_dir.empty() && !section.command.empty()) {
    const std::filesystem::path folder = config_.external.base_dir;
    config_.external.cwd = (folder / section.cwd).lexically_normal().string();
    std::string& program = config_.external.command.front();
    if (program.find('/') != std::string::npos) program = (folder / program).lexically_normal().string();
  }
  if (!valid("protocol.kind") || !valid("external.command")) return;
  const bool external = config_.protocol.kind == "external";
  if (external && section.command.empty()) {
    const Table& protocol = tables_.count("protocol") != 0 ? tables_.at("protocol") : root_;
    missing(current_, "command", current_.node != nullptr ? where_table(current_) : where_in(protocol, "kind"),
            "protocol.kind = \"external\" needs external.command, the program each consumer node runs, e.g. "
            "command = [\"python3\", \"consumer.py\"] (docs/external.md)");
  }
  if (!external && !section.command.empty()) {
    error(where_in(current_, "command"), "external.command",
          fmt::format("is set but protocol.kind is \"{}\"; allowed only with protocol.kind = \"external\"",
                      config_.protocol.kind));
  }
  if (external && config_.saga.steps > 0 && valid("saga.steps")) {
    error(where_in(current_, "command"), "saga.steps",
          fmt::format("found {}; allowed with protocol.kind = \"external\": 0 (external nodes run plain messages)",
                      config_.saga.steps));
  }
}

void Loader::check(schema::Rule, const lethe::SagaSection& section) {
  if (!valid("saga.steps")) return;
  const lethe::StrategyInfo* strategy = lethe::find_strategy(config_.protocol.kind);
  if (section.steps == 0) {
    if (valid("protocol.kind") && strategy != nullptr && strategy->saga) {
      const Table& protocol = tables_.count("protocol") != 0 ? tables_.at("protocol") : root_;
      error(where_in(protocol, "kind"), "protocol.kind",
            fmt::format("found \"{}\", which drives sagas only; allowed with saga.steps from 2 to 8 (docs/sagas.md)",
                        config_.protocol.kind));
    }
    return;
  }
  const Where steps_where = where_in(current_, "steps");
  if (section.steps == 1) {
    error(steps_where, "saga.steps", "found 1; allowed: 0 (plain messages) or 2 to 8 (a saga needs a step to undo)");
    return;
  }
  if (config_.topology.processors.size() != 1) {
    error(steps_where, "saga.steps",
          fmt::format("found {} with {} processors; allowed: sagas with exactly one processor in topology.processors",
                      section.steps, config_.topology.processors.size()));
  }
  if (valid("protocol.kind") && strategy != nullptr && strategy->effect_in_store_transaction) {
    error(steps_where, "saga.steps",
          fmt::format("found {} with protocol.kind \"{}\", whose effect is a store transaction; allowed: sagas with a "
                      "kind whose effect is a provider call",
                      section.steps, config_.protocol.kind));
  }
}

bool Loader::read_between(const Table& entry, std::string_view key, bool producer_clients,
                          lethe::PartitionGroup& first, lethe::PartitionGroup& second) {
  using lethe::PartitionGroup;
  const Words<PartitionGroup> groups = schema::group_words();
  const std::string allowed = schema::allowed(schema::Groups{producer_clients});
  const std::string path = join_path(entry.path, key);
  std::vector<std::string> names;
  if (!read_strings(entry, key, names, true, /*distinct=*/false,
                    "an array of " + allowed + ", e.g. [\"consumers\", \"store\"]")) {
    return false;
  }
  if (names.size() != 2) {
    error(where_in(entry, key), path,
          fmt::format("found {} group{}; allowed: {}, e.g. [\"consumers\", \"store\"]", names.size(),
                      names.size() == 1 ? "" : "s", allowed));
    return false;
  }
  std::vector<std::string> group_names;
  for (const auto& group : groups) group_names.push_back(group.first);
  const toml::node* between = entry.node->get(key);
  const toml::array* items = between->as_array();  // null when given with --set as "a,b"
  const bool source_valid = valid("topology.source");
  std::vector<PartitionGroup> chosen;
  for (std::size_t i = 0; i < 2; ++i) {
    std::string item_path = fmt::format("{}[{}]", path, i);
    Where where = is_set(path) || items == nullptr ? where_node(path, between) : where_node(item_path, items->get(i));
    auto found = std::find(group_names.begin(), group_names.end(), names[i]);
    if (found == group_names.end()) {
      std::string near = text::nearest(names[i], group_names);
      error(where, item_path,
            fmt::format("found \"{}\"{}; allowed: {}", names[i],
                        near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near),
                        schema::quoted_words(groups)));
      continue;
    }
    PartitionGroup group = groups[static_cast<std::size_t>(found - group_names.begin())].second;
    // A group this topology does not have would make the partition a silent no-op.
    bool has_clients = config_.topology.source == "clients";
    if (source_valid && ((group == PartitionGroup::Broker && has_clients) ||
                         (group == PartitionGroup::Clients && !has_clients && !producer_clients))) {
      error(where, item_path,
            fmt::format("found \"{}\", but topology.source is \"{}\", which has no {}; allowed: a group that exists "
                        "in this topology",
                        names[i], config_.topology.source, names[i]));
      continue;
    }
    chosen.push_back(group);
  }
  if (chosen.size() != 2) return false;
  // A group with itself is no link, except the consumers: external nodes send each other peer messages.
  if (chosen[0] == chosen[1] && chosen[0] != PartitionGroup::Consumers) {
    error(where_in(entry, key), path,
          fmt::format("found \"{}\" twice; allowed: {}", names[0], allowed));
    return false;
  }
  first = chosen[0];
  second = chosen[1];
  return true;
}

}  // namespace scenario::detail
