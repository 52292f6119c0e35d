// check/history_edn.hpp — an EDN reader for Jepsen histories (https://github.com/edn-format/edn).
//
// Reads every EDN form Jepsen writes: nil, booleans, integers (with an N suffix), floats, strings with escapes,
// characters, keywords, symbols, lists ( ), vectors [ ], maps { }, sets #{ }, tagged literals (#tag value: the
// tag is kept beside the value), ##Inf / ##NaN, discards (#_ form) and comments (; to the end of the line)
// anywhere, over any number of lines.
//
// Contract:
// - No recursion that the input controls: reading keeps its own stack, nesting deeper than kMaxDepth is bad
//   input; show() quotes at most `limit` bytes. Destroying a Value recurses at most kMaxDepth levels.
// - Bad input (an unclosed or mismatched bracket, a map with a key and no value, an unknown escape, an integer
//   beyond 64 bits without N, a float beyond a double's range) throws history::Error at FILE:LINE:COL.
// - Values keep the line and column where they start.
// - Does not: validate UTF-8 (check_utf8 does, once per file), or read ratios as numbers (they are symbols).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lethe::history::edn {

inline constexpr std::size_t kMaxDepth = 256;

struct Value {
  enum class Type : std::uint8_t { Nil, Bool, Int, BigInt, Float, String, Char, Keyword, Symbol, List, Vector, Set, Map };
  Type type = Type::Nil;
  bool boolean = false;
  std::int64_t integer = 0;
  std::string text;          // String, Char, Keyword (without ':'), Symbol, BigInt / Float as written
  std::string tag;           // the tag of a tagged literal ("jepsen.history.Op"), else empty
  std::vector<Value> items;  // List, Vector, Set; Map: key, value, key, value, ...
  std::size_t line = 0;
  std::size_t column = 0;

  // The value of keyword key `keyword` in a map, or nullptr.
  const Value* get(std::string_view keyword) const;
  bool sequential() const { return type == Type::List || type == Type::Vector; }
};

// The value as EDN text, cut to at most `limit` bytes (with "..." when cut); equal values print equal, sets and
// maps in the order written.
std::string show(const Value& value, std::size_t limit = 200);

// The canonical text of a value, for comparing values: show() without a limit, except that the elements of a
// set are sorted. REQUIRES: depth <= kMaxDepth (as every Value read is).
std::string canonical(const Value& value);

// Reads forms one at a time from `text` (the contents of `file`, named in errors).
class Reader {
 public:
  Reader(const std::string& file, std::string_view text, std::size_t first_line = 1);

  // Skips whitespace, commas, comments and discarded forms; true when nothing but those is left.
  bool at_end();
  char peek() const { return text_[pos_]; }
  void advance();
  std::size_t line() const { return line_; }
  std::size_t column() const { return pos_ - line_start_ + 1; }
  std::string_view rest() const { return text_.substr(pos_); }
  // Reads one form. REQUIRES: !at_end().
  Value read();
  [[noreturn]] void fail(const std::string& what) const;
  [[noreturn]] void fail_at(std::size_t line, std::size_t column, const std::string& what) const;

 private:
  struct Frame;
  void skip_blank();
  Value read_atom();
  Value read_string();
  Value read_char();
  Value read_number_or_symbol(std::string_view token, std::size_t line, std::size_t column);
  std::string_view read_token();
  void finish(Frame& frame);

  const std::string& file_;
  std::string_view text_;
  std::size_t pos_ = 0;
  std::size_t discarding_ = 0;  // #_ forms being read inside one another: each is a read() on the C++ stack
  std::size_t line_;
  std::size_t line_start_ = 0;
};

}  // namespace lethe::history::edn
