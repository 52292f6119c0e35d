/* liblethe-vclock.so — preloaded (LD_PRELOAD) into a node process so that its clocks and timed waits follow lethe's
 * virtual time. The contract, shared with lethe (external/node_clock.cpp), is vclock_abi.h.
 *
 * At load: LETHE_VCLOCK_FD names lethe's page. Without it, or with a page of another magic or version, the library
 * does nothing and every interposed call is the real one. Otherwise it maps the page (the descriptor stays open:
 * a shell that loads the library and then execs the interpreter passes it on), sets `loaded`, and installs a
 * handler for LETHE_VCLOCK_SIGNAL that only notes, per thread, that lethe woke it.
 *
 * Clock reads (clock_gettime, gettimeofday, time) return the page's time. A timed wait (epoll_wait, epoll_pwait,
 * epoll_pwait2, poll, ppoll, select, pselect, nanosleep, clock_nanosleep, usleep, sleep, sem_timedwait,
 * sem_clockwait) with a timeout > 0, while `timers_virtual` is set, takes a slot with its deadline and waits with
 * no timeout for its descriptors (its semaphore) or lethe's signal (timed_wait below); a timeout of 0 or none is
 * the real call unchanged. The node's observable behaviour then depends on lethe's clock only, except for a wait
 * that finds no free slot: that one is made in wall-clock time and counted.
 *
 * A wait until an absolute time the node read from the virtual clock is never handed to the kernel as it is (the
 * kernel's clock is another): a condition variable's timed wait (pthread_cond_timedwait, pthread_cond_clockwait),
 * and a semaphore's when timers are not virtual, wait for the same length of the kernel's time instead. Those are
 * wall-clock timers, as the run's stillness looks say.
 *
 * Plain C, no C++ runtime, no allocation: it runs inside every process of the node, signal handlers included. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "vclock_abi.h"

#define EXPORT __attribute__((visibility("default")))
#define NS_PER_SEC 1000000000LL
#define NS_PER_MS 1000000LL
#define WAIT_FOREVER (-1LL)
/* The kernel's signal set is 64 bits, whatever glibc's sigset_t reserves. */
#define KERNEL_SIGSET_BYTES (_NSIG / 8)

static struct lethe_vclock_page *page; /* NULL: the library passes every call through */
/* LETHE_VCLOCK_SIGNAL arrived in this thread. Initial-exec: preloaded, the library's TLS is static, and the handler
 * then reads it without a call that might allocate. */
static __thread volatile sig_atomic_t woken __attribute__((tls_model("initial-exec")));

static int64_t load64(int64_t *field) { return __atomic_load_n(field, __ATOMIC_SEQ_CST); }
static uint32_t load32(uint32_t *field) { return __atomic_load_n(field, __ATOMIC_SEQ_CST); }

/* The next definition of `name` (libc's): the real call. Resolved on first use, so a call made before the
 * constructor ran (another library's constructor) still works. */
static void *next_symbol(void **cache, const char *name) {
  void *found = __atomic_load_n(cache, __ATOMIC_RELAXED);
  if (!found) {
    found = dlsym(RTLD_NEXT, name);
    __atomic_store_n(cache, found, __ATOMIC_RELAXED);
  }
  return found;
}
#define REAL(name)                  \
  static void *real_##name##_cache; \
  __typeof__(&name) real_##name = (__typeof__(&name))next_symbol(&real_##name##_cache, #name)

/* Bumped with `woken`: a semaphore wait compares it in the kernel (futex_waitv), so a signal that came just before
 * the wait began ends the wait at once instead of being lost. */
static __thread uint32_t wake_word __attribute__((tls_model("initial-exec")));

static void note_wake(int number) {
  (void)number;
  woken = 1;
  __atomic_add_fetch(&wake_word, 1u, __ATOMIC_SEQ_CST);
}

__attribute__((constructor)) static void map_page(void) {
  const char *text = getenv(LETHE_VCLOCK_FD_ENV);
  if (!text || !*text) return;
  char *end = NULL;
  const long fd = strtol(text, &end, 10);
  if (*end != '\0' || fd < 0 || fd > INT_MAX) return;
  void *mapped = mmap(NULL, LETHE_VCLOCK_PAGE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);
  if (mapped == MAP_FAILED) return;
  struct lethe_vclock_page *candidate = mapped;
  if (__atomic_load_n(&candidate->magic, __ATOMIC_SEQ_CST) != LETHE_VCLOCK_MAGIC ||
      load32(&candidate->version) != LETHE_VCLOCK_VERSION) {
    munmap(mapped, LETHE_VCLOCK_PAGE_BYTES);
    return;
  }
  struct sigaction action = {0};
  action.sa_handler = note_wake;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  if (sigaction(LETHE_VCLOCK_SIGNAL, &action, NULL) != 0) {
    munmap(mapped, LETHE_VCLOCK_PAGE_BYTES);
    return;
  }
  page = candidate;
  __atomic_store_n(&page->loaded, 1u, __ATOMIC_SEQ_CST);
}

/* ------------------------------------------------------------------ clocks */

/* The page's time on `clock` (base + now_ns), or -1 when `clock` is not one the page serves. */
static int64_t virtual_time(clockid_t clock) {
  switch (clock) {
    case CLOCK_MONOTONIC:
    case CLOCK_MONOTONIC_RAW:
    case CLOCK_MONOTONIC_COARSE:
    case CLOCK_BOOTTIME:
      return load64(&page->monotonic_base_ns) + load64(&page->now_ns);
    case CLOCK_REALTIME:
    case CLOCK_REALTIME_COARSE:
    case CLOCK_TAI:
      return load64(&page->realtime_base_ns) + load64(&page->now_ns);
    default:
      return -1;
  }
}

EXPORT int clock_gettime(clockid_t clock, struct timespec *ts) {
  const int64_t t = page ? virtual_time(clock) : -1;
  if (t < 0) {
    REAL(clock_gettime);
    return real_clock_gettime(clock, ts);
  }
  ts->tv_sec = (time_t)(t / NS_PER_SEC);
  ts->tv_nsec = (long)(t % NS_PER_SEC);
  return 0;
}

EXPORT int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
  if (!page) {
    REAL(gettimeofday);
    return real_gettimeofday(tv, tz);
  }
  const int64_t t = virtual_time(CLOCK_REALTIME);
  tv->tv_sec = (time_t)(t / NS_PER_SEC); /* non-null: glibc declares it so */
  tv->tv_usec = (suseconds_t)(t % NS_PER_SEC / 1000);
  if (tz) {
    struct timezone *zone = tz; /* the kernel's is UTC too unless someone set it with settimeofday */
    zone->tz_minuteswest = 0;
    zone->tz_dsttime = 0;
  }
  return 0;
}

EXPORT time_t time(time_t *out) {
  if (!page) {
    REAL(time);
    return real_time(out);
  }
  const time_t seconds = (time_t)(virtual_time(CLOCK_REALTIME) / NS_PER_SEC);
  if (out) *out = seconds;
  return seconds;
}

/* ------------------------------------------------------------------ timed waits */

/* One kind of wait made as a raw system call under `mask`: with no timeout (WAIT_FOREVER), at once (0) or for
 * `timeout_ns` of the kernel's clock. Returns what the call returns (-1 with errno on error). */
typedef long wait_call(void *args, const sigset_t *mask, int64_t timeout_ns);

static struct timespec *to_timespec(int64_t timeout_ns, struct timespec *ts) {
  if (timeout_ns < 0) return NULL;
  ts->tv_sec = (time_t)(timeout_ns / NS_PER_SEC);
  ts->tv_nsec = (long)(timeout_ns % NS_PER_SEC);
  return ts;
}

struct epoll_args {
  int epfd;
  struct epoll_event *events;
  int max;
};
static long epoll_call(void *args, const sigset_t *mask, int64_t timeout_ns) {
  const struct epoll_args *a = args;
  /* Milliseconds rounded up, as the kernel would never return before the timeout. */
  const int64_t ms = timeout_ns < 0 ? -1 : (timeout_ns + NS_PER_MS - 1) / NS_PER_MS;
  return syscall(SYS_epoll_pwait, a->epfd, a->events, a->max, (int)(ms > INT_MAX ? INT_MAX : ms), mask,
                 KERNEL_SIGSET_BYTES);
}

struct poll_args {
  struct pollfd *fds;
  nfds_t count;
};
static long poll_call(void *args, const sigset_t *mask, int64_t timeout_ns) {
  const struct poll_args *a = args;
  struct timespec ts;
  return syscall(SYS_ppoll, a->fds, a->count, to_timespec(timeout_ns, &ts), mask, KERNEL_SIGSET_BYTES);
}

/* A sleep: a poll of no descriptor, which only a signal or the timeout ends (0 at the timeout). */
static long sleep_call(void *args, const sigset_t *mask, int64_t timeout_ns) {
  (void)args;
  struct timespec ts;
  return syscall(SYS_ppoll, NULL, 0, to_timespec(timeout_ns, &ts), mask, KERNEL_SIGSET_BYTES);
}

/* Whether a wait of `timeout_ns` is one lethe serves: the page mapped, timers virtual, a timeout > 0. */
static int virtual_wait(int64_t timeout_ns) {
  return page && timeout_ns > 0 && load32(&page->timers_virtual);
}

static struct lethe_vclock_slot *take_slot(int64_t deadline) {
  const int32_t pid = (int32_t)getpid();
  for (int i = 0; i < LETHE_VCLOCK_SLOTS; ++i) {
    struct lethe_vclock_slot *slot = &page->slots[i];
    int32_t expected = 0;
    if (__atomic_compare_exchange_n(&slot->pid, &expected, pid, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
      __atomic_store_n(&slot->tid, (int32_t)syscall(SYS_gettid), __ATOMIC_SEQ_CST);
      __atomic_store_n(&slot->deadline_ns, deadline, __ATOMIC_SEQ_CST);
      return slot;
    }
  }
  return NULL;
}

static void free_slot(struct lethe_vclock_slot *slot) {
  __atomic_store_n(&slot->deadline_ns, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&slot->tid, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&slot->pid, 0, __ATOMIC_SEQ_CST); /* last: the slot is taken again only once clean */
}

/* Waits `timeout_ns` (> 0) of virtual time, or less if the call returns earlier (its descriptors, a signal of the
 * caller's). `caller_mask`: the mask the caller gave (epoll_pwait, ppoll), or NULL. `left_ns`, if not NULL,
 * receives the virtual time left (for nanosleep's `rem`).
 *
 * No lost wake-up: LETHE_VCLOCK_SIGNAL is blocked from before the slot is taken and unblocked only inside the
 * system call (its mask), so a signal lethe sends at any point after it read the slot interrupts that call. */
static long timed_wait(wait_call *call, void *args, const sigset_t *caller_mask, int64_t timeout_ns,
                       int64_t *left_ns) {
  sigset_t ours, saved, mask;
  sigemptyset(&ours);
  sigaddset(&ours, LETHE_VCLOCK_SIGNAL);
  pthread_sigmask(SIG_BLOCK, &ours, &saved);
  const sigset_t *given = caller_mask ? caller_mask : &saved;
  const int64_t deadline = load64(&page->now_ns) + timeout_ns;
  struct lethe_vclock_slot *slot = take_slot(deadline);
  if (!slot) {
    __atomic_add_fetch(&page->slots_missed, 1u, __ATOMIC_SEQ_CST);
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    return call(args, given, timeout_ns);
  }
  mask = *given;
  sigdelset(&mask, LETHE_VCLOCK_SIGNAL);
  woken = 0; /* a signal meant for an earlier wait of this thread is no news now */
  long result;
  int64_t now;
  for (;;) {
    now = load64(&page->now_ns);
    if (now >= deadline) {
      /* The timeout came: what is ready now, as the real call at its timeout; lethe's signal blocked, so that one
       * still pending is not this call's EINTR (it is delivered, harmlessly, once the mask is restored). */
      sigaddset(&mask, LETHE_VCLOCK_SIGNAL);
      result = call(args, &mask, 0);
      break;
    }
    if (!load32(&page->timers_virtual)) {
      /* lethe turned timers off while this thread waited: the rest of the wait in the kernel's time, its signal
       * blocked (one it sent before the slot was freed is no wake-up of this wait). */
      free_slot(slot);
      slot = NULL;
      sigaddset(&mask, LETHE_VCLOCK_SIGNAL);
      result = call(args, &mask, deadline - now);
      break;
    }
    result = call(args, &mask, WAIT_FOREVER);
    if (result >= 0 || errno != EINTR || !woken) break; /* ready, an error, or the caller's own signal */
    woken = 0;
  }
  const int saved_errno = errno;
  if (left_ns) *left_ns = deadline - now;
  if (slot) free_slot(slot);
  pthread_sigmask(SIG_SETMASK, &saved, NULL);
  errno = saved_errno;
  return result;
}

EXPORT int epoll_wait(int epfd, struct epoll_event *events, int max, int timeout_ms) {
  if (!virtual_wait(timeout_ms)) {
    REAL(epoll_wait);
    return real_epoll_wait(epfd, events, max, timeout_ms);
  }
  struct epoll_args args = {epfd, events, max};
  return (int)timed_wait(epoll_call, &args, NULL, timeout_ms * NS_PER_MS, NULL);
}

EXPORT int epoll_pwait(int epfd, struct epoll_event *events, int max, int timeout_ms, const sigset_t *sigmask) {
  if (!virtual_wait(timeout_ms)) {
    REAL(epoll_pwait);
    return real_epoll_pwait(epfd, events, max, timeout_ms, sigmask);
  }
  struct epoll_args args = {epfd, events, max};
  return (int)timed_wait(epoll_call, &args, sigmask, timeout_ms * NS_PER_MS, NULL);
}

EXPORT int poll(struct pollfd *fds, nfds_t count, int timeout_ms) {
  if (!virtual_wait(timeout_ms)) {
    REAL(poll);
    return real_poll(fds, count, timeout_ms);
  }
  struct poll_args args = {fds, count};
  return (int)timed_wait(poll_call, &args, NULL, timeout_ms * NS_PER_MS, NULL);
}

static int64_t timespec_ns(const struct timespec *ts) { return (int64_t)ts->tv_sec * NS_PER_SEC + ts->tv_nsec; }

/* A timespec the kernel would take, in nanoseconds; -1 for none or a malformed one (the real call says EINVAL). */
static int64_t valid_ns(const struct timespec *ts) {
  return ts && ts->tv_sec >= 0 && ts->tv_nsec >= 0 && ts->tv_nsec < NS_PER_SEC ? timespec_ns(ts) : -1;
}

/* The virtual `clock` now, when `at` is a well-formed instant to wait for and the page is mapped; else -1. */
static int64_t valid_time(const struct timespec *at, clockid_t clock) {
  return page && valid_ns(at) >= 0 ? virtual_time(clock) : -1;
}

EXPORT int ppoll(struct pollfd *fds, nfds_t count, const struct timespec *timeout, const sigset_t *sigmask) {
  if (!virtual_wait(valid_ns(timeout))) {
    REAL(ppoll);
    return real_ppoll(fds, count, timeout, sigmask);
  }
  struct poll_args args = {fds, count};
  return (int)timed_wait(poll_call, &args, sigmask, timespec_ns(timeout), NULL);
}

#ifndef SYS_epoll_pwait2
#define SYS_epoll_pwait2 441
#endif

static long epoll2_call(void *args, const sigset_t *mask, int64_t timeout_ns) {
  const struct epoll_args *a = args;
  struct timespec ts;
  return syscall(SYS_epoll_pwait2, a->epfd, a->events, a->max, to_timespec(timeout_ns, &ts), mask,
                 KERNEL_SIGSET_BYTES);
}

EXPORT int epoll_pwait2(int epfd, struct epoll_event *events, int max, const struct timespec *timeout,
                        const sigset_t *sigmask) {
  if (!virtual_wait(valid_ns(timeout))) {
    REAL(epoll_pwait2);
    return real_epoll_pwait2(epfd, events, max, timeout, sigmask);
  }
  struct epoll_args args = {epfd, events, max};
  return (int)timed_wait(epoll2_call, &args, sigmask, timespec_ns(timeout), NULL);
}

/* select and pselect as the kernel's pselect6 (which leaves the sets alone when a signal interrupts it, so a wait
 * lethe's signal interrupted is made again on the sets as given). */
struct select_args {
  int count;
  fd_set *read, *write, *except;
};
static long select_call(void *args, const sigset_t *mask, int64_t timeout_ns) {
  const struct select_args *a = args;
  struct timespec ts;
  const struct {
    const sigset_t *set;
    size_t bytes;
  } given_mask = {mask, KERNEL_SIGSET_BYTES};
  return syscall(SYS_pselect6, a->count, a->read, a->write, a->except, to_timespec(timeout_ns, &ts), &given_mask);
}

EXPORT int select(int count, fd_set *restrict read, fd_set *restrict write, fd_set *restrict except,
                  struct timeval *restrict timeout) {
  const int64_t ns = timeout && timeout->tv_sec >= 0 && timeout->tv_usec >= 0 && timeout->tv_usec < 1000000
                         ? (int64_t)timeout->tv_sec * NS_PER_SEC + (int64_t)timeout->tv_usec * 1000
                         : -1;
  if (!virtual_wait(ns)) {
    REAL(select);
    return real_select(count, read, write, except, timeout);
  }
  struct select_args args = {count, read, write, except};
  int64_t left_ns = 0;
  const int result = (int)timed_wait(select_call, &args, NULL, ns, &left_ns);
  /* Linux's select writes the time it did not wait into the timeout (none once it timed out). */
  left_ns = result != 0 && left_ns > 0 ? left_ns : 0;
  timeout->tv_sec = (time_t)(left_ns / NS_PER_SEC);
  timeout->tv_usec = (suseconds_t)(left_ns % NS_PER_SEC / 1000);
  return result;
}

EXPORT int pselect(int count, fd_set *restrict read, fd_set *restrict write, fd_set *restrict except,
                   const struct timespec *restrict timeout, const sigset_t *restrict sigmask) {
  if (!virtual_wait(valid_ns(timeout))) {
    REAL(pselect);
    return real_pselect(count, read, write, except, timeout, sigmask);
  }
  struct select_args args = {count, read, write, except};
  return (int)timed_wait(select_call, &args, sigmask, timespec_ns(timeout), NULL);
}

/* A sleep of `ns` (> 0) of virtual time: 0 at its end, or EINTR (not -1) with the time left in `left`. */
static int virtual_sleep(int64_t ns, struct timespec *left) {
  int64_t left_ns = 0;
  if (timed_wait(sleep_call, NULL, NULL, ns, &left_ns) == 0) return 0;
  const int error = errno;
  if (left) to_timespec(left_ns > 0 ? left_ns : 0, left);
  return error;
}

EXPORT int nanosleep(const struct timespec *request, struct timespec *remaining) {
  if (!virtual_wait(valid_ns(request))) {
    REAL(nanosleep);
    return real_nanosleep(request, remaining);
  }
  const int error = virtual_sleep(timespec_ns(request), remaining);
  if (error == 0) return 0;
  errno = error;
  return -1;
}

EXPORT int clock_nanosleep(clockid_t clock, int flags, const struct timespec *request, struct timespec *remaining) {
  const int64_t start = valid_time(request, clock);
  if (start < 0) {
    REAL(clock_nanosleep);
    return real_clock_nanosleep(clock, flags, request, remaining);
  }
  const int absolute = flags & TIMER_ABSTIME;
  /* An absolute time is on the virtual clock: the kernel's clock must never see it, even with timers off. */
  const int64_t ns = absolute ? timespec_ns(request) - start : timespec_ns(request);
  if (ns <= 0) return 0;
  if (!virtual_wait(ns)) {
    struct timespec relative;
    REAL(clock_nanosleep);
    return real_clock_nanosleep(clock, 0, to_timespec(ns, &relative), absolute ? NULL : remaining);
  }
  return virtual_sleep(ns, absolute ? NULL : remaining);
}

EXPORT int usleep(useconds_t microseconds) {
  const int64_t ns = (int64_t)microseconds * 1000;
  if (!virtual_wait(ns)) {
    REAL(usleep);
    return real_usleep(microseconds);
  }
  const int error = virtual_sleep(ns, NULL);
  if (error == 0) return 0;
  errno = error;
  return -1;
}

EXPORT unsigned int sleep(unsigned int seconds) {
  const int64_t ns = (int64_t)seconds * NS_PER_SEC;
  if (!virtual_wait(ns)) {
    REAL(sleep);
    return real_sleep(seconds);
  }
  struct timespec left = {0, 0};
  if (virtual_sleep(ns, &left) == 0) return 0;
  return (unsigned int)left.tv_sec + (left.tv_nsec > 0); /* as glibc: the seconds left, rounded up */
}

/* ------------------------------------------------------------------ semaphores and condition variables */

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif

/* The kernel's time on `clock` in nanoseconds (libc's clock_gettime, not this library's). */
static int64_t kernel_time(clockid_t clock) {
  struct timespec now;
  REAL(clock_gettime);
  if (real_clock_gettime(clock, &now) != 0) return 0;
  return timespec_ns(&now);
}

/* The instant `ns` from now on the kernel's `clock`, into `at`. */
static struct timespec *kernel_deadline(clockid_t clock, int64_t ns, struct timespec *at) {
  return to_timespec(kernel_time(clock) + (ns > 0 ? ns : 0), at);
}

/* glibc's semaphore on 64-bit little-endian machines (its struct new_sem since glibc 2.21): the value in the low 32
 * bits of `data` (the futex word), the number of waiters in the high 32. sem_post adds 1 to the value and wakes the
 * futex when there are waiters. On other machines semaphore waits are not served (serves_semaphores). */
struct glibc_sem {
  uint64_t data;
  int shared; /* 0: process-private (glibc's FUTEX_PRIVATE is 0, its FUTEX_SHARED is FUTEX_PRIVATE_FLAG) */
  int pad;
};
_Static_assert(sizeof(struct glibc_sem) <= sizeof(sem_t), "glibc's semaphore layout");
#define SEM_WAITER ((uint64_t)1 << 32)
#if (defined(__x86_64__) || defined(__aarch64__)) && defined(__GLIBC__)
static const int serves_semaphores = 1;
#else
static const int serves_semaphores = 0;
#endif

/* futex_waitv (Linux 5.16 on) is there: with none, semaphore waits are not served. Asked once, at first need. */
static int futex_waitv_works(void) {
  static int known; /* 0 unknown, 1 yes, -1 no */
  int state = __atomic_load_n(&known, __ATOMIC_RELAXED);
  if (state == 0) {
    const int saved_errno = errno;
    state = syscall(SYS_futex_waitv, NULL, 0u, 0u, NULL, 0) < 0 && errno == EINVAL ? 1 : -1;
    errno = saved_errno;
    __atomic_store_n(&known, state, __ATOMIC_RELAXED);
  }
  return state == 1;
}

/* Waits for a token of `sem` with no timeout under `mask`: 0 once it took one, -1 with EINTR when a signal came
 * (lethe's: `woken` says so; or the caller's). Both the semaphore's futex and this thread's wake word are waited
 * on at once, so lethe's signal, even one handled just before the wait began, ends it. */
static long sem_wait_or_wake(sem_t *sem, const sigset_t *mask) {
  struct glibc_sem *inside = (struct glibc_sem *)(void *)sem;
  const unsigned privacy = inside->shared ? 0u : FUTEX_PRIVATE_FLAG;
  for (;;) {
    if (sem_trywait(sem) == 0) return 0;
    const uint32_t seen = __atomic_load_n(&wake_word, __ATOMIC_SEQ_CST);
    sigset_t saved;
    pthread_sigmask(SIG_SETMASK, mask, &saved); /* a signal of lethe's already pending is handled here */
    __atomic_add_fetch(&inside->data, SEM_WAITER, __ATOMIC_SEQ_CST);
    struct futex_waitv both[2] = {
        {.val = 0, .uaddr = (uintptr_t)&inside->data, .flags = FUTEX_32 | privacy},
        {.val = seen, .uaddr = (uintptr_t)&wake_word, .flags = FUTEX_32 | FUTEX_PRIVATE_FLAG},
    };
    const long result = syscall(SYS_futex_waitv, both, 2u, 0u, NULL, 0);
    const int error = errno;
    const uint64_t left = __atomic_sub_fetch(&inside->data, SEM_WAITER, __ATOMIC_SEQ_CST);
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    if (woken || (result < 0 && error == EINTR)) {
      /* A post's wake-up this thread took but will not use goes to another waiter, as glibc's own waits do. */
      if ((uint32_t)left > 0 && (left >> 32) > 0) {
        syscall(SYS_futex, &inside->data, FUTEX_WAKE | privacy, 1, NULL, NULL, 0);
      }
      errno = EINTR;
      return -1;
    }
    if (result < 0 && error != EAGAIN) { /* not a wait this call can make (EFAULT, ENOMEM): no spinning on it */
      errno = error;
      return -1;
    }
    /* A post woke it, or the value or the wake word had moved: look again. */
  }
}

struct sem_args {
  sem_t *sem;
};
/* A semaphore wait as a wait_call: a try (0), the kernel's wait for `timeout_ns`, or sem_wait_or_wake (none).
 * `mask` NULL (not from timed_wait): the thread's own mask, left as it is. */
static long sem_call(void *args, const sigset_t *mask, int64_t timeout_ns) {
  sem_t *sem = ((struct sem_args *)args)->sem;
  if (timeout_ns == 0) {
    if (sem_trywait(sem) == 0) return 0;
    if (errno == EAGAIN) errno = ETIMEDOUT;
    return -1;
  }
  if (timeout_ns < 0) return sem_wait_or_wake(sem, mask);
  struct timespec at;
  sigset_t saved;
  REAL(sem_clockwait);
  if (mask) pthread_sigmask(SIG_SETMASK, mask, &saved);
  const int result = real_sem_clockwait(sem, CLOCK_MONOTONIC, kernel_deadline(CLOCK_MONOTONIC, timeout_ns, &at));
  const int error = errno;
  if (mask) pthread_sigmask(SIG_SETMASK, &saved, NULL);
  errno = error;
  return result;
}

/* A semaphore wait until `at` on a virtual clock that reads `start` now: served when timers are virtual, else the
 * same length of the kernel's time. */
static int virtual_sem_wait(sem_t *sem, int64_t start, const struct timespec *at) {
  const int64_t ns = timespec_ns(at) - start;
  struct sem_args args = {sem};
  if (ns <= 0) return (int)sem_call(&args, NULL, 0);
  if (!serves_semaphores || !virtual_wait(ns) || !futex_waitv_works()) return (int)sem_call(&args, NULL, ns);
  return (int)timed_wait(sem_call, &args, NULL, ns, NULL);
}

EXPORT int sem_clockwait(sem_t *sem, clockid_t clock, const struct timespec *at) {
  const int64_t start = valid_time(at, clock);
  if (start < 0) {
    REAL(sem_clockwait);
    return real_sem_clockwait(sem, clock, at);
  }
  return virtual_sem_wait(sem, start, at);
}

EXPORT int sem_timedwait(sem_t *sem, const struct timespec *at) {
  const int64_t start = valid_time(at, CLOCK_REALTIME);
  if (start < 0) {
    REAL(sem_timedwait);
    return real_sem_timedwait(sem, at);
  }
  return virtual_sem_wait(sem, start, at);
}

/* The clock an absolute time of a condition variable is on (its attribute, which glibc keeps inside), told by the
 * time itself: the monotonic clocks read 10^6 s plus virtual time, the real-time ones 946,684,800 s plus it, so a
 * time below halfway between is on CLOCK_MONOTONIC (a monotonic timeout of more than 15 years would be misread). */
static clockid_t cond_clock(const struct timespec *at) {
  const int64_t monotonic = load64(&page->monotonic_base_ns);
  const int64_t realtime = load64(&page->realtime_base_ns);
  return timespec_ns(at) - monotonic < (realtime - monotonic) / 2 ? CLOCK_MONOTONIC : CLOCK_REALTIME;
}

EXPORT int pthread_cond_timedwait(pthread_cond_t *restrict cond, pthread_mutex_t *restrict mutex,
                                  const struct timespec *restrict at) {
  REAL(pthread_cond_timedwait);
  if (valid_time(at, CLOCK_MONOTONIC) < 0) return real_pthread_cond_timedwait(cond, mutex, at);
  const clockid_t clock = cond_clock(at);
  struct timespec kernel_at;
  return real_pthread_cond_timedwait(cond, mutex,
                                     kernel_deadline(clock, timespec_ns(at) - virtual_time(clock), &kernel_at));
}

EXPORT int pthread_cond_clockwait(pthread_cond_t *restrict cond, pthread_mutex_t *restrict mutex, clockid_t clock,
                                  const struct timespec *restrict at) {
  REAL(pthread_cond_clockwait);
  const int64_t start = valid_time(at, clock);
  if (start < 0) return real_pthread_cond_clockwait(cond, mutex, clock, at);
  struct timespec kernel_at;
  return real_pthread_cond_clockwait(cond, mutex, clock, kernel_deadline(clock, timespec_ns(at) - start, &kernel_at));
}
