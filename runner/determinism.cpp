#include "runner/determinism.hpp"

#include <fmt/format.h>

#include <iostream>

#include "runner/command.hpp"
#include "runner/command_line.hpp"
#include "runner/execute.hpp"
#include "world/world.hpp"

namespace runner {

namespace {

struct Observed {
  SeedRun run;
  std::vector<lethe::ExternalLine> lines;
  std::vector<sim::TraceRecord> trace;
};

Observed observe(const lethe::ScenarioConfig& config, std::uint64_t seed) {
  Observed observed;
  lethe::WorldOptions options;
  options.external_lines = &observed.lines;
  options.keep_trace = true;
  lethe::WorldRecord record;
  observed.run = run_seed(config, seed, options, &record);
  observed.trace = std::move(record.trace);
  return observed;
}

std::string describe(const lethe::ExternalLine& line) {
  return fmt::format("{} {}: {}", line.node, line.sent ? "was sent" : "wrote", line.text);
}

// The first line where the two runs differ, described; "" when every line agrees.
std::string first_difference(const std::vector<lethe::ExternalLine>& first,
                             const std::vector<lethe::ExternalLine>& second) {
  const std::size_t common = std::min(first.size(), second.size());
  for (std::size_t i = 0; i < common; ++i) {
    const lethe::ExternalLine& a = first[i];
    const lethe::ExternalLine& b = second[i];
    if (a.node == b.node && a.sent == b.sent && a.turn == b.turn && a.text == b.text) continue;
    return fmt::format("first difference at line {} exchanged, node {} (incarnation {}), turn {}:\n  run 1: {}\n"
                       "  run 2: {}\n",
                       i + 1, a.node, a.incarnation + 1, a.turn, describe(a), describe(b));
  }
  if (first.size() != second.size()) {
    const auto& longer = first.size() > second.size() ? first : second;
    return fmt::format("run {} exchanged {} lines, the other {}; the first extra one, node {} turn {}: {}\n",
                       first.size() > second.size() ? 1 : 2, longer.size(), common, longer[common].node,
                       longer[common].turn, describe(longer[common]));
  }
  return "";
}

}  // namespace

int check_determinism(const lethe::ScenarioConfig& config, std::uint64_t seed, const std::string& file,
                      const std::vector<std::string>& sets) {
  const Observed first = observe(config, seed);
  const Observed second = first.run.error.empty() ? observe(config, seed) : Observed{};
  for (const SeedRun* run : {&first.run, &second.run}) {
    if (run->error.empty()) continue;
    std::cerr << fmt::format("lethe run --check-determinism: {} seed {}: {}\n", file, seed, run->error);
    return run->bad_input ? kExitBadInput : run->out_of_memory() ? kExitResources : kExitInternal;
  }
  const std::uint64_t hash1 = first.run.result.trace_hash;
  const std::uint64_t hash2 = second.run.result.trace_hash;
  if (hash1 == hash2) {
    std::cout << fmt::format("deterministic: {} seed {} ran twice with the same trace hash {:016x} ({} lines "
                             "exchanged with external nodes)\n",
                             config.scenario.name, seed, hash1, first.lines.size());
    return kExitOk;
  }
  std::cout << fmt::format("NOT deterministic: {} seed {} ran twice: trace hashes {:016x} and {:016x}\n",
                           config.scenario.name, seed, hash1, hash2);
  std::string where = first_difference(first.lines, second.lines);
  if (where.empty()) {
    const std::size_t common = std::min(first.trace.size(), second.trace.size());
    std::size_t i = 0;
    const auto same = [](const sim::TraceRecord& x, const sim::TraceRecord& y) {
      return x.time == y.time && x.kind == y.kind && x.node == y.node && x.a == y.a && x.b == y.b && x.c == y.c;
    };
    while (i < common && same(first.trace[i], second.trace[i])) ++i;
    where = fmt::format("every line exchanged with the nodes agrees; the traces first differ at record {}\n", i + 1);
  }
  std::cout << where;
  std::cout << "  replay: " << seed_command("run", file, seed, sets) << " --check-determinism\n";
  return kExitExpectation;
}

}  // namespace runner
