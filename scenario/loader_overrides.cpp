// The scenario loader: --set KEY=VALUE written into the parsed tree before any key is read, and a --set value
// read as TOML by a key that wants another type than a string (scenario/loader_impl.hpp).
#include "scenario/loader_impl.hpp"

#include <algorithm>

#include "scenario/input_check.hpp"
#include "sim/text.hpp"

namespace scenario::detail {

namespace {

std::optional<std::vector<KeyPart>> split_key(std::string_view key) {
  std::vector<KeyPart> parts;
  std::size_t start = 0;
  while (start <= key.size()) {
    std::size_t dot = key.find('.', start);
    std::string_view part = key.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    KeyPart parsed;
    std::size_t bracket = part.find('[');
    parsed.name = std::string(part.substr(0, bracket));
    if (bracket != std::string_view::npos) {
      if (part.back() != ']' || part.size() < bracket + 3) return std::nullopt;
      std::string_view digits = part.substr(bracket + 1, part.size() - bracket - 2);
      if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
          digits.size() > 6) {
        return std::nullopt;
      }
      parsed.index = static_cast<std::size_t>(std::stoul(std::string(digits)));
    }
    if (parsed.name.empty()) return std::nullopt;
    parts.push_back(std::move(parsed));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return parts;
}

std::optional<std::string> override_limit(const std::string& key, const std::string& value, bool& toml_safe) {
  // The key and the value (read as TOML later) within the limits of a file's (scenario/input_check.hpp).
  std::optional<std::string> limit = check_override_key(key);
  // A misplaced non-ASCII character is fine in a verbatim string: coerce does not hand it to toml++.
  std::optional<InputProblem> problem = check_scenario_input("v = " + value);
  toml_safe = !problem;
  if (!limit && problem && problem->kind == InputProblem::Kind::Limit) limit = problem->text;
  if (!limit && problem && problem->kind == InputProblem::Kind::NotUtf8) {
    limit = fmt::format("found a byte at byte offset {} of the value that is not UTF-8; allowed: UTF-8 text",
                        problem->byte_offset - 4);  // "v = " comes first
  }
  return limit;
}

std::string unquoted(std::string value) {
  if (value.size() < 2 || (value.front() != '"' && value.front() != '\'') || value.back() != value.front()) {
    return value;
  }
  try {
    toml::table parsed = toml::parse("v = " + value);
    if (const toml::node* node = parsed.get("v"); node && node->is_string()) value = node->as_string()->get();
  } catch (const toml::parse_error&) {
    // Left as written: the key's reader reports what is wrong with it.
  }
  return value;
}

}  // namespace

void Loader::apply_override(toml::table& root, const std::string& argument) {
  std::optional<Override> set = read_override(argument);
  if (!set) return;
  if (set->key.rfind("expect.", 0) == 0 && set->key.size() > 7) {
    expect_overrides_.push_back({set->key.substr(7), set->value, set->set_text});
    return;
  }
  std::optional<std::vector<KeyPart>> parts = split_key(set->key);
  if (!parts) {
    set_error(set->set_text, set->key + ": found a malformed key; allowed: a dotted key such as protocol.ttl or "
                                        "network.partition[0].at");
    return;
  }
  std::string path;
  toml::table* table = &root;
  for (std::size_t i = 0; table != nullptr && i + 1 < parts->size(); ++i) {
    const KeyPart& part = (*parts)[i];
    path = join_path(path, part.name);
    table = part.index ? enter_entry(*table, part, set->set_text, path)
                       : enter_table(*table, part, set->set_text, path);
  }
  if (table != nullptr) write_override(*table, path, parts->back(), *set);
}

std::optional<Override> Loader::read_override(const std::string& argument) {
  const std::string set_text = "--set " + argument;
  std::size_t equals = argument.find('=');
  std::string key(lethe::text::trim(std::string_view(argument).substr(0, std::min(equals, argument.size()))));
  if (equals == std::string::npos || key.empty()) {
    set_error(set_text, (key.empty() ? argument : key) +
                            ": found no KEY=VALUE; allowed: --set KEY=VALUE, e.g. "
                            "--set protocol.max_processing_time=5s");
    return std::nullopt;
  }
  std::string value(lethe::text::trim(std::string_view(argument).substr(equals + 1)));
  bool toml_safe = false;
  if (std::optional<std::string> limit = override_limit(key, value, toml_safe)) {
    set_error(set_text, key + ": " + *limit);
    return std::nullopt;
  }
  // Quotes are optional: a quoted value is read as a TOML string.
  if (toml_safe) value = unquoted(std::move(value));
  return Override{std::move(key), std::move(value), set_text};
}

toml::table* Loader::enter_table(toml::table& table, const KeyPart& part, const std::string& set_text,
                                 const std::string& path) {
  toml::node* node = table.get(part.name);
  if (node == nullptr) {
    node = &table.insert_or_assign(part.name, toml::table{}).first->second;
    set_origin_.emplace(path, set_text);
  }
  if (!node->is_table()) {
    set_error(set_text,
              path + ": found " + describe(*node) + " in the file, not a table; allowed: a key inside a table");
    return nullptr;
  }
  return node->as_table();
}

toml::table* Loader::enter_entry(toml::table& table, const KeyPart& part, const std::string& set_text,
                                 std::string& path) {
  toml::node* node = table.get(part.name);
  if (node == nullptr) node = &table.insert_or_assign(part.name, toml::array{}).first->second;
  toml::array* array = node->as_array();
  if (array == nullptr || !(array->empty() || array->is_array_of_tables())) {
    set_error(set_text, path + ": found " + describe(*node) + " in the file; allowed: an array of tables");
    return nullptr;
  }
  std::size_t index = *part.index;
  path += fmt::format("[{}]", index);
  if (index > array->size()) {
    set_error(set_text, path + fmt::format(": found index {}; allowed: 0 to {} (an existing entry, or {} to add one)",
                                           index, array->size(), array->size()));
    return nullptr;
  }
  if (index == array->size()) {
    array->push_back(toml::table{});
    set_origin_.emplace(path, set_text);
  }
  return array->get(index)->as_table();
}

void Loader::write_override(toml::table& table, const std::string& path, const KeyPart& last, const Override& set) {
  std::string full = join_path(path, last.name);
  if (last.index) {
    set_error(set.set_text, full + fmt::format("[{}]", *last.index) +
                                ": found a whole table; allowed: one key of it, e.g. " + full +
                                fmt::format("[{}].at=1m", *last.index));
    return;
  }
  if (const toml::node* existing = table.get(last.name);
      existing && (existing->is_table() || existing->is_array_of_tables())) {
    set_error(set.set_text, full + ": found " + describe(*existing) +
                                " in the file; allowed: --set sets one value, e.g. " + full + ".KEY=VALUE");
    return;
  }
  // protocol.KEY=off leaves a strategy key out (the file's key for another kind, when --set switches the kind).
  if (path == "protocol" && last.name != "kind" && set.value == "off") {
    table.erase(last.name);
    protocol_left_out_.insert(last.name);  // a preset does not fill it in again
    return;
  }
  table.insert_or_assign(last.name, set.value);
  set_origin_[full] = set.set_text;
}

// A --set value arrives as a string; a key that wants another type reads it as TOML.
const toml::node* Loader::coerce(const std::string& path, const toml::node* node, Want want) {
  if (node == nullptr || !node->is_string() || !is_set(path)) return node;
  const std::string& raw = node->as_string()->get();
  if (want == Want::StringArray && (raw.empty() || raw.front() != '[')) {
    toml::array items;
    std::size_t start = 0;
    while (start <= raw.size()) {
      std::size_t comma = raw.find(',', start);
      std::string item = std::string(lethe::text::trim(
          std::string_view(raw).substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
      items.push_back(item);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    toml::table holder;
    holder.insert_or_assign("v", std::move(items));
    coerced_.push_back(std::move(holder));
    return coerced_.back().get("v");
  }
  if (check_scenario_input("v = " + raw)) return node;  // not for toml++ (scenario/input_check.hpp): a string
  try {
    toml::table parsed = toml::parse("v = " + raw);
    if (parsed.size() == 1 && parsed.get("v") != nullptr) {
      coerced_.push_back(std::move(parsed));
      return coerced_.back().get("v");
    }
  } catch (const toml::parse_error&) {
    // Not a TOML value: the reader reports the string as found.
  }
  return node;
}

}  // namespace scenario::detail
