// A server that stops answering ends a live run within seconds: workers reconnect with a growing delay (no busy
// loop), the run is abandoned once failures alone span the server timeout, the outcome keeps what happened until
// then, and the cleanup names what it could not remove. The watch and the delays are checked without a server;
// a Redis server of the test's own, killed mid-run, checks the whole path.
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fcntl.h>
#include <fmt/format.h>
#include <string>
#include <thread>
#include <vector>

#include "live/server_watch.hpp"
#include "live_support.hpp"

extern char** environ;

namespace server_loss_test {

using sim::kMillisecond;
using sim::kSecond;

TEST(LiveServerWatch, TheServerIsGoneOnlyWhenFailuresAloneSpanTheLimit) {
  live::ServerWatch watch;
  watch.failed(1 * kSecond, "refused");
  EXPECT_FALSE(watch.gone(3 * kSecond));  // one failure, then silence: an idle run, not a dead server
  watch.failed(3900 * kMillisecond, "refused");
  EXPECT_FALSE(watch.gone(3 * kSecond));
  watch.failed(4 * kSecond, "refused at last");
  ASSERT_TRUE(watch.gone(3 * kSecond));
  EXPECT_NE(watch.gone(3 * kSecond)->find("3 failed operations and connection attempts in a row; the latest: "
                                          "refused at last"),
            std::string::npos)
      << *watch.gone(3 * kSecond);
  watch.answered();  // one answer: the streak starts over
  EXPECT_FALSE(watch.gone(3 * kSecond));
  watch.failed(10 * kSecond, "refused");
  watch.failed(12 * kSecond, "refused");
  EXPECT_FALSE(watch.gone(3 * kSecond));
}

// Against a dead server a worker tries at most a dozen times in the first 3 s, and never waits more than half a
// second (a server that comes back is found quickly).
TEST(LiveServerWatch, ReconnectDelaysDoubleFromFiveMillisecondsToAHalfSecondCap) {
  EXPECT_EQ(live::reconnect_delay(0), 0);
  EXPECT_EQ(live::reconnect_delay(1), 5 * kMillisecond);
  EXPECT_EQ(live::reconnect_delay(2), 10 * kMillisecond);
  EXPECT_EQ(live::reconnect_delay(8), 500 * kMillisecond);
  EXPECT_EQ(live::reconnect_delay(1'000'000), 500 * kMillisecond);
  int attempts = 0;
  for (sim::Duration waited = 0; waited < 3 * kSecond; waited += live::reconnect_delay(++attempts)) {
  }
  EXPECT_LE(attempts, 12);
}

// A free loopback port (bound, read, released: the server started next takes it).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    if (fd >= 0) ::close(fd);
    return 0;
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

// A throwaway redis-server of the test's own (no persistence, output discarded); pid 0 when it did not start.
pid_t start_redis(int port) {
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&files, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  const std::string port_text = std::to_string(port);
  std::vector<std::string> args = {"redis-server", "--port", port_text, "--bind", "127.0.0.1", "--save", "",
                                   "--appendonly", "no"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, "redis-server", &files, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  if (spawned != 0) return 0;
  for (int i = 0; i < 100; ++i) {  // up to 5 s for it to answer
    redisContext* probe = redisConnect("127.0.0.1", port);
    const bool up = probe != nullptr && probe->err == 0;
    if (probe != nullptr) redisFree(probe);
    if (up) return pid;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return 0;
}

TEST(LiveRedisServerLoss, AServerKilledMidRunEndsTheRunWithinSecondsWithItsSummaryAndWhatWasLeft) {
  LIVE_REQUIRE_SERVER("redis");  // the live label's condition: a Redis installation to take redis-server from
  const int port = free_port();
  const pid_t server = port == 0 ? 0 : start_redis(port);
  if (server == 0) GTEST_SKIP() << "could not start a redis-server of the test's own";
  live::LiveSettings s = live_test::quiet_settings("redis", "lua");
  s.store_options.target = fmt::format("redis://127.0.0.1:{}", port);
  s.store_options.timeout = 200 * kMillisecond;
  s.messages = 1'000'000;  // far more than a second's worth: the run is still busy when the server dies
  s.max_duration = 30 * kSecond;
  s.server_timeout = 2 * kSecond;
  const auto kill_at = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  std::thread killer([&] {
    std::this_thread::sleep_until(kill_at);
    ::kill(server, SIGKILL);
    ::waitpid(server, nullptr, 0);
  });
  live::LiveOutcome o;
  std::string error;
  try {
    o = live::run_live(s);
  } catch (const std::exception& e) {
    error = e.what();
  }
  const double after_kill = std::chrono::duration<double>(std::chrono::steady_clock::now() - kill_at).count();
  killer.join();
  ASSERT_EQ(error, "") << "the run threw instead of reporting what happened";
  std::cout << "[ live     ] ended " << after_kill << " s after the kill: " << o.abandoned << "; left: "
            << o.left_behind << "; connect failures " << live_test::coverage(o, "store.connect_failures") << "\n";
  EXPECT_LT(after_kill, 2.0 + 6.0);  // the server timeout, then a few seconds (a loaded machine) to stop and judge
  EXPECT_NE(o.abandoned.find("the server answered nothing for"), std::string::npos) << o.abandoned;
  EXPECT_FALSE(o.passed());
  EXPECT_GT(o.operations, 100u);  // what happened until the kill is kept
  EXPECT_GT(o.result.effects, 0u);
  EXPECT_NE(o.left_behind.find("keys lethe:live:"), std::string::npos) << o.left_behind;
  EXPECT_NE(o.left_behind.find("cannot connect"), std::string::npos) << o.left_behind;
  // Reconnects back off: about a dozen attempts per worker in those seconds, not one per millisecond.
  EXPECT_LE(live_test::coverage(o, "store.connect_failures"), static_cast<std::uint64_t>(25 * s.workers));
}

}  // namespace server_loss_test
