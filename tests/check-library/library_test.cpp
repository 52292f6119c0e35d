// The checker as a library: this executable links lethe_check alone (no simulator, no Boost.Fiber, no world),
// reads histories with check/history.hpp and checks them with lethe::lin::check.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <variant>

#include "check/history.hpp"

namespace {

std::string read(const std::string& relative) {
  std::ifstream in(std::string(LETHE_SOURCE_DIR) + "/" + relative, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(CheckLibrary, LinkedAloneItReadsAndJudgesJepsenHistories) {
  const std::string etcd = "tests/data/porcupine/jepsen/etcd_002.log";
  const auto registers = std::get<lethe::history::RegisterHistory>(lethe::history::read_history(etcd, read(etcd)));
  EXPECT_EQ(lethe::lin::check<lethe::RegisterModel>(registers.ops).verdict, lethe::lin::Verdict::Linearizable);
  const std::string kv = "tests/data/porcupine/kv/c10-bad.txt";
  const auto map = std::get<lethe::history::KvHistory>(lethe::history::read_history(kv, read(kv)));
  EXPECT_EQ(lethe::lin::check<lethe::KvModel>(map.ops).verdict, lethe::lin::Verdict::NotLinearizable);
}

}  // namespace
