// Images through a Session (Engine with an mmproj, Session::queue_image, the batch scheduler):
// the logits after the image against llama.cpp's libmtmd (tests/data/vision, the same goldens
// and tolerance as gemma4_image_text_test.cpp), image states under bounded policies, the
// engine's memory of encoded images, and what is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "kv/policy_registry.h"
#include "model/model.h"
#include "test_data.h"
#include "tova/engine.h"
#include "tova/session.h"
#include "tova/vision.h"
#include "vision/image_decode.h"
#include "vision/vision_test_util.h"

namespace tova {
namespace {

using testing::Chunk;
using testing::Compare;
using testing::compare;
using testing::read_f32;
using testing::read_layout;
using testing::vision_dir;

std::string text_model() { return std::string(TOVA_TEST_DATA_DIR) + "/arch/gemma4-f32.gguf"; }
std::string mmproj() { return vision_dir() + "/gemma4v-f32.gguf"; }

// The golden prompt of scripts/make_vision_goldens.sh, cut at its image marker.
constexpr const char* kBefore = "Once upon a time ";
constexpr const char* kAfter = " there was a little girl named Lily. She loved to play outside.";

std::unique_ptr<Engine> open_engine(const std::string& mm = mmproj()) {
  auto e = Engine::load({.model_path = text_model(), .n_threads = 2, .mmproj_path = mm});
  EXPECT_TRUE(e.ok()) << e.message();
  return e.ok() ? std::move(e).value() : nullptr;
}

std::unique_ptr<Session> open_session(const Engine& e, const std::string& policy, int budget,
                                      const std::string& prefill = "exact") {
  auto cache = parse_cache_options(policy, budget, prefill);
  EXPECT_TRUE(cache.ok()) << cache.message();
  auto s = e.new_session({.cache = *cache, .sampling = {.temp = 0}});
  EXPECT_TRUE(s.ok()) << s.message();
  return s.ok() ? std::move(s).value() : nullptr;
}

// The text before the image, the image between its markers, the text after it (as mtmd cuts
// the golden prompt: BOS, text, "<|image>" | image | "<image|>", text).
void queue_prompt(const Engine& e, Session& s, const Image& img) {
  s.queue(e.tokenize(kBefore, /*add_bos=*/true, /*parse_special=*/true));
  ASSERT_TRUE(s.queue_image(img).ok());
  s.queue(e.tokenize(kAfter, /*add_bos=*/false, /*parse_special=*/true));
}

TEST(ImageSession, LogitsAfterTheImageMatchLlamaCpp) {
  auto e = open_engine();
  ASSERT_NE(e, nullptr);
  ASSERT_TRUE(e->has_mmproj());
  const int n_vocab = e->n_vocab();
  for (const char* name : {"disc-64x48.png", "bars-50x30.jpg"}) {
    SCOPED_TRACE(name);
    const std::string base = vision_dir() + "/gemma4v-f32." + name;
    const std::vector<Chunk> layout = read_layout(base + ".layout.txt");
    ASSERT_EQ(layout.size(), 3u);
    const std::vector<float> ref = read_f32(base + ".logits.f32");
    auto img = e->encode_image_file(vision_dir() + "/" + name);
    ASSERT_TRUE(img.ok()) << img.message();
    ASSERT_EQ(img->n_tokens, layout[1].n_image);

    auto s = open_session(*e, "full", 0);
    ASSERT_NE(s, nullptr);
    s->queue(e->tokenize(kBefore, true, true));
    ASSERT_TRUE(s->queue_image(*img).ok());
    // The history is mtmd's chunks: the text with the begin marker, one id per image token,
    // the end marker.
    const std::vector<int32_t>& h = s->history();
    ASSERT_GT(h.size(), layout[0].ids.size() + img->n_tokens);
    EXPECT_EQ(std::vector<int32_t>(h.begin(), h.begin() + layout[0].ids.size()), layout[0].ids);
    for (int t = 0; t < img->n_tokens; ++t) {
      EXPECT_EQ(h[layout[0].ids.size() + t], image_token_id(img->id, t));
    }
    const size_t n_end = h.size() - layout[0].ids.size() - img->n_tokens;
    ASSERT_GE(n_end, 1u);
    ASSERT_TRUE(s->feed({}).ok());
    // Then the text after the image one token at a time: the logits after each.
    const std::vector<int32_t> rest(layout[2].ids.begin() + static_cast<long>(n_end),
                                    layout[2].ids.end());
    std::vector<float> got(s->logits().begin(), s->logits().end());
    for (size_t i = 0; i < rest.size(); ++i) {
      ASSERT_TRUE(s->feed({&rest[i], 1}).ok());
      got.insert(got.end(), s->logits().begin(), s->logits().end());
    }
    ASSERT_EQ(std::vector<int32_t>(h.end() - static_cast<long>(layout[2].ids.size()), h.end()),
              layout[2].ids);
    const std::vector<float> want(ref.begin() + static_cast<long>((n_end - 1) * n_vocab), ref.end());
    ASSERT_EQ(got.size(), want.size());
    const Compare c = compare(got, want, n_vocab);
    std::printf("[ figures ] %s through a Session: %zu rows after the image, rel L2 %.3g, top-1 "
                "%.1f %%\n",
                name, want.size() / n_vocab, c.rel_l2, 100 * c.top1);
    EXPECT_LT(c.rel_l2, 1e-3);
    EXPECT_GE(c.top1, 0.99);
    const SessionStats st = s->stats();
    EXPECT_EQ(st.n_images, 1);
    EXPECT_EQ(st.n_image_tokens, img->n_tokens);
    EXPECT_EQ(st.n_seen, static_cast<int64_t>(h.size()));
  }
}

TEST(ImageSession, ABoundedPolicyHoldsItsBudgetThroughTheImage) {
  auto e = open_engine();
  ASSERT_NE(e, nullptr);
  auto img = e->encode_image_file(vision_dir() + "/disc-64x48.png");
  ASSERT_TRUE(img.ok()) << img.message();
  constexpr int kBudget = 16;  // the image alone has 48 tokens
  ASSERT_GT(img->n_tokens, kBudget);
  for (const char* prefill : {"exact", "chunk:8"}) {
    SCOPED_TRACE(prefill);
    auto s = open_session(*e, "tova", kBudget, prefill);
    ASSERT_NE(s, nullptr);
    queue_prompt(*e, *s, *img);
    ASSERT_TRUE(s->feed({}).ok());
    SessionStats st = s->stats();
    ASSERT_FALSE(st.kinds.empty());
    for (const StateKindStats& k : st.kinds) {
      EXPECT_LE(k.max_held, k.limit) << k.kind;
    }
    // More images and answers after each: once the pools have taken an image beside a full
    // budget, the K/V allocated stays flat and every layer holds its budget between steps.
    uint64_t capacity = 0;
    for (int round = 0; round < 3; ++round) {
      ASSERT_TRUE(s->queue_image(*img).ok());
      ASSERT_TRUE(s->feed({}).ok());
      for (int i = 0; i < 4; ++i) {
        auto id = s->decode();
        ASSERT_TRUE(id.ok()) << id.message();
      }
      st = s->stats();
      for (const StateKindStats& k : st.kinds) EXPECT_LE(k.max_held, k.limit) << k.kind;
      if (round > 0) EXPECT_EQ(st.kv_capacity, capacity) << "round " << round;
      capacity = st.kv_capacity;
    }
    EXPECT_EQ(st.n_images, 4);
    EXPECT_EQ(st.n_image_tokens, 4 * img->n_tokens);
    std::printf("[ figures ] tova:%d %s: K/V allocated %llu bytes, held %llu, after 4 images of "
                "%d tokens and %lld tokens seen\n",
                kBudget, prefill, static_cast<unsigned long long>(st.kv_capacity),
                static_cast<unsigned long long>(st.kv_held), img->n_tokens,
                static_cast<long long>(st.n_seen));
  }
}

// A session file of a conversation with an image: saved after the image under a budget smaller
// than it (its pools grew to take the image), loaded back, it continues exactly as the original.
TEST(ImageSession, ASessionFileKeepsTheImageState) {
  auto e = open_engine();
  ASSERT_NE(e, nullptr);
  auto img = e->encode_image_file(vision_dir() + "/disc-64x48.png");
  ASSERT_TRUE(img.ok()) << img.message();
  auto s = open_session(*e, "tova", 16);
  ASSERT_NE(s, nullptr);
  queue_prompt(*e, *s, *img);
  ASSERT_TRUE(s->feed({}).ok());
  const std::string path = ::testing::TempDir() + "/image-session.bin";
  ASSERT_TRUE(s->save(path).ok());
  auto loaded = e->load_session(path, {.sampling = {.temp = 0}});
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  Session& r = *loaded->session;
  EXPECT_EQ(r.history(), s->history());  // the image's ids included
  for (int i = 0; i < 6; ++i) {
    auto a = s->decode();
    auto b = r.decode();
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(*a, *b) << i;
  }
  // It takes another image.
  ASSERT_TRUE(r.queue_image(*img).ok());
  ASSERT_TRUE(r.feed({}).ok());
  for (const StateKindStats& k : r.stats().kinds) EXPECT_LE(k.max_held, k.limit) << k.kind;
}

// Every policy example, exact and chunked, in every position mode: the image is taken (and the
// bounded layers hold their budget after it) or the session says why in its error.
TEST(ImageSession, EveryPolicyTakesAnImageOrSaysWhy) {
  auto e = open_engine();
  ASSERT_NE(e, nullptr);
  auto img = e->encode_image_file(vision_dir() + "/bars-50x30.jpg");
  ASSERT_TRUE(img.ok()) << img.message();
  int n_ok = 0, n_refused = 0;
  for (const std::string& policy : kv::all_policy_examples()) {
    for (const char* prefill : {"exact", "chunk:8"}) {
      for (const char* positions : {"absolute", "gap", "rank"}) {
        SCOPED_TRACE(policy + " " + prefill + " " + positions);
        auto cache = parse_cache_options(policy, 16, prefill, "f32", positions);
        if (!cache.ok()) continue;  // a form that needs another budget
        auto s = e->new_session({.cache = *cache, .sampling = {.temp = 0}});
        if (!s.ok()) {
          EXPECT_FALSE(s.message().empty());
          ++n_refused;
          continue;
        }
        queue_prompt(*e, **s, *img);
        const Status st = (*s)->feed({});
        if (!st.ok()) {
          EXPECT_FALSE(st.message().empty());
          std::printf("[ refused ] %s %s %s: %s\n", policy.c_str(), prefill, positions,
                      st.message().c_str());
          ++n_refused;
          continue;
        }
        ++n_ok;
        auto next = (*s)->decode();
        EXPECT_TRUE(next.ok()) << next.message();
        const SessionStats stats = (*s)->stats();
        EXPECT_EQ(stats.n_image_tokens, img->n_tokens);
        for (const StateKindStats& k : stats.kinds) {
          if (k.kind == "bounded" && k.limit >= 0 && policy.find("rkv") == std::string::npos) {
            EXPECT_LE(k.max_held, k.limit) << k.kind;
          }
        }
      }
    }
  }
  std::printf("[ figures ] an image under %d policy x prefill x position forms, %d refused\n",
              n_ok, n_refused);
  EXPECT_GT(n_ok, 60);
}

TEST(ImageSession, TheSameImageIsEncodedOnceAndKeepsItsIds) {
  auto e = open_engine();
  ASSERT_NE(e, nullptr);
  auto bytes = vision::read_file_bytes(vision_dir() + "/disc-64x48.png");
  ASSERT_TRUE(bytes.ok());
  auto a = e->encode_image(*bytes, "first");
  auto b = e->encode_image(*bytes, "again");
  auto c = e->encode_image_file(vision_dir() + "/tall-40x130.png");
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_GT(a->encode_seconds, 0);
  EXPECT_EQ(b->encode_seconds, 0);  // not encoded again
  EXPECT_EQ(a->rows, b->rows);
  EXPECT_EQ(a->id, b->id);
  EXPECT_NE(a->id, c->id);
  // The history's ids of image tokens: never a text id, never -1, the same for the same image.
  for (int t = 0; t < a->n_tokens; ++t) {
    EXPECT_TRUE(is_image_token(image_token_id(a->id, t)));
    EXPECT_EQ(image_token_id(a->id, t), image_token_id(b->id, t));
    EXPECT_NE(image_token_id(a->id, t), image_token_id(c->id, t));
  }
  // Two sessions with the same image and question have the same history (what prefix reuse
  // compares); the first diverges from a session with another image at the image.
  auto s1 = open_session(*e, "full", 0);
  auto s2 = open_session(*e, "full", 0);
  auto s3 = open_session(*e, "full", 0);
  queue_prompt(*e, *s1, *a);
  queue_prompt(*e, *s2, *b);
  queue_prompt(*e, *s3, *c);
  EXPECT_EQ(s1->history(), s2->history());
  EXPECT_NE(s1->history(), s3->history());
}

TEST(ImageSession, WhatIsRefused) {
  {  // No mmproj: encoding and queueing are refused by name.
    auto e = Engine::load({.model_path = text_model(), .n_threads = 1});
    ASSERT_TRUE(e.ok());
    auto img = (*e)->encode_image_file(vision_dir() + "/disc-64x48.png");
    ASSERT_FALSE(img.ok());
    EXPECT_NE(img.message().find("mmproj"), std::string::npos) << img.message();
    auto s = open_session(**e, "full", 0);
    Image fake{.name = "fake", .n_tokens = 1, .n_embd = 64,
               .rows = std::make_shared<const std::vector<float>>(64, 0.f)};
    const Status st = s->queue_image(fake);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("mmproj"), std::string::npos) << st.message();
    EXPECT_TRUE(s->history().empty());
  }
  const std::string dir = ::testing::TempDir();
  {  // A projector of another width: one line naming both files.
    const std::string mm = dir + "/narrow.gguf";
    ASSERT_TRUE(make_random_mmproj({.projection_dim = 32}, mm).ok());
    auto e = Engine::load({.model_path = text_model(), .mmproj_path = mm});
    ASSERT_FALSE(e.ok());
    EXPECT_NE(e.message().find(mm), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("gemma4-f32.gguf"), std::string::npos) << e.message();
  }
  {  // A projector of another family's width: refused by family.
    const std::string other = std::string(TOVA_TEST_DATA_DIR) + "/arch/gemma3-f32.gguf";
    auto m = model::Model::load(other);
    ASSERT_TRUE(m.ok());
    const std::string mm = dir + "/for-gemma3.gguf";
    ASSERT_TRUE(make_random_mmproj({.projection_dim = (*m)->config().n_embd}, mm).ok());
    auto e = Engine::load({.model_path = other, .mmproj_path = mm});
    ASSERT_FALSE(e.ok());
    EXPECT_NE(e.message().find("gemma4"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("gemma3-f32.gguf"), std::string::npos) << e.message();
  }
  auto e = open_engine();
  ASSERT_NE(e, nullptr);
  {  // Hostile bytes: one error each.
    auto bytes = vision::read_file_bytes(vision_dir() + "/disc-64x48.png");
    ASSERT_TRUE(bytes.ok());
    const std::vector<uint8_t> cut(bytes->begin(), bytes->begin() + 40);
    for (const std::vector<uint8_t>& b : {cut, std::vector<uint8_t>{}, std::vector<uint8_t>(64, 7)}) {
      auto img = e->encode_image(b, "hostile");
      ASSERT_FALSE(img.ok());
      EXPECT_NE(img.message().find("hostile"), std::string::npos) << img.message();
    }
  }
  {  // Rows of another width, an image larger than a session takes, speculative decoding.
    auto s = open_session(*e, "full", 0);
    Image wide{.name = "wide", .n_tokens = 2, .n_embd = 32,
               .rows = std::make_shared<const std::vector<float>>(64, 0.f)};
    EXPECT_FALSE(s->queue_image(wide).ok());
    const int n = e->max_image_tokens() + 1;
    Image big{.name = "big", .n_tokens = n, .n_embd = 64,
              .rows = std::make_shared<const std::vector<float>>(size_t(n) * 64, 0.f)};
    const Status st = s->queue_image(big);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("big"), std::string::npos) << st.message();
    EXPECT_TRUE(s->history().empty());
    auto cache = parse_cache_options("full", 0);
    auto sp = e->new_session({.cache = *cache, .speculative = {.type = "ngram-simple"}});
    ASSERT_TRUE(sp.ok()) << sp.message();
    auto img = e->encode_image_file(vision_dir() + "/disc-64x48.png");
    ASSERT_TRUE(img.ok());
    EXPECT_FALSE((*sp)->queue_image(*img).ok());
  }
}

}  // namespace
}  // namespace tova
