#include "world/store_capacity.hpp"

namespace lethe {

void RecentWrites::written(Key key) {
  auto found = stamp_.lower_bound(key);
  if (found != stamp_.end() && found->first == key) {
    order_.erase(found->second);
    found->second = next_;
  } else {
    stamp_.emplace_hint(found, key, next_);
  }
  order_.emplace_hint(order_.end(), next_, key);  // the newest number: at the end
  ++next_;
}

void RecentWrites::removed(Key key) {
  const auto found = stamp_.find(key);
  if (found == stamp_.end()) return;
  order_.erase(found->second);
  stamp_.erase(found);
}

std::optional<Key> RecentWrites::least_recent() const {
  if (order_.empty()) return std::nullopt;
  return order_.begin()->second;
}

}  // namespace lethe
