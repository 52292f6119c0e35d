#include "fencing_sink.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <utility>

#include <lethe/world/sink.hpp>

namespace fencing {
namespace {

class FencingPayments final : public lethe::EffectProvider {
 public:
  lethe::EffectOutcome execute(const lethe::SinkRequest& request, sim::Time /*now*/) override {
    if (request.fencing_token != 0) {
      std::uint64_t& newest = newest_token_[{request.id, request.processor}];
      if (request.fencing_token < newest) return lethe::EffectOutcome{.refused = true, .value = 0};
      newest = request.fencing_token;
    }
    return lethe::EffectOutcome{.refused = false, .value = ++charges_};
  }

 private:
  // Ordered map: nothing iterates it, but lethe's simulated parts keep to ordered containers.
  std::map<std::pair<lethe::MessageId, lethe::ProcessorId>, std::uint64_t> newest_token_;
  std::uint64_t charges_ = 0;
};

}  // namespace

void register_fencing_sink() {
  lethe::register_sink("fencing-payment", lethe::SinkEntry{[](const lethe::EffectContext&) {
                         return std::make_unique<FencingPayments>();
                       }});
}

}  // namespace fencing
