// run-one-seed FILE SEED: loads a scenario through the public API and runs one seed of it; prints
// "duplicate_effects N trace_hash H" (H in hex, as `lethe run --json` writes it). Exit 2 when it does not load.
#include <lethe/core/version.hpp>
#include <lethe/scenario/loader.hpp>
#include <lethe/world/world.hpp>

#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: run-one-seed FILE SEED\n");
    return 2;
  }
  const std::filesystem::path file = argv[1];
  std::ifstream in(file);
  std::ostringstream text;
  text << in.rdbuf();
  auto loaded = scenario::load_scenario_text(text.str(), file.string(), file.parent_path(), {});
  if (const auto* errors = std::get_if<std::vector<scenario::LoadError>>(&loaded)) {
    for (const auto& error : *errors) std::fprintf(stderr, "%s\n", error.message.c_str());
    return 2;
  }
  const auto& config = std::get<lethe::ScenarioConfig>(loaded);
  const lethe::RunResult result = lethe::run_world(config, std::stoull(argv[2]));
  std::printf("duplicate_effects %" PRIu64 " trace_hash %016" PRIx64 "\n", result.duplicate_effects,
              result.trace_hash);
  std::fprintf(stderr, "lethe %.*s: %s seed %s\n", static_cast<int>(lethe::kVersion.size()), lethe::kVersion.data(),
               config.scenario.name.c_str(), argv[2]);
  return 0;
}
