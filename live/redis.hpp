// live/redis.hpp — Redis (hiredis) as the live store, with its command variants.
//
// One string value per key ("<prefix><key>"), the item encoded as six '|'-separated decimal fields
// (started_at|completed_at|expires_on|owner|memoized|counter; an empty field is an unset optional). Get is GET.
// The variants of Upsert and Put:
//
//   lua           (correct) Upsert is one EVAL of a script that reads the value, checks the condition, applies
//                 the update and SETs it, returning the previous value: Redis runs a script atomically (no other
//                 command in between). Put is SET .. GET (atomic, returns the old value). The script compares
//                 times as decimal strings (no floating point: exact for every int64).
//   watch         (correct) optimistic: WATCH key; GET; the client applies the op (lethe::apply); MULTI; SET;
//                 EXEC. EXEC fails if the key changed since WATCH, and the whole step is tried again. A rejected
//                 condition writes nothing (UNWATCH) and answers from the GET.
//   get-then-set  (unsafe) the naive code: GET, apply on the client, SET. Two callers both read "absent" and both
//                 become the owner.
//
// Timeouts: the command timeout is the socket's (hiredis redisSetTimeout): Redis has no server-side statement
// timeout, so a timed-out command may still run later (an unknown outcome, recorded as such). Targets:
// redis://[:password@]host[:port] or unix:///path/to/socket.
//
// Set-up: no key may carry the run's prefix (a fresh one, or the --key-prefix given): the whole keyspace is
// scanned (SCAN to the end of its cursor), else opening throws. Teardown deletes the keys of a fresh prefix.
#pragma once

#include <memory>

#include "live/store.hpp"

namespace live {

std::unique_ptr<LiveStore> open_redis_store(const StoreOptions& options);

// The item's Redis encoding, and back (nullopt for a malformed value). Exposed for tests.
std::string encode_item(const lethe::Item& item);
std::optional<lethe::Item> decode_item(const std::string& text);

}  // namespace live
