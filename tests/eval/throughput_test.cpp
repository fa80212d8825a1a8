// The throughput protocol's memory accounting (eval/throughput.h): bytes per sequence come from
// the allocation, the max batch is floor(budget / bytes per sequence), and that batch really
// decodes together.
#include <gtest/gtest.h>

#include "eval/throughput.h"
#include "eval/throughput_reports.h"
#include "test_data.h"

namespace tova {
namespace {

std::unique_ptr<model::Model> stories() {
  auto m = model::Model::load(testing::shared_path("models/stories260K.gguf"));
  EXPECT_TRUE(m.ok()) << m.message();
  return m.ok() ? std::move(*m) : nullptr;
}

kv::PolicySpec spec(const std::string& name, int budget) {
  auto s = kv::parse_policy(name, budget);
  EXPECT_TRUE(s.ok()) << s.message();
  return *s;
}

ThreadPool& two_threads() {
  static ThreadPool pool(2);
  return pool;
}

eval::ThroughputOptions small_options() {
  eval::ThroughputOptions o;
  o.ctx = 96;
  o.n_steps = 2;
  o.repetitions = 2;
  o.warmup_steps = 1;
  o.n_batch = 32;
  o.kv_types = {KvFormat(KvType::kF16)};
  return o;
}

TEST(Throughput, BytesPerSequenceIsTheAllocation) {
  TOVA_REQUIRE_SHARED();
  auto m = stories();
  const model::ModelConfig& c = m->config();
  // stories260K: 5 layers, 4 KV heads of 8 dims. A bounded state holds k + 1 slots, each with
  // a key and a value of head_dim f16 elements and an int64 position, per KV head and layer.
  const uint64_t per_slot =
      static_cast<uint64_t>(c.n_layer) * c.n_head_kv * (2ull * c.head_dim * 2 + sizeof(int64_t));
  auto b = eval::bytes_per_sequence(*m, spec("tova", 32), kv::KvType::kF16, 4096, 0);
  ASSERT_TRUE(b.ok()) << b.message();
  EXPECT_EQ(*b, 33 * per_slot);
  // `full` reserves ctx plus the measured steps.
  auto f = eval::bytes_per_sequence(*m, spec("full", 0), kv::KvType::kF16, 100, 7);
  ASSERT_TRUE(f.ok()) << f.message();
  EXPECT_EQ(*f, 107 * per_slot);
}

// A hybrid (the qwen35 fixture: 6 Gated DeltaNet layers, 2 attention layers of 2 KV heads of 32
// dims): a sequence's bytes are its attention layers' K/V slots plus its fixed recurrent
// states, which a bounded sequence carries whole too; the batch decodes together.
TEST(Throughput, AHybridSequenceCountsItsRecurrentStates) {
  auto m = model::Model::load(std::string(TOVA_TEST_DATA_DIR) + "/arch/qwen35-f32.gguf");
  ASSERT_TRUE(m.ok()) << m.message();
  const uint64_t per_slot = 2ull * 2 * (2ull * 32 * 2 + sizeof(int64_t));
  const uint64_t recurrent = 6ull * (128 * 3 + 4 * 16 * 16) * 4;
  auto b = eval::bytes_per_sequence(**m, spec("tova", 32), kv::KvType::kF16, 4096, 0);
  ASSERT_TRUE(b.ok()) << b.message();
  EXPECT_EQ(*b, 33 * per_slot + recurrent);
  auto f = eval::bytes_per_sequence(**m, spec("full", 0), kv::KvType::kF16, 100, 7);
  ASSERT_TRUE(f.ok()) << f.message();
  EXPECT_EQ(*f, 107 * per_slot + recurrent);
  eval::ThroughputOptions o = small_options();
  o.full_batch = 2;
  o.batch_cap = 4;
  o.policies = {spec("full", 0), spec("tova", 8)};
  auto rep = eval::run_throughput(**m, two_threads(), o);
  ASSERT_TRUE(rep.ok()) << rep.message();
  const uint64_t full_seq = rep->results[0].bytes_per_seq;
  EXPECT_EQ(full_seq, (96 + 5) * per_slot + recurrent);
  EXPECT_EQ(rep->results[1].bytes_per_seq, 9 * per_slot + recurrent);
  EXPECT_EQ(rep->results[1].max_batch,
            static_cast<int>(2 * full_seq / (9 * per_slot + recurrent)));
  EXPECT_EQ(rep->results[1].batch, 4);
  EXPECT_GT(rep->results[1].avg_ts, 0);
}

TEST(Throughput, MaxBatchIsTheBudgetOverBytesPerSequenceAndRuns) {
  TOVA_REQUIRE_SHARED();
  auto m = stories();
  eval::ThroughputOptions o = small_options();
  o.policies = {spec("full", 0), spec("tova", 16), spec("h2o", 24), spec("window", 40)};
  const int extra = o.warmup_steps + o.n_steps * o.repetitions;
  auto full_bytes = eval::bytes_per_sequence(*m, o.policies[0], o.kv_types[0], o.ctx, extra);
  ASSERT_TRUE(full_bytes.ok());
  o.kv_memory = 3 * *full_bytes + 1234;  // not a multiple of any sequence's size
  auto rep = eval::run_throughput(*m, two_threads(), o);
  ASSERT_TRUE(rep.ok()) << rep.message();
  ASSERT_EQ(rep->results.size(), 4u);
  for (const eval::ThroughputResult& r : rep->results) {
    auto b = eval::bytes_per_sequence(*m, spec(r.policy, r.budget < 0 ? 0 : r.budget), o.kv_types[0],
                                      o.ctx, extra);
    ASSERT_TRUE(b.ok());
    SCOPED_TRACE(r.policy + " " + std::to_string(r.budget));
    EXPECT_EQ(r.bytes_per_seq, *b);
    EXPECT_EQ(r.max_batch, static_cast<int>(o.kv_memory / *b));
    EXPECT_EQ(r.batch, r.max_batch);
    EXPECT_EQ(r.kv_bytes_total, r.bytes_per_seq * static_cast<uint64_t>(r.batch));
    EXPECT_LE(r.kv_bytes_total, o.kv_memory);
    ASSERT_EQ(r.samples_ts.size(), 2u);
    EXPECT_GT(r.avg_ts, 0);
    EXPECT_GT(r.step_ms, 0);
  }
  EXPECT_EQ(rep->results[0].max_batch, 3);
  EXPECT_DOUBLE_EQ(rep->results[0].relative, 1.0);  // relative to full
  // A bounded state of 17 slots against full's 96 + 5: more sequences fit.
  EXPECT_GT(rep->results[1].max_batch, 5 * rep->results[0].max_batch);
}

TEST(Throughput, FullBatchSetsTheBudgetAndCapLimitsTheRun) {
  TOVA_REQUIRE_SHARED();
  auto m = stories();
  eval::ThroughputOptions o = small_options();
  o.full_batch = 2;
  o.batch_cap = 5;
  o.policies = {spec("full", 0), spec("tova", 8)};
  auto rep = eval::run_throughput(*m, two_threads(), o);
  ASSERT_TRUE(rep.ok()) << rep.message();
  EXPECT_EQ(rep->kv_memory, 2 * rep->results[0].bytes_per_seq);
  EXPECT_EQ(rep->results[0].batch, 2);
  EXPECT_GT(rep->results[1].max_batch, 5);
  EXPECT_EQ(rep->results[1].batch, 5);
}

TEST(Throughput, ABudgetBelowOneSequenceIsAClearError) {
  TOVA_REQUIRE_SHARED();
  auto m = stories();
  eval::ThroughputOptions o = small_options();
  o.policies = {spec("tova", 64), spec("full", 0)};
  o.kv_memory = 60000;  // tova k=64 fits (65 slots of 800 bytes), full at ctx 96 + 5 does not
  auto rep = eval::run_throughput(*m, two_threads(), o);
  ASSERT_FALSE(rep.ok());
  EXPECT_NE(rep.message().find("full f16 at ctx 96 needs"), std::string::npos) << rep.message();
  EXPECT_NE(rep.message().find("more than the budget of 60000"), std::string::npos);
  o.kv_memory = 0;
  o.full_batch = 0;
  EXPECT_FALSE(eval::run_throughput(*m, two_threads(), o).ok());
}

TEST(Throughput, JsonHasOneObjectPerConfigurationWithTheTableFields) {
  eval::ThroughputReport rep;
  rep.kv_memory = 1000;
  rep.ctx = 64;
  rep.results.push_back({.policy = "full",
                         .budget = -1,
                         .ctx = 64,
                         .bytes_per_seq = 400,
                         .max_batch = 2,
                         .batch = 2,
                         .avg_ts = 10,
                         .stddev_ts = 1,
                         .relative = 1});
  rep.results.push_back({.policy = "tova",
                         .budget = 8,
                         .ctx = 64,
                         .bytes_per_seq = 60,
                         .max_batch = 16,
                         .batch = 16,
                         .avg_ts = 50,
                         .stddev_ts = 2,
                         .relative = 5});
  const auto j = eval::throughput_json(rep, {{"model_type", "x"}});
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 2u);
  for (const char* key : {"policy", "budget", "ctx", "bytes_per_seq", "max_batch", "avg_ts",
                          "stddev_ts", "relative", "model_type"}) {
    EXPECT_TRUE(j[0].contains(key)) << key;
    EXPECT_TRUE(j[1].contains(key)) << key;
  }
  EXPECT_TRUE(j[0]["budget"].is_null());
  EXPECT_EQ(j[1]["budget"], 8);
  EXPECT_EQ(j[1]["max_batch"], 16);
  EXPECT_EQ(j[1]["relative"], 5.0);
  EXPECT_FALSE(j[1]["larger_than_full"].get<bool>());
}

// A bounded state larger than the full cache at the same ctx saves nothing: flagged in the
// JSON (and left out of the plot: tests/plot/throughput_plot_test.cpp).
TEST(Throughput, StatesLargerThanFullAreFlagged) {
  const eval::ThroughputReport rep = testing::report_with_a_state_larger_than_full();
  const auto j = eval::throughput_json(rep, {});
  EXPECT_FALSE(j[1]["larger_than_full"].get<bool>());
  EXPECT_TRUE(j[2]["larger_than_full"].get<bool>());
}

}  // namespace
}  // namespace tova
