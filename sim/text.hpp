// sim/text.hpp — the text helpers every parser of lethe shares, one rule each.
//
// They live in sim/ (the lowest folder, plain values) so that the distribution parser, the scenario loader and
// the command line's sweep grid all cut text the same way.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lethe::text {

// `text` without its leading and trailing ASCII whitespace (space, \t, \n, \r, \f, \v). The view points into
// `text`: the caller keeps that storage alive.
std::string_view trim(std::string_view text);

// `text` cut at the commas outside brackets ((), [], {}) and quotes ("..." or '...'), each part trimmed; one part
// for a text without such a comma (an empty text gives one empty part). nullopt when a bracket closes what it did
// not open (a `)` for a `[`), one stays open, or a quote is not closed.
std::optional<std::vector<std::string>> split_top_level(std::string_view text);

}  // namespace lethe::text
