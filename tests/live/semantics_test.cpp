// Every live store variant means what lethe::apply means: random Get / Put / Upsert operations, one at a time,
// against the real server and against the model, must get equal replies (the translation of conditions and
// updates into SQL / Lua / client code is exact). Concurrency is the other tests' business.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <fmt/format.h>

#include "live/redis.hpp"
#include "live/store.hpp"
#include "live_support.hpp"
#include "sim/random.hpp"

namespace semantics_test {

using lethe::Assign;
using lethe::Key;
using lethe::Op;

// Values chosen so that equalities and orderings hit: small times, negatives, one beyond 2^53 (exactness of the
// Redis script's comparisons) and the int64 extremes.
const std::vector<std::int64_t> kTimes = {-20, -10, 0, 10, 20, 30, 1234567890123456789, INT64_MAX, INT64_MIN + 1};

std::int64_t pick_time(sim::Rng& rng) { return kTimes[rng.below(kTimes.size())]; }
std::optional<std::int64_t> maybe_time(sim::Rng& rng) {
  return rng.bernoulli(0.3) ? std::nullopt : std::optional<std::int64_t>(pick_time(rng));
}
Assign pick_mode(sim::Rng& rng) { return static_cast<Assign>(rng.below(4)); }
std::uint64_t pick_owner(sim::Rng& rng) { return rng.below(4); }
std::uint64_t pick_memo(sim::Rng& rng) {
  const std::uint64_t values[] = {0, 7, 1ull << 60, (1ull << 63) | 5};
  return values[rng.below(4)];
}

Op random_op(sim::Rng& rng, const std::vector<Key>& keys) {
  const Key key = keys[rng.below(keys.size())];
  const std::uint64_t kind = rng.below(100);
  if (kind < 15) return lethe::get_op(key);
  if (kind < 30) {
    lethe::Item item;
    item.started_at = maybe_time(rng);
    item.completed_at = maybe_time(rng);
    item.expires_on = maybe_time(rng);
    item.owner = pick_owner(rng);
    if (rng.bernoulli(0.5)) item.memoized = pick_memo(rng);
    item.counter = rng.between(-5, 5);
    return lethe::put_op(key, item);
  }
  lethe::Condition c;
  c.require_absent = rng.bernoulli(0.15);
  c.require_present = rng.bernoulli(0.15);
  if (rng.bernoulli(0.25)) c.absent_or_expired_at = pick_time(rng);
  if (rng.bernoulli(0.25)) c.started_at_equals = pick_time(rng);
  if (rng.bernoulli(0.25)) c.owner_equals = pick_owner(rng);
  c.require_not_completed = rng.bernoulli(0.25);
  lethe::Update u;
  u.started_at_mode = pick_mode(rng);
  u.started_at = pick_time(rng);
  u.completed_at_mode = pick_mode(rng);
  u.completed_at = pick_time(rng);
  u.expires_on_mode = pick_mode(rng);
  u.expires_on = pick_time(rng);
  u.owner_mode = pick_mode(rng);
  u.owner = pick_owner(rng);
  u.memoized_mode = pick_mode(rng);
  u.memoized = pick_memo(rng);
  u.counter_add = rng.between(-2, 3);
  if (rng.bernoulli(0.3)) u.replace_expired_at = pick_time(rng);
  return lethe::upsert_op(key, c, u);
}

// Runs `count` random operations against the variant and the model, one at a time.
void check_variant_against_model(const std::string& store, const std::string& variant, int count) {
  SCOPED_TRACE(store + " " + variant);
  live::StoreOptions options;
  options.target = live_test::server_target(store);
  options.variant = variant;
  options.timeout = 5 * sim::kSecond;
  auto live_store = live::open_store(store, options);
  auto connection = live_store->connect();
  sim::Rng rng = sim::Rng::derive(42, variant);
  std::vector<Key> keys;
  for (lethe::MessageId id = 0; id < 4; ++id) keys.push_back(lethe::make_key(lethe::Table::Dedupe, 0, id));
  lethe::StoreState state;
  int applied = 0;
  int rejected = 0;
  for (int i = 0; i < count; ++i) {
    const Op op = random_op(rng, keys);
    const lethe::Reply expected = lethe::apply(state, op);
    const auto got = connection->execute(op, live::DropPlan{});
    ASSERT_TRUE(got.has_value()) << "operation " << i << " " << lethe::describe(op) << " got no reply";
    ASSERT_EQ(*got, expected) << "operation " << i << " " << lethe::describe(op) << "\n  store: "
                              << lethe::describe(*got) << "\n  model: " << lethe::describe(expected);
    (expected.applied ? applied : rejected) += 1;
  }
  // Both outcomes of conditions were exercised.
  EXPECT_GT(applied, count / 10);
  EXPECT_GT(rejected, count / 10);
  for (Key key : keys) {
    const auto got = connection->execute(lethe::get_op(key), live::DropPlan{});
    ASSERT_TRUE(got.has_value());
    const auto it = state.find(key);
    EXPECT_EQ(got->previous, it == state.end() ? std::optional<lethe::Item>() : std::optional<lethe::Item>(it->second));
  }
  connection.reset();
  live_store->teardown();
}

void check_every_variant(const std::string& store) {
  for (const auto& v : live::store_variants()) {
    if (v.store == store) check_variant_against_model(store, v.name, 600);
  }
}

TEST(LiveMemorySemantics, EveryVariantAgreesWithTheModelOneOperationAtATime) { check_every_variant("memory"); }

TEST(LivePostgresSemantics, EveryVariantAgreesWithTheModelOneOperationAtATime) {
  LIVE_REQUIRE_SERVER("postgres");
  check_every_variant("postgres");
}

TEST(LiveRedisSemantics, EveryVariantAgreesWithTheModelOneOperationAtATime) {
  LIVE_REQUIRE_SERVER("redis");
  check_every_variant("redis");
}

RC_GTEST_PROP(LiveRedisCodec, DecodingAnEncodedItemGivesTheItemBack, ()) {
  lethe::Item item;
  if (*rc::gen::arbitrary<bool>()) item.started_at = *rc::gen::arbitrary<std::int64_t>();
  if (*rc::gen::arbitrary<bool>()) item.completed_at = *rc::gen::arbitrary<std::int64_t>();
  if (*rc::gen::arbitrary<bool>()) item.expires_on = *rc::gen::arbitrary<std::int64_t>();
  item.owner = *rc::gen::arbitrary<std::uint64_t>();
  if (*rc::gen::arbitrary<bool>()) item.memoized = *rc::gen::arbitrary<std::uint64_t>();
  item.counter = *rc::gen::arbitrary<std::int64_t>();
  const auto decoded = live::decode_item(live::encode_item(item));
  RC_ASSERT(decoded.has_value());
  RC_ASSERT(*decoded == item);
}

TEST(LiveRedisCodec, MalformedValuesAreRejected) {
  for (const char* bad : {"", "1|2|3", "1|2|3|4|5|6|7", "x|||0||0", "||||0|", "|||-1||0", "|||0||1.5"}) {
    EXPECT_FALSE(live::decode_item(bad).has_value()) << bad;
  }
  EXPECT_TRUE(live::decode_item("|||0||0").has_value());
}

}  // namespace semantics_test
