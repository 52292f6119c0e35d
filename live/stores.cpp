// The catalogue of live stores and variants, and the client-side helpers the variants share.
#include <stdexcept>

#include "live/memory.hpp"
#include "live/postgres.hpp"
#include "live/redis.hpp"
#include "live/store.hpp"

namespace live {

const std::vector<VariantInfo>& store_variants() {
  static const std::vector<VariantInfo> kVariants = {
      {"postgres", "cte-insert-retry", true,
       "one statement: old row FOR UPDATE, UPDATE .. FROM old WHERE condition, INSERT .. WHERE NOT EXISTS old ON "
       "CONFLICT DO NOTHING; rerun when it lost the insert race (changed nothing)"},
      {"postgres", "advisory-lock", true,
       "BEGIN; pg_advisory_xact_lock(key); SELECT; client applies; INSERT .. ON CONFLICT DO UPDATE; COMMIT"},
      {"postgres", "cte-upsert", false,
       "old row FOR UPDATE + INSERT .. ON CONFLICT DO UPDATE WHERE condition, previous = old: FOR UPDATE locks "
       "nothing when the row does not exist yet"},
      {"postgres", "read-then-upsert", false, "SELECT, client applies, INSERT .. ON CONFLICT DO UPDATE: no lock"},
      {"redis", "lua", true, "EVAL of a read-check-write script (atomic); Put = SET .. GET"},
      {"redis", "watch", true, "WATCH; GET; client applies; MULTI; SET; EXEC (retried when the key changed)"},
      {"redis", "get-then-set", false, "GET, client applies, SET: no atomicity"},
      {"memory", "atomic", true, "lethe::apply under one mutex (the harness's own reference)"},
      {"memory", "read-then-write", false, "read under the mutex, release it, write the computed item"},
  };
  return kVariants;
}

std::string default_variant(const std::string& store) {
  for (const auto& v : store_variants()) {
    if (v.store == store && v.atomic) return v.name;
  }
  throw std::invalid_argument("unknown store \"" + store + "\" (postgres, redis or memory)");
}

const VariantInfo* find_variant(const std::string& store, const std::string& variant) {
  for (const auto& v : store_variants()) {
    if (v.store == store && v.name == variant) return &v;
  }
  return nullptr;
}

std::unique_ptr<LiveStore> open_store(const std::string& store, const StoreOptions& options) {
  if (find_variant(store, options.variant) == nullptr) {
    std::string known;
    for (const auto& v : store_variants()) {
      if (v.store == store) known += (known.empty() ? "" : ", ") + v.name;
    }
    if (known.empty()) throw std::invalid_argument("unknown store \"" + store + "\" (postgres, redis or memory)");
    throw std::invalid_argument("store " + store + ": unknown variant \"" + options.variant + "\" (" + known + ")");
  }
  if (options.timeout <= 0) throw std::invalid_argument("the store timeout must be positive");
  if (store == "postgres") return open_postgres_store(options);
  if (store == "redis") return open_redis_store(options);
  return open_memory_store(options);
}

LocalStep apply_locally(const lethe::Op& op, const std::optional<lethe::Item>& current) {
  lethe::StoreState state;
  if (current.has_value()) state[op.key] = *current;
  LocalStep step;
  step.reply = lethe::apply(state, op);
  const auto it = state.find(op.key);
  if (it != state.end()) step.after = it->second;
  step.changed = (op.kind == lethe::OpKind::Put || op.kind == lethe::OpKind::Upsert) && step.reply.applied;
  return step;
}

void require_supported(const lethe::Op& op, const char* store) {
  switch (op.kind) {
    case lethe::OpKind::Get:
    case lethe::OpKind::Put:
    case lethe::OpKind::Upsert:
      return;
    case lethe::OpKind::Delete:
    case lethe::OpKind::Transaction:
    case lethe::OpKind::Evict:
      break;
  }
  throw std::invalid_argument(std::string("live ") + store + " store: " + lethe::describe(op) +
                              " is not supported (live mode runs Get, Put and Upsert)");
}

}  // namespace live
