// Credentials never reach a message: every target form lethe accepts (libpq URI and key=value conninfo, Redis
// URL) is printed with its password masked, and the errors of a store that cannot be reached or set up carry
// neither the password nor the unmasked target. No server is needed (closed ports, malformed targets).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "live/credentials.hpp"
#include "live/store.hpp"

namespace credentials_test {

constexpr const char* kSecret = "S3cr3tPW";

TEST(LiveCredentials, PostgresUriPasswordIsMasked) {
  EXPECT_EQ(live::mask_target("postgresql://postgres:S3cr3tPW@127.0.0.1:1/postgres"),
            "postgresql://postgres:***@127.0.0.1:1/postgres");
  EXPECT_EQ(live::mask_target("postgres://u:p@ss:w@rd@h/db"), "postgres://u:***@h/db");
  EXPECT_EQ(live::mask_target("postgresql://u@h/db?sslmode=disable&password=S3cr3tPW&sslpassword=x"),
            "postgresql://u@h/db?sslmode=disable&password=***&sslpassword=***");
}

TEST(LiveCredentials, ConninfoPasswordIsMaskedQuotedOrNot) {
  EXPECT_EQ(live::mask_target("host=127.0.0.1 port=1 user=postgres password=S3cr3tPW dbname=postgres"),
            "host=127.0.0.1 port=1 user=postgres password=*** dbname=postgres");
  EXPECT_EQ(live::mask_target("host=h password = 'S3 cr\\'3t PW' dbname=d"), "host=h password = *** dbname=d");
  EXPECT_EQ(live::mask_target("sslpassword=S3cr3tPW host=h"), "sslpassword=*** host=h");
  EXPECT_EQ(live::mask_target("host=h password S3cr3tPW"), "host=h password ***");  // a missing '='
  EXPECT_EQ(live::mask_target("dbname=postgresql://u:S3cr3tPW@h/db port=1"), "dbname=postgresql://u:***@h/db port=1");
}

TEST(LiveCredentials, RedisUrlPasswordIsMaskedWithOrWithoutUser) {
  EXPECT_EQ(live::mask_target("redis://:S3cr3tPW@127.0.0.1:6379"), "redis://:***@127.0.0.1:6379");
  EXPECT_EQ(live::mask_target("redis://default:S3cr3tPW@127.0.0.1:6379/2"), "redis://default:***@127.0.0.1:6379/2");
  EXPECT_EQ(live::mask_target("redis://S3cr3tPW@127.0.0.1"), "redis://***@127.0.0.1");
  EXPECT_EQ(live::mask_target(":S3cr3tPW@127.0.0.1"), "***@127.0.0.1");
}

TEST(LiveCredentials, TargetsWithoutCredentialsAreUnchanged) {
  for (const char* target : {"host=127.0.0.1 port=5432 user=postgres dbname=postgres", "redis://127.0.0.1:6379",
                             "postgresql://postgres@127.0.0.1/postgres", "unix:///tmp/redis.sock", "postgres"}) {
    EXPECT_EQ(live::mask_target(target), target);
  }
}

TEST(LiveCredentials, MessagesLoseTheTargetAndEveryFormOfItsSecret) {
  const std::string target = "postgresql://u:S3cr%33tPW@[::1";
  const std::string message = "end of string reached in URI: \"" + target + "\" (password S3cr3tPW)";
  const std::string masked = live::mask_message(message, target);
  EXPECT_EQ(masked, "end of string reached in URI: \"postgresql://u:***@[::1\" (password ***)");
  EXPECT_EQ(live::mask_message("quoted 'a b' and a b", "password='a b'"), "quoted *** and ***");
}

// The property: whatever the password, no form of the target and no message quoting the target or the password
// contains it. Passwords are drawn from the characters each form can carry unescaped.
RC_GTEST_PROP(LiveCredentials, NoPasswordSurvivesMaskingInAnyTargetForm, ()) {
  const std::string alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!$%()*+,-.;<>_~";
  const auto body = *rc::gen::container<std::string>(rc::gen::elementOf(alphabet));
  const std::string password = "Z" + body + "Q";
  const std::string spaced = password + " with spaces";
  const std::vector<std::pair<std::string, std::string>> targets = {  // {target, the password it carries}
      {"postgresql://postgres:" + password + "@127.0.0.1:5432/postgres", password},
      {"postgresql://postgres@127.0.0.1/postgres?password=" + password, password},
      {"host=127.0.0.1 user=postgres password=" + password + " dbname=postgres", password},
      {"host=127.0.0.1 password='" + spaced + "' dbname=postgres", spaced},
      {"redis://:" + password + "@127.0.0.1:6379", password},
      {"redis://" + password + "@127.0.0.1:6379/1", password},
  };
  for (const auto& [target, secret] : targets) {
    RC_ASSERT(live::mask_target(target).find(secret) == std::string::npos);
    const std::string message = "cannot connect to \"" + target + "\": auth for " + secret + " failed";
    RC_ASSERT(live::mask_message(message, target).find(secret) == std::string::npos);
  }
}

std::string open_error(const std::string& store, const std::string& target) {
  live::StoreOptions options;
  options.target = target;
  options.variant = live::default_variant(store);
  try {
    live::open_store(store, options);
  } catch (const std::exception& e) {
    return e.what();
  }
  ADD_FAILURE() << "opening " << store << " at a closed port succeeded";
  return {};
}

// Port 1 on loopback: nothing listens, the connection is refused at once.
TEST(LiveCredentials, AnUnreachablePostgresNamesItsTargetWithoutThePassword) {
  for (const std::string target : {"postgresql://postgres:S3cr3tPW@127.0.0.1:1/postgres",
                                   "host=127.0.0.1 port=1 user=postgres password=S3cr3tPW dbname=postgres",
                                   "postgresql://postgres:S3cr3tPW@[::1"}) {
    const std::string error = open_error("postgres", target);
    SCOPED_TRACE(error);
    EXPECT_EQ(error.find(kSecret), std::string::npos);
    EXPECT_NE(error.find("***"), std::string::npos);
    EXPECT_NE(error.find("cannot connect"), std::string::npos);
  }
}

TEST(LiveCredentials, ABadOrUnreachableRedisTargetIsNamedWithoutThePassword) {
  for (const std::string target : {"redis://:S3cr3tPW@127.0.0.1:x", "redis://:S3cr3tPW@127.0.0.1:6379/db",
                                   "rediss://:S3cr3tPW@127.0.0.1"}) {
    const std::string error = open_error("redis", target);
    SCOPED_TRACE(error);
    EXPECT_EQ(error.find(kSecret), std::string::npos);
    EXPECT_NE(error.find("bad target \"redis"), std::string::npos);
  }
}

TEST(LiveCredentials, AnUnreachableUnixSocketRedisTargetIsNamedWithoutThePassword) {
  for (const std::string target : {"unix:///nonexistent/redis.sock?password=S3cr3tPW",
                                   "unix://:S3cr3tPW@/nonexistent/redis.sock", "unix://S3cr3tPW@/nonexistent/redis.sock",
                                   "unix://alice:S3cr3tPW@/nonexistent/redis.sock?db=1",
                                   "unix:/nonexistent/redis.sock?user=alice&password=S3cr3tPW"}) {
    const std::string error = open_error("redis", target);
    SCOPED_TRACE(error);
    EXPECT_EQ(error.find(kSecret), std::string::npos);
    EXPECT_NE(error.find("cannot connect to /nonexistent/redis.sock"), std::string::npos);
  }
}

// A one-shot Redis stand-in on a unix socket: accepts one connection, keeps the first command it reads (RESP, as
// hiredis writes it) and closes.
class FirstCommand {
 public:
  explicit FirstCommand(std::string path) : path_(std::move(path)) {
    ::unlink(path_.c_str());
    listener_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path_.c_str());
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(listener_, 1) != 0) {
      throw std::runtime_error("cannot listen on " + path_);
    }
    thread_ = std::thread([this] {
      const int connection = ::accept(listener_, nullptr, nullptr);
      char buffer[4096];
      const ssize_t got = connection < 0 ? -1 : ::read(connection, buffer, sizeof buffer);
      if (got > 0) command_.assign(buffer, static_cast<std::size_t>(got));
      if (connection >= 0) ::close(connection);
    });
  }
  ~FirstCommand() {
    if (thread_.joinable()) thread_.join();
    ::close(listener_);
    ::unlink(path_.c_str());
  }
  std::string command() {
    thread_.join();
    return command_;
  }

 private:
  std::string path_;
  int listener_ = -1;
  std::thread thread_;
  std::string command_;
};

std::string resp(const std::vector<std::string>& words) {
  std::string out = "*" + std::to_string(words.size()) + "\r\n";
  for (const std::string& word : words) out += "$" + std::to_string(word.size()) + "\r\n" + word + "\r\n";
  return out;
}

TEST(LiveCredentials, ARedisAclUserInTheUrlIsSentWithThePassword) {
  const std::string path = "/tmp/lethe-credentials-test-" + std::to_string(::getpid()) + ".sock";
  {
    FirstCommand server(path);
    open_error("redis", "unix://alice:S3cr3tPW@" + path);
    EXPECT_EQ(server.command(), resp({"AUTH", "alice", "S3cr3tPW"}));
  }
  {
    FirstCommand server(path);
    open_error("redis", "unix://" + path + "?password=S3cr3tPW");
    EXPECT_EQ(server.command(), resp({"AUTH", "S3cr3tPW"}));
  }
}

// The command-line parser quotes the words it did not expect: an unquoted conninfo's password among them, in
// any order.
TEST(LiveCredentials, WordsOfAnyTargetAreMaskedInTextThatQuotesTheCommandLine) {
  EXPECT_EQ(live::mask_words("The following argument was not expected: password=S3cr3tPW\nRun with --help"),
            "The following argument was not expected: password=***\nRun with --help");
  EXPECT_EQ(live::mask_words("The following arguments were not expected: S3cr3tPW = password"),
            "The following arguments were not expected: *** = password");
  EXPECT_EQ(live::mask_words("The following arguments were not expected: x sslpassword=S3 cr3tPW"),
            "The following arguments were not expected: *** sslpassword=*** ***");
  EXPECT_EQ(live::mask_words("Could not convert: --workers = password=S3cr3tPW"),
            "Could not convert: --workers = password=***");
  EXPECT_EQ(live::mask_words("not expected: PASSWORD S3cr3tPW"), "not expected: PASSWORD ***");
  EXPECT_EQ(live::mask_words("Could not convert: --workers = postgresql://u:S3cr3tPW@h/db"),
            "Could not convert: --workers = postgresql://u:***@h/db");
  EXPECT_EQ(live::mask_words("not expected: redis://:S3cr3tPW@127.0.0.1:6379 x"),
            "not expected: redis://:***@127.0.0.1:6379 x");
  EXPECT_EQ(live::mask_words("--target: At Most 1 required but received 2"),
            "--target: At Most 1 required but received 2");
}

}  // namespace credentials_test
