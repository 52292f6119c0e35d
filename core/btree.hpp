// core/btree.hpp — the ordered map the model's large tables use: absl's B-tree with 1 KiB nodes.
//
// absl::btree_map fixes its node size at 256 bytes: with the 56-64 byte entries of the store, the ledger's settled
// groups and its attempt records, a node holds only 3-4 entries, and parent pointers, partly filled nodes and the
// internal levels cost 20-50% on top of the entries. 1 KiB nodes hold 15-18 of them. Measured with 909,091 keys
// of 56-byte entries inserted in nearly ascending order (as message ids are), then looked up once each:
// 68.5 -> 58.2 bytes per entry and 246 -> 91 ms; in random order 84.7 -> 70.1 bytes and 835 -> 394 ms.
//
// The node size is a template parameter of absl's B-tree that its public btree_map does not expose; this alias
// builds the same container as absl::btree_map from the pieces btree_map.h itself is made of (the Debian 12
// package, abseil 20220623). Same interface, same ordering, same iterator-invalidation rules.
#pragma once

#include <absl/container/btree_map.h>

#include <functional>
#include <memory>
#include <utility>

namespace lethe {

template <typename Key, typename Value, int NodeBytes = 1024>
using BTreeMap = absl::container_internal::btree_map_container<
    absl::container_internal::btree<absl::container_internal::map_params<
        Key, Value, std::less<Key>, std::allocator<std::pair<const Key, Value>>, NodeBytes, /*IsMulti=*/false>>>;

}  // namespace lethe
