#include "scenario/schema.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "scenario/text.hpp"
#include "protocol/presets.hpp"
#include "protocol/registry.hpp"
#include "world/names.hpp"

namespace scenario::schema {

namespace {

// The names a registry holds (world/names.hpp), as the words of a key whose value is one of them.
Words<std::string> registered_words(const std::vector<std::string>& names) {
  Words<std::string> words;
  for (const std::string& name : names) words.emplace_back(name, name);
  return words;
}

}  // namespace

Words<std::string> source_kind_words() { return registered_words(lethe::source_names()); }

Words<std::string> protocol_kind_words() { return registered_words(lethe::strategy_names()); }

Words<std::string> protocol_preset_words() {
  Words<std::string> words;
  words.emplace_back("none", "none");
  for (const lethe::Preset& preset : lethe::presets()) words.emplace_back(preset.name, preset.name);
  return words;
}

Words<std::string> sink_kind_words() { return registered_words(lethe::sink_names()); }

Words<lethe::PartitionGroup> group_words() {
  using lethe::PartitionGroup;
  return words_of({PartitionGroup::Consumers, PartitionGroup::Store, PartitionGroup::Broker, PartitionGroup::Sink,
                   PartitionGroup::Clients});
}

std::string quoted_words(const std::vector<std::string>& words) {
  std::vector<std::string> parts;
  for (const auto& word : words) parts.push_back("\"" + word + "\"");
  return text::join(parts, ", ");
}

std::string allowed(const Text&) { return "a string"; }
std::string allowed(const Name&) { return "a non-empty string"; }
std::string allowed(const Names& type) {
  if (!type.distinct) return "an array of non-empty strings (a program, then its arguments), e.g. [\"python3\", \"consumer.py\"]";
  return type.at_least_one ? "an array of one or more distinct non-empty strings, e.g. [\"billing\"]"
                           : "an array of distinct non-empty strings, e.g. [\"incident\", \"payments\"]";
}
std::string allowed(const Integer& type) {
  return type.max == std::numeric_limits<std::int64_t>::max()
             ? fmt::format("an integer >= {}", type.min)
             : fmt::format("an integer from {} to {}", type.min, type.max);
}
std::string allowed(const Boolean&) { return "true or false"; }
std::string allowed(const Probability&) { return "a probability: a number from 0 to 1, e.g. 0.05"; }
std::string allowed(const Duration& type) {
  return std::string(kDurationAllowed) + (type.min > 0 ? ", more than 0 and " : ", ") + kDurationMaxAllowed +
         (type.none ? ", or \"none\" (never expires)" : "");
}
std::string allowed(const Distribution& type) {
  std::string text = kDistributionAllowed;
  if (type.min_mean > 0) {
    text += ", with a mean of at least " + sim::format_duration(type.min_mean);
  } else if (type.positive_mean) {
    text += ", with a mean above 0";
  }
  if (type.allow_negative) text += " (negative values allowed)";
  return text + ", every duration in it " + kDurationMaxAllowed;
}

std::string above_duration_max(sim::Duration value) {
  static_assert(sim::kDurationMax == 3650 * sim::kDay, "kDurationMaxAllowed names the bound");
  return fmt::format("{} is above {}, the largest duration lethe simulates", sim::format_duration(value),
                     sim::format_duration(sim::kDurationMax));
}

bool rate_in_range(double per_second) {
  if (per_second == 0.0) return true;
  constexpr double kRateMaxPerSecond = 1e10;
  return per_second <= kRateMaxPerSecond &&
         static_cast<double>(sim::kSecond) / per_second <= static_cast<double>(sim::kDurationMax);
}
std::string allowed(const Rate&) { return kRateAllowed; }
std::string allowed(const Bound&) { return "an integer >= 1, or \"unbounded\""; }
std::string allowed(const Language& type) { return type.allowed; }
std::string allowed(const Groups&) {
  return "two different groups out of " + quoted_words(group_words()) +
         ", or [\"consumers\", \"consumers\"] (between consumer nodes: the peer messages of external nodes)";
}

std::string_view describe(Rule rule) {
  switch (rule) {
    case Rule::TopologyCounts:
      return "partitions must be at least 1 when source is \"kafka\", and clients at least 1 when it is \"clients\"";
    case Rule::WorkloadRate: return "rate must be above 0 when messages is above 0";
    case Rule::WindowFits: return "at + for must stay below 292 years";
    case Rule::ProtocolKind:
      return "the keys the kind requires must be written (see \"Keys each protocol kind requires\")";
    case Rule::SagaRuns:
      return "steps is 0, or 2 to 8 with one processor and a protocol kind whose effect is a provider call";
    case Rule::RedeliveryCopies:
      return "at most `copies` [[workload.redelivery.copy]] entries (entry i is copy i; later copies use delay)";
    case Rule::ExternalNodes:
      return "command is required when protocol.kind is \"external\" (and set only then); external nodes run "
             "plain messages (saga.steps = 0)";
  }
  return "";
}

std::string language(const Duration&) { return kDurationAllowed; }
std::string language(const Distribution&) { return kDistributionAllowed; }
std::string language(const Groups& type) { return allowed(type); }

}  // namespace scenario::schema
