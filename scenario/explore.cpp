#include "scenario/explore.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "scenario/text.hpp"
#include "sim/random.hpp"

namespace scenario {
namespace {

using Kind = lethe::ExploreEntry::Kind;

std::uint64_t integer_span(const lethe::ExploreEntry& entry) {
  return static_cast<std::uint64_t>(entry.integer_high) - static_cast<std::uint64_t>(entry.integer_low) + 1;
}

// Integer bin `bin` holds [low + first, low + end) of the range's offsets.
std::uint64_t integer_bin_first(const lethe::ExploreEntry& entry, std::size_t bin) {
  const std::uint64_t span = integer_span(entry);
  const std::size_t bins = bin_count(entry);
  return span / bins * bin + std::min<std::uint64_t>(bin, span % bins);
}

// A bin's share of the entry's values, in units the weights multiply (choices and real bins: 1).
std::uint64_t bin_width(const lethe::ExploreEntry& entry, std::size_t bin) {
  if (entry.kind != Kind::Integers) return 1;
  return integer_bin_first(entry, bin + 1) - integer_bin_first(entry, bin);
}

std::size_t draw_bin(const lethe::ExploreEntry& entry, sim::Rng& rng, const std::vector<std::uint32_t>* weights) {
  const std::size_t bins = bin_count(entry);
  std::uint64_t total = 0;
  for (std::size_t b = 0; b < bins; ++b) total += bin_width(entry, b) * (weights ? (*weights)[b] : 1);
  std::uint64_t pick = rng.below(total);
  for (std::size_t b = 0; b < bins; ++b) {
    const std::uint64_t size = bin_width(entry, b) * (weights ? (*weights)[b] : 1);
    if (pick < size) return b;
    pick -= size;
  }
  return bins - 1;
}

// Four significant digits: readable in a drawn configuration, and read back exactly from its text.
std::string short_number(double value) { return text::format_number(std::stod(fmt::format("{:.4g}", value))); }

// The value inside the bin (one more draw), as --set writes it.
std::string draw_value(const lethe::ExploreEntry& entry, std::size_t bin, sim::Rng& rng) {
  switch (entry.kind) {
    case Kind::Choices: return entry.choices[bin];
    case Kind::Integers: {
      const std::uint64_t offset = integer_bin_first(entry, bin) + rng.below(bin_width(entry, bin));
      return fmt::format("{}", entry.integer_low + static_cast<std::int64_t>(offset));
    }
    case Kind::Reals: {
      const double width = (entry.real_high - entry.real_low) / static_cast<double>(kRangeBins);
      const double value = entry.real_low + width * (static_cast<double>(bin) + rng.uniform());
      return short_number(std::min(value, entry.real_high));
    }
  }
  return entry.choices.front();
}

}  // namespace

std::size_t bin_count(const lethe::ExploreEntry& entry) {
  switch (entry.kind) {
    case Kind::Choices: return entry.choices.size();
    case Kind::Integers: return static_cast<std::size_t>(std::min<std::uint64_t>(kRangeBins, integer_span(entry)));
    case Kind::Reals: return entry.real_low == entry.real_high ? 1 : kRangeBins;
  }
  return 1;
}

std::string bin_name(const lethe::ExploreEntry& entry, std::size_t bin) {
  switch (entry.kind) {
    case Kind::Choices: return entry.choices[bin];
    case Kind::Integers: {
      const std::int64_t low = entry.integer_low + static_cast<std::int64_t>(integer_bin_first(entry, bin));
      const std::int64_t high = entry.integer_low + static_cast<std::int64_t>(integer_bin_first(entry, bin + 1)) - 1;
      return low == high ? fmt::format("{}", low) : fmt::format("{}..{}", low, high);
    }
    case Kind::Reals: {
      const double width = (entry.real_high - entry.real_low) / static_cast<double>(bin_count(entry));
      return fmt::format("{}..{}", short_number(entry.real_low + width * static_cast<double>(bin)),
                         short_number(entry.real_low + width * static_cast<double>(bin + 1)));
    }
  }
  return "";
}

std::vector<std::string> explore_values_to_check(const lethe::ExploreEntry& entry) {
  std::vector<std::string> values;
  switch (entry.kind) {
    case Kind::Choices: return entry.choices;
    case Kind::Integers: {
      const std::uint64_t span = integer_span(entry);
      std::vector<std::uint64_t> offsets;
      for (std::uint64_t i = 0; i < std::min(span, kCheckEveryValue); ++i) offsets.push_back(i);
      if (span > kCheckEveryValue) {
        offsets.resize(kCheckNearEnds);
        for (std::uint64_t i = span - kCheckNearEnds; i < span; ++i) offsets.push_back(i);
        for (std::size_t bin = 1; bin < bin_count(entry); ++bin) offsets.push_back(integer_bin_first(entry, bin));
        std::sort(offsets.begin(), offsets.end());
        offsets.erase(std::unique(offsets.begin(), offsets.end()), offsets.end());
      }
      for (const std::uint64_t offset : offsets) {
        values.push_back(fmt::format("{}", entry.integer_low + static_cast<std::int64_t>(offset)));
      }
      return values;
    }
    case Kind::Reals: {
      // The ends first: a range that reaches past what its key allows is reported by the end written in the file.
      values.push_back(text::format_number(entry.real_low));
      values.push_back(text::format_number(entry.real_high));
      const double width = (entry.real_high - entry.real_low) / static_cast<double>(2 * kRangeBins);
      for (std::size_t i = 1; i < 2 * kRangeBins; ++i) {
        values.push_back(short_number(entry.real_low + width * static_cast<double>(i)));
      }
      std::vector<std::string> unique;
      for (std::string& value : values) {
        if (std::find(unique.begin(), unique.end(), value) == unique.end()) unique.push_back(std::move(value));
      }
      return unique;
    }
  }
  return values;
}

Draw draw_configuration(const lethe::ExploreSection& explore, std::uint64_t seed, const ExploreWeights& weights) {
  Draw draw;
  for (std::size_t i = 0; i < explore.entries.size(); ++i) {
    const lethe::ExploreEntry& entry = explore.entries[i];
    sim::Rng rng = sim::Rng::derive(seed, "explore:" + entry.key);
    const std::size_t bin = draw_bin(entry, rng, weights.empty() ? nullptr : &weights[i]);
    draw.bins.push_back(bin);
    draw.overrides.push_back(entry.key + "=" + draw_value(entry, bin, rng));
  }
  if (explore.swarm) {
    sim::Rng rng = sim::Rng::derive(seed, "explore.swarm");
    std::vector<std::string> on;
    draw.switches = lethe::draw_fault_switches(rng, on);
  }
  return draw;
}

LoadResult load_drawn(const std::filesystem::path& file, const std::vector<std::string>& sets, Draw& draw) {
  std::vector<std::string> overrides = draw.overrides;
  overrides.insert(overrides.end(), sets.begin(), sets.end());
  LoadResult loaded = load_scenario(file, overrides, /*check_explore=*/false);
  if (auto* config = std::get_if<lethe::ScenarioConfig>(&loaded)) {
    draw.swarm_off = lethe::switch_off_faults(*config, draw.switches);
  }
  return loaded;
}

std::vector<std::string> describe(const Draw& draw) {
  std::vector<std::string> words = draw.overrides;
  if (!draw.swarm_off.empty()) words.push_back("swarm_off=" + text::join(draw.swarm_off, ","));
  return words;
}

}  // namespace scenario
