// live/postgres.hpp — PostgreSQL (libpq) as the live store, with its statement variants.
//
// One table per run (key bigint primary key, started_at, completed_at, expires_on, owner, memoized, counter; the
// nullable columns are the Item's optional fields), every statement in autocommit under READ COMMITTED (the
// default isolation), with statement_timeout set on each connection. The variants of Upsert (and Put):
//
//   cte-insert-retry  (correct) ONE statement: a MATERIALIZED CTE `old` reads the row FOR UPDATE (which, under
//                     READ COMMITTED, waits for a concurrent writer and returns the newest committed version); a
//                     data-modifying CTE UPDATEs it FROM old when the condition holds on old; another INSERTs the
//                     new item only WHERE NOT EXISTS (old), ON CONFLICT (key) DO NOTHING; the statement returns
//                     old and what each CTE did. The one window — the row did not exist in the statement's
//                     snapshot but a concurrent insert committed before ours — shows up as "no old row, nothing
//                     inserted, nothing updated": the statement changed nothing, so it is simply run again (its
//                     new snapshot sees the row). Every other outcome happened atomically under the row lock or
//                     the unique index, so the reply is the previous item.
//   advisory-lock     (correct) a transaction: BEGIN; SELECT pg_advisory_xact_lock(key); SELECT the row; the client
//                     applies the op (lethe::apply) and writes the result with INSERT .. ON CONFLICT DO UPDATE;
//                     COMMIT. Every writer of the key serializes on the advisory lock, and under READ COMMITTED
//                     the SELECT after the lock sees every earlier holder's commit. Correct only if EVERY writer
//                     of the table takes the lock.
//   cte-upsert        (unsafe) the locking CTE that looks right: `old` read FOR UPDATE, then INSERT .. ON CONFLICT
//                     (key) DO UPDATE .. WHERE condition, returning old as the previous item. When the row does
//                     not exist yet, FOR UPDATE locks nothing: two callers both see no old row, one inserts, the
//                     other's ON CONFLICT updates the fresh row, and BOTH report "absent" — two owners.
//   read-then-upsert  (unsafe) the naive code: SELECT the row, apply the op on the client, write the result with
//                     INSERT .. ON CONFLICT DO UPDATE (two statements, no lock): lost updates.
//
// Set-up, before anything is created: the table name must lead (search_path, system catalogs first) either to
// nothing — then the table is created in the schema CREATE TABLE would use — or to an empty table outside the
// system schemas with exactly the columns above (bigint; the optional fields nullable; a unique index on key)
// that accepts a rolled-back trial write; every statement then names the table with its schema. A statement
// failing with SQLSTATE class 42 during the run (the table dropped or altered) throws std::runtime_error: a
// set-up error, never an unknown outcome.
//
// Get is a plain SELECT in every variant. Conditions compare only int64 values the caller wrote, so a variant's
// reply is lethe::apply's (live/store.hpp contract); tests/live checks that sequentially for every variant.
#pragma once

#include <memory>

#include "live/store.hpp"

namespace live {

std::unique_ptr<LiveStore> open_postgres_store(const StoreOptions& options);

}  // namespace live
