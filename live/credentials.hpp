// live/credentials.hpp — the one way a server target (a libpq conninfo or URI, a Redis URL) is printed:
// with every credential masked as "***".
//
// What counts as a credential:
//   URI user info     scheme://user:SECRET@host...: what follows the first ':' of the user info (the part before
//                     the last '@'); for redis://, rediss:// and unix:// a user info without ':' is the password
//                     too (redis://SECRET@host, unix://SECRET@/path), as the Redis store reads it.
//   key=value         the value of every keyword whose name contains "password" (password, sslpassword), quoted
//                     or not, in a libpq conninfo ("host=h password='a b'") and in a URI's query
//                     ("?password=SECRET&sslpassword=SECRET"); a conninfo value that is itself a URI (dbname=...)
//                     is masked as one.
//   anything else     with an '@' and no other structure (":SECRET@host"): everything before the last '@'.
//
// Guarantees: mask_target(t) contains none of t's secrets; mask_message(m, t) contains neither t itself nor any
// of its secrets (raw, unquoted, unescaped or percent-decoded), whatever the client library or server wrote.
// Every message, log line and JSON field that names a target goes through one of the two.
//
// Does not: read environment variables or password files (libpq reads PGPASSWORD and .pgpass itself and never
// prints them), or validate the target (the stores do).
#pragma once

#include <string>
#include <string_view>

namespace live {

// `target` with every credential replaced by "***".
std::string mask_target(std::string_view target);

// `message` (a client library's or server's text about `target`) with every occurrence of `target` replaced by
// mask_target(target), and every secret of `target` replaced by "***".
std::string mask_message(std::string_view message, std::string_view target);

// Text that may quote command-line words without knowing which is a target (the command-line parser's errors:
// "The following argument was not expected: password=SECRET" when a conninfo was not quoted). On a line that
// names a password, every word after the line's first ": " is "***" except the password keywords (with their
// '=', the value masked), a lone '=' and option names (--x): the parser may list the words in any order. On
// other lines a word holding "://" or '@' is masked as a target.
std::string mask_words(std::string_view text);

}  // namespace live
