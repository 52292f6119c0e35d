#include "world/store_capacity.hpp"

namespace lethe {

void RecentWrites::written(Key key, sim::Time at) {
  auto found = stamp_.lower_bound(key);
  if (found != stamp_.end() && found->first == key) {
    order_.erase(found->second.number);
    found->second = Stamp{next_, at};
  } else {
    stamp_.emplace_hint(found, key, Stamp{next_, at});
  }
  order_.emplace_hint(order_.end(), next_, key);  // the newest number: at the end
  ++next_;
}

void RecentWrites::removed(Key key) {
  const auto found = stamp_.find(key);
  if (found == stamp_.end()) return;
  order_.erase(found->second.number);
  stamp_.erase(found);
}

std::optional<RecentWrites::LastWrite> RecentWrites::last_write(Key key) const {
  const auto found = stamp_.find(key);
  if (found == stamp_.end()) return std::nullopt;
  return LastWrite{found->second.at, next_ - 1 - found->second.number};
}

std::optional<Key> RecentWrites::least_recent() const {
  if (order_.empty()) return std::nullopt;
  return order_.begin()->second;
}

}  // namespace lethe
