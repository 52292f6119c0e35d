// lethe_reference: writes or checks a reference page generated from its table (scenario/reference.hpp).
//   lethe_reference scenario|results --write FILE   rewrite FILE
//   lethe_reference scenario|results --check FILE   exit 1 when FILE differs from what the table gives
// The build target scenario-reference runs --write; the tests *_reference_is_current run --check.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "scenario/reference.hpp"

int main(int argc, char** argv) {
  const std::string usage = "usage: lethe_reference scenario|results --write FILE | --check FILE\n";
  if (argc != 4) {
    std::cerr << usage;
    return 2;
  }
  const std::string page = argv[1];
  const std::string mode = argv[2];
  const std::string file = argv[3];
  if ((page != "scenario" && page != "results") || (mode != "--write" && mode != "--check")) {
    std::cerr << usage;
    return 2;
  }
  const std::string text =
      page == "scenario" ? scenario::scenario_reference_markdown() : scenario::result_fields_markdown();
  if (mode == "--write") {
    std::ofstream out(file, std::ios::binary);
    out << text;
    if (!out) {
      std::cerr << "lethe_reference: cannot write " << file << "\n";
      return 2;
    }
    return 0;
  }
  std::ifstream in(file, std::ios::binary);
  std::ostringstream committed;
  committed << in.rdbuf();
  if (committed.str() == text) return 0;
  std::cerr << file << " differs from its table: run `cmake --build build --target scenario-reference` and commit it\n";
  return 1;
}
