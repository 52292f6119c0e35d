// live/memory.hpp — the in-process reference store for live mode: real threads, no server.
//
// A std::map guarded by a mutex, executed with lethe::apply. Variants:
//   atomic            the whole operation under one lock: linearizable by construction (the harness's own check)
//   read-then-write   the read under the lock, then the lock is released for a moment, then the computed item is
//                     written under the lock: the naive code's race, without a server (shows that the checker
//                     and the oracle catch it with real threads)
// Drops: before_send returns nullopt without executing; after a send, the operation executes and the reply is
// lost. It cannot stall (stall() returns false).
#pragma once

#include <memory>

#include "live/store.hpp"

namespace live {

std::unique_ptr<LiveStore> open_memory_store(const StoreOptions& options);

}  // namespace live
