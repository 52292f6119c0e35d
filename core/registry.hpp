// core/registry.hpp — a list of named entries (a scenario word -> what lethe builds for it).
//
// The strategy registry (protocol/registry.hpp), the source registry (world/source.hpp) and the sink registry
// (world/sink.hpp) are instances. Entries never move once added (a deque): references and pointers handed out
// stay valid while more are registered. Entries keep
// their registration order: the built-ins first, in the order their list gives, then those added at runtime;
// names() in that order is the "allowed" list of the scenario loader's messages.
//
// REQUIRES: entries are added before any run that reads the registry (it is not locked: adding while another
// thread runs a world is a data race). Names are non-empty and unique.
// Does not: create anything itself, or know which words the loader reads.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <deque>
#include <vector>

namespace lethe {

template <class Entry>
class Registry {
 public:
  // Throws std::invalid_argument on an empty or already registered name.
  void add(std::string name, Entry entry) {
    if (name.empty()) throw std::invalid_argument("Registry: an empty name");
    if (find(name) != nullptr) throw std::invalid_argument("Registry: \"" + name + "\" is already registered");
    entries_.emplace_back(std::move(name), std::move(entry));
  }
  // The entry registered under `name`, or nullptr.
  const Entry* find(std::string_view name) const {
    for (const auto& [registered, entry] : entries_) {
      if (registered == name) return &entry;
    }
    return nullptr;
  }
  // The entry registered under `name`; throws std::invalid_argument (naming `what`) when there is none.
  const Entry& at(std::string_view name, std::string_view what) const {
    const Entry* entry = find(name);
    if (entry == nullptr) {
      throw std::invalid_argument(std::string(what) + " \"" + std::string(name) + "\" is not registered");
    }
    return *entry;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> names;
    for (const auto& entry : entries_) names.push_back(entry.first);
    return names;
  }

 private:
  std::deque<std::pair<std::string, Entry>> entries_;
};

}  // namespace lethe
