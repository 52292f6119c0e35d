// The scenario loader's [explore] (scenario/explore.hpp): its entries, and each value an entry can give loaded as
// --set KEY=VALUE would be (scenario/loader_impl.hpp).
#include "scenario/loader_impl.hpp"

#include <algorithm>
#include <variant>

#include "scenario/explore.hpp"
#include "sim/text.hpp"

namespace scenario::detail {

namespace {
constexpr char kExploreAllowed[] =
    "an integer range \"LOW..HIGH\" (\"1..16\"), a real range (\"0..0.2\"), or an array of values "
    "([\"exponential(mean=10s)\", \"off\"]), each a value the key takes with --set";

std::optional<std::int64_t> whole_number(std::string_view text) {
  std::optional<double> number = text::parse_number(text);
  if (!number || text.find_first_of(".eE") != std::string_view::npos) return std::nullopt;
  if (!(*number >= -9.0e18 && *number <= 9.0e18)) return std::nullopt;
  return static_cast<std::int64_t>(*number);
}

// A choice written as a TOML string, integer, float or boolean, as --set would take it.
std::optional<std::string> choice_text(const toml::node& item) {
  if (item.is_string()) return item.as_string()->get();
  if (item.is_integer()) return fmt::format("{}", item.as_integer()->get());
  if (item.is_floating_point()) return text::format_number(item.as_floating_point()->get());
  if (item.is_boolean()) return std::string(item.as_boolean()->get() ? "true" : "false");
  return std::nullopt;
}
}  // namespace

std::optional<lethe::ExploreEntry> Loader::read_explore_entry(const std::string& key, const toml::node& value) {
  lethe::ExploreEntry entry;
  entry.key = key;
  if (const toml::array* array = value.as_array()) {
    entry.kind = lethe::ExploreEntry::Kind::Choices;
    for (std::size_t i = 0; i < array->size(); ++i) {
      std::optional<std::string> choice = choice_text(*array->get(i));
      if (!choice || choice->empty()) return std::nullopt;
      entry.choices.push_back(*choice);
      entry.written += (i == 0 ? "" : ", ") + *choice;
    }
    entry.written = "[" + entry.written + "]";
    return entry.choices.empty() ? std::nullopt : std::optional(entry);
  }
  if (!value.is_string()) return std::nullopt;
  entry.written = value.as_string()->get();
  const std::size_t dots = entry.written.find("..");
  if (dots == std::string::npos) return std::nullopt;
  const std::string low(lethe::text::trim(std::string_view(entry.written).substr(0, dots)));
  const std::string high(lethe::text::trim(std::string_view(entry.written).substr(dots + 2)));
  if (auto low_int = whole_number(low), high_int = whole_number(high); low_int && high_int) {
    if (*low_int > *high_int) return std::nullopt;
    entry.kind = lethe::ExploreEntry::Kind::Integers;
    entry.integer_low = *low_int;
    entry.integer_high = *high_int;
    return entry;
  }
  std::optional<double> low_real = text::parse_number(low);
  std::optional<double> high_real = text::parse_number(high);
  if (!low_real || !high_real || !(*low_real <= *high_real)) return std::nullopt;
  entry.kind = lethe::ExploreEntry::Kind::Reals;
  entry.real_low = *low_real;
  entry.real_high = *high_real;
  return entry;
}

void Loader::read_explore(const Table& root) {
  const toml::node* node = get(root, "explore");
  if (node == nullptr) return;
  if (!node->is_table()) {
    error(where_node("explore", node), "explore",
          fmt::format("found {}; allowed: a table, written [explore]", describe(*node)));
    return;
  }
  for (auto&& [key, value] : *node->as_table()) {
    const std::string name(key.str());
    const std::string path = "explore." + name;
    const Where where = where_node(path, &value);
    if (name == "swarm") {
      if (!value.is_boolean()) {
        error(where, path, fmt::format("found {}; allowed: true or false", describe(value)));
        continue;
      }
      config_.explore.swarm = value.as_boolean()->get();
      config_.explore.swarm_line = where.line;
      continue;
    }
    if (name.find('.') == std::string::npos) {
      error(where_key(path, key), path,
            "found a key that is not a scenario key; allowed: `swarm`, or a dotted scenario key written in quotes "
            "(\"topology.consumers\" = \"1..16\")");
      continue;
    }
    std::optional<lethe::ExploreEntry> entry = read_explore_entry(name, value);
    if (!entry) {
      error(where, path, fmt::format("found {}; allowed: {}", describe(value), kExploreAllowed));
      continue;
    }
    entry->line = where.line;
    entry->column = where.column;
    config_.explore.entries.push_back(std::move(*entry));
  }
  // toml++ keeps a table's keys sorted by name; the draw and its messages follow the file.
  std::stable_sort(config_.explore.entries.begin(), config_.explore.entries.end(),
                   [](const lethe::ExploreEntry& a, const lethe::ExploreEntry& b) {
                     return std::pair{a.line, a.column} < std::pair{b.line, b.column};
                   });
}

// Every value an entry can give (scenario/explore.hpp explore_values_to_check), loaded as the drawn configuration
// will be: the file with --set KEY=VALUE first, then the command line's overrides.
void Loader::check_explore_values(std::string_view toml_text, const std::vector<std::string>& overrides) {
  for (const lethe::ExploreEntry& entry : config_.explore.entries) {
    for (const std::string& value : scenario::explore_values_to_check(entry)) {
      std::vector<std::string> with_value{entry.key + "=" + value};
      with_value.insert(with_value.end(), overrides.begin(), overrides.end());
      LoadResult loaded = Loader(display_name_, base_dir_, false).load(toml_text, with_value);
      const auto* errors = std::get_if<std::vector<LoadError>>(&loaded);
      if (errors == nullptr || errors->empty()) continue;
      // The first message, without its "--set KEY=VALUE: " origin (the entry's position replaces it).
      std::string why = errors->front().message;
      const std::string origin = "--set " + with_value.front() + ": ";
      if (why.rfind(origin, 0) == 0) why.erase(0, origin.size());
      error(Where{entry.line, entry.column, ""}, "explore.\"" + entry.key + "\"",
            fmt::format("found {}, whose value {} does not load ({}); allowed: {}", entry.written, value, why,
                        kExploreAllowed));
      break;
    }
  }
}

}  // namespace scenario::detail
