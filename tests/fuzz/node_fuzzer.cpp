// tests/fuzz/node_fuzzer.cpp — libFuzzer target over what an external node writes (world/external_node.cpp):
// each input is the output of the consumer nodes of a small run, cut into one chunk per line lethe writes.
//
// The input is written to a file that node_fuzz_node (node_fuzz_node.cpp) reads: it answers init with chunk 0
// and every later line with the next chunk (chunks end at a 0x1e byte; marks such as @N, @T, @A fill in the node
// id, the turn, the attempt, so a chunk can be a valid reply on every node and delivery). The run: two consumers
// of a queue, three messages, crashes and crash points, external.node_timeout 50 ms (a missing turn_end costs
// that much), seed 1, through runner::run_seed as `lethe run` does, then its result rendered as `lethe run`
// prints it. Whatever the chunks hold, the run must end with a result (exit 0 or 1) or as a bad node (exit 2)
// whose error starts by naming it ("external node NAME (incarnation K") and is printable UTF-8, and no process
// a node started may be left. Anything else (lethe's own error, exit 3 or 5), an exception, a crash, a hang past
// libFuzzer's -timeout or a sanitizer report is a finding. LETHE_NODE_FUZZ_SHOW set: prints how each run ended.
//
// Built two ways (tests/fuzz/CMakeLists.txt): with -fsanitize=fuzzer under LETHE_FUZZ (scripts/fuzz), and in
// every build with replay_main.cpp over tests/fuzz/node/, as a ctest test.
#include <unistd.h>

#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <string>
#include <variant>

#include "core/utf8.hpp"
#include "reports/json.hpp"
#include "reports/summary.hpp"
#include "runner/execute.hpp"
#include "scenario/loader.hpp"

namespace {

[[noreturn]] void finding(const std::string& what, const std::string& detail) {
  std::fprintf(stderr, "node_fuzzer: %s\n%s\n", what.c_str(), detail.c_str());
  std::abort();
}

// The folder of the input file, made once per process and removed at its exit.
struct Workspace {
  std::filesystem::path folder;
  std::filesystem::path input;
  std::string mark;  // in every node's environment: a process left behind is found by it
  lethe::ScenarioConfig config;

  Workspace() {
    std::signal(SIGPIPE, SIG_IGN);  // as lethe's main: a write to a node that exited is an error, not a death
    std::string pattern = (std::filesystem::temp_directory_path() / "lethe-node-fuzz-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) finding("cannot make a temporary folder", pattern);
    folder = pattern;
    input = folder / "chunks";
    mark = fmt::format("LETHE_NODE_FUZZ_MARK={}", ::getpid());
    const std::string text = fmt::format(R"toml([scenario]
name = "node-fuzz"

[run]
duration = "2s"
drain = false

[topology]
source = "queue"
consumers = 2
visibility_timeout = "300ms"

[workload]
messages = 3
rate = "20/s"
processing_time = "1ms"

[faults]
crash_every = "exponential(mean=2s)"
restart_after = "50ms"

[faults.crash_points]
after_start_before_effect = 0.05
after_effect_before_complete = 0.05
after_complete_before_ack = 0.05

[protocol]
kind = "external"

[external]
command = [{}, {}]
env = [{}]
node_timeout = "50ms"
quiet_period = "5ms"
)toml",
                                         quoted(LETHE_NODE_FUZZ_NODE), quoted(input.string()), quoted(mark));
    auto loaded = scenario::load_scenario_text(text, "node-fuzz.toml", folder, {});
    if (auto* errors = std::get_if<std::vector<scenario::LoadError>>(&loaded)) {
      finding("the run's scenario does not load", errors->empty() ? text : errors->front().message);
    }
    config = std::get<lethe::ScenarioConfig>(std::move(loaded));
  }
  ~Workspace() {
    std::error_code ignored;
    std::filesystem::remove_all(folder, ignored);
  }
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  static std::string quoted(const std::string& text) {
    std::string out = "\"";
    for (const char c : text) out += c == '"' || c == '\\' ? std::string{'\\', c} : std::string{c};
    return out + "\"";
  }
};

// The processes still alive (zombies aside) whose environment holds `mark`.
std::string processes_marked(const std::string& mark) {
  std::string found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string pid = entry.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos || pid == std::to_string(::getpid())) continue;
    std::ifstream environ(entry.path() / "environ", std::ios::binary);
    std::string variables((std::istreambuf_iterator<char>(environ)), std::istreambuf_iterator<char>());
    if (("\0" + variables).find(std::string(1, '\0') + mark + '\0') == std::string::npos) continue;
    std::ifstream status(entry.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(status)), std::istreambuf_iterator<char>());
    const std::size_t paren = stat.rfind(')');
    if (paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z') continue;
    found += pid + " ";
  }
  return found;
}

void judge(const runner::SeedRun& run) {
  if (std::getenv("LETHE_NODE_FUZZ_SHOW") != nullptr) {  // how each input ended, to check what a seed reaches
    std::fprintf(stderr, "%s\n", run.error.empty() ? fmt::format("result: {} deliveries, {} effects",
                                                               run.result.deliveries, run.result.effects).c_str()
                                                    : run.error.substr(0, run.error.find('\n')).c_str());
  }
  if (run.error.empty()) {
    (void)reports::run_summary(run.result);  // what `lethe run` prints, and --json
    (void)reports::to_json(run.result).dump();
    return;
  }
  if (!run.bad_input) finding("the run ended in lethe's own error (exit 3 or 5), not a bad node's", run.error);
  if (run.error.rfind("external node ", 0) != 0 || run.error.find(" (incarnation ") == std::string::npos) {
    finding("a bad node's error does not start by naming the node", run.error);
  }
  if (lethe::printable_utf8(run.error) != run.error) finding("a bad node's error is not printable UTF-8", run.error);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static Workspace workspace;
  {
    std::ofstream out(workspace.input, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out) finding("cannot write the input file", workspace.input.string());
  }
  try {
    judge(runner::run_seed(workspace.config, 1));
  } catch (const std::exception& error) {
    finding("an exception out of the run", error.what());
  }
  const std::string left = processes_marked(workspace.mark);
  if (!left.empty()) finding("processes a node started outlived the run", left);
  return 0;
}
