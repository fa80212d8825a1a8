// An image in a Gemma 4 text sequence against llama.cpp (tests/data/vision, written by
// scripts/make_vision_goldens.sh): the prompt's chunks as mtmd cuts them (text tokens with the
// image between Gemma 4's markers), the image's rows fed as embeddings in one batch that attends
// without a causal mask (mtmd_decode_use_non_causal), positions one per image token; then the
// logits of every token of the text after the image.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "model/model.h"
#include "kv/multi_state.h"
#include "test_data.h"
#include "vision/vision_test_util.h"
#include "tova/policy_spec.h"
#include "vision/image_decode.h"
#include "vision/mmproj.h"

namespace tova::vision {
namespace {

using testing::Chunk;
using testing::Compare;
using testing::compare;
using testing::read_f32;
using testing::read_layout;
using testing::vision_dir;

// Feeds the layout through `m` (the image's rows from `rows`), returns the last chunk's logits.
std::vector<float> run_layout(const model::Model& m, const std::vector<Chunk>& layout,
                              const std::vector<float>& rows, ThreadPool& pool) {
  int64_t total = 0;
  for (const Chunk& c : layout) total += c.image ? c.n_image : static_cast<int64_t>(c.ids.size());
  auto spec = kv::parse_policy("full", 0);
  EXPECT_TRUE(spec.ok());
  kv::MultiStateOptions so = m.state_options(*spec, kv::KvFormat{});
  so.initial_slots = static_cast<int>(total);
  // The image's tokens all join before any attends, also on the window layers (whose window
  // is shorter than the image): they drop what left the window at the step's end, as
  // llama.cpp's sliding-window cache holds n_swa + n_ubatch cells.
  so.window_drops_at_step_end = true;
  auto state = kv::MultiState::create(so);
  EXPECT_TRUE(state.ok()) << state.message();
  model::ForwardScratch scratch;
  std::vector<float> logits;
  const int n_embd = m.config().n_embd;
  for (size_t ci = 0; ci < layout.size(); ++ci) {
    const Chunk& c = layout[ci];
    const bool last = ci + 1 == layout.size();
    std::vector<model::BatchToken> batch;
    if (c.image) {
      for (int t = 0; t < c.n_image; ++t) {
        batch.push_back({.state = state->get(),
                         .embd = &rows[static_cast<size_t>(t) * n_embd],
                         .sees_ahead = c.n_image - 1 - t});
      }
    } else {
      for (int32_t id : c.ids) batch.push_back({.token = id, .state = state->get(), .logits = last});
    }
    if (last) logits.resize(batch.size() * static_cast<size_t>(m.config().n_vocab));
    const Status st = m.forward(batch, pool, scratch, last ? logits.data() : nullptr);
    EXPECT_TRUE(st.ok()) << st.message();
  }
  return logits;
}

TEST(Gemma4ImageText, LogitsAfterTheImageMatchLlamaCpp) {
  auto m = model::Model::load(std::string(TOVA_TEST_DATA_DIR) + "/arch/gemma4-f32.gguf");
  ASSERT_TRUE(m.ok()) << m.message();
  auto mm = Mmproj::open(vision_dir() + "/gemma4v-f32.gguf");
  ASSERT_TRUE(mm.ok()) << mm.message();
  ASSERT_TRUE((*mm)->check_text_model((*m)->config().n_embd, "gemma4-f32.gguf").ok());
  ThreadPool pool(2);
  const int n_vocab = (*m)->config().n_vocab;
  for (const char* image : {"disc-64x48.png", "bars-50x30.jpg"}) {
    SCOPED_TRACE(image);
    const std::string base = vision_dir() + "/gemma4v-f32." + image;
    const std::vector<Chunk> layout = read_layout(base + ".layout.txt");
    ASSERT_EQ(layout.size(), 3u);
    ASSERT_TRUE(layout[1].image);
    const std::vector<float> ref = read_f32(base + ".logits.f32");
    ASSERT_EQ(ref.size(), layout[2].ids.size() * n_vocab);

    auto img = read_image_file(vision_dir() + "/" + image);
    ASSERT_TRUE(img.ok()) << img.message();
    auto e = (*mm)->encode(*img, pool);
    ASSERT_TRUE(e.ok()) << e.message();
    ASSERT_EQ(e->n_tokens, layout[1].n_image);
    // tova's own image rows, and llama.cpp's (the text side alone).
    const Compare ours = compare(run_layout(**m, layout, e->data, pool), ref, n_vocab);
    const Compare theirs =
        compare(run_layout(**m, layout, read_f32(base + ".embd.f32"), pool), ref, n_vocab);
    std::printf("[ figures ] %s: logits after the image, tova's image rows: rel L2 %.3g, top-1 "
                "%.1f %%; llama.cpp's rows: rel L2 %.3g, top-1 %.1f %%\n",
                image, ours.rel_l2, 100 * ours.top1, theirs.rel_l2, 100 * theirs.top1);
    EXPECT_LT(ours.rel_l2, 1e-3);
    EXPECT_GE(ours.top1, 0.99);
    EXPECT_LT(theirs.rel_l2, 1e-3);
    EXPECT_GE(theirs.top1, 0.99);
  }
}

TEST(Gemma4ImageText, ImageRowsOutsideWhatTheStepAllowsAreRefused) {
  auto m = model::Model::load(std::string(TOVA_TEST_DATA_DIR) + "/arch/gemma4-f32.gguf");
  ASSERT_TRUE(m.ok()) << m.message();
  ThreadPool pool(1);
  model::ForwardScratch scratch;
  const std::vector<float> row(static_cast<size_t>((*m)->config().n_embd), 0.5f);
  auto make = [&](const char* policy, int budget) {
    auto spec = kv::parse_policy(policy, budget);
    EXPECT_TRUE(spec.ok()) << spec.message();
    kv::MultiStateOptions so = (*m)->state_options(*spec, kv::KvFormat{});
    so.window_drops_at_step_end = true;
    auto st = kv::MultiState::create(so);
    EXPECT_TRUE(st.ok()) << st.message();
    return std::move(st).value();
  };
  {  // A token that sees further than its batch reaches.
    auto st = make("full", 0);
    std::vector<model::BatchToken> b = {{.state = st.get(), .embd = row.data(), .sees_ahead = 2},
                                        {.state = st.get(), .embd = row.data(), .sees_ahead = 1}};
    const Status r = (*m)->forward(b, pool, scratch, nullptr);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.message().find("sees 2 tokens ahead"), std::string::npos) << r.message();
  }
  {  // A policy that scores every token: tokens attend as they join.
    auto st = make("h2o", 8);
    std::vector<model::BatchToken> b;
    for (int t = 0; t < 4; ++t) b.push_back({.state = st.get(), .embd = row.data(), .sees_ahead = 3 - t});
    const Status r = (*m)->forward(b, pool, scratch, nullptr);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.message().find("'h2o"), std::string::npos) << r.message();
  }
}

}  // namespace
}  // namespace tova::vision
