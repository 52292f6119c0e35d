// sim/assert.hpp — LETHE_ASSERT(condition, "contract"): the REQUIRES of a header, checked in every build.
//
// A broken contract is a bug of lethe (or of code built on the library), never bad input: the check is always
// on (Release included) and throws lethe::ContractViolation, whose message names the contract, the condition
// and FILE:LINE. Inside a run the kernel turns it into the run's internal error, so the command ends with exit 3
// and prints the message with the seed and the replay command; outside a run, run_command_line's catch does the
// same. ContractViolation is a std::invalid_argument (the REQUIRES checked here are about arguments), so callers
// that already expected that type keep working.
//
// It lives in sim/ (the lowest folder, plain values) so that every layer above can use it.
// Use it where a header states REQUIRES; user input is validated earlier, with a FILE:LINE:COL error and exit 2.
#pragma once

#include <stdexcept>
#include <string>

namespace lethe {

struct ContractViolation : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// The throw of LETHE_ASSERT. `file` is shortened to its folder and name (sim/random.cpp): the build's own path
// to the source says nothing to a reader.
[[noreturn]] inline void contract_broken(const std::string& contract, const char* condition, const char* file,
                                         int line) {
  std::string where = file;
  if (const auto last = where.rfind('/'); last != std::string::npos && last > 0) {
    if (const auto folder = where.rfind('/', last - 1); folder != std::string::npos) where.erase(0, folder + 1);
  }
  throw ContractViolation("contract broken: " + contract + " (" + condition + " is false at " +
                          where + ":" + std::to_string(line) + ")");
}

}  // namespace lethe

#define LETHE_ASSERT(condition, contract)                                            \
  do {                                                                               \
    if (!(condition)) [[unlikely]] {                                                 \
      ::lethe::contract_broken((contract), #condition, __FILE__, __LINE__);          \
    }                                                                                \
  } while (false)
