// The scenario loader's compound value languages: commit, ttl_eviction, poll, poll_read, local_cache, backoff, schedule and
// an [expect] comparison, each parsed from its text (scenario/loader_impl.hpp).
#include "scenario/loader_impl.hpp"

#include "sim/text.hpp"

namespace scenario::detail {

std::optional<lethe::Commit> Loader::parse_commit(const std::string& value, std::string& problem) const {
  if (value == "after-each") return lethe::Commit{};
  std::optional<text::Call> call = text::parse_call(value);
  if (!call || call->name != "interval") return std::nullopt;
  std::optional<std::vector<std::string>> arguments = text::bind_arguments(*call, {"every"}, problem);
  if (!arguments) return std::nullopt;
  std::optional<Duration> every = duration_in((*arguments)[0], 1, problem);
  if (!every) return std::nullopt;
  return lethe::Commit{lethe::CommitMode::Interval, *every};
}

std::optional<lethe::TtlEviction> Loader::parse_ttl_eviction(const std::string& value, std::string& problem) const {
  if (value == "exact") return lethe::TtlEviction{};
  std::optional<text::Call> call = text::parse_call(value);
  if (!call || call->name != "lazy") return std::nullopt;
  std::optional<std::vector<std::string>> arguments = text::bind_arguments(*call, {"max"}, problem);
  if (!arguments) return std::nullopt;
  std::optional<Duration> max = duration_in((*arguments)[0], 0, problem);
  if (!max) return std::nullopt;
  return lethe::TtlEviction{lethe::TtlEvictionKind::Lazy, *max};
}

std::optional<lethe::Poll> Loader::parse_poll(const std::string& value, std::string& problem) const {
  std::optional<text::Call> call = text::parse_call(value);
  if (!call || call->name != "backoff") {
    std::optional<sim::Distribution> interval = distribution_in(value, false, true, problem);
    if (!interval) return std::nullopt;
    lethe::Poll poll;
    poll.interval = *interval;
    return poll;
  }
  std::optional<std::vector<std::string>> arguments = text::bind_arguments(*call, {"base", "factor", "cap"}, problem);
  if (!arguments) return std::nullopt;
  lethe::Poll poll;
  poll.kind = lethe::PollKind::Backoff;
  std::optional<Duration> base = duration_in((*arguments)[0], 1, problem);
  if (!base) {
    problem = "base: " + problem;
    return std::nullopt;
  }
  std::optional<double> factor = text::parse_number((*arguments)[1]);
  if (!factor || *factor < 1.0 || *factor > 1000.0) {
    problem = fmt::format("factor \"{}\" must be a number from 1 to 1000", (*arguments)[1]);
    return std::nullopt;
  }
  std::optional<Duration> cap = duration_in((*arguments)[2], *base, problem);
  if (!cap) {
    problem = "cap: " + problem;
    return std::nullopt;
  }
  poll.backoff_base = *base;
  poll.backoff_factor = *factor;
  poll.backoff_cap = *cap;
  return poll;
}

std::optional<lethe::PollRead> Loader::parse_poll_read(const std::string& value, std::string& problem) const {
  if (value == "consistent") return lethe::PollRead{};
  std::optional<text::Call> call = text::parse_call(value);
  if (!call || call->name != "eventual") return std::nullopt;
  std::optional<std::vector<std::string>> arguments = text::bind_arguments(*call, {"lag"}, problem);
  if (!arguments) return std::nullopt;
  std::optional<sim::Distribution> lag = distribution_in((*arguments)[0], false, false, problem);
  if (!lag) {
    problem = "lag: " + problem;
    return std::nullopt;
  }
  return lethe::PollRead{lethe::PollReadKind::Eventual, *lag};
}

std::optional<lethe::LocalCache> Loader::parse_local_cache(const std::string& value, std::string& problem) const {
  if (value == "off") return lethe::LocalCache{};
  std::optional<text::Call> call = text::parse_call(value);
  if (!call || call->name != "lru") return std::nullopt;
  std::optional<std::vector<std::string>> arguments = text::bind_arguments(*call, {"size", "ttl"}, problem);
  if (!arguments) return std::nullopt;
  constexpr double kMaxEntries = 1'000'000;  // a consumer's memory, not a second store
  const std::optional<double> size = text::parse_number((*arguments)[0]);
  if (!size || *size < 1 || *size > kMaxEntries || *size != static_cast<double>(static_cast<std::uint64_t>(*size))) {
    problem = fmt::format("size \"{}\" must be a whole number from 1 to 1000000", (*arguments)[0]);
    return std::nullopt;
  }
  std::optional<Duration> ttl = duration_in((*arguments)[1], 1, problem);
  if (!ttl) {
    problem = "ttl: " + problem;
    return std::nullopt;
  }
  return lethe::LocalCache{static_cast<std::uint64_t>(*size), *ttl};
}

std::optional<lethe::Backoff> Loader::parse_backoff(const std::string& value, std::string& problem) const {
  if (value == "none") return lethe::Backoff{};
  std::optional<text::Call> call = text::parse_call(value);
  if (!call) return std::nullopt;
  lethe::Backoff backoff;
  if (call->name == "constant") {
    std::optional<std::vector<std::string>> arguments = text::bind_arguments(*call, {"delay"}, problem);
    if (!arguments) return std::nullopt;
    std::optional<Duration> delay = duration_in((*arguments)[0], 0, problem);
    if (!delay) return std::nullopt;
    backoff.kind = lethe::BackoffKind::Constant;
    backoff.delay = *delay;
    return backoff;
  }
  if (call->name == "exponential") {
    std::optional<std::vector<std::string>> arguments = text::bind_arguments(*call, {"base", "cap"}, problem);
    if (!arguments) return std::nullopt;
    std::optional<Duration> base = duration_in((*arguments)[0], 1, problem);
    if (!base) {
      problem = "base: " + problem;
      return std::nullopt;
    }
    std::optional<Duration> cap = duration_in((*arguments)[1], *base, problem);
    if (!cap) {
      problem = "cap: " + problem;
      return std::nullopt;
    }
    backoff.kind = lethe::BackoffKind::Exponential;
    backoff.base = *base;
    backoff.cap = *cap;
    return backoff;
  }
  return std::nullopt;
}

std::optional<lethe::Schedule> Loader::parse_schedule(const std::string& value, std::string& problem) const {
  if (value == "fifo") return lethe::Schedule{};
  if (value == "random") return lethe::Schedule{lethe::ScheduleKind::Random};
  std::optional<text::Call> call = text::parse_call(value);
  if (!call || call->name != "pct") return std::nullopt;
  std::optional<std::vector<std::string>> arguments = text::bind_arguments(*call, {"depth"}, problem);
  if (!arguments) return std::nullopt;
  std::optional<double> depth = text::parse_number((*arguments)[0]);
  // The range first: a cast of a number out of int's range is undefined.
  if (!depth || *depth < 1 || *depth > lethe::kMaxPctDepth || *depth != static_cast<double>(static_cast<int>(*depth))) {
    problem = fmt::format("depth \"{}\" must be a whole number from 1 to {}", (*arguments)[0], lethe::kMaxPctDepth);
    return std::nullopt;
  }
  return lethe::Schedule{lethe::ScheduleKind::Pct, static_cast<int>(*depth)};
}

std::optional<lethe::Expectation> Loader::parse_expectation(const std::string& key, const std::string& value,
                                                            std::string& problem) const {
  std::optional<FieldKind> kind = lethe::expectation_kind(key);
  std::string body(lethe::text::trim(value));
  lethe::Expectation expectation;
  expectation.key = key;
  static const std::vector<std::pair<std::string, lethe::ExpectationOp>> ops = {
      {"==", lethe::ExpectationOp::Equal},     {"!=", lethe::ExpectationOp::NotEqual},
      {"<=", lethe::ExpectationOp::LessEqual}, {">=", lethe::ExpectationOp::GreaterEqual},
      {"<", lethe::ExpectationOp::Less},       {">", lethe::ExpectationOp::Greater},
  };
  bool found_op = false;
  for (const auto& [word, op] : ops) {
    if (body.rfind(word, 0) == 0 && !(word.size() == 1 && body.size() > 1 && body[1] == '=')) {
      expectation.op = op;
      body = std::string(lethe::text::trim(std::string_view(body).substr(word.size())));
      found_op = true;
      break;
    }
  }
  if (!found_op || body.empty() || body.front() == '=') {
    problem = found_op ? "no NUMBER after the operator" : "it does not start with an operator";
    return std::nullopt;
  }
  if (body.back() == '%') {
    if (kind != FieldKind::Count) {
      problem = "% (of messages) is only for counts";
      return std::nullopt;
    }
    expectation.percent = true;
    body = std::string(lethe::text::trim(std::string_view(body).substr(0, body.size() - 1)));
  }
  std::optional<double> number = text::parse_number(body);
  if (!number && kind == FieldKind::Time) {
    std::string reason;
    if (std::optional<Duration> duration = sim::parse_duration(body, reason)) number = static_cast<double>(*duration);
  }
  if (!number) {
    problem = kind == FieldKind::Time ? fmt::format("\"{}\" is neither a number (of ns) nor a duration", body)
                                      : fmt::format("\"{}\" is not a number", body);
    return std::nullopt;
  }
  if (kind == FieldKind::Boolean &&
      (!(*number == 0.0 || *number == 1.0) ||
       !(expectation.op == lethe::ExpectationOp::Equal || expectation.op == lethe::ExpectationOp::NotEqual))) {
    problem = fmt::format("{} is compared with == or != against 1 (true) or 0 (false)", key);
    return std::nullopt;
  }
  expectation.number = *number;
  return expectation;
}

}  // namespace scenario::detail
