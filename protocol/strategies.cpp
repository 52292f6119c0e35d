#include "protocol/strategies.hpp"

namespace lethe {

const char* to_string(Outcome outcome) {
  switch (outcome) {
    case Outcome::Executed: return "executed";
    case Outcome::Skipped: return "skipped";
    case Outcome::Failed: return "failed";
  }
  return "?";
}

}  // namespace lethe
