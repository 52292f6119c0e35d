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

KvAnswer SeqKv::read(const std::string& node, const std::string& key) {
  std::uint64_t& seen = seen_[node];
  seen += rng_.below(head_ - seen + 1);  // from what the node saw to the head
  const std::optional<std::string> value = at(key, seen);
  if (!value.has_value()) return KvAnswer{kKeyMissing, std::nullopt};
  return KvAnswer{0, value};
}

KvAnswer SeqKv::write(const std::string& node, const std::string& key, const std::string& value) {
  put(node, key, value);
  return KvAnswer{};
}

KvAnswer SeqKv::cas(const std::string& node, const std::string& key, const std::string& from, const std::string& to,
                    bool create) {
  const std::optional<std::string> current = at(key, head_);
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

KvAnswer LwwKv::read(const std::string& key) {
  const auto& replica_state = replicas_[replica()];
  const auto found = replica_state.find(key);
  if (found == replica_state.end() || found->second.stamp == 0) return KvAnswer{kKeyMissing, std::nullopt};
  return KvAnswer{0, found->second.value};
}

KvAnswer LwwKv::write(const std::string& key, const std::string& value) {
  put(replica(), key, value);
  return KvAnswer{};
}

KvAnswer LwwKv::cas(const std::string& key, const std::string& from, const std::string& to, bool create) {
  const std::size_t chosen = replica();
  const auto found = replicas_[chosen].find(key);
  const bool present = found != replicas_[chosen].end() && found->second.stamp != 0;
  if (!present && !create) return KvAnswer{kKeyMissing, std::nullopt};
  if (present && found->second.value != from) return KvAnswer{kPrecondition, found->second.value};
  put(chosen, key, to);
  return KvAnswer{};
}

}  // namespace lethe
