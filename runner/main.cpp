// lethe — the binary: the allocator's set-up, then the command line (runner/cli.hpp, docs/cli.md).
#ifdef LETHE_MIMALLOC
#include <mimalloc.h>
#endif
#include <cstdlib>

#include "runner/cli.hpp"

int main(int argc, char** argv) {
#ifdef LETHE_MIMALLOC
  // Large (2 MiB, transparent huge) pages for the heap, kept once touched: see CMakeLists.txt. A run's memory
  // churns (messages, RPCs, fibers' frames come and go); by default mimalloc hands freed segments back to the
  // OS and the kernel zeroes them again on the next touch, which took 40% of the dedupe-basic loop.
  // LETHE_SMALL_PAGES=1 keeps mimalloc's defaults (to measure the difference).
  if (std::getenv("LETHE_SMALL_PAGES") == nullptr) {
    mi_option_enable(mi_option_large_os_pages);
    mi_option_disable(mi_option_allow_decommit);
  }
#endif
  return runner::run_command_line(argc, argv);
}
