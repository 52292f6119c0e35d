/* The page lethe shares with a node process whose clock it serves in virtual time, and the signal that wakes
 * the node's timed waits. C, included by the preloaded library (vclock/lethe_vclock.c) and by lethe
 * (external/node_clock.cpp): both sides of one contract.
 *
 * lethe creates the page (a memfd of LETHE_VCLOCK_PAGE_BYTES), fills the header, and passes its descriptor to the
 * node (kept across exec) with the environment: LETHE_VCLOCK_FD=<fd>, LD_PRELOAD=<the library>. The library maps
 * it in every process of the node that loads it (a shell and the interpreter it runs share one page).
 *
 * Time: `now_ns` is the node's clock in nanoseconds (lethe's virtual time plus the node's skew), written by lethe
 * before each turn; it never moves while the node runs. CLOCK_MONOTONIC (and _RAW, _COARSE, CLOCK_BOOTTIME) read
 * monotonic_base_ns + now_ns; CLOCK_REALTIME (and _COARSE, CLOCK_TAI), gettimeofday and time read
 * realtime_base_ns + now_ns. CPU-time clocks are the kernel's.
 *
 * Timers: with `timers_virtual` set, a thread that waits with a timeout > 0 (epoll_wait, epoll_pwait, poll, ppoll,
 * nanosleep, clock_nanosleep, usleep, sleep, sem_timedwait, sem_clockwait) takes a free slot, writes its deadline
 * (in now_ns units) and its process and thread ids, and waits without a timeout for its descriptors (its semaphore)
 * or for LETHE_VCLOCK_SIGNAL. lethe, once the node is still, reads the earliest deadline of the slots in use; when
 * virtual time reaches it, lethe writes now_ns and sends LETHE_VCLOCK_SIGNAL (tgkill) to each thread whose deadline
 * has come. A woken thread whose deadline has come returns as the real call would at its timeout. A wait that finds
 * no free slot is made with its wall-clock timeout, counted in `slots_missed`. With `timers_virtual` clear, waits
 * are the kernel's. */
#ifndef LETHE_VCLOCK_ABI_H
#define LETHE_VCLOCK_ABI_H

#include <stdint.h>

#define LETHE_VCLOCK_MAGIC 0x316b636f6c63766cULL /* "lvclock1" */
#define LETHE_VCLOCK_VERSION 1u
#define LETHE_VCLOCK_SLOTS 64
#define LETHE_VCLOCK_PAGE_BYTES 4096
#define LETHE_VCLOCK_FD_ENV "LETHE_VCLOCK_FD"
/* A real-time signal no common runtime uses (glibc's SIGRTMAX is 64; CPython and Node use none). */
#define LETHE_VCLOCK_SIGNAL (SIGRTMAX - 2)

/* Every field is read and written with __atomic builtins (sequentially consistent). */
struct lethe_vclock_slot {
  int32_t pid;         /* the waiting thread's process; 0: the slot is free */
  int32_t tid;         /* the waiting thread */
  int64_t deadline_ns; /* in now_ns units */
};

struct lethe_vclock_page {
  uint64_t magic;             /* LETHE_VCLOCK_MAGIC, written by lethe */
  uint32_t version;           /* LETHE_VCLOCK_VERSION, written by lethe */
  uint32_t timers_virtual;    /* 1: timed waits wait for lethe (above); 0: for the kernel's clock */
  int64_t now_ns;             /* the node's clock, virtual (lethe writes) */
  int64_t monotonic_base_ns;  /* lethe writes */
  int64_t realtime_base_ns;   /* lethe writes */
  uint32_t loaded;            /* the library sets 1 when a process of the node mapped the page */
  uint32_t slots_missed;      /* timed waits made in wall-clock time: no slot was free */
  struct lethe_vclock_slot slots[LETHE_VCLOCK_SLOTS];
};

#endif
