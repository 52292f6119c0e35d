// tests/fuzz/scenario_fuzzer.cpp — libFuzzer target over the scenario loader and the --set path.
//
// An input is scenario text; each line of it that starts with "#set " (a TOML comment, so the text parses
// the same with or without it) is also passed as one --set KEY=VALUE override. The target loads the text
// with the overrides. When the load succeeds it renders the config back to TOML (render_scenario_toml) and
// loads that rendering again, without overrides: it must load, and rendering the second config must give
// the same text (the renderer writes every field of a config, so two configs whose renderings are equal
// are equal in every field the scenario language can set). A failed reload or a difference aborts, which
// libFuzzer records as a finding, like a crash, a sanitizer report, or an exception out of the loader. A config
// with an [explore] table is also drawn for seeds 1 to 3 and each draw loaded as `lethe run` loads it.
//
// Built two ways (tests/fuzz/CMakeLists.txt): with -fsanitize=fuzzer under LETHE_FUZZ (scripts/fuzz), and
// in every build with replay_main.cpp, which runs the seed corpus and the findings kept in
// tests/fuzz/regressions/ through the same function as a ctest test.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "scenario/explore.hpp"
#include "scenario/loader.hpp"

namespace {

// Relative empirical(file=...) paths resolve here (the test folder with the sample files the seeds name).
const std::filesystem::path& base_dir() {
  static const std::filesystem::path dir = std::filesystem::path(LETHE_SOURCE_DIR) / "tests" / "runner" / "good";
  return dir;
}

std::vector<std::string> overrides_in(std::string_view text) {
  std::vector<std::string> overrides;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    if (line.substr(0, 5) == "#set ") overrides.emplace_back(line.substr(5));
    at = end + 1;
  }
  return overrides;
}

[[noreturn]] void finding(const char* what, const std::string& first, const std::string& second) {
  std::fprintf(stderr, "scenario_fuzzer: %s\n--- first\n%s\n--- second\n%s\n", what, first.c_str(), second.c_str());
  std::abort();
}

std::string errors_text(const std::vector<scenario::LoadError>& errors) {
  std::string text;
  for (const scenario::LoadError& error : errors) text += error.message + "\n";
  return text;
}

constexpr std::string_view kInternal = "fuzz.toml:1:1: scenario: internal error while loading: ";

void check_no_internal_error(const scenario::LoadResult& result, const char* what) {
  const auto* errors = std::get_if<std::vector<scenario::LoadError>>(&result);
  if (errors != nullptr && errors->size() == 1 && (*errors)[0].message.rfind(kInternal, 0) == 0) {
    finding(what, (*errors)[0].message, "");
  }
}

// The configurations a few seeds draw from the [explore] table, each loaded as `lethe run` loads it (the draw's
// overrides, then the input's own, the swarm's switches applied). A drawn combination may break a cross-field
// rule (an error naming its --set); an exception out of the draw or the load may not.
void load_draws(std::string_view text, const lethe::ScenarioConfig& config, const std::vector<std::string>& sets) {
  if (!scenario::explores(config)) return;
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    scenario::Draw draw = scenario::draw_configuration(config.explore, seed);
    std::vector<std::string> overrides = draw.overrides;
    overrides.insert(overrides.end(), sets.begin(), sets.end());
    scenario::LoadResult drawn = scenario::load_scenario_text(text, "fuzz.toml", base_dir(), overrides, false);
    check_no_internal_error(drawn, "an exception out of the loader for a drawn configuration");
    if (auto* loaded = std::get_if<lethe::ScenarioConfig>(&drawn)) (void)lethe::switch_off_faults(*loaded, draw.switches);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::vector<std::string> sets = overrides_in(text);
  scenario::LoadResult first = scenario::load_scenario_text(text, "fuzz.toml", base_dir(), sets);
  const auto* config = std::get_if<lethe::ScenarioConfig>(&first);
  if (config == nullptr) {
    // An exception out of the loader comes back as this one message (load_scenario_text); every other message
    // starts with the position and key of what the input got wrong.
    check_no_internal_error(first, "an exception out of the loader");
    return 0;
  }
  load_draws(text, *config, sets);
  const std::string rendered = scenario::render_scenario_toml(*config);
  scenario::LoadResult second = scenario::load_scenario_text(rendered, "rendered.toml", base_dir(), {});
  const auto* reloaded = std::get_if<lethe::ScenarioConfig>(&second);
  if (reloaded == nullptr) {
    finding("the rendering of a loaded config does not load", rendered,
            errors_text(std::get<std::vector<scenario::LoadError>>(second)));
  }
  const std::string again = scenario::render_scenario_toml(*reloaded);
  if (again != rendered) finding("the reloaded config differs from the loaded one", rendered, again);
  return 0;
}
