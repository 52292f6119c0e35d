#include "runner/sweep_results_file.hpp"

#include <cerrno>
#include <cmath>
#include <fcntl.h>
#include <fmt/format.h>
#include <ostream>
#include <sys/file.h>
#include <unistd.h>

#include "check/store_json.hpp"  // parse_bounded_json
#include "reports/json.hpp"
#include "reports/output_file.hpp"
#include "sim/text.hpp"

namespace fs = std::filesystem;

namespace runner {

namespace sweep_detail {

LineAppender::LineAppender(const fs::path& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    fail(errno);
    return;
  }
  writer_ = std::thread([this] { write_loop(); });
}

bool LineAppender::failed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failed_;
}

std::string LineAppender::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return reports::write_error(path_, error_);
}

void LineAppender::append(std::string line) {
  line += '\n';
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(line));
  }
  wake_.notify_one();
}

bool LineAppender::close() {
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

void LineAppender::fail(int error) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!failed_) error_ = error;
  failed_ = true;
}

void LineAppender::write_loop() {
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

FolderLock::FolderLock(const fs::path& dir) {
  fd_ = ::open((dir / ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ >= 0 && ::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);
}

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
    if (lethe::text::trim(raw).empty()) continue;
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

}  // namespace sweep_detail

using namespace sweep_detail;

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

namespace {

// Every number of a result line is a count, a time or a ratio, from 0 to 2^63: a float outside that range is no
// value of any field, and converting it to an integer field is undefined (a cell of 1.8e20 read as an integer).
bool numbers_in_range(const nlohmann::ordered_json& j) {
  if (j.is_number_float()) {
    const double value = j.get<double>();
    return value >= 0.0 && value < 9223372036854775808.0;
  }
  if (j.is_structured()) {
    for (const auto& item : j) {
      if (!numbers_in_range(item)) return false;
    }
  }
  return true;
}

}  // namespace

std::optional<ResultLine> parse_result_line(std::string_view text, std::string& error) {
  try {
    const auto j = lethe::history::parse_bounded_json<nlohmann::ordered_json>(text);
    if (!numbers_in_range(j)) {
      error = "a number out of range; allowed: counts, times and ratios from 0 to 2^63";
      return std::nullopt;
    }
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
    error = lethe::history::json_error_reason(e);
    return std::nullopt;
  }
}

}  // namespace runner
