// The in-run checker's settled form of a key (StoreModel::Settled, the key's item alone) means what StoreModel::step
// means on the one-key state it stands for: on random items and every kind of operation on that key, observed with
// the model's own reply or with one changed field, step_settled matches exactly when step's reply does, leaves the
// item step gives when it matches and the item as it was when it does not.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "check/store_model.hpp"
#include "sim/random.hpp"

namespace lethe {
namespace store_model_test {

constexpr Key kKey = 11;

std::optional<std::int64_t> maybe_time(sim::Rng& rng) {
  return rng.bernoulli(0.3) ? std::nullopt : std::optional<std::int64_t>(rng.between(0, 3) * 10);
}

Item random_item(sim::Rng& rng) {
  Item item;
  item.started_at = maybe_time(rng);
  item.completed_at = maybe_time(rng);
  item.expires_on = maybe_time(rng);
  item.owner = rng.below(3);
  if (rng.bernoulli(0.5)) item.memoized = rng.below(3);
  item.counter = rng.between(-1, 1);
  return item;
}

Condition random_condition(sim::Rng& rng) {
  Condition condition;
  condition.require_absent = rng.bernoulli(0.2);
  condition.require_present = rng.bernoulli(0.2);
  if (rng.bernoulli(0.25)) condition.absent_or_expired_at = rng.between(0, 3) * 10;
  if (rng.bernoulli(0.25)) condition.owner_equals = rng.below(3);
  condition.require_not_completed = rng.bernoulli(0.25);
  return condition;
}

Update random_update(sim::Rng& rng) {
  Update update;
  update.started_at_mode = static_cast<Assign>(rng.below(4));
  update.started_at = rng.between(0, 3) * 10;
  update.owner_mode = static_cast<Assign>(rng.below(4));
  update.owner = rng.below(3);
  update.completed_at_mode = static_cast<Assign>(rng.below(4));
  update.completed_at = rng.between(0, 3) * 10;
  update.expires_on_mode = static_cast<Assign>(rng.below(4));
  update.expires_on = rng.between(0, 3) * 10;
  update.memoized_mode = static_cast<Assign>(rng.below(4));
  update.memoized = rng.below(3);
  update.counter_add = rng.between(-1, 2);
  if (rng.bernoulli(0.3)) update.replace_expired_at = rng.between(0, 3) * 10;
  return update;
}

Op random_op(sim::Rng& rng, Key key) {
  switch (rng.below(7)) {
    case 0: return get_op(key);
    case 1: return put_op(key, random_item(rng));
    case 2: return delete_op(key);
    case 3: return delete_op(key, random_condition(rng));
    case 4: return evict_op(key, rng.between(0, 3) * 10);
    case 5: {
      std::vector<TransactionPart> parts;  // one to three parts, all on the key
      for (std::uint64_t part = 0, count = 1 + rng.below(3); part < count; ++part) {
        parts.push_back(TransactionPart{key, random_condition(rng), random_update(rng)});
      }
      return transaction_op(std::move(parts));
    }
    default: return upsert_op(key, random_condition(rng), random_update(rng));
  }
}

// The model's own reply, or that reply with one field changed (an observation the model cannot give here).
Reply observed_reply(sim::Rng& rng, Reply reply) {
  switch (rng.below(4)) {
    case 0: reply.applied = !reply.applied; break;
    case 1:
      if (reply.previous.has_value()) {
        reply.previous.reset();
      } else {
        reply.previous = Item{};
      }
      break;
    case 2:
      if (reply.previous.has_value()) reply.previous->owner += 1;
      if (!reply.previous_parts.empty() && reply.previous_parts.front().has_value()) {
        reply.previous_parts.front()->counter += 1;
      }
      break;
    default: break;  // the model's own reply
  }
  return reply;
}

TEST(StoreModelProperty, StepSettledOnAKeysItemGivesWhatStepGivesOnTheStateHoldingIt) {
  sim::Rng rng(20261206);
  const Key key = kKey;
  int matched = 0;
  int refused = 0;
  for (int round = 0; round < 20000; ++round) {
    std::optional<Item> item;
    if (rng.bernoulli(0.7)) item = random_item(rng);
    StoreState state;
    if (item.has_value()) state.emplace(key, *item);
    const Op op = random_op(rng, key);
    const auto [next, reply] = StoreModel::step(state, op);
    const Reply observed = observed_reply(rng, reply);
    const bool step_matches = StoreModel::output_matches(reply, observed);
    std::optional<Item> settled = item;
    ASSERT_EQ(StoreModel::step_settled(key, settled, op, observed), step_matches) << describe(op);
    StoreState after;
    if (settled.has_value()) after = StoreModel::unsettle(key, Item(*settled));
    ASSERT_TRUE(after == (step_matches ? next : state)) << describe(op) << " observed " << describe(observed);
    if (settled.has_value()) {
      ASSERT_TRUE(StoreModel::settle(key, StoreState(after)) == *settled);
    }
    (step_matches ? matched : refused) += 1;
  }
  EXPECT_GT(matched, 1000);
  EXPECT_GT(refused, 1000);
}

}  // namespace store_model_test
}  // namespace lethe
