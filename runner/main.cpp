// lethe — the binary: the allocator's set-up, then the command line (runner/cli.hpp, docs/cli.md).
#ifdef LETHE_MIMALLOC
#include <mimalloc.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#endif
#include <csignal>
#include <cstdlib>

#include "runner/cli.hpp"
#include "runner/command.hpp"

#ifdef LETHE_MIMALLOC
namespace {
// mimalloc's operator new aborts when the OS refuses memory (it never sees a new-handler), and its error hook
// runs inside the allocator, where unwinding a std::bad_alloc is not safe. So the hook ends the process
// cleanly: a message with the address-space limit and what was mapped, and exit 5, resources exhausted (docs/cli.md). Nothing here
// allocates.
void exit_out_of_memory(int error, void* /*unused*/) {
  if (error != ENOMEM) return;
  unsigned long long mapped_pages = 0;
  const int statm = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (statm >= 0) {
    char numbers[64] = {};
    if (::read(statm, numbers, sizeof numbers - 1) > 0) mapped_pages = std::strtoull(numbers, nullptr, 10);
    ::close(statm);
  }
  const auto mapped_mib = mapped_pages * static_cast<unsigned long long>(::sysconf(_SC_PAGESIZE)) / (1024 * 1024);
  rlimit limit{};
  char text[256];
  int length = 0;
  if (::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    length = std::snprintf(text, sizeof text,
                           "lethe: out of memory: the heap could not grow (%llu MiB mapped, address-space limit "
                           "%llu MiB)\n",
                           mapped_mib, static_cast<unsigned long long>(limit.rlim_cur / (1024 * 1024)));
  } else {
    length = std::snprintf(text, sizeof text, "lethe: out of memory: the heap could not grow (%llu MiB mapped)\n",
                           mapped_mib);
  }
  if (length > 0) {
    const auto written = ::write(STDERR_FILENO, text, static_cast<std::size_t>(length));
    static_cast<void>(written);  // nothing better to do if stderr is gone too
  }
  ::_exit(runner::kExitResources);
}
}  // namespace
#endif

int main(int argc, char** argv) {
  // A file-size limit (ulimit -f) then fails the write with EFBIG, reported like a full disk (exit 2 naming the
  // file), instead of killing lethe with SIGXFSZ.
  std::signal(SIGXFSZ, SIG_IGN);
#ifdef LETHE_MIMALLOC
  // Large (2 MiB, transparent huge) pages for the heap, kept once touched: see CMakeLists.txt. A run's memory
  // churns (messages, RPCs, fibers' frames come and go); by default mimalloc hands freed segments back to the
  // OS and the kernel zeroes them again on the next touch, which took 40% of the dedupe-basic loop.
  // LETHE_SMALL_PAGES=1 keeps mimalloc's defaults (to measure the difference).
  if (std::getenv("LETHE_SMALL_PAGES") == nullptr) {
    mi_option_enable(mi_option_large_os_pages);
    mi_option_disable(mi_option_allow_decommit);
  }
  mi_register_error(exit_out_of_memory, nullptr);
#endif
  return runner::run_command_line(argc, argv);
}
