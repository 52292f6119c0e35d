// check/store_json.hpp — one store operation and one reply as JSON objects, exactly the `op` and `reply` objects
// of lethe's JSON-lines store history (docs/formats.md, "Store histories"; check/history_lethe.cpp holds the one
// definition). External nodes (docs/external.md) speak the store service in them.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>

#include "protocol/store_ops.hpp"

namespace lethe::history {

// How deep a JSON value read from a file may nest: far deeper than any lethe file, shallow enough that the
// recursive parts of nlohmann (dump(), comparisons) stay far from the stack's end.
inline constexpr int kMaxJsonDepth = 64;

struct JsonTooDeep : std::runtime_error {
  explicit JsonTooDeep(int depth)
      : std::runtime_error("values nested deeper than " + std::to_string(depth) + " levels") {}
};

// The one way lethe reads JSON from a file: `text` as one JSON value, refusing values nested deeper than
// `max_depth`. Throws Json's parse_error (also for invalid UTF-8), out_of_range (a number beyond a double, as
// 1e400) or JsonTooDeep; never recurses as deep as the input nests.
template <class Json = nlohmann::json>
Json parse_bounded_json(std::string_view text, int max_depth = kMaxJsonDepth) {
  const typename Json::parser_callback_t bound = [max_depth](int depth, typename Json::parse_event_t event, Json&) {
    if (depth >= max_depth &&
        (event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start)) {
      throw JsonTooDeep(max_depth);
    }
    return true;
  };
  return Json::parse(text, bound);
}

// Why parse_bounded_json refused a text, in words, quoting none of its bytes (the parser's own message ends with
// the bytes last read, invalid UTF-8 included): "invalid UTF-8 at byte N", "a number beyond a double (as 1e400)",
// "values nested deeper than 64 levels", or the parser's reason and byte (counted in `of`: a line, a file).
inline std::string json_error_reason(const std::exception& error, const std::string& of = "of the line") {
  if (const auto* parse = dynamic_cast<const nlohmann::json::parse_error*>(&error)) {
    std::string what = parse->what();
    if (what.find("UTF-8") != std::string::npos) return "invalid UTF-8 at byte " + std::to_string(parse->byte) + (of.empty() ? "" : " " + of);
    const std::size_t from = what.find(": ");
    const std::size_t to = what.find("; last read");
    what = what.substr(from == std::string::npos ? 0 : from + 2, to == std::string::npos ? std::string::npos : to - from - 2);
    return what + " at byte " + std::to_string(parse->byte) + (of.empty() ? "" : " " + of);
  }
  if (const auto* range = dynamic_cast<const nlohmann::json::out_of_range*>(&error); range != nullptr && range->id == 406) {
    return "a number beyond a double (as 1e400)";
  }
  return error.what();
}

nlohmann::json store_op_to_json(const Op& op);
nlohmann::json store_reply_to_json(const Reply& reply, bool transaction);
// Reads an `op` object; throws history::Error ("op: what was found; what was expected") when it is not one.
Op store_op_from_json(const nlohmann::json& object);

}  // namespace lethe::history
