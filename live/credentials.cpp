#include "live/credentials.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

namespace live {

namespace {

constexpr std::string_view kMask = "***";

// A secret's place in the target: [begin, end).
struct Span {
  std::size_t begin = 0;
  std::size_t end = 0;
};

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool names_password(std::string_view keyword) { return lower(keyword).find("password") != std::string::npos; }

// The position just after "scheme://" when `text` starts with a URI; npos otherwise.
std::size_t authority_start(std::string_view text) {
  const std::size_t separator = text.find("://");
  if (separator == std::string_view::npos || separator == 0) return std::string_view::npos;
  const bool scheme = std::all_of(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(separator), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '+' || c == '-' || c == '.';
  });
  return scheme ? separator + 3 : std::string_view::npos;
}

// The secrets of a URI that starts at `offset` of the target: the user info's password and the query's
// password parameters. The user info ends at the LAST '@' (a password may hold one); the query is searched from
// the authority on, so a '?' or '@' inside a password masks more, never less.
void uri_spans(std::string_view uri, std::size_t offset, std::vector<Span>& spans) {
  const std::size_t start = authority_start(uri);
  if (start == std::string_view::npos) return;
  const std::string scheme = lower(uri.substr(0, start - 3));
  const std::size_t at = uri.rfind('@');
  if (at != std::string_view::npos && at >= start) {
    const std::size_t colon = uri.substr(start, at - start).find(':');
    if (colon != std::string_view::npos) {
      spans.push_back({offset + start + colon + 1, offset + at});
    } else if (scheme == "redis" || scheme == "rediss" || scheme == "unix") {
      spans.push_back({offset + start, offset + at});  // redis://SECRET@host: the password alone
    }
  }
  const std::size_t query = uri.find('?', start);
  if (query == std::string_view::npos) return;
  for (std::size_t begin = query + 1; begin <= uri.size();) {
    std::size_t end = uri.find('&', begin);
    if (end == std::string_view::npos) end = uri.size();
    const std::string_view parameter = uri.substr(begin, end - begin);
    const std::size_t equals = parameter.find('=');
    if (equals != std::string_view::npos && names_password(parameter.substr(0, equals))) {
      spans.push_back({offset + begin + equals + 1, offset + end});
    }
    begin = end + 1;
  }
}

// The end of a conninfo value that begins at `i`: a quoted one up to its closing quote, a bare one up to the next
// space; a backslash escapes the next character in both (libpq's grammar).
std::size_t value_end(std::string_view text, std::size_t i) {
  const bool quoted = i < text.size() && text[i] == '\'';
  if (quoted) ++i;
  while (i < text.size() && (quoted ? text[i] != '\'' : !is_space(text[i]))) {
    if (text[i] == '\\' && i + 1 < text.size()) ++i;
    ++i;
  }
  if (quoted && i < text.size()) ++i;
  return i;
}

std::size_t skip_spaces(std::string_view text, std::size_t i) {
  while (i < text.size() && is_space(text[i])) ++i;
  return i;
}

// The secrets of a libpq key=value conninfo. A password keyword without '=' (a typo) still masks the word after
// it: libpq's error message may quote it.
void conninfo_spans(std::string_view text, std::vector<Span>& spans) {
  std::size_t i = skip_spaces(text, 0);
  while (i < text.size()) {
    const std::size_t keyword_begin = i;
    while (i < text.size() && !is_space(text[i]) && text[i] != '=') ++i;
    const std::string_view keyword = text.substr(keyword_begin, i - keyword_begin);
    i = skip_spaces(text, i);
    const bool has_value = i < text.size() && text[i] == '=';
    if (!has_value && !names_password(keyword)) continue;
    if (has_value) i = skip_spaces(text, i + 1);
    const std::size_t begin = i;
    i = value_end(text, i);
    if (names_password(keyword)) {
      spans.push_back({begin, i});
    } else {
      uri_spans(text.substr(begin, i - begin), begin, spans);  // dbname=postgresql://...
    }
    i = skip_spaces(text, i);
  }
}

std::vector<Span> secret_spans(std::string_view target) {
  std::vector<Span> spans;
  if (authority_start(target) != std::string_view::npos) {
    uri_spans(target, 0, spans);
  } else if (target.find('=') != std::string_view::npos) {
    conninfo_spans(target, spans);
  } else if (const std::size_t at = target.rfind('@'); at != std::string_view::npos && at > 0) {
    spans.push_back({0, at});
  }
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
  std::vector<Span> merged;
  for (const Span& s : spans) {
    if (!merged.empty() && s.begin <= merged.back().end) {
      merged.back().end = std::max(merged.back().end, s.end);
    } else {
      merged.push_back(s);
    }
  }
  return merged;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decoded(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex_digit(text[i + 1]) >= 0 && hex_digit(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex_digit(text[i + 1]) * 16 + hex_digit(text[i + 2])));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

// A conninfo value as libpq reads it: without its quotes and backslashes.
std::string unquoted(std::string_view text) {
  if (text.size() >= 2 && text.front() == '\'' && text.back() == '\'') text = text.substr(1, text.size() - 2);
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size()) ++i;
    out.push_back(text[i]);
  }
  return out;
}

// Every form in which a secret of `target` may show up in a message, longest first.
std::vector<std::string> secrets(std::string_view target) {
  std::vector<std::string> out;
  for (const Span& s : secret_spans(target)) {
    const std::string_view raw = target.substr(s.begin, s.end - s.begin);
    for (std::string form : {std::string(raw), unquoted(raw), percent_decoded(raw)}) {
      if (!form.empty() && std::find(out.begin(), out.end(), form) == out.end()) out.push_back(std::move(form));
    }
  }
  std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  return out;
}

void replace_all(std::string& text, std::string_view what, std::string_view with) {
  if (what.empty()) return;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + with.size())) {
    text.replace(at, what.size(), with);
  }
}

}  // namespace

std::string mask_target(std::string_view target) {
  std::string out;
  std::size_t copied = 0;
  for (const Span& s : secret_spans(target)) {
    out.append(target.substr(copied, s.begin - copied));
    out.append(kMask);
    copied = s.end;
  }
  out.append(target.substr(copied));
  return out;
}

std::string mask_message(std::string_view message, std::string_view target) {
  std::string out(message);
  replace_all(out, target, mask_target(target));
  for (const std::string& secret : secrets(target)) replace_all(out, secret, kMask);
  return out;
}

std::string mask_words(std::string_view text) {
  std::string out;
  for (std::size_t line_begin = 0; line_begin < text.size();) {
    std::size_t line_end = text.find('\n', line_begin);
    if (line_end == std::string_view::npos) line_end = text.size();
    const std::string_view line = text.substr(line_begin, line_end - line_begin);
    // A line that names a password: its words may be in any order (the parser lists unexpected arguments last
    // first: "S3cr3t = password"), so every word after the message's own "...: " is masked but the keywords,
    // their '=' and option names.
    const bool names_a_password = lower(line).find("password") != std::string::npos;
    std::size_t i = 0;
    if (names_a_password) {
      const std::size_t colon = line.find(": ");
      i = colon == std::string_view::npos ? 0 : colon + 2;
      out.append(line.substr(0, i));
    }
    while (i < line.size()) {
      if (is_space(line[i])) {
        out.push_back(line[i++]);
        continue;
      }
      std::size_t end = i;
      while (end < line.size() && !is_space(line[end])) ++end;
      const std::string_view word = line.substr(i, end - i);
      i = end;
      if (!names_a_password) {
        const bool target_like = word.find("://") != std::string_view::npos || word.find('@') != std::string_view::npos;
        out.append(target_like ? mask_target(word) : std::string(word));
      } else if (names_password(word)) {
        const std::size_t equals = word.find('=', lower(word).find("password"));
        out.append(word.substr(0, equals == std::string_view::npos ? word.size() : equals + 1));
        if (equals != std::string_view::npos && equals + 1 < word.size()) out.append(kMask);
      } else if (word == "=" || word.rfind("--", 0) == 0) {
        out.append(word);
      } else {
        out.append(kMask);
      }
    }
    out.append(text.substr(line_end, line_end < text.size() ? 1 : 0));
    line_begin = line_end + 1;
  }
  return out;
}

}  // namespace live
