#include "protocol/local_cache.hpp"

#include <algorithm>

namespace lethe {

std::optional<Item> LocalRecordCache::find(Key key, sim::Time now) {
  const auto entry = entries_.find(key);
  if (entry == entries_.end()) return std::nullopt;
  if (now >= entry->second.trusted_until) {
    forget(entry);
    return std::nullopt;
  }
  by_use_.erase(entry->second.used);
  entry->second.used = ++uses_;
  by_use_.emplace(entry->second.used, key);
  return entry->second.record;
}

void LocalRecordCache::put(Key key, const Item& record, sim::Time now) {
  if (!enabled()) return;
  erase(key);
  sim::Time until = sim::saturating_add(now, setting_.ttl);
  if (record.expires_on.has_value()) until = std::min(until, *record.expires_on);
  if (until <= now) return;  // already past its record's expiry: nothing to trust
  while (entries_.size() >= setting_.size) forget(entries_.find(by_use_.begin()->second));
  const std::uint64_t used = ++uses_;
  entries_.emplace(key, Entry{record, until, used});
  by_use_.emplace(used, key);
}

void LocalRecordCache::erase(Key key) {
  const auto entry = entries_.find(key);
  if (entry != entries_.end()) forget(entry);
}

void LocalRecordCache::forget(std::map<Key, Entry>::iterator entry) {
  by_use_.erase(entry->second.used);
  entries_.erase(entry);
}

}  // namespace lethe
