// `lethe --version` prints the version that project(lethe VERSION ...) in the top CMakeLists.txt declares.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "tests/runner/support.hpp"

namespace version_test {

using namespace test_support;  // run_lethe, read_file (tests/runner/support.hpp)

// The VERSION of the project() call, read from the CMakeLists.txt itself (not from the header it generates).
std::string cmake_project_version() {
  const std::string cmake = read_file(std::filesystem::path(LETHE_SOURCE_DIR) / "CMakeLists.txt");
  std::smatch match;
  if (!std::regex_search(cmake, match, std::regex(R"(project\(lethe\s+VERSION\s+([0-9.]+))"))) return "";
  return match[1];
}

TEST(Version, LetheVersionPrintsTheCMakeProjectVersionAndExitsZero) {
  const std::string version = cmake_project_version();
  ASSERT_FALSE(version.empty()) << "no project(lethe VERSION ...) in CMakeLists.txt";
  const Outcome o = run_lethe("--version");
  EXPECT_EQ(o.exit_code, 0) << o.out;
  EXPECT_EQ(o.out, "lethe " + version + "\n");
}

}  // namespace version_test
