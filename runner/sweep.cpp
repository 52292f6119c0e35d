#include "runner/sweep.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sys/file.h>
#include <sstream>
#include <thread>
#include <unistd.h>

#include "check/store_json.hpp"  // parse_bounded_json
#include "reports/json.hpp"
#include "reports/output_file.hpp"
#include "runner/command.hpp"
#include "runner/command_line.hpp"
#include "scenario/loader.hpp"
#include "runner/report.hpp"  // report_after_sweep: DIR/report.html

namespace fs = std::filesystem;

namespace runner {

namespace {

constexpr const char* kFormat = "lethe-sweep/1";
constexpr const char* kResultsName = "results.jsonl";
constexpr const char* kSweepName = "sweep.json";

std::string trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r\n");
  return std::string(text.substr(first, last - first + 1));
}

// Splits at commas that are outside (), [], {} and quotes.
std::vector<std::string> split_top_level(std::string_view text) {
  std::vector<std::string> parts;
  std::string current;
  int depth = 0;
  char quote = 0;
  for (char c : text) {
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if ((c == ')' || c == ']' || c == '}') && depth > 0) {
      --depth;
    } else if (c == ',' && depth == 0) {
      parts.push_back(trim(current));
      current.clear();
      continue;
    }
    current += c;
  }
  parts.push_back(trim(current));
  return parts;
}

std::string params_text(const Params& params) {
  std::string out;
  for (const auto& [key, value] : params) out += fmt::format("{}{}={}", out.empty() ? "" : ", ", key, value);
  return out;
}

std::optional<std::string> read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return content.str();
}

// Appends lines to a file from any thread. A writer thread takes every queued line, writes the batch and fsyncs
// it, so callers never wait on the disk. Lines reach the file in the order they were queued.
class LineAppender {
 public:
  explicit LineAppender(const fs::path& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      fail(errno);
      return;
    }
    writer_ = std::thread([this] { write_loop(); });
  }
  LineAppender(const LineAppender&) = delete;
  LineAppender& operator=(const LineAppender&) = delete;
  ~LineAppender() { close(); }

  bool failed() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return failed_;
  }
  // "cannot write PATH: OS error" for the first failure.
  std::string error() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return reports::write_error(path_, error_);
  }

  void append(std::string line) {
    line += '\n';
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(line));
    }
    wake_.notify_one();
  }

  // Writes and fsyncs everything queued, then stops the writer. Returns false if any write failed.
  bool close() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closing_ = true;
    }
    wake_.notify_one();
    if (writer_.joinable()) writer_.join();
    if (fd_ >= 0) {
      if (::close(fd_) != 0) fail(errno);
      fd_ = -1;
    }
    return !failed();
  }

 private:
  void fail(int error) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failed_) error_ = error;
    failed_ = true;
  }

  void write_loop() {
    std::vector<std::string> batch;
    while (true) {
      bool last = false;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [this] { return !queue_.empty() || closing_; });
        batch.swap(queue_);
        last = closing_ && batch.empty();
      }
      if (last) return;
      std::string data;
      for (const auto& line : batch) data += line;
      batch.clear();
      int error = reports::write_fully(fd_, data);
      if (error == 0 && ::fsync(fd_) != 0) error = errno;
      if (error != 0) fail(error);
    }
  }

  fs::path path_;
  int fd_ = -1;
  int error_ = 0;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<std::string> queue_;
  bool closing_ = false;
  bool failed_ = false;
  std::thread writer_;
};

// An exclusive lock on DIR/.lock while a sweep writes into DIR, so two sweeps (a job runner that started a
// shard twice) cannot interleave their lines. The kernel drops it when the process dies, also on kill -9.
class FolderLock {
 public:
  explicit FolderLock(const fs::path& dir) {
    fd_ = ::open((dir / ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ >= 0 && ::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;
  ~FolderLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// ---------------------------------------------------------------- identity

struct CellDefinition {
  Params params;
  std::int64_t seeds = 0;
  std::size_t processors = 1;
};

struct Identity {
  std::string scenario_file;
  std::string scenario_name;
  std::string scenario_text;
  std::vector<std::string> sets;
  std::vector<VarySpec> vary;
  std::int64_t seeds_option = 0;  // --seeds, 0 = each cell's run.seeds
  std::vector<CellDefinition> cells;
};

// What makes two folders hold the same sweep (not the file path, the shard or the command lines).
std::optional<std::string> identity_difference(const Identity& a, const Identity& b) {
  if (a.scenario_text != b.scenario_text) return "the scenario text differs";
  if (a.sets != b.sets) return "the --set overrides differ";
  if (a.vary != b.vary) return "the --vary axes differ";
  if (a.cells.size() != b.cells.size()) return "the number of cells differs";
  for (std::size_t c = 0; c < a.cells.size(); ++c) {
    if (a.cells[c].seeds != b.cells[c].seeds) return fmt::format("the seeds of cell {} differ", c);
    if (a.cells[c].processors != b.cells[c].processors) return fmt::format("the processors of cell {} differ", c);
  }
  return std::nullopt;
}

nlohmann::ordered_json params_json(const Params& params) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [key, value] : params) j[key] = value;
  return j;
}

nlohmann::ordered_json sweep_json(const Identity& id, const Shard& shard, const std::string& command_line) {
  nlohmann::ordered_json j;
  j["format"] = kFormat;
  j["scenario_file"] = id.scenario_file;
  j["scenario_name"] = id.scenario_name;
  j["scenario_text"] = id.scenario_text;
  j["sets"] = id.sets;
  nlohmann::ordered_json vary = nlohmann::ordered_json::array();
  for (const auto& axis : id.vary) vary.push_back({{"key", axis.key}, {"values", axis.values}});
  j["vary"] = vary;
  if (id.seeds_option > 0) {
    j["seeds"] = id.seeds_option;
  } else {
    j["seeds"] = nullptr;
  }
  std::size_t pairs = 0;
  nlohmann::ordered_json cells = nlohmann::ordered_json::array();
  for (std::size_t c = 0; c < id.cells.size(); ++c) {
    nlohmann::ordered_json cell;
    cell["index"] = c;
    cell["params"] = params_json(id.cells[c].params);
    cell["seeds"] = id.cells[c].seeds;
    cell["processors"] = id.cells[c].processors;
    cells.push_back(cell);
    pairs += static_cast<std::size_t>(id.cells[c].seeds);
  }
  j["cells"] = cells;
  j["pairs"] = pairs;
  j["shard"] = {{"index", shard.index}, {"count", shard.count}};
  j["command_line"] = command_line;
  j["resumed_by"] = nlohmann::ordered_json::array();
  return j;
}

// Reads sweep.json back. Throws nlohmann::json::exception on a malformed file.
Identity identity_from_json(const nlohmann::ordered_json& j, Shard& shard) {
  if (j.at("format").get<std::string>() != kFormat) {
    throw std::runtime_error(fmt::format("format \"{}\" is not {}", j.at("format").get<std::string>(), kFormat));
  }
  Identity id;
  id.scenario_file = j.at("scenario_file").get<std::string>();
  id.scenario_name = j.at("scenario_name").get<std::string>();
  id.scenario_text = j.at("scenario_text").get<std::string>();
  id.sets = j.at("sets").get<std::vector<std::string>>();
  for (const auto& axis : j.at("vary")) {
    id.vary.push_back(VarySpec{axis.at("key").get<std::string>(), axis.at("values").get<std::vector<std::string>>()});
  }
  id.seeds_option = j.at("seeds").is_null() ? 0 : j.at("seeds").get<std::int64_t>();
  for (const auto& cell : j.at("cells")) {
    CellDefinition definition;
    for (const auto& [key, value] : cell.at("params").items()) definition.params.emplace_back(key, value.get<std::string>());
    definition.seeds = cell.at("seeds").get<std::int64_t>();
    definition.processors = cell.at("processors").get<std::size_t>();
    id.cells.push_back(std::move(definition));
  }
  shard.index = j.at("shard").at("index").get<std::uint64_t>();
  shard.count = j.at("shard").at("count").get<std::uint64_t>();
  return id;
}

// The params of every cell of a grid, row-major over the axes.
std::vector<Params> grid_params(const std::vector<VarySpec>& vary) {
  std::size_t cells = 1;
  for (const auto& axis : vary) cells *= axis.values.size();
  std::vector<Params> grid(cells);
  for (std::size_t c = 0; c < cells; ++c) {
    std::size_t rest = c;
    Params params(vary.size());
    for (std::size_t k = vary.size(); k-- > 0;) {
      const std::size_t n = vary[k].values.size();
      params[k] = {vary[k].key, vary[k].values[rest % n]};
      rest /= n;
    }
    grid[c] = std::move(params);
  }
  return grid;
}

bool same_params(const Params& a, const Params& b) {
  std::map<std::string, std::string> left(a.begin(), a.end());
  std::map<std::string, std::string> right(b.begin(), b.end());
  return left == right;
}

// ---------------------------------------------------------------- results files

using PairKey = std::pair<std::size_t, std::uint64_t>;  // (cell, seed)

struct Entry {
  std::string text;    // the line as written (no newline)
  std::string origin;  // "FILE:LINE"
  ResultLine line;
};
using ResultMap = std::map<PairKey, Entry>;

enum class Partial { Repair, Ignore };

// Reads a results.jsonl into `results`, checking each line against the sweep (and the shard, if given). A
// truncated last line is cut off the file (Repair) or skipped (Ignore); either way a warning says so. Returns
// false after printing the first error.
bool read_results(const fs::path& path, Partial partial, const Identity& id, const std::optional<Shard>& shard,
                  const std::vector<std::size_t>& first_pair, ResultMap& results, std::ostream& messages) {
  std::error_code code;
  if (!fs::exists(path, code)) return true;
  auto text = read_text(path);
  if (!text) {
    messages << fmt::format("lethe: cannot read {}\n", path.string());
    return false;
  }
  const std::size_t complete = text->rfind('\n') == std::string::npos ? 0 : text->rfind('\n') + 1;
  if (complete < text->size()) {
    const std::size_t dropped = text->size() - complete;
    if (partial == Partial::Repair) {
      fs::resize_file(path, complete, code);
      if (code) {
        messages << fmt::format("lethe: cannot truncate {}: {}\n", path.string(), code.message());
        return false;
      }
      messages << fmt::format("lethe: {}: dropped a truncated last line ({} bytes); its seed runs again\n",
                              path.string(), dropped);
    } else {
      messages << fmt::format("lethe: {}: ignored a truncated last line ({} bytes)\n", path.string(), dropped);
    }
    text->resize(complete);
  }
  const auto grid = grid_params(id.vary);
  std::size_t start = 0;
  std::size_t number = 0;
  while (start < text->size()) {
    const std::size_t end = text->find('\n', start);
    const std::string_view raw(text->data() + start, end - start);
    start = end + 1;
    ++number;
    if (trim(raw).empty()) continue;
    const std::string origin = fmt::format("{}:{}", path.string(), number);
    std::string error;
    auto parsed = parse_result_line(raw, error);
    if (!parsed) {
      messages << fmt::format("lethe: {}: not a result line: {}\n", origin, error);
      return false;
    }
    if (parsed->cell >= id.cells.size()) {
      messages << fmt::format("lethe: {}: cell {} is not in this sweep's grid of {} cells\n", origin, parsed->cell,
                              id.cells.size());
      return false;
    }
    const auto& cell = id.cells[parsed->cell];
    if (!same_params(parsed->params, grid[parsed->cell])) {
      messages << fmt::format("lethe: {}: cell {} has params {{{}}}, but this sweep's cell {} is {{{}}}\n", origin,
                              parsed->cell, params_text(parsed->params), parsed->cell, params_text(grid[parsed->cell]));
      return false;
    }
    if (parsed->seed < 1 || parsed->seed > static_cast<std::uint64_t>(cell.seeds)) {
      messages << fmt::format("lethe: {}: seed {} is outside this sweep's seeds 1..{} of cell {}\n", origin,
                              parsed->seed, cell.seeds, parsed->cell);
      return false;
    }
    if (shard) {
      const std::size_t pair = first_pair[parsed->cell] + static_cast<std::size_t>(parsed->seed - 1);
      if (pair % shard->count != shard->index - 1) {
        messages << fmt::format("lethe: {}: cell {} seed {} belongs to another shard than {}/{}\n", origin,
                                parsed->cell, parsed->seed, shard->index, shard->count);
        return false;
      }
    }
    const PairKey key{parsed->cell, parsed->seed};
    const auto found = results.find(key);
    if (found != results.end()) {
      if (nlohmann::json::parse(found->second.text) != nlohmann::json::parse(raw)) {
        messages << fmt::format("lethe: {}: cell {} seed {} differs from the same pair in {}: the results do not "
                                "come from the same lethe and scenario\n",
                                origin, parsed->cell, parsed->seed, found->second.origin);
        return false;
      }
      continue;  // the same result twice counts once
    }
    results.emplace(key, Entry{std::string(raw), origin, std::move(*parsed)});
  }
  return true;
}

std::string replay_command(const Identity& id, const Params& params, std::uint64_t seed) {
  std::vector<std::string> sets = id.sets;
  for (const auto& [key, value] : params) sets.push_back(key + "=" + value);
  return runner::replay_command(id.scenario_file, seed, sets);
}

// Aggregates every cell, writes cells.json and cells.csv, prints the table and the failing seeds.
bool finish(const fs::path& out_dir, const Identity& id, const ResultMap& results, std::ostream* table_out,
            std::ostream& messages, SweepOutcome& outcome) {
  const auto grid = grid_params(id.vary);
  std::vector<std::vector<SeedRun>> runs(id.cells.size());
  std::vector<std::vector<std::uint64_t>> failed(id.cells.size());
  std::vector<std::vector<std::pair<std::uint64_t, std::string>>> broken(id.cells.size());
  for (const auto& [key, entry] : results) {
    runs[key.first].push_back(entry.line.run);
    if (!entry.line.run.error.empty()) {
      broken[key.first].emplace_back(key.second, entry.line.run.error);
    } else if (!entry.line.run.result.ok) {
      failed[key.first].push_back(key.second);
    }
  }
  reports::SweepCells sweep;
  sweep.scenario = id.scenario_name;
  sweep.axes = id.vary;
  for (std::size_t c = 0; c < id.cells.size(); ++c) {
    sweep.cells.push_back(summarize(c, grid[c], id.cells[c].processors, runs[c]));
  }
  const std::string json_text = reports::sweep_cells_json(sweep).dump(2) + "\n";
  std::string write_failure = reports::write_file_atomically(out_dir / "cells.json", json_text);
  if (write_failure.empty()) {
    write_failure = reports::write_file_atomically(out_dir / "cells.csv", reports::cells_csv(sweep.axes, sweep.cells));
  }
  if (!write_failure.empty()) {
    messages << "lethe: " << write_failure << "\n";
    outcome.exit_code = kExitBadInput;
    return false;
  }
  bool any_failed = false;
  bool any_broken = false;
  std::string notes;
  for (std::size_t c = 0; c < id.cells.size(); ++c) {
    for (const auto& [seed, error] : broken[c]) {
      any_broken = true;
      notes += fmt::format("ERROR cell {} ({}) seed {}: {}\n  replay: {}\n", c, params_text(grid[c]), seed, error,
                           replay_command(id, grid[c], seed));
    }
    if (failed[c].empty()) continue;
    any_failed = true;
    std::string seeds;
    for (std::size_t i = 0; i < failed[c].size() && i < 10; ++i) seeds += fmt::format("{}{}", i == 0 ? "" : ", ", failed[c][i]);
    if (failed[c].size() > 10) seeds += fmt::format(" and {} more", failed[c].size() - 10);
    const std::string replay = replay_command(id, grid[c], failed[c].front());
    notes += fmt::format("FAIL cell {} ({}): expectations failed on seeds {}\n  replay: {} --explain\n"
                         "  draw it: {} --html cell{}-seed{}.html\n",
                         c, params_text(grid[c]), seeds, replay, replay, c, failed[c].front());
  }
  if (table_out != nullptr) {
    *table_out << fmt::format("sweep {}: {} cell{}, {} of {} (cell, seed) pairs\n", id.scenario_name,
                              id.cells.size(), id.cells.size() == 1 ? "" : "s", results.size(), outcome.pairs_total);
    *table_out << reports::cells_table(sweep.axes, sweep.cells);
    if (!notes.empty()) *table_out << "\n" << notes;
    *table_out << std::flush;
  }
  outcome.cells = std::move(sweep);
  outcome.exit_code = any_broken ? kExitInternal : (any_failed ? kExitExpectation : kExitOk);
  return true;
}

std::vector<std::size_t> first_pairs(const Identity& id, std::size_t& total) {
  std::vector<std::size_t> first(id.cells.size());
  total = 0;
  for (std::size_t c = 0; c < id.cells.size(); ++c) {
    first[c] = total;
    total += static_cast<std::size_t>(id.cells[c].seeds);
  }
  return first;
}

// Rewrites "--set KEY=VALUE: ..." as "--vary KEY=VALUE: ..." for the override that came from --vary.
std::string as_vary_error(const std::string& message, const std::string& assignment) {
  const std::string prefix = "--set " + assignment;
  if (message.rfind(prefix, 0) == 0) return "--vary " + message.substr(6);
  return message;
}

// Builds the identity and every cell's config; prints the errors and returns false if anything is invalid.
bool build_grid(const SweepSpec& spec, Identity& id, std::vector<lethe::ScenarioConfig>& configs,
                std::ostream& messages) {
  id.scenario_file = spec.scenario_file.string();
  if (spec.scenario_text) {
    id.scenario_text = *spec.scenario_text;
  } else {
    std::error_code code;
    auto text = fs::is_directory(spec.scenario_file, code) ? std::nullopt : read_text(spec.scenario_file);
    if (!text) {
      messages << fmt::format("{}:1:1: scenario: found no readable file; allowed: a readable scenario file (.toml)\n",
                              id.scenario_file);
      return false;
    }
    id.scenario_text = std::move(*text);
  }
  id.sets = spec.sets;
  id.vary = spec.vary;
  id.seeds_option = spec.seeds;
  fs::path base_dir = spec.scenario_file.parent_path();
  if (base_dir.empty()) base_dir = ".";
  auto load = [&](const std::vector<std::string>& overrides) {
    return scenario::load_scenario_text(id.scenario_text, id.scenario_file, base_dir, overrides);
  };
  // The file with --set alone, then each varied value alone, so an error is reported once, not once per cell.
  std::set<std::string> keys;
  for (const auto& axis : spec.vary) {
    if (!keys.insert(axis.key).second) {
      messages << fmt::format("--vary {}: the key is varied twice; allowed: one --vary per key\n", axis.key);
      return false;
    }
    if (axis.values.empty()) {
      messages << fmt::format("--vary {}: found no values; allowed: --vary KEY=V1,V2,...\n", axis.key);
      return false;
    }
  }
  if (spec.seeds < 0) {
    messages << "--seeds: found a negative number; allowed: 1 or more\n";
    return false;
  }
  bool ok = true;
  std::set<std::string> printed;
  auto report = [&](const scenario::LoadResult& loaded, const std::string& assignment, const std::string& context) {
    if (const auto* errors = std::get_if<std::vector<scenario::LoadError>>(&loaded)) {
      for (const auto& e : *errors) {
        const std::string message = context + (assignment.empty() ? e.message : as_vary_error(e.message, assignment));
        if (printed.insert(message).second) messages << message << "\n";
      }
      return false;
    }
    return true;
  };
  const scenario::LoadResult base = load(spec.sets);
  if (!report(base, "", "")) return false;
  for (const auto& axis : spec.vary) {
    for (const auto& value : axis.values) {
      std::vector<std::string> overrides = spec.sets;
      const std::string assignment = axis.key + "=" + value;
      overrides.push_back(assignment);
      ok = report(load(overrides), assignment, "") && ok;
    }
  }
  if (!ok) return false;
  id.scenario_name = std::get<lethe::ScenarioConfig>(base).scenario.name;
  for (const auto& params : grid_params(spec.vary)) {
    std::vector<std::string> overrides = spec.sets;
    for (const auto& [key, value] : params) overrides.push_back(key + "=" + value);
    scenario::LoadResult loaded = load(overrides);
    if (!report(loaded, "", fmt::format("cell {} ({}): ", configs.size(), params_text(params)))) {
      ok = false;
      configs.emplace_back();
      continue;
    }
    auto config = std::get<lethe::ScenarioConfig>(std::move(loaded));
    CellDefinition definition;
    definition.params = params;
    definition.seeds = spec.seeds > 0 ? spec.seeds : config.run.seeds;
    definition.processors = config.topology.processors.size();
    id.cells.push_back(std::move(definition));
    configs.push_back(std::move(config));
  }
  return ok;
}

std::optional<nlohmann::ordered_json> read_sweep_json(const fs::path& dir, Identity& id, Shard& shard,
                                                       std::ostream& messages) {
  const fs::path path = dir / kSweepName;
  auto text = read_text(path);
  if (!text) {
    messages << fmt::format("lethe: {}: not found: {} is not a sweep folder\n", path.string(), dir.string());
    return std::nullopt;
  }
  try {
    auto j = nlohmann::ordered_json::parse(*text);
    id = identity_from_json(j, shard);
    return j;
  } catch (const std::exception& e) {
    messages << fmt::format("lethe: {}: not a sweep description: {}\n", path.string(), e.what());
    return std::nullopt;
  }
}

std::ostream& messages_of(std::ostream* out) { return out != nullptr ? *out : std::cerr; }

}  // namespace

// ---------------------------------------------------------------- parsing

std::optional<VarySpec> parse_vary(std::string_view text, std::string& error) {
  const auto equals = text.find('=');
  if (equals == std::string_view::npos) {
    error = fmt::format("--vary {}: found no KEY=V1,V2,...; allowed: e.g. --vary protocol.max_processing_time=1s,5s,30s",
                        text);
    return std::nullopt;
  }
  VarySpec spec;
  spec.key = trim(text.substr(0, equals));
  if (spec.key.empty()) {
    error = fmt::format("--vary {}: found no key before '='; allowed: --vary KEY=V1,V2,...", text);
    return std::nullopt;
  }
  spec.values = split_top_level(text.substr(equals + 1));
  std::set<std::string> seen;
  for (const auto& value : spec.values) {
    if (value.empty()) {
      error = fmt::format("--vary {}: found an empty value; allowed: --vary KEY=V1,V2,... with no empty value", text);
      return std::nullopt;
    }
    if (!seen.insert(value).second) {
      error = fmt::format("--vary {}: found \"{}\" twice; allowed: each value once", text, value);
      return std::nullopt;
    }
  }
  return spec;
}

std::optional<Shard> parse_shard(std::string_view text, std::string& error) {
  const auto slash = text.find('/');
  auto number = [](std::string_view digits) -> std::optional<std::uint64_t> {
    if (digits.empty() || digits.size() > 9) return std::nullopt;
    std::uint64_t value = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return std::nullopt;
      value = value * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return value;
  };
  std::optional<std::uint64_t> index;
  std::optional<std::uint64_t> count;
  if (slash != std::string_view::npos) {
    index = number(text.substr(0, slash));
    count = number(text.substr(slash + 1));
  }
  if (!index || !count || *index < 1 || *index > *count) {
    error = fmt::format("--shard {}: found no K/N with 1 <= K <= N; allowed: e.g. --shard 2/8", text);
    return std::nullopt;
  }
  return Shard{*index, *count};
}

// ---------------------------------------------------------------- results lines

std::string result_line(std::size_t cell, const Params& params, const SeedRun& run) {
  nlohmann::ordered_json j;
  j["cell"] = cell;
  j["params"] = params_json(params);
  j["seed"] = run.result.seed;
  nlohmann::ordered_json result = reports::to_json(run.result);
  // to_json leaves the sample counts out; the aggregation needs them.
  if (!result["wait_time"].contains("count")) result["wait_time"]["count"] = run.result.wait_time.count;
  if (!result["recovery_latency"].contains("count")) {
    result["recovery_latency"]["count"] = run.result.recovery_latency.count;
  }
  j["result"] = std::move(result);
  if (!run.error.empty()) j["error"] = run.error;
  return j.dump();
}

std::optional<ResultLine> parse_result_line(std::string_view text, std::string& error) {
  try {
    const auto j = lethe::history::parse_bounded_json<nlohmann::ordered_json>(text);
    ResultLine line;
    line.cell = j.at("cell").get<std::size_t>();
    for (const auto& [key, value] : j.at("params").items()) line.params.emplace_back(key, value.get<std::string>());
    line.seed = j.at("seed").get<std::uint64_t>();
    // result_from_json takes a plain json; an expectation that could not be evaluated has "got": null (NaN).
    nlohmann::json result = nlohmann::json::parse(j.at("result").dump());
    std::vector<std::size_t> not_evaluated;
    if (result.contains("expectations")) {
      auto& expectations = result["expectations"];
      for (std::size_t i = 0; i < expectations.size(); ++i) {
        if (expectations[i].contains("got") && expectations[i]["got"].is_null()) {
          expectations[i].erase("got");
          not_evaluated.push_back(i);
        }
      }
    }
    line.run.result = reports::result_from_json(result);
    for (std::size_t i : not_evaluated) line.run.result.expectations[i].got = std::nan("");
    const auto& wait = result.at("wait_time");
    line.run.result.wait_time.count = wait.contains("count") ? wait["count"].get<std::uint64_t>() : line.run.result.waits;
    const auto& recovery = result.at("recovery_latency");
    // Without a count (a line not written by a sweep), a positive max is the only sign of a sample.
    line.run.result.recovery_latency.count = recovery.contains("count") ? recovery["count"].get<std::uint64_t>()
                                                                        : (line.run.result.recovery_latency.max > 0 ? 1 : 0);
    if (line.run.result.seed != line.seed) {
      error = fmt::format("\"seed\" is {} but the result's seed is {}", line.seed, line.run.result.seed);
      return std::nullopt;
    }
    line.run.error = j.contains("error") ? j["error"].get<std::string>() : std::string{};
    return line;
  } catch (const std::exception& e) {
    error = e.what();
    return std::nullopt;
  }
}

// ---------------------------------------------------------------- aggregation

reports::CellSummary summarize(std::size_t index, const Params& params, std::size_t processors,
                               const std::vector<SeedRun>& runs) {
  reports::CellSummary cell;
  cell.index = index;
  cell.params = params;
  std::vector<std::int64_t> wait_p50;
  std::vector<std::int64_t> wait_p99;
  std::vector<std::int64_t> recovery_p50;
  std::vector<std::int64_t> recovery_p99;
  auto gather = [](const lethe::Quantiles& q, lethe::Quantiles& total, std::vector<std::int64_t>& p50,
                   std::vector<std::int64_t>& p99) {
    if (q.count == 0) return;
    p50.push_back(q.p50);
    p99.push_back(q.p99);
    total.max = std::max(total.max, q.max);
    total.count += q.count;
  };
  for (const auto& run : runs) {
    if (!run.error.empty()) {
      ++cell.error_seeds;
      continue;
    }
    const auto& r = run.result;
    ++cell.seeds;
    cell.trials += r.messages * processors;
    cell.duplicates += r.duplicate_effects;
    for (std::size_t i = 0; i < lethe::kCauseCount; ++i) cell.by_cause[i] += r.duplicates[i];
    cell.lost += r.lost_messages;
    cell.waits += r.waits;
    cell.memo_mismatches += r.memo_mismatches;
    if (!r.ok) ++cell.failed_seeds;
    gather(r.wait_time, cell.wait_time, wait_p50, wait_p99);
    gather(r.recovery_latency, cell.recovery_latency, recovery_p50, recovery_p99);
  }
  auto lower_median = [](std::vector<std::int64_t>& values) -> std::int64_t {
    if (values.empty()) return 0;
    const auto middle = values.begin() + static_cast<std::ptrdiff_t>((values.size() - 1) / 2);
    std::nth_element(values.begin(), middle, values.end());
    return *middle;
  };
  cell.wait_time.p50 = lower_median(wait_p50);
  cell.wait_time.p99 = lower_median(wait_p99);
  cell.recovery_latency.p50 = lower_median(recovery_p50);
  cell.recovery_latency.p99 = lower_median(recovery_p99);
  cell.duplicate_rate =
      cell.trials == 0 ? 0.0 : static_cast<double>(cell.duplicates) / static_cast<double>(cell.trials);
  cell.duplicate_interval = reports::wilson_interval(cell.duplicates, cell.trials);
  return cell;
}

// ---------------------------------------------------------------- sweep

namespace {

// Every seed allocates and frees the same large buffers (the store history, the linearizability check's copy of
// it, timers, traces). By default glibc serves the large ones with mmap and gives freed memory back to the
// kernel, so the next seed faults it all in again: measured on the 1,000-message timing sweep, a third of the
// CPU time was page faults. Keeping freed memory in the process removes them; results do not change (nothing
// depends on addresses). Process-wide, and set once.
void keep_freed_memory() {
#if defined(__GLIBC__)
  static const bool done = [] {
    mallopt(M_MMAP_THRESHOLD, 256 * 1024 * 1024);
    mallopt(M_TRIM_THRESHOLD, 1024 * 1024 * 1024);
    return true;
  }();
  (void)done;
#endif
}

}  // namespace

SweepOutcome run_sweep(const SweepSpec& spec) {
  keep_freed_memory();
  std::ostream& messages = messages_of(spec.messages_out);
  SweepOutcome outcome;
  outcome.exit_code = kExitBadInput;
  if (spec.out_dir.empty()) {
    messages << "lethe sweep: --out: found no folder; allowed: a folder for the results\n";
    return outcome;
  }
  if (spec.shard.index < 1 || spec.shard.index > spec.shard.count) {
    messages << fmt::format("--shard {}/{}: allowed: K/N with 1 <= K <= N\n", spec.shard.index, spec.shard.count);
    return outcome;
  }
  Identity id;
  std::vector<lethe::ScenarioConfig> configs;
  if (!build_grid(spec, id, configs, messages)) return outcome;
  const auto first_pair = first_pairs(id, outcome.pairs_total);

  std::error_code code;
  fs::create_directories(spec.out_dir, code);
  if (code || !fs::is_directory(spec.out_dir, code)) {
    messages << fmt::format("lethe sweep: --out {}: cannot create the folder\n", spec.out_dir.string());
    return outcome;
  }
  const FolderLock folder_lock(spec.out_dir);
  if (!folder_lock.held()) {
    messages << fmt::format("lethe sweep: another lethe sweep is writing into {} (or {}/.lock cannot be "
                            "created); wait for it, or use another --out\n",
                            spec.out_dir.string(), spec.out_dir.string());
    return outcome;
  }
  const fs::path results_path = spec.out_dir / kResultsName;
  const bool has_results = fs::exists(results_path, code) && fs::file_size(results_path, code) > 0;
  ResultMap results;
  nlohmann::ordered_json description = sweep_json(id, spec.shard, spec.command_line);
  if (has_results && !spec.resume) {
    messages << fmt::format("lethe sweep: {} already holds results: use --resume to continue that sweep, or "
                            "another --out\n",
                            results_path.string());
    return outcome;
  }
  if (has_results) {
    Identity existing;
    Shard existing_shard;
    auto previous = read_sweep_json(spec.out_dir, existing, existing_shard, messages);
    if (!previous) return outcome;
    if (auto difference = identity_difference(existing, id)) {
      messages << fmt::format("lethe sweep: --resume: {} holds another sweep ({}); use another --out\n",
                              spec.out_dir.string(), *difference);
      return outcome;
    }
    if (existing_shard != spec.shard) {
      messages << fmt::format("lethe sweep: --resume: {} holds shard {}/{}, not {}/{}\n", spec.out_dir.string(),
                              existing_shard.index, existing_shard.count, spec.shard.index, spec.shard.count);
      return outcome;
    }
    if (!read_results(results_path, Partial::Repair, id, spec.shard, first_pair, results, messages)) return outcome;
    // Keep the command line that started the sweep; note this one.
    description["command_line"] = previous->value("command_line", std::string{});
    if (previous->contains("resumed_by")) description["resumed_by"] = (*previous)["resumed_by"];
    if (previous->contains("merged_from")) description["merged_from"] = (*previous)["merged_from"];
    description["resumed_by"].push_back(spec.command_line);
  }
  outcome.pairs_found = results.size();
  if (const auto error = reports::write_file_atomically(spec.out_dir / kSweepName, description.dump(2) + "\n");
      !error.empty()) {
    messages << "lethe sweep: " << error << "\n";
    return outcome;
  }

  struct Pending {
    std::size_t cell;
    std::uint64_t seed;
  };
  std::vector<Pending> pending;
  for (std::size_t c = 0; c < id.cells.size(); ++c) {
    for (std::int64_t s = 1; s <= id.cells[c].seeds; ++s) {
      const std::size_t pair = first_pair[c] + static_cast<std::size_t>(s - 1);
      if (pair % spec.shard.count != spec.shard.index - 1) continue;
      ++outcome.pairs_owned;
      if (results.count({c, static_cast<std::uint64_t>(s)}) == 0) pending.push_back({c, static_cast<std::uint64_t>(s)});
    }
  }
  {
    LineAppender appender(results_path);
    if (appender.failed()) {
      messages << "lethe sweep: " << appender.error() << "\n";
      return outcome;
    }
    std::string interval_error;
    const auto interval = progress_interval(interval_error);
    if (!interval) {
      messages << "lethe sweep: " << interval_error << "\n";
      return outcome;
    }
    std::atomic<std::size_t> done{0};
    const lethe::WorldOptions options;
    Progress progress("lethe sweep", pending.size(), messages, spec.progress, *interval);
    parallel_for(pending.size(), spec.jobs == 0 ? default_jobs() : spec.jobs, [&](std::size_t i) {
      if (appender.failed()) return;
      const auto& job = pending[i];
      const SeedRun run = run_seed(configs[job.cell], job.seed, options);
      appender.append(result_line(job.cell, id.cells[job.cell].params, run));
      ++done;
      progress.seed_done(!run.error.empty() || !run.result.ok);
    });
    progress.finish();
    outcome.pairs_run = done.load();
    if (!appender.close()) {
      messages << "lethe sweep: " << appender.error() << "\n";
      return outcome;
    }
  }
  // Aggregate what the file holds (old and new lines read the same way).
  results.clear();
  if (!read_results(results_path, Partial::Repair, id, spec.shard, first_pair, results, messages)) return outcome;
  // Seeds finish, and their lines are appended, in an order -j N makes vary; rewritten in (cell, seed) order,
  // as merge writes it, the file is a function of the grid and the seeds alone, resumed or not. The appended
  // file stays the crash-safe record until the atomic rename (a kill before it leaves it for --resume).
  std::string canonical;
  for (const auto& [key, entry] : results) canonical += entry.text + "\n";
  if (read_text(results_path) != canonical) {
    if (const auto error = reports::write_file_atomically(results_path, canonical); !error.empty()) {
      messages << "lethe sweep: " << error << "\n";
      return outcome;  // exit_code is still kExitBadInput
    }
  }
  finish(spec.out_dir, id, results, spec.table_out, messages, outcome);
  return outcome;
}

// ---------------------------------------------------------------- merge

SweepOutcome merge_sweeps(const MergeSpec& spec) {
  std::ostream& messages = messages_of(spec.messages_out);
  SweepOutcome outcome;
  outcome.exit_code = kExitBadInput;
  if (spec.inputs.empty()) {
    messages << "lethe merge: found no sweep folder to merge\n";
    return outcome;
  }
  std::error_code code;
  for (const auto& input : spec.inputs) {
    if (fs::exists(spec.out_dir, code) && fs::equivalent(input, spec.out_dir, code)) {
      messages << fmt::format("lethe merge: --out {} is one of the inputs; allowed: a new folder\n",
                              spec.out_dir.string());
      return outcome;
    }
  }
  Identity id;
  Shard shard;
  if (!read_sweep_json(spec.inputs.front(), id, shard, messages)) return outcome;
  for (std::size_t i = 1; i < spec.inputs.size(); ++i) {
    Identity other;
    Shard other_shard;
    if (!read_sweep_json(spec.inputs[i], other, other_shard, messages)) return outcome;
    if (auto difference = identity_difference(id, other)) {
      messages << fmt::format("lethe merge: {} and {} hold different sweeps ({})\n", spec.inputs.front().string(),
                              spec.inputs[i].string(), *difference);
      return outcome;
    }
  }
  const auto first_pair = first_pairs(id, outcome.pairs_total);
  outcome.pairs_owned = outcome.pairs_total;
  ResultMap results;
  for (const auto& input : spec.inputs) {
    if (!read_results(input / kResultsName, Partial::Ignore, id, std::nullopt, first_pair, results, messages)) {
      return outcome;
    }
  }
  outcome.pairs_found = results.size();
  fs::create_directories(spec.out_dir, code);
  if (code || !fs::is_directory(spec.out_dir, code)) {
    messages << fmt::format("lethe merge: --out {}: cannot create the folder\n", spec.out_dir.string());
    return outcome;
  }
  const fs::path results_path = spec.out_dir / kResultsName;
  if (fs::exists(results_path, code) && fs::file_size(results_path, code) > 0) {
    messages << fmt::format("lethe merge: {} already holds results; allowed: a new or empty --out folder\n",
                            results_path.string());
    return outcome;
  }
  nlohmann::ordered_json description = sweep_json(id, Shard{1, 1}, spec.command_line);
  nlohmann::ordered_json inputs = nlohmann::ordered_json::array();
  for (const auto& input : spec.inputs) inputs.push_back(input.string());
  description["merged_from"] = inputs;
  std::string lines;
  for (const auto& [key, entry] : results) lines += entry.text + "\n";  // canonical (cell, seed) order
  std::string error = reports::write_file_atomically(spec.out_dir / kSweepName, description.dump(2) + "\n");
  if (error.empty()) error = reports::write_file_atomically(results_path, lines);
  if (!error.empty()) {
    messages << "lethe merge: " << error << "\n";
    return outcome;
  }
  if (results.size() < outcome.pairs_total) {
    std::string missing;
    std::size_t shown = 0;
    for (std::size_t c = 0; c < id.cells.size() && shown < 5; ++c) {
      for (std::int64_t s = 1; s <= id.cells[c].seeds && shown < 5; ++s) {
        if (results.count({c, static_cast<std::uint64_t>(s)}) != 0) continue;
        missing += fmt::format("{}cell {} seed {}", shown == 0 ? "" : ", ", c, s);
        ++shown;
      }
    }
    messages << fmt::format("lethe merge: {} of {} (cell, seed) pairs are missing (e.g. {}); to run them: lethe "
                            "sweep {} ... --out {} --resume\n",
                            outcome.pairs_total - results.size(), outcome.pairs_total, missing,
                            shell_quote(id.scenario_file), shell_quote(spec.out_dir.string()));
  }
  finish(spec.out_dir, id, results, spec.table_out, messages, outcome);
  return outcome;
}

// ---------------------------------------------------------------- command line

namespace {

struct SweepCommandOptions {
  std::string file;
  std::vector<std::string> vary;
  std::int64_t seeds = 0;
  unsigned jobs = 0;
  std::string out;
  std::string shard;
  bool resume = false;
  std::vector<std::string> sets;
};

struct MergeCommandOptions {
  std::vector<std::string> inputs;
  std::string out;
};

}  // namespace

ExtraCommand register_sweep(CLI::App& app) {
  auto options = std::make_shared<SweepCommandOptions>();
  auto* command = app.add_subcommand("sweep", "Run a scenario over a grid of varied keys, many seeds per cell, "
                                              "with confidence intervals (resumable, shardable)");
  command->add_option("FILE", options->file, "Scenario file (TOML)")->required();
  command->add_option("--vary", options->vary,
                      "KEY=V1,V2,...: one axis of the grid (repeatable: a grid, row-major in the order given)")
      ->allow_extra_args(false);
  command->add_option("--seeds", options->seeds, "Seeds 1..N per cell (default: the scenario's run.seeds)")
      ->check(CLI::Range(1, 1000000));
  command->add_option("-j,--jobs", options->jobs, "Threads (default: all cores)")->check(CLI::Range(0, 1024));
  command->add_option("--out", options->out, "Output folder (results.jsonl, cells.json, cells.csv, sweep.json)")
      ->required();
  command->add_option("--shard", options->shard, "K/N: run only the (cell, seed) pairs whose number % N == K-1");
  command->add_flag("--resume", options->resume, "Continue the sweep already in --out, skipping finished seeds");
  command->add_option("--set", options->sets, "Override a key in every cell: KEY=VALUE (repeatable)")
      ->allow_extra_args(false);
  return ExtraCommand{command, [options] {
                        SweepSpec spec;
                        spec.scenario_file = options->file;
                        for (const auto& text : options->vary) {
                          std::string error;
                          auto axis = parse_vary(text, error);
                          if (!axis) {
                            std::cerr << error << "\n";
                            return kExitBadInput;
                          }
                          spec.vary.push_back(std::move(*axis));
                        }
                        if (!options->shard.empty()) {
                          std::string error;
                          auto shard = parse_shard(options->shard, error);
                          if (!shard) {
                            std::cerr << error << "\n";
                            return kExitBadInput;
                          }
                          spec.shard = *shard;
                        }
                        spec.sets = options->sets;
                        spec.seeds = options->seeds;
                        spec.jobs = options->jobs;
                        spec.out_dir = options->out;
                        spec.resume = options->resume;
                        spec.command_line = this_command_line();
                        spec.progress = stderr_progress_mode();
                        spec.table_out = &std::cout;
                        return report_after_sweep(spec.out_dir, run_sweep(spec).exit_code);  // + DIR/report.html (runner/report.hpp)
                      }};
}

ExtraCommand register_merge(CLI::App& app) {
  auto options = std::make_shared<MergeCommandOptions>();
  auto* command = app.add_subcommand("merge", "Combine sweep folders (shards) into the result of one sweep");
  command->add_option("DIRS", options->inputs, "Sweep folders written by lethe sweep (or merge)")->required();
  command->add_option("--out", options->out, "Output folder")->required();
  return ExtraCommand{command, [options] {
                        MergeSpec spec;
                        for (const auto& input : options->inputs) spec.inputs.emplace_back(input);
                        spec.out_dir = options->out;
                        spec.command_line = this_command_line();
                        spec.table_out = &std::cout;
                        return report_after_sweep(spec.out_dir, merge_sweeps(spec).exit_code);  // + DIR/report.html (runner/report.hpp)
                      }};
}

}  // namespace runner
