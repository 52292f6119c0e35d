// docs/results.md's cause sections are generated from the cause table (core/result.hpp kCauses): the text between
// the two markers is what cause_sections() gives, and LETHE_UPDATE_DOCS=1 makes the test rewrite it instead of
// comparing. Every cause the oracle can give is thereby documented, with the same words `lethe` prints.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <string>

#include "core/result.hpp"

namespace cause_docs_test {

const std::filesystem::path kResults = std::filesystem::path(LETHE_SOURCE_DIR) / "docs" / "results.md";
constexpr std::string_view kBegin = "<!-- cause sections: generated from kCauses (core/result.hpp) -->\n";
constexpr std::string_view kEnd = "<!-- end of the generated cause sections -->\n";

// Wraps `text` at 110 columns, as the hand-written parts of the page are.
std::string wrapped(const std::string& text) {
  std::string out;
  std::string line;
  std::istringstream words(text);
  for (std::string word; words >> word;) {
    if (!line.empty() && line.size() + 1 + word.size() > 110) {
      out += line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  return out + line + "\n";
}

std::string cause_sections() {
  std::string out;
  for (const lethe::CauseRow& row : lethe::kCauses) {
    out += fmt::format("### {}\n\n", row.name);
    out += wrapped(fmt::format("What happened: {}", row.opens)) + "\n";
    out += wrapped(fmt::format("Which clause broke: {}", row.clause)) + "\n";
    out += wrapped(fmt::format("What to change: {}", row.change)) + "\n";
    out += wrapped(fmt::format("What closes it for one message: {}.", row.intervention_text));
    out += "\n";
  }
  return out;
}

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(CauseDocs, ResultsMdCauseSectionsAreWhatTheCauseTableGives) {
  const std::string page = read(kResults);
  const auto begin = page.find(kBegin);
  const auto end = page.find(kEnd);
  ASSERT_NE(begin, std::string::npos) << "docs/results.md lacks the marker " << kBegin;
  ASSERT_NE(end, std::string::npos) << "docs/results.md lacks the marker " << kEnd;
  ASSERT_LT(begin, end);
  const std::string committed = page.substr(begin + kBegin.size(), end - begin - kBegin.size());
  const std::string generated = cause_sections();
  if (const char* update = std::getenv("LETHE_UPDATE_DOCS"); update != nullptr && std::string(update) == "1") {
    std::ofstream(kResults, std::ios::binary)
        << page.substr(0, begin + kBegin.size()) << generated << page.substr(end);
    return;  // rewritten: the docs target goes on
  }
  EXPECT_EQ(committed, generated) << "docs/results.md's cause sections are stale: LETHE_UPDATE_DOCS=1 "
                                     "build/tests/check_tests --gtest_filter='CauseDocs.*' rewrites them";
}

TEST(CauseDocs, EveryCauseHasItsOwnSectionInResultsMd) {
  const std::string page = read(kResults);
  for (const lethe::CauseRow& row : lethe::kCauses) {
    EXPECT_NE(page.find(fmt::format("\n### {}\n", row.name)), std::string::npos) << row.name;
  }
}

}  // namespace cause_docs_test
