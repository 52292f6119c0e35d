// The JUnit XML stays well-formed whatever a node wrote to its stderr: bytes outside UTF-8 become "\xNN", a
// character cut by the 4 KiB tail is never half-written, and markup characters are escaped.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <string>
#include <vector>

#include "core/utf8.hpp"
#include "reports/junit.hpp"

namespace junit_test {

// True when `text` is well-formed UTF-8 with no character XML 1.0 forbids in character data.
bool xml_text(const std::string& text) {
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t length = lethe::utf8_sequence_length(text, at);
    if (length == 0) return false;
    const auto first = static_cast<unsigned char>(text[at]);
    if (length == 1 && first < 0x20 && first != '\n' && first != '\t' && first != '\r') return false;
    if (text.compare(at, length, "\xEF\xBF\xBE") == 0 || text.compare(at, length, "\xEF\xBF\xBF") == 0) return false;
    at += length;
  }
  return true;
}

TEST(Junit, BytesOutsideUtf8AreWrittenAsHexAndMarkupIsEscaped) {
  EXPECT_EQ(reports::xml_escape("a\xff\xfe<b>&\"'"), "a\\xff\\xfe&lt;b&gt;&amp;&quot;&apos;");
  EXPECT_EQ(reports::xml_escape("\xc3"), "\\xc3");                 // a character cut short
  EXPECT_EQ(reports::xml_escape("\xa9z"), "\\xa9z");               // a tail that starts inside a character
  EXPECT_EQ(reports::xml_escape("\xc0\xaf"), "\\xc0\\xaf");        // an overlong '/'
  EXPECT_EQ(reports::xml_escape("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(reports::xml_escape("caf\xc3\xa9 \xe2\x82\xac"), "caf\xc3\xa9 \xe2\x82\xac");
  EXPECT_EQ(reports::xml_escape("\xef\xbf\xbf"), "?");
}

TEST(Junit, TheTailOfATextNeverStartsInsideACharacter) {
  const std::string text = "\xc3\xa9\xc3\xa9\xc3\xa9";
  EXPECT_EQ(std::string(lethe::utf8_suffix(text, 5)), "\xc3\xa9\xc3\xa9");
  EXPECT_EQ(std::string(lethe::utf8_prefix(text, 5)), "\xc3\xa9\xc3\xa9");
}

RC_GTEST_PROP(Junit, TheXmlOfAnyErrorTextIsWellFormedUtf8, (const std::vector<char>& bytes)) {
  reports::JunitCase c;
  c.scenario = std::string(bytes.begin(), bytes.end());
  c.file = "x.toml";
  c.error = std::string(bytes.begin(), bytes.end());
  c.replay = "lethe run x.toml --seed 1";
  const std::string xml = reports::junit_xml({c});
  RC_ASSERT(xml_text(xml));
  RC_ASSERT(xml_text(lethe::printable_utf8(c.error)));
}

}  // namespace junit_test
