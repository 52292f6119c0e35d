#include "world/external_services.hpp"

namespace lethe {

namespace {
constexpr int kKeyMissing = 20;
constexpr int kPrecondition = 22;
}  // namespace

// ---------------------------------------------------------------- seq-kv

std::optional<std::string> SeqKv::at(const std::string& key, std::uint64_t version) const {
  const auto found = versions_.find(key);
  if (found == versions_.end()) return std::nullopt;
  std::optional<std::string> value;
  for (const auto& [written, text] : found->second) {
    if (written > version) break;
    value = text;
  }
  return value;
}

void SeqKv::put(const std::string& node, const std::string& key, const std::string& value) {
  versions_[key].emplace_back(++head_, value);
  seen_[node] = head_;
}

KvAnswer SeqKv::read(const std::string& node, const std::string& key, bool linearizable) {
  std::uint64_t& seen = seen_[node];
  seen += rng_.below(head_ - seen + 1);  // from what the node saw to the head
  if (linearizable) seen = head_;
  const std::optional<std::string> value = at(key, seen);
  const bool stale = value != at(key, head_);
  if (!value.has_value()) return KvAnswer{kKeyMissing, std::nullopt, stale};
  return KvAnswer{0, value, stale};
}

KvAnswer SeqKv::write(const std::string& node, const std::string& key, const std::string& value) {
  put(node, key, value);
  return KvAnswer{};
}

KvAnswer SeqKv::cas(const std::string& node, const std::string& key, const std::string& from, const std::string& to,
                    bool create) {
  const std::optional<std::string> current = at(key, head_);
  seen_[node] = head_;  // it compared at the head: the node's later reads are never older than what it saw
  if (!current.has_value() && !create) return KvAnswer{kKeyMissing, std::nullopt};
  if (current.has_value() && *current != from) return KvAnswer{kPrecondition, current};
  put(node, key, to);
  return KvAnswer{};
}

// ---------------------------------------------------------------- lww-kv

std::size_t LwwKv::replica() { return static_cast<std::size_t>(rng_.below(kReplicas)); }

void LwwKv::apply(std::size_t replica, const std::string& key, const Entry& entry) {
  Entry& stored = replicas_[replica][key];
  if (entry.stamp > stored.stamp) stored = entry;
}

void LwwKv::put(std::size_t replica, const std::string& key, const std::string& value) {
  const Entry entry{value, ++stamps_};
  apply(replica, key, entry);
  for (std::size_t other = 0; other < kReplicas; ++other) {
    if (other == replica) continue;
    const sim::Duration lag = static_cast<sim::Duration>(rng_.below(static_cast<std::uint64_t>(kMaxLag) + 1));
    simulation_.at(simulation_.now() + lag, [this, other, key, entry] { apply(other, key, entry); });
  }
}

// The entry a request that reached `replica` sees: that replica's, or the highest stamp of all when linearizable
// (a write is on its own replica at once, so the highest stamp anywhere is the latest write). Null when absent.
const LwwKv::Entry* LwwKv::latest(std::size_t replica, const std::string& key, bool linearizable) const {
  const Entry* seen = nullptr;
  for (std::size_t r = 0; r < kReplicas; ++r) {
    if (r != replica && !linearizable) continue;
    const auto found = replicas_[r].find(key);
    if (found == replicas_[r].end() || found->second.stamp == 0) continue;
    if (seen == nullptr || found->second.stamp > seen->stamp) seen = &found->second;
  }
  return seen;
}

// Whether `seen` (null: absent) is other than the latest write of `key` (stamps are unique to writes).
bool LwwKv::stale(const Entry* seen, const std::string& key) const {
  const Entry* newest = latest(0, key, true);
  return (seen == nullptr ? 0 : seen->stamp) != (newest == nullptr ? 0 : newest->stamp);
}

KvAnswer LwwKv::read(const std::string& key, bool linearizable) {
  const Entry* seen = latest(replica(), key, linearizable);
  if (seen == nullptr) return KvAnswer{kKeyMissing, std::nullopt, stale(seen, key)};
  return KvAnswer{0, seen->value, stale(seen, key)};
}

KvAnswer LwwKv::write(const std::string& key, const std::string& value) {
  put(replica(), key, value);
  return KvAnswer{};
}

KvAnswer LwwKv::cas(const std::string& key, const std::string& from, const std::string& to, bool create,
                    bool linearizable) {
  const std::size_t chosen = replica();
  const Entry* seen = latest(chosen, key, linearizable);
  const bool was_stale = stale(seen, key);
  if (seen == nullptr && !create) return KvAnswer{kKeyMissing, std::nullopt, was_stale};
  if (seen != nullptr && seen->value != from) return KvAnswer{kPrecondition, seen->value, was_stale};
  put(chosen, key, to);
  return KvAnswer{0, std::nullopt, was_stale};
}

}  // namespace lethe
