// Images through a Session (Engine with an mmproj, Session::queue_image, the batch scheduler):
// the logits after the image against llama.cpp's libmtmd (tests/data/vision, the same goldens
// and tolerance as gemma4_image_text_test.cpp), image states under bounded policies, the
// engine's memory of encoded images, and what is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "core/hash.h"
#include "kv/policy_registry.h"
#include "kv/positions.h"
#include "model/model.h"
#include "runtime/engine_access.h"
#include "runtime/session_file.h"
#include "runtime/session_impl.h"
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


// --kv-keep-images (CacheOptions::keep_images).

std::unique_ptr<Session> open_keeping(const Engine& e, const std::string& policy, int budget,
                                      const std::string& prefill = "exact",
                                      const std::string& positions = "absolute",
                                      int max_kept = 8) {
  auto cache = parse_cache_options(policy, budget, prefill, "f32", positions);
  if (!cache.ok()) return nullptr;
  cache->keep_images = true;
  cache->max_kept_images = max_kept;
  auto s = e.new_session({.cache = *cache, .sampling = {.temp = 0}});
  return s.ok() ? std::move(s).value() : nullptr;
}

// spec/POSITIONS.md's gap compression, written here from the spec.
int64_t spec_gap(int64_t d) {
  return d <= 10 ? d : static_cast<int64_t>(std::ceil(10 + std::log(std::log(d - 10 + M_E))));
}

// Checks that every layer of s holds every state of the images at `images` (a window layer:
// those its window still shows), in every KV head, at their own positions, and that the
// positions the mode maps them to are the spec's functions of the held positions; returns the
// text states a non-window layer holds per KV head (its largest).
int check_images_held(const Session& s, std::span<const kv::PosRange> images,
                      kv::PositionMode mode) {
  const kv::MultiState& st = runtime::state_of(s);
  const int64_t last = st.n_seen() - 1;
  int most_text = 0;
  for (int il = 0; il < st.n_layer(); ++il) {
    const kv::LayerState& L = st.layer(il);
    for (int g = 0; g < L.n_head_kv(); ++g) {
      std::vector<int64_t> held;
      for (int sl = 0; sl < L.n_slot(); ++sl) {
        const int64_t p = L.pos()[static_cast<size_t>(g) * L.n_slot() + sl];
        if (p >= 0) held.push_back(p);
      }
      std::sort(held.begin(), held.end());
      int n_image = 0;
      for (const kv::PosRange& r : images) {
        for (int64_t p = r.begin; p < r.end; ++p) {
          if (L.window() > 0 && p <= last - L.window() + 1) continue;  // out of the window
          ++n_image;
          EXPECT_TRUE(std::binary_search(held.begin(), held.end(), p))
              << "layer " << il << " head " << g << " lost image position " << p;
        }
      }
      if (L.window() == 0) most_text = std::max(most_text, static_cast<int>(held.size()) - n_image);
      // The positions RoPE sees: absolute keeps them, rank and gap map the held ones.
      std::vector<int64_t> mapped(held.size());
      kv::map_positions(mode, held, mapped);
      int64_t want = 0;
      for (size_t i = 0; i < held.size(); ++i) {
        if (mode == kv::PositionMode::kAbsolute) want = held[i];
        if (mode == kv::PositionMode::kRank) want = static_cast<int64_t>(i);
        if (mode == kv::PositionMode::kGap) {
          want += spec_gap(i == 0 ? held[0] : held[i] - held[i - 1]);
        }
        EXPECT_EQ(mapped[i], want) << "layer " << il << " position " << held[i];
      }
    }
  }
  return most_text;
}

// Every policy example x exact/chunk:8 x absolute/gap/rank with --kv-keep-images at budget 16:
// two images (48 tokens each, more than the budget) and text well past the budget; every image
// state is still held in every layer and KV head, at its position, and the text keeps its
// budget beside them.
TEST(ImageSession, KeepImagesHoldsEveryImageStateUnderEveryPolicy) {
  auto e = open_engine();
  ASSERT_NE(e, nullptr);
  auto img = e->encode_image_file(vision_dir() + "/disc-64x48.png");
  ASSERT_TRUE(img.ok()) << img.message();
  constexpr int kBudget = 16;
  ASSERT_GT(img->n_tokens, kBudget);
  int n_ok = 0, n_refused = 0;
  for (const std::string& policy : kv::all_policy_examples()) {
    for (const char* prefill : {"exact", "chunk:8"}) {
      for (const char* positions : {"absolute", "gap", "rank"}) {
        SCOPED_TRACE(policy + " " + prefill + " " + positions);
        auto cache = parse_cache_options(policy, kBudget, prefill, "f32", positions);
        if (!cache.ok()) continue;  // a form that needs another budget
        cache->keep_images = true;
        auto made = e->new_session({.cache = *cache, .sampling = {.temp = 0}});
        if (!made.ok()) {  // refused by the policy's own rule, as without keep_images
          EXPECT_FALSE(made.message().empty());
          ++n_refused;
          continue;
        }
        Session& s = **made;
        std::vector<kv::PosRange> images;
        queue_prompt(*e, s, *img);
        const Status fed = s.feed({});
        if (!fed.ok()) {
          EXPECT_FALSE(fed.message().empty());
          ++n_refused;
          continue;
        }
        ++n_ok;
        // The image's positions: its tokens' places in the history.
        auto image_at = [&](size_t from) {
          const auto& h = s.history();
          const auto it = std::find(h.begin() + static_cast<long>(from), h.end(),
                                    image_token_id(img->id, 0));
          const int64_t b = it - h.begin();
          return kv::PosRange{.begin = b, .end = b + img->n_tokens};
        };
        images.push_back(image_at(0));
        for (int i = 0; i < 12; ++i) ASSERT_TRUE(s.decode().ok());
        ASSERT_TRUE(s.queue_image(*img).ok());
        ASSERT_TRUE(s.feed({}).ok());
        images.push_back(image_at(static_cast<size_t>(images[0].end)));
        s.queue(e->tokenize(kAfter, false, true));
        ASSERT_TRUE(s.feed({}).ok());
        for (int i = 0; i < 12; ++i) ASSERT_TRUE(s.decode().ok());
        const kv::PositionMode mode = cache->positions;
        const int text = check_images_held(s, images, mode);
        const SessionStats st = s.stats();
        EXPECT_TRUE(st.keep_images);
        EXPECT_EQ(st.n_images_held, 2);
        for (const StateKindStats& k : st.kinds) {
          if (k.kind != "bounded" || k.limit < 0) continue;
          // Text keeps at most its budget (rkv: and its buffer) beside the images.
          if (policy.find("rkv") == std::string::npos) {
            EXPECT_LE(text, k.limit);
          }
          // Every image state of every bounded layer and KV head.
          int64_t want = 0;
          const kv::MultiState& ms = runtime::state_of(s);
          for (int il = 0; il < ms.n_layer(); ++il) {
            if (ms.layer(il).window() == 0) {
              want += int64_t{2} * img->n_tokens * ms.layer(il).n_head_kv();
            }
          }
          EXPECT_EQ(k.image_rows, want) << k.kind;
        }
      }
    }
  }
  std::printf("[ figures ] --kv-keep-images: %d policy x prefill x position forms held every "
              "image state, %d refused (as without it)\n",
              n_ok, n_refused);
  EXPECT_GT(n_ok, 60);
}

// The budget rule: image states are held beside the budget, so a budget that holds the text
// holds everything, and every policy example then equals `full` bit for bit (logits after every
// token), though the image alone is three times the budget.
TEST(ImageSession, KeepImagesUnderABudgetThatHoldsTheTextEqualsFull) {
  auto e = open_engine();
  ASSERT_NE(e, nullptr);
  auto img = e->encode_image_file(vision_dir() + "/disc-64x48.png");
  ASSERT_TRUE(img.ok()) << img.message();
  const std::vector<int32_t> before = e->tokenize(kBefore, true, true);
  const std::vector<int32_t> after = e->tokenize(kAfter, false, true);
  auto logits_of = [&](Session& s) {
    std::vector<float> out;
    s.queue(before);
    EXPECT_TRUE(s.queue_image(*img).ok());
    EXPECT_TRUE(s.feed({}).ok());
    out.assign(s.logits().begin(), s.logits().end());
    for (const int32_t t : after) {
      EXPECT_TRUE(s.feed({&t, 1}).ok());
      out.insert(out.end(), s.logits().begin(), s.logits().end());
    }
    return out;
  };
  auto full = open_session(*e, "full", 0);
  ASSERT_NE(full, nullptr);
  const std::vector<float> want = logits_of(*full);
  // Text tokens: BOS, the text, the image's two markers, the text after it.
  const int n_text = static_cast<int>(full->n_seen()) - img->n_tokens;
  ASSERT_LT(n_text, img->n_tokens);
  int n_equal = 0, n_forms = 0;
  for (const std::string& policy : kv::all_policy_examples()) {
    SCOPED_TRACE(policy);
    // pyramidkv gives some layers less than k (its pyramid): k does not hold the text there.
    if (policy.rfind("pyramidkv", 0) == 0) continue;
    ++n_forms;
    auto s = open_keeping(*e, policy, n_text);
    if (s == nullptr) continue;  // refused by its own rule
    const std::vector<float> got = logits_of(*s);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)));
    ++n_equal;
    // Without keep_images the same budget must evict (the check is not vacuous).
    if (policy == "tova") {
      auto plain = open_session(*e, policy, n_text);
      const std::vector<float> evicted = logits_of(*plain);
      EXPECT_NE(0, std::memcmp(evicted.data(), want.data(), want.size() * sizeof(float)));
    }
  }
  std::printf("[ figures ] --kv-keep-images at k = %d text tokens beside a %d-token image: %d of "
              "%d policy examples equal full bit for bit (the rest refused by their own rule)\n",
              n_text, img->n_tokens, n_equal, n_forms);
  EXPECT_GE(n_equal, 15);
}

// A session file saved with kept image states (text past the budget) keeps the marks: loaded, it
// continues token for token, and its image states stay held through another image.
TEST(ImageSession, KeepImagesSessionFileContinuesTokenForToken) {
  auto e = open_engine();
  ASSERT_NE(e, nullptr);
  auto img = e->encode_image_file(vision_dir() + "/disc-64x48.png");
  ASSERT_TRUE(img.ok()) << img.message();
  for (const char* positions : {"absolute", "gap"}) {
    SCOPED_TRACE(positions);
    auto s = open_keeping(*e, "h2o", 16, "exact", positions, 3);
    ASSERT_NE(s, nullptr);
    queue_prompt(*e, *s, *img);
    ASSERT_TRUE(s->feed({}).ok());
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(s->decode().ok());
    const std::string path = ::testing::TempDir() + "/keep-images-session.bin";
    ASSERT_TRUE(s->save(path).ok());
    auto loaded = e->load_session(path, {.sampling = {.temp = 0}});
    ASSERT_TRUE(loaded.ok()) << loaded.message();
    Session& r = *loaded->session;
    const kv::MultiState& a = runtime::state_of(*s);
    const kv::MultiState& b = runtime::state_of(r);
    EXPECT_TRUE(b.keep_images());
    EXPECT_EQ(b.max_kept_images(), 3);
    EXPECT_EQ(b.images(), a.images());
    EXPECT_EQ(r.stats().kinds.front().image_rows, s->stats().kinds.front().image_rows);
    EXPECT_EQ(r.cache().label(), s->cache().label());
    for (int i = 0; i < 16; ++i) {
      auto x = s->decode();
      auto y = r.decode();
      ASSERT_TRUE(x.ok() && y.ok());
      EXPECT_EQ(*x, *y) << i;
    }
    // Both take another image and go on alike; the first image's states stay held.
    ASSERT_TRUE(s->queue_image(*img).ok());
    ASSERT_TRUE(r.queue_image(*img).ok());
    ASSERT_TRUE(s->feed({}).ok());
    ASSERT_TRUE(r.feed({}).ok());
    for (int i = 0; i < 8; ++i) {
      auto x = s->decode();
      auto y = r.decode();
      ASSERT_TRUE(x.ok() && y.ok());
      EXPECT_EQ(*x, *y) << i;
    }
    EXPECT_EQ(r.stats().n_images_held, 2);
    check_images_held(r, b.images(), b.positions());
    std::remove(path.c_str());
  }
  // Hostile marks: a kept flag of 2, an image past the tokens seen, images out of order; each
  // one error line. The marks follow the tokens seen: header 32, fingerprint 8, architecture
  // (4 + 6), recurrent count 4, policy name (4 + 3), arg and budget 8, positions 1, K/V format 7,
  // chunk size 4, tokens seen 8.
  const model::Model& m = EngineAccess::model(*e);
  auto s = open_keeping(*e, "h2o", 16, "exact", "absolute", 3);
  queue_prompt(*e, *s, *img);
  ASSERT_TRUE(s->feed({}).ok());
  const std::vector<uint8_t> good = runtime::encode_session(m, runtime::session_data(*s, -1));
  const size_t at = 32 + 8 + 4 + 6 + 4 + 4 + 3 + 8 + 1 + 7 + 4 + 8;
  ASSERT_EQ(good[at], 1);  // kept
  auto sealed = [](std::vector<uint8_t> b) {
    const uint64_t size = b.size() - 32, hash = fnv1a(b.data() + 32, size);
    std::memcpy(&b[16], &size, 8);
    std::memcpy(&b[24], &hash, 8);
    return b;
  };
  ASSERT_TRUE(runtime::decode_session_bytes(m, good, e->max_image_tokens()).ok());
  int64_t seen = 0;
  std::memcpy(&seen, &good[at - 8], 8);
  // After the kept flag: u32 most kept, u32 count, then the first image's begin and end.
  const size_t first = at + 1 + 4 + 4;
  for (const auto& [field, value, needle] :
       {std::tuple<size_t, int64_t, const char*>{at, 2, "invalid image marks"},
        {first + 8, seen + 1, "invalid image at positions"},  // ends past the tokens seen
        {first, -5, "invalid image at positions"}}) {         // starts before 0
    std::vector<uint8_t> bad = good;
    if (field == at) {
      bad[at] = static_cast<uint8_t>(value);
    } else {
      std::memcpy(&bad[field], &value, 8);
    }
    auto r = runtime::decode_session_bytes(m, sealed(bad), e->max_image_tokens());
    ASSERT_FALSE(r.ok()) << needle;
    EXPECT_NE(r.message().find(needle), std::string::npos) << r.message();
    EXPECT_EQ(r.message().find('\n'), std::string::npos);
  }
  // Without keep-images the file marks the images some layer still holds, no others: window
  // k = 32 over two 48-token images in a row (the first still held when the second is marked)
  // forgets the first.
  {
    auto plain = open_session(*e, "window", 32);
    plain->queue(e->tokenize(kBefore, /*add_bos=*/true, /*parse_special=*/true));
    ASSERT_TRUE(plain->queue_image(*img).ok());
    ASSERT_TRUE(plain->queue_image(*img).ok());
    ASSERT_TRUE(plain->feed({}).ok());
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(plain->decode().ok());
    const kv::MultiState& ps = runtime::state_of(*plain);
    ASSERT_EQ(ps.images().size(), 2u);
    ASSERT_EQ(ps.images_held().size(), 1u);
    auto back = runtime::decode_session_bytes(
        m, runtime::encode_session(m, runtime::session_data(*plain, -1)), e->max_image_tokens());
    ASSERT_TRUE(back.ok()) << back.message();
    EXPECT_FALSE(back->state->keep_images());
    EXPECT_EQ(back->state->images(), ps.images_held());
  }
  // A file that keeps images, loaded by an engine without an mmproj: refused by name.
  auto no_mmproj = runtime::decode_session_bytes(m, good, 0);
  ASSERT_FALSE(no_mmproj.ok());
  EXPECT_NE(no_mmproj.message().find("--mmproj"), std::string::npos) << no_mmproj.message();
}

// What keep_images refuses, and what it counts: no mmproj (a text-only engine) refuses the
// session by name; an image past --kv-keep-images-max is refused (nothing queued); the memory
// the library and the server reserve is what the state can reach with the kept images.
TEST(ImageSession, KeepImagesRefusalsAndMemory) {
  {
    auto text_only = Engine::load({.model_path = text_model(), .n_threads = 1});
    ASSERT_TRUE(text_only.ok());
    auto cache = parse_cache_options("tova", 16);
    cache->keep_images = true;
    auto s = (*text_only)->new_session({.cache = *cache});
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("--mmproj"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("--kv-keep-images"), std::string::npos) << s.message();
  }
  auto e = open_engine();
  ASSERT_NE(e, nullptr);
  {
    auto cache = parse_cache_options("tova", 16);
    cache->keep_images = true;
    cache->max_kept_images = 0;
    auto s = e->new_session({.cache = *cache});
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("--kv-keep-images-max 0"), std::string::npos) << s.message();
  }
  auto img = e->encode_image_file(vision_dir() + "/disc-64x48.png");
  ASSERT_TRUE(img.ok()) << img.message();
  for (const char* policy : {"tova", "window", "full"}) {
    SCOPED_TRACE(policy);
    auto s = open_keeping(*e, policy, 16, "exact", "absolute", 2);
    ASSERT_NE(s, nullptr);
    queue_prompt(*e, *s, *img);
    ASSERT_TRUE(s->queue_image(*img).ok());  // two queued: the most
    const size_t n_hist = s->history().size();
    const Status third = s->queue_image(*img);
    ASSERT_FALSE(third.ok());
    EXPECT_NE(third.message().find("--kv-keep-images-max 2"), std::string::npos)
        << third.message();
    EXPECT_EQ(s->history().size(), n_hist);
    ASSERT_TRUE(s->feed({}).ok());
    for (int i = 0; i < 24; ++i) ASSERT_TRUE(s->decode().ok());
    EXPECT_FALSE(s->queue_image(*img).ok());  // fed, and still kept
    // Memory: the state reaches no more than it says, and the engine reserves that much.
    const kv::MultiState& st = runtime::state_of(*s);
    const SessionStats stats = s->stats();
    auto cache = parse_cache_options(policy, 16);
    cache->keep_images = true;
    cache->max_kept_images = 2;
    const uint64_t reserved = e->reserve_bytes(*cache, 1, 4096);
    if (st.budget() >= 0) {
      EXPECT_LE(stats.kv_capacity, st.max_bytes());
      EXPECT_EQ(reserved, st.max_bytes());
      cache->keep_images = false;
      EXPECT_LT(e->reserve_bytes(*cache, 1, 4096), reserved);
    }
  }
}

}  // namespace
}  // namespace tova
