#include "protocol/strategies.hpp"

namespace lethe {

PayloadFingerprint payload_fingerprint(MessageId id, std::uint32_t version) {
  std::uint64_t state = id ^ 0x9a7c0ad5e11f0f9eULL;
  state = sim::splitmix64(state) ^ version;  // distinct (id, version) pairs give distinct inputs to the last mix
  const std::uint64_t mixed = sim::splitmix64(state);
  return mixed == 0 ? 1 : mixed;  // 0 is no fingerprint
}

const char* to_string(Outcome outcome) {
  switch (outcome) {
    case Outcome::Executed: return "executed";
    case Outcome::Skipped: return "skipped";
    case Outcome::Failed: return "failed";
  }
  return "?";
}

}  // namespace lethe
