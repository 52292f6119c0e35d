#include "external/node_clock.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <elf.h>
#include <filesystem>
#include <fmt/format.h>

#include "external/child_process.hpp"
#include "vclock/vclock_abi.h"

namespace lethe::external {
namespace {

constexpr std::int64_t kNsPerSecond = 1'000'000'000;
// Far from 0, so that a node's monotonic time never reads as "just booted" nor goes negative with a skew.
constexpr std::int64_t kMonotonicBaseNs = 1'000'000 * kNsPerSecond;
constexpr std::int64_t kRealtimeBaseNs = 946'684'800 * kNsPerSecond;  // 2000-01-01T00:00:00Z
constexpr const char* kLibraryName = "liblethe-vclock.so";

lethe_vclock_page& page_of(void* page) { return *static_cast<lethe_vclock_page*>(page); }

template <typename T>
T load(T& field) {
  return __atomic_load_n(&field, __ATOMIC_SEQ_CST);
}
template <typename T>
void store(T& field, T value) {
  __atomic_store_n(&field, value, __ATOMIC_SEQ_CST);
}

[[noreturn]] void fail(const char* what) {
  throw ChildProcessError(fmt::format("{}: {}", what, std::strerror(errno)));
}

// Signals the waiting thread of `slot` if `due`; returns whether it was signalled. A thread that no longer exists
// (its process was killed while it waited, so the library never freed its slot) has its slot freed here: its
// deadline would otherwise come back as the node's next timer for ever.
bool signal_slot(lethe_vclock_slot& slot, bool due) {
  const std::int32_t pid = load(slot.pid);
  const std::int32_t tid = load(slot.tid);
  if (pid == 0 || tid == 0 || load(slot.deadline_ns) == 0 || !due) return false;
  if (::syscall(SYS_tgkill, pid, tid, LETHE_VCLOCK_SIGNAL) == 0) return true;
  if (errno == ESRCH) {
    store(slot.deadline_ns, std::int64_t{0});
    store(slot.tid, std::int32_t{0});
    store(slot.pid, std::int32_t{0});
  }
  return false;
}

}  // namespace

NodeClock::NodeClock(std::int64_t now_ns) {
  fd_ = ::memfd_create("lethe-vclock", MFD_CLOEXEC);
  if (fd_ < 0) fail("memfd_create");
  if (::ftruncate(fd_, LETHE_VCLOCK_PAGE_BYTES) != 0) {
    const int error = errno;
    ::close(fd_);
    errno = error;
    fail("ftruncate of the clock page");
  }
  page_ = ::mmap(nullptr, LETHE_VCLOCK_PAGE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (page_ == MAP_FAILED) {
    const int error = errno;
    ::close(fd_);
    errno = error;
    fail("mmap of the clock page");
  }
  lethe_vclock_page& page = page_of(page_);  // zero-filled by ftruncate
  store(page.version, LETHE_VCLOCK_VERSION);
  store(page.timers_virtual, 1U);
  store(page.now_ns, now_ns);
  store(page.monotonic_base_ns, kMonotonicBaseNs);
  store(page.realtime_base_ns, kRealtimeBaseNs);
  store(page.magic, static_cast<std::uint64_t>(LETHE_VCLOCK_MAGIC));  // last: a page with its magic is complete
}

NodeClock::~NodeClock() {
  ::munmap(page_, LETHE_VCLOCK_PAGE_BYTES);
  ::close(fd_);
}

std::vector<std::string> NodeClock::environment(const std::string& library,
                                                const std::string& existing_preload) const {
  std::string preload = "LD_PRELOAD=" + library;
  const char* own = std::getenv("LD_PRELOAD");
  const std::string kept = !existing_preload.empty() ? existing_preload : own != nullptr ? own : "";
  if (!kept.empty()) preload += " " + kept;
  return {fmt::format("{}={}", LETHE_VCLOCK_FD_ENV, fd_), preload};
}

void NodeClock::set_now(std::int64_t now_ns) { store(page_of(page_).now_ns, now_ns); }

std::int64_t NodeClock::now() const { return load(page_of(page_).now_ns); }

void NodeClock::set_timers_virtual(bool on) {
  lethe_vclock_page& page = page_of(page_);
  store(page.timers_virtual, on ? 1U : 0U);
  // A thread waiting for virtual time would otherwise wait for ever: woken, it finishes in the kernel's time.
  if (!on) {
    for (lethe_vclock_slot& slot : page.slots) signal_slot(slot, true);
  }
}

bool NodeClock::loaded() const { return load(page_of(page_).loaded) != 0; }

std::uint32_t NodeClock::slots_missed() const { return load(page_of(page_).slots_missed); }

std::optional<std::int64_t> NodeClock::next_deadline() const {
  std::optional<std::int64_t> earliest;
  for (lethe_vclock_slot& slot : page_of(page_).slots) {
    // A slot being taken or freed has pid set but no tid or deadline yet (or any more): not a wait.
    if (load(slot.pid) == 0 || load(slot.tid) == 0) continue;
    const std::int64_t deadline = load(slot.deadline_ns);
    if (deadline == 0) continue;
    if (!earliest || deadline < *earliest) earliest = deadline;
  }
  return earliest;
}

int NodeClock::wake_due() {
  lethe_vclock_page& page = page_of(page_);
  const std::int64_t now_ns = load(page.now_ns);
  int woken = 0;
  for (lethe_vclock_slot& slot : page.slots) {
    if (signal_slot(slot, load(slot.deadline_ns) <= now_ns)) ++woken;
  }
  return woken;
}

std::optional<std::string> find_vclock_library(std::string& searched) {
  namespace fs = std::filesystem;
  searched.clear();
  std::vector<fs::path> candidates;
  if (const char* named = std::getenv("LETHE_VCLOCK_LIBRARY"); named != nullptr && *named != '\0') {
    candidates.emplace_back(named);
  } else {
    std::error_code error;
    const fs::path exe = fs::read_symlink("/proc/self/exe", error);
    if (!error) {
      const fs::path dir = exe.parent_path();
      candidates = {dir / kLibraryName, dir.parent_path() / kLibraryName,
                    dir.parent_path().parent_path() / kLibraryName,
                    dir.parent_path() / LETHE_INSTALL_LIBDIR / "lethe" / kLibraryName};
    }
  }
  for (const fs::path& candidate : candidates) {
    if (!searched.empty()) searched += ", ";
    searched += candidate.string();
    std::error_code error;
    if (!fs::is_regular_file(candidate, error)) continue;
    const std::string path = candidate.lexically_normal().string();
    if (path.find_first_of(" :") == std::string::npos) return path;
    searched += " (there, but LD_PRELOAD cannot hold a path with a space or a colon: name a copy elsewhere with "
                "LETHE_VCLOCK_LIBRARY)";
  }
  if (candidates.empty()) searched = "/proc/self/exe unreadable";
  return std::nullopt;
}

namespace {

// Reads exactly `bytes` at `offset` of `fd`; false when the file is shorter or unreadable.
bool read_at(int fd, void* into, std::size_t bytes, off_t offset) {
  return ::pread(fd, into, bytes, offset) == static_cast<ssize_t>(bytes);
}

// Whether the 64-bit ELF program open on `fd`, whose header is `header`, names a dynamic loader (PT_INTERP).
bool names_a_loader(int fd, const Elf64_Ehdr& header) {
  for (unsigned i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr segment{};
    const auto offset = static_cast<off_t>(header.e_phoff + std::uint64_t{i} * header.e_phentsize);
    if (!read_at(fd, &segment, sizeof segment, offset)) return false;
    if (segment.p_type == PT_INTERP) return true;
  }
  return false;
}

}  // namespace

std::string why_not_preloaded(const std::string& program) {
  const int fd = ::open(program.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return fmt::format("lethe could not read its program to tell why ({}: {})", program, std::strerror(errno));
  }
  Elf64_Ehdr header{};
  const bool elf = read_at(fd, header.e_ident, EI_NIDENT, 0) && std::memcmp(header.e_ident, ELFMAG, SELFMAG) == 0;
  std::string why;
  if (elf && header.e_ident[EI_CLASS] == ELFCLASS32) {
    why = "its program is 32-bit, and the library 64-bit";
  } else if (!elf || header.e_ident[EI_CLASS] != ELFCLASS64 || !read_at(fd, &header, sizeof header, 0)) {
    why = "its program is not an ELF file lethe can read, so lethe cannot tell why";
  } else if (!names_a_loader(fd, header)) {
    why = "its program is a static binary, which has no dynamic loader to preload a library (such as Go's)";
  } else {
    why = "its program is dynamically linked, yet its loader did not preload the library: its environment lost "
          "LD_PRELOAD, or it runs set-user-ID (lethe cannot tell which)";
  }
  ::close(fd);
  return why;
}

}  // namespace lethe::external
