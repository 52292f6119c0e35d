// core/utf8.hpp — text from outside lethe (a node's stderr, a line it wrote) made safe to print and to embed in
// XML or JSON: well-formed UTF-8 passes unchanged, every byte that is not part of a well-formed sequence
// (a stray continuation byte, an overlong form, a surrogate, a code point past U+10FFFF, a sequence cut short)
// becomes the four characters "\xNN", and so does every byte of a character XML 1.0 forbids (a control
// character other than tab, newline and carriage return; U+FFFE; U+FFFF). Header-only, allocation of the
// result only.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace lethe {

// The length of the well-formed UTF-8 sequence at text[at], or 0 when the byte there does not start one.
inline std::size_t utf8_sequence_length(std::string_view text, std::size_t at) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  unsigned char low = 0x80;  // the first continuation byte's range (excludes overlong forms and surrogates)
  unsigned char high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (at + length > text.size()) return 0;
  if (byte(at + 1) < low || byte(at + 1) > high) return 0;
  for (std::size_t i = 2; i < length; ++i) {
    if (byte(at + i) < 0x80 || byte(at + i) > 0xBF) return 0;
  }
  return length;
}

// True when the well-formed sequence `character` is one XML 1.0 does not allow in character data.
inline bool xml_forbidden_character(std::string_view character) {
  if (character.size() == 1) {
    const auto c = static_cast<unsigned char>(character.front());
    return c < 0x20 && c != '\t' && c != '\n' && c != '\r';
  }
  return character == "\xEF\xBF\xBE" || character == "\xEF\xBF\xBF";  // U+FFFE, U+FFFF
}

// `text` with every byte outside a well-formed UTF-8 sequence, and every byte of a character XML 1.0 forbids,
// written as "\xNN". GUARANTEES: the result is well-formed UTF-8 that XML 1.0 accepts as character data.
inline std::string printable_utf8(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t length = utf8_sequence_length(text, at);
    if (length > 0 && !xml_forbidden_character(text.substr(at, length))) {
      out.append(text.substr(at, length));
      at += length;
      continue;
    }
    for (const std::size_t end = at + (length == 0 ? 1 : length); at < end; ++at) {
      const auto value = static_cast<unsigned char>(text[at]);
      out += "\\x";
      out += kHex[value >> 4];
      out += kHex[value & 0xF];
    }
  }
  return out;
}

// The longest prefix of `text` of at most `bytes` bytes that does not end inside a UTF-8 sequence.
inline std::string_view utf8_prefix(std::string_view text, std::size_t bytes) {
  if (text.size() <= bytes) return text;
  std::size_t end = bytes;
  while (end > 0 && end + 3 > bytes && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end);
}

// The suffix of `text` of at most `bytes` bytes that does not begin inside a UTF-8 sequence.
inline std::string_view utf8_suffix(std::string_view text, std::size_t bytes) {
  if (text.size() <= bytes) return text;
  std::size_t begin = text.size() - bytes;
  for (int step = 0; step < 3 && begin < text.size() && (static_cast<unsigned char>(text[begin]) & 0xC0) == 0x80;
       ++step) {
    ++begin;
  }
  return text.substr(begin);
}

}  // namespace lethe
