// core/settings.hpp — the [protocol] settings of one strategy: its declared keys and their values.
//
// A strategy declares the keys it reads (protocol/registry.hpp StrategyInfo::keys), each a SettingKey: name,
// value language, default (or required), allowed words, one-line description. The loader checks a scenario's
// [protocol] table against the chosen strategy's keys and fills a StrategySettings with every one of them: the
// value written, else the key's default (a required key left out is an error). Code reads a setting by name and
// type (get<T>), so adding a key to a strategy touches that strategy alone.
//
// Value types by language: Duration -> sim::Duration, Boolean -> bool, Word -> std::string (one of `words`),
// Poll -> lethe::Poll, PollRead -> lethe::PollRead, LocalCache -> lethe::LocalCache.
//
// Does not: parse or validate text (the scenario loader, scenario/loader_protocol.cpp, does), or know any key by name.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sim/distribution.hpp"
#include "sim/time.hpp"

namespace lethe {

enum class PollKind { Distribution, Backoff };      // a distribution | "backoff(base, factor, cap)"
enum class PollReadKind { Consistent, Eventual };   // "consistent" | "eventual(lag=...)"

// A poll interval: a distribution ("100ms", "uniform(50ms, 150ms)") drawn for every re-read, or
// "backoff(base=50ms, factor=1.5, cap=5s)": base, then base*factor, ... capped at cap. The loader keeps every
// poll interval positive on average (a zero interval would spin without advancing time).
struct Poll {
  PollKind kind = PollKind::Distribution;
  sim::Distribution interval = sim::Distribution::constant(100'000'000);  // kind == Distribution
  sim::Duration backoff_base = 0;                                         // kind == Backoff: > 0
  double backoff_factor = 1.0;                                            // kind == Backoff: >= 1
  sim::Duration backoff_cap = 0;                                          // kind == Backoff: >= backoff_base
};

// "consistent" | "eventual(lag=DIST)": waiting callers may read a replica that is `lag` behind.
struct PollRead {
  PollReadKind kind = PollReadKind::Consistent;
  sim::Distribution lag = sim::Distribution::constant(0);  // kind == Eventual; a constant 0 otherwise
};

// "off" | "lru(size=N, ttl=DURATION)": a consumer's own cache of the records it saw completed, consulted before
// the store. It lives in the consumer's memory: a crash empties it, and another consumer has its own.
struct LocalCache {
  std::uint64_t size = 0;  // entries kept, the least recently used evicted first; 0: no cache ("off")
  sim::Duration ttl = 0;   // an entry is trusted this long after it was cached, on the consumer's clock
};

// The value language of a strategy key (its parser, renderer and allowed values).
enum class SettingLanguage { Duration, Boolean, Word, Poll, PollRead, LocalCache };

using SettingValue = std::variant<sim::Duration, bool, std::string, Poll, PollRead, LocalCache>;

// The variant index each language's values take (checked by the registry when a strategy registers).
constexpr std::size_t value_index(SettingLanguage language) {
  switch (language) {
    case SettingLanguage::Duration: return 0;
    case SettingLanguage::Boolean: return 1;
    case SettingLanguage::Word: return 2;
    case SettingLanguage::Poll: return 3;
    case SettingLanguage::PollRead: return 4;
    case SettingLanguage::LocalCache: return 5;
  }
  return 0;
}

// One [protocol] key a strategy reads.
struct SettingKey {
  std::string name;  // lowercase letters, digits and '_'; not "kind"
  SettingLanguage language = SettingLanguage::Duration;
  std::optional<SettingValue> default_value;  // nullopt: required (the loader refuses a file without it)
  std::string description;                    // one line
  std::vector<std::string> words;             // Word: the allowed words, in the order messages list them
  sim::Duration min = 0;                      // Duration: the smallest value allowed (1: above 0)
  bool none = false;                          // Duration: "none" is allowed too and means kTtlNone (never)
};

// The values of one strategy's keys, by name.
class StrategySettings {
 public:
  void set(std::string_view key, SettingValue value) { values_.insert_or_assign(std::string(key), std::move(value)); }
  void erase(std::string_view key) { values_.erase(std::string(key)); }
  bool has(std::string_view key) const { return values_.find(key) != values_.end(); }

  // The value of `key`, or nullptr when it is not set or not a T.
  template <class T>
  const T* find(std::string_view key) const {
    auto it = values_.find(key);
    return it == values_.end() ? nullptr : std::get_if<T>(&it->second);
  }

  // REQUIRES: `key` is set and holds a T (a key the strategy declares, filled by the loader or make_strategy);
  // throws std::logic_error otherwise, naming the key.
  template <class T>
  const T& get(std::string_view key) const {
    const T* value = find<T>(key);
    if (value == nullptr) throw std::logic_error("protocol setting \"" + std::string(key) + "\" is not set as read");
    return *value;
  }

  const std::map<std::string, SettingValue, std::less<>>& values() const { return values_; }

 private:
  std::map<std::string, SettingValue, std::less<>> values_;
};

// The enum value whose word (to_string) is the Word setting `key`. REQUIRES: the word is one of `values`'.
template <class E>
E word_setting(const StrategySettings& settings, std::string_view key, std::initializer_list<E> values) {
  const std::string& word = settings.get<std::string>(key);
  for (E value : values) {
    if (to_string(value) == word) return value;
  }
  throw std::logic_error("protocol setting \"" + std::string(key) + "\" has the unknown word \"" + word + "\"");
}

// The words of `values`, for SettingKey::words.
template <class E>
std::vector<std::string> words_of_values(std::initializer_list<E> values) {
  std::vector<std::string> words;
  for (E value : values) words.push_back(to_string(value));
  return words;
}

}  // namespace lethe
