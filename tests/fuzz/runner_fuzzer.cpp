// tests/fuzz/runner_fuzzer.cpp — libFuzzer target over the files the runner's commands read back: a sweep's
// results.jsonl (sweep --resume, merge: parse_result_line, runner/sweep.hpp) and a `lethe tune --samples` file
// (parse_samples, runner/tune_input.hpp).
//
// An input whose first line starts with "#samples" is a samples file (the line is a comment there, so the file
// reads the same with it); the words after it pick the options: "column=NAME" (--column) and "unit=U"
// (--samples-unit). Values read are written one duration a line, as tune copies them into its output folder, and
// read again: the second reading must give the same values. Any other input is results.jsonl: every line is
// parsed; a line that parses is written again with result_line() and that text must parse to a line that
// writes the same text (the writer and the reader agree on every field). Bad input must end in the readers'
// error text; an exception, a crash, a sanitizer report or a disagreement is a finding.
//
// Built two ways (tests/fuzz/CMakeLists.txt): with -fsanitize=fuzzer under LETHE_FUZZ (scripts/fuzz), and in
// every build with replay_main.cpp over tests/fuzz/runner/, as a ctest test.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runner/sweep.hpp"
#include "runner/tune_input.hpp"
#include "sim/time.hpp"

namespace {

[[noreturn]] void finding(const char* what, const std::string& first, const std::string& second) {
  std::fprintf(stderr, "runner_fuzzer: %s\n--- first\n%s\n--- second\n%s\n", what, first.c_str(), second.c_str());
  std::abort();
}

// "#samples column=latency unit=ms": the options a samples input asks for.
void samples_options(std::string_view first_line, std::string& column, std::string& unit) {
  std::size_t at = 0;
  while (at < first_line.size()) {
    std::size_t end = first_line.find(' ', at);
    if (end == std::string_view::npos) end = first_line.size();
    const std::string_view word = first_line.substr(at, end - at);
    if (word.substr(0, 7) == "column=") column = word.substr(7);
    if (word.substr(0, 5) == "unit=") unit = word.substr(5);
    at = end + 1;
  }
}

void fuzz_samples(const std::string& text) {
  std::string column;
  std::string unit;
  samples_options(std::string_view(text).substr(0, text.find('\n')), column, unit);
  std::string error;
  const auto values = runner::parse_samples(text, "fuzz.csv", column, unit, error);
  if (!values) {
    if (error.empty()) finding("samples refused without a reason", text, "");
    return;
  }
  std::string copy;
  for (const sim::Duration value : *values) copy += sim::format_duration(value) + "\n";
  const auto again = runner::parse_samples(copy, "samples.txt", "", "", error);
  if (!again) finding("the copy of the samples read does not read", copy, error);
  if (*again != *values) finding("the copy of the samples reads other values", copy, "");
}

void fuzz_results(std::string_view text) {
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(at, end - at);
    at = end + 1;
    std::string error;
    const auto parsed = runner::parse_result_line(line, error);
    if (!parsed) {
      if (error.empty()) finding("a result line refused without a reason", std::string(line), "");
      continue;
    }
    const std::string written = runner::result_line(parsed->cell, parsed->params, parsed->run);
    const auto reread = runner::parse_result_line(written, error);
    if (!reread) finding("a written result line does not parse", written, error);
    const std::string again = runner::result_line(reread->cell, reread->params, reread->run);
    if (again != written) finding("a written result line parses to another line", written, again);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    if (text.rfind("#samples", 0) == 0) {
      fuzz_samples(text);
    } else {
      fuzz_results(text);
    }
  } catch (const std::exception& error) {
    finding("an exception out of a reader", text.substr(0, 2000), error.what());
  }
  return 0;
}
