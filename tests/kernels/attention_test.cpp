// The fused attention kernel against its double-precision scalar reference: free slots, causal
// limits, GQA group sizes, F16 storage, score output, head ranges that split groups, scratch
// sizes, and every SIMD target the CPU supports.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "core/half.h"
#include "core/kv_type.h"
#include "hwy/targets.h"
#include "kernels/attention.h"

namespace tova::kernels {
namespace {

enum class Mask {
  kAllVisible,    // every slot live and within the causal limit
  kMixed,         // every 5th slot free, a few beyond the causal limit
  kMostlyMasked,  // about one slot in 16 visible
};

constexpr KvType kF32 = KvType::kF32, kF16 = KvType::kF16, kBF16 = KvType::kBF16,
                 kQ8 = KvType::kQ8_0, kQ4 = KvType::kQ4_0;

struct Shape {
  int n_head, n_head_kv, head_dim, n_slot;
  KvType k = kF32;  // storage of the keys
  Mask mask = Mask::kMixed;
  int v = -1;          // storage of the values as a KvType tag; -1: as the keys
  bool rotate = false;  // quantized rows stored Hadamard-rotated
  KvType vt() const { return v < 0 ? k : static_cast<KvType>(v); }
};

void PrintTo(const Shape& s, std::ostream* os) {
  *os << "{n_head " << s.n_head << ", n_head_kv " << s.n_head_kv << ", head_dim " << s.head_dim
      << ", n_slot " << s.n_slot << ", k " << kv_type_name(s.k) << ", v " << kv_type_name(s.vt())
      << (s.rotate ? ", rotated" : "") << ", mask " << static_cast<int>(s.mask) << "}";
}

std::string shape_name(const ::testing::TestParamInfo<Shape>& info) {
  const Shape& s = info.param;
  const char* m = s.mask == Mask::kAllVisible ? "all" : s.mask == Mask::kMixed ? "mixed" : "sparse";
  std::string name = "h";
  for (const std::string& part :
       {std::to_string(s.n_head), std::string("kv"), std::to_string(s.n_head_kv), std::string("d"),
        std::to_string(s.head_dim), std::string("s"), std::to_string(s.n_slot),
        std::string(kv_type_name(s.k)), std::string(s.v < 0 ? "" : "v"),
        std::string(s.v < 0 ? "" : kv_type_name(s.vt())), std::string(s.rotate ? "rot" : ""),
        std::string(m)}) {
    name += part;
  }
  return name;
}

// Random inputs for one shape; args() points an AttentionArgs at them.
struct Problem {
  Shape su;
  std::vector<float> q, k, v;
  std::vector<uint8_t> k_pool, v_rows;  // stored as the attention reads them
  std::vector<int64_t> pos;
  int64_t max_pos = 0;
  int64_t min_pos = 0;   // a sliding window's lower limit (0: none)
  float softcap = 0.f;   // attention soft-capping (0: none)
  std::vector<float> sinks;  // [n_head] attention sink logits (empty: none)
  int slot_end = -1;     // slots read per KV head (-1: all)

  explicit Problem(const Shape& s, uint32_t seed = 7) : su(s) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.f, 1.f);
    const size_t kv_n = static_cast<size_t>(su.n_head_kv) * su.n_slot * su.head_dim;
    q.resize(static_cast<size_t>(su.n_head) * su.head_dim);
    k.resize(kv_n);
    v.resize(kv_n);
    // Queries of norm ~2 sqrt(head_dim) give peaked as well as flat score rows.
    for (auto& x : q) x = 2.f * nd(rng);
    for (auto& x : k) x = nd(rng);
    for (auto& x : v) x = nd(rng);
    // Quantized keys get a large channel, as RoPE'd keys have: what the rotation is for.
    if (kv_quantized(su.k)) {
      for (size_t i = 0; i < kv_n; i += su.head_dim) k[i] *= 8.f;
    }
    store();
    pos.resize(static_cast<size_t>(su.n_head_kv) * su.n_slot);
    max_pos = su.n_slot;
    for (size_t i = 0; i < pos.size(); ++i) {
      const int64_t p = static_cast<int64_t>((i * 7919) % (su.n_slot + 3));
      switch (su.mask) {
        case Mask::kAllVisible:
          pos[i] = p % (su.n_slot + 1);
          break;
        case Mask::kMixed:
          pos[i] = i % 5 == 0 ? -1 : p;
          break;
        case Mask::kMostlyMasked:
          if ((i * 2654435761u) % 16 == 3) {
            pos[i] = p % max_pos;
          } else {
            pos[i] = i % 2 ? -1 : max_pos + 1 + p;  // free, or beyond the causal limit
          }
          break;
      }
    }
    // At least one visible state per KV head.
    for (int g = 0; g < su.n_head_kv; ++g) pos[static_cast<size_t>(g) * su.n_slot] = 0;
  }

  // The rows in their storage types, as LayerState lays them out (core/kv_type.h).
  void store() {
    const int hd = su.head_dim;
    const size_t k_row = kv_row_bytes(su.k, hd), v_row = kv_row_bytes(su.vt(), hd);
    const size_t k_head = key_pool_bytes(su.k, hd, su.n_slot);
    k_pool.assign(su.n_head_kv * k_head, 0);
    v_rows.assign(static_cast<size_t>(su.n_head_kv) * su.n_slot * v_row, 0);
    std::vector<uint8_t> row(k_row);
    std::vector<float> x(hd);
    for (int g = 0; g < su.n_head_kv; ++g) {
      for (int s = 0; s < su.n_slot; ++s) {
        const size_t at = static_cast<size_t>(g) * su.n_slot + s;
        std::copy_n(&k[at * hd], hd, x.data());
        if (su.rotate && kv_quantized(su.k)) hadamard_ref(x.data(), hd);
        kv_quantize_row_ref(su.k, x.data(), row.data(), hd);
        key_put_row(su.k, hd, &k_pool[g * k_head + key_tile_offset(su.k, hd, s)],
                    s % key_tile_slots(su.k), row.data());
        std::copy_n(&v[at * hd], hd, x.data());
        if (su.rotate && kv_quantized(su.vt())) hadamard_ref(x.data(), hd);
        kv_quantize_row_ref(su.vt(), x.data(), &v_rows[at * v_row], hd);
      }
    }
  }

  bool visible(int h, int s) const {
    const int group = su.n_head / su.n_head_kv;
    const int64_t p = pos[static_cast<size_t>(h / group) * su.n_slot + s];
    if (slot_end >= 0 && s >= slot_end) return false;
    return p >= 0 && p >= min_pos && p <= max_pos;
  }

  AttentionArgs args(float* out, float* probs, float* scratch) const {
    return {.q = q.data(),
            .n_head = su.n_head,
            .n_head_kv = su.n_head_kv,
            .head_dim = su.head_dim,
            .n_slot = su.n_slot,
            .slot_end = slot_end,
            .k = k_pool.data(),
            .v = v_rows.data(),
            .k_type = su.k,
            .v_type = su.vt(),
            .k_rotated = su.rotate && kv_quantized(su.k),
            .v_rotated = su.rotate && kv_quantized(su.vt()),
            .pos = pos.data(),
            .max_pos = max_pos,
            .min_pos = min_pos,
            .scale = 1.f / std::sqrt(static_cast<float>(su.head_dim)),
            .softcap = softcap,
            .sinks = sinks.empty() ? nullptr : sinks.data(),
            .out = out,
            .probs = probs,
            .scratch = scratch};
  }
};

// attention() with probs against attention_ref: outputs within 1e-5 relative, probabilities
// within 1e-6 absolute, unseen slots exactly 0, rows summing to 1.
void expect_matches_ref(const Problem& pb) {
  const Shape& su = pb.su;
  std::vector<float> out(su.n_head * su.head_dim, -7.f), out_ref(out.size());
  std::vector<float> probs(static_cast<size_t>(su.n_head) * su.n_slot, -1.f);
  std::vector<float> probs_ref(probs.size(), -1.f);
  std::vector<float> scratch(su.n_slot);
  attention(pb.args(out.data(), probs.data(), scratch.data()));
  attention_ref(pb.args(out_ref.data(), probs_ref.data(), scratch.data()));
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_NEAR(out[i], out_ref[i], 1e-5 * std::max(1.f, std::fabs(out_ref[i]))) << "out " << i;
  }
  for (int h = 0; h < su.n_head; ++h) {
    double sum = 0, sum_ref = 0;
    for (int s = 0; s < su.n_slot; ++s) {
      const size_t i = static_cast<size_t>(h) * su.n_slot + s;
      ASSERT_NEAR(probs[i], probs_ref[i], 1e-6) << "head " << h << " slot " << s;
      if (!pb.visible(h, s)) {
        ASSERT_EQ(probs[i], 0.f) << "unseen slot got a score";
      }
      sum += probs[i];
      sum_ref += probs_ref[i];
    }
    // With a sink the seen slots share 1 - p_sink.
    EXPECT_NEAR(sum, pb.sinks.empty() ? 1.0 : sum_ref, 1e-5) << "head " << h;
    if (!pb.sinks.empty()) {
      EXPECT_LE(sum, 1.0 + 1e-6) << "head " << h;
    }
  }
}

// Every way of calling attention() gives the same bits as one call with probs: no probs (one-row
// and whole-group scratch) and head ranges that start and end inside GQA groups. Rows outside a
// call's range are left alone.
void expect_call_invariance(const Problem& pb) {
  const Shape& su = pb.su;
  const size_t out_n = static_cast<size_t>(su.n_head) * su.head_dim;
  const size_t probs_n = static_cast<size_t>(su.n_head) * su.n_slot;
  const int group = su.n_head / su.n_head_kv;
  std::vector<float> out(out_n), probs(probs_n), scratch(su.n_slot);
  attention(pb.args(out.data(), probs.data(), scratch.data()));

  for (int64_t rows : {1, 2, group}) {
    std::vector<float> out2(out_n, -7.f), scratch2(static_cast<size_t>(rows) * su.n_slot);
    AttentionArgs a = pb.args(out2.data(), nullptr, scratch2.data());
    a.scratch_size = static_cast<int64_t>(scratch2.size());
    attention(a);
    ASSERT_EQ(0, std::memcmp(out2.data(), out.data(), out_n * sizeof(float))) << rows << " rows";
  }
  for (int width : {1, 2, 3, 5}) {
    for (bool with_probs : {false, true}) {
      std::vector<float> out2(out_n, -7.f), probs2(probs_n, -1.f);
      for (int h0 = 0; h0 < su.n_head; h0 += width) {
        const int h1 = std::min(su.n_head, h0 + width);
        std::vector<float> scratch2(static_cast<size_t>(h1 - h0) * su.n_slot);
        AttentionArgs a =
            pb.args(out2.data(), with_probs ? probs2.data() : nullptr, scratch2.data());
        a.scratch_size = static_cast<int64_t>(scratch2.size());
        a.head_begin = h0;
        a.head_end = h1;
        attention(a);
        // Heads past this range are untouched so far.
        for (size_t i = static_cast<size_t>(h1) * su.head_dim; i < out_n; ++i) {
          ASSERT_EQ(out2[i], -7.f) << "range [" << h0 << ", " << h1 << ") wrote out " << i;
        }
        for (size_t i = static_cast<size_t>(h1) * su.n_slot; i < probs_n; ++i) {
          ASSERT_EQ(probs2[i], -1.f) << "range [" << h0 << ", " << h1 << ") wrote probs " << i;
        }
      }
      ASSERT_EQ(0, std::memcmp(out2.data(), out.data(), out_n * sizeof(float))) << width;
      if (with_probs) {
        ASSERT_EQ(0, std::memcmp(probs2.data(), probs.data(), probs_n * sizeof(float))) << width;
      }
    }
  }
}

// attention_scores / attention_normalize / attention_outputs, with the slots and the heads cut
// into 1-3 parts at awkward points (slots not a multiple of 4, heads inside GQA groups), give
// the bits of one attention() call: outputs and probabilities. The same with
// only the lower slots read (slot_end), as after a drop.
void expect_split_passes_match(const Problem& whole) {
  const Problem lower = [&] {
    Problem p = whole;
    p.slot_end = whole.slot_end >= 0 ? whole.slot_end : whole.su.n_slot / 2 + 1;
    return p;
  }();
  for (const Problem* pb : {&whole, &lower}) {
    const Shape& su = pb->su;
    const size_t out_n = static_cast<size_t>(su.n_head) * su.head_dim;
    const size_t probs_n = static_cast<size_t>(su.n_head) * su.n_slot;
    std::vector<float> out(out_n), probs(probs_n), scratch(su.n_slot);
    attention(pb->args(out.data(), probs.data(), scratch.data()));
    const int end = pb->slot_end < 0 ? su.n_slot : pb->slot_end;
    for (int parts : {1, 2, 3}) {
      for (bool with_probs : {false, true}) {
        SCOPED_TRACE(::testing::Message() << parts << " parts, slot_end " << pb->slot_end
                                          << (with_probs ? ", probs" : ""));
        std::vector<float> out2(out_n, -7.f), rows(probs_n, -1.f);
        const AttentionArgs a = pb->args(out2.data(), with_probs ? rows.data() : nullptr, nullptr);
        for (int t = 0; t < parts; ++t) {
          attention_scores(a, rows.data(), end * t / parts, end * (t + 1) / parts);
        }
        for (int t = 0; t < parts; ++t) {
          attention_normalize(a, rows.data(), su.n_head * t / parts, su.n_head * (t + 1) / parts);
        }
        for (int t = 0; t < parts; ++t) {
          AttentionArgs part = a;
          part.head_begin = su.n_head * t / parts;
          part.head_end = su.n_head * (t + 1) / parts;
          attention_outputs(part, rows.data());
        }
        ASSERT_EQ(0, std::memcmp(out2.data(), out.data(), out_n * sizeof(float)));
        if (with_probs) {
          ASSERT_EQ(0, std::memcmp(rows.data(), probs.data(), probs_n * sizeof(float)));
        }
      }
    }
  }
}

class AttentionVsRef : public ::testing::TestWithParam<Shape> {};

TEST_P(AttentionVsRef, Matches) { expect_matches_ref(Problem(GetParam())); }

TEST_P(AttentionVsRef, SameBitsForEveryCallShape) { expect_call_invariance(Problem(GetParam())); }

TEST_P(AttentionVsRef, SplitPassesGiveTheSameBits) {
  expect_split_passes_match(Problem(GetParam()));
}

std::vector<Shape> shapes() {
  std::vector<Shape> v = {
      {1, 1, 8, 1, kF32},
      {8, 4, 8, 7, kF32},
      {8, 2, 32, 33, kF32},
      {8, 2, 32, 33, kF16},
      {32, 4, 64, 513, kF32},
      {9, 3, 64, 129, kF16},
      // head_dim that no full vector divides: 8- and 4-lane and scalar paths.
      {6, 2, 40, 33, kF32},
      {6, 2, 20, 65, kF16},
      {4, 1, 6, 17, kF32},
      {4, 4, 3, 9, kF16},
      // Groups wider than the 16 heads processed together.
      {20, 1, 16, 70, kF32},
  };
  int i = 0;
  for (int group : {1, 3, 8, 16}) {
    for (int head_dim : {8, 64, 128}) {
      for (int n_slot : {1, 7, 33, 513, 4097}) {
        for (KvType kt : {kF32, kF16}) {
          // Keep the double-precision reference affordable for the big shapes.
          const int n_head_kv = n_slot * group * head_dim > (1 << 20) ? 1 : 2;
          const Mask mask = static_cast<Mask>(i++ % 3);
          v.push_back({group * n_head_kv, n_head_kv, head_dim, n_slot, kt, mask});
        }
      }
    }
  }
  // Stored types read directly: bf16, q8_0 and q4_0 keys and values; head_dims of blocks of 32,
  // 16 (48) and 8; slot counts around the 16-slot key tiles; GQA groups of 1, 3 and 8.
  for (KvType kt : {kBF16, kQ8, kQ4}) {
    for (int head_dim : {8, 48, 64, 128}) {
      for (int n_slot : {15, 100}) {  // a partial key tile; several tiles and a partial one
        const int group = std::vector<int>{1, 3, 8}[i % 3];
        v.push_back({group * 2, 2, head_dim, n_slot, kt, static_cast<Mask>(i++ % 3)});
      }
    }
  }
  // Keys and values in different types, and rotated quantized rows.
  for (const Shape& s : {Shape{8, 2, 64, 70, kQ8, Mask::kMixed, static_cast<int>(kF16)},
                         Shape{6, 2, 64, 33, kF16, Mask::kAllVisible, static_cast<int>(kQ4)},
                         Shape{9, 3, 64, 129, kQ4, Mask::kMixed, static_cast<int>(kQ8), true},
                         Shape{8, 1, 48, 40, kQ8, Mask::kAllVisible, -1, true},
                         Shape{4, 2, 128, 65, kQ4, Mask::kMostlyMasked, -1, true},
                         Shape{4, 2, 8, 19, kBF16, Mask::kMixed, static_cast<int>(kQ8)}}) {
    v.push_back(s);
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionVsRef, ::testing::ValuesIn(shapes()), shape_name);

// A few shapes on every SIMD target this CPU supports (the run-time dispatch only ever picks the
// best one), including partial groups.
TEST(Attention, EveryTarget) {
  const std::vector<Shape> some = {
      {8, 2, 64, 33, kF32, Mask::kMixed},      {6, 2, 64, 70, kF16, Mask::kAllVisible},
      {3, 1, 8, 7, kF32, Mask::kMostlyMasked}, {16, 1, 128, 129, kF16, Mask::kMixed},
      {6, 2, 20, 65, kF32, Mask::kMixed},      {4, 1, 6, 17, kF16, Mask::kMixed},
      {8, 2, 64, 33, kQ8, Mask::kMixed},        {9, 3, 64, 70, kQ4, Mask::kAllVisible, -1, true},
      {6, 2, 48, 17, kQ8, Mask::kMixed, static_cast<int>(kQ4)},
      {4, 1, 8, 20, kQ4, Mask::kMostlyMasked, static_cast<int>(kBF16)},
      {16, 1, 128, 129, kBF16, Mask::kMixed},   {8, 1, 16, 40, kQ8, Mask::kAllVisible, -1, true},
      // AVX2's output passes (4 heads x 16 columns, BF16 read 16 columns per load): groups of 3
      // and 5, head sizes 40 and 48 (pairs of vectors and a single one left over).
      {6, 2, 40, 33, kBF16, Mask::kMixed},
      {10, 2, 48, 70, kF16, Mask::kAllVisible, static_cast<int>(kBF16)},
  };
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    for (const Shape& s : some) {
      SCOPED_TRACE(::testing::PrintToString(s));
      const Problem pb(s, 11);
      expect_matches_ref(pb);
      expect_call_invariance(pb);
      expect_split_passes_match(pb);
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

// Sliding-window lower limits and soft-capping (Gemma): against the reference and invariant
// under every call shape, on every target; with a low cap (2) so the capping changes the
// probabilities a lot, and Gemma 2's 50.
TEST(Attention, WindowAndSoftcapMatchRefOnEveryTarget) {
  const std::vector<Shape> some = {
      {8, 2, 64, 33, kF32, Mask::kMixed},       {6, 2, 64, 70, kF16, Mask::kAllVisible},
      {16, 1, 128, 129, kF16, Mask::kMixed},     {4, 1, 32, 513, kF32, Mask::kAllVisible},
      {6, 2, 20, 65, kF32, Mask::kMostlyMasked}, {4, 4, 3, 9, kF16, Mask::kMixed},
      {8, 2, 64, 33, kQ8, Mask::kMixed},         {6, 3, 48, 70, kQ4, Mask::kAllVisible, -1, true},
  };
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    for (const Shape& s : some) {
      for (const auto& [min_frac, cap] : {std::pair<int, float>{0, 2.f}, {3, 0.f}, {2, 50.f},
                                          {3, 2.f}}) {
        Problem pb(s, 13);
        pb.min_pos = min_frac > 0 ? s.n_slot / min_frac : 0;
        pb.softcap = cap;
        // Keep one visible state per KV head (the slot at position max_pos... is masked in
        // kMostlyMasked shapes): position min_pos in slot 0.
        for (int g = 0; g < s.n_head_kv; ++g) pb.pos[static_cast<size_t>(g) * s.n_slot] = pb.min_pos;
        SCOPED_TRACE(::testing::Message() << "min_pos " << pb.min_pos << " softcap " << cap);
        expect_matches_ref(pb);
        expect_call_invariance(pb);
        expect_split_passes_match(pb);
      }
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

// Attention sinks (gpt-oss): against the reference and invariant under every call shape, on
// every target, with sinks far below, near and far above the scores.
TEST(Attention, SinksMatchRefOnEveryTarget) {
  const std::vector<Shape> some = {
      {8, 2, 64, 33, kF32, Mask::kMixed},   {6, 2, 64, 70, kF16, Mask::kAllVisible},
      {4, 1, 32, 513, kF32, Mask::kMixed},  {4, 4, 3, 9, kF16, Mask::kMixed},
      {8, 2, 64, 33, kQ8, Mask::kMixed},    {6, 3, 48, 70, kQ4, Mask::kAllVisible, -1, true},
  };
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    for (const Shape& s : some) {
      for (float level : {-30.f, 0.f, 3.f}) {
        Problem pb(s, 17);
        pb.sinks.resize(s.n_head);
        for (int h = 0; h < s.n_head; ++h) pb.sinks[h] = level + 0.5f * static_cast<float>(h % 3);
        SCOPED_TRACE(::testing::Message() << "sink level " << level);
        expect_matches_ref(pb);
        expect_call_invariance(pb);
        expect_split_passes_match(pb);
      }
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

// By hand: scores 0 and ln 3 with a sink of ln 4: the denominator is 1 + 3 + 4 = 8, so the
// probabilities are 1/8 and 3/8 and the output is 1/8 v0 + 3/8 v1.
TEST(Attention, SinkHandComputed) {
  const float q[2] = {1.f, 0.f};
  const float k[4] = {0.f, 5.f, std::log(3.f), 1.f};
  const float v[4] = {4.f, 0.f, 0.f, 8.f};
  const int64_t pos[2] = {0, 1};
  const float sink = std::log(4.f);
  float out[2], probs[2], scratch[2];
  for (auto* fn : {&attention, &attention_ref}) {
    fn({.q = q,
        .n_head = 1,
        .n_head_kv = 1,
        .head_dim = 2,
        .n_slot = 2,
        .k = k,
        .v = v,
        .pos = pos,
        .max_pos = 1,
        .scale = 1.f,
        .sinks = &sink,
        .out = out,
        .probs = probs,
        .scratch = scratch});
    EXPECT_NEAR(probs[0], 0.125f, 1e-6);
    EXPECT_NEAR(probs[1], 0.375f, 1e-6);
    EXPECT_NEAR(out[0], 0.5f, 1e-6);
    EXPECT_NEAR(out[1], 3.f, 1e-6);
  }
}

// min_pos hides exactly the states below it: the same bits as a pool where they are free.
TEST(Attention, MinPosEqualsFreeingTheStatesBelowIt) {
  for (const Shape& s : {Shape{8, 2, 64, 130, kF32, Mask::kAllVisible},
                         Shape{6, 3, 32, 77, kF16, Mask::kMixed}}) {
    Problem windowed(s, 5);
    windowed.min_pos = 40;
    for (int g = 0; g < s.n_head_kv; ++g) windowed.pos[static_cast<size_t>(g) * s.n_slot] = 40;
    Problem freed = windowed;
    freed.min_pos = 0;
    for (int64_t& p : freed.pos) {
      if (p < 40) p = -1;
    }
    const size_t out_n = static_cast<size_t>(s.n_head) * s.head_dim;
    const size_t probs_n = static_cast<size_t>(s.n_head) * s.n_slot;
    std::vector<float> out_a(out_n), out_b(out_n), probs_a(probs_n), probs_b(probs_n);
    std::vector<float> scratch(s.n_slot);
    attention(windowed.args(out_a.data(), probs_a.data(), scratch.data()));
    attention(freed.args(out_b.data(), probs_b.data(), scratch.data()));
    EXPECT_EQ(0, std::memcmp(out_a.data(), out_b.data(), out_n * sizeof(float)));
    EXPECT_EQ(0, std::memcmp(probs_a.data(), probs_b.data(), probs_n * sizeof(float)));
    // And the window did hide something.
    Problem open = windowed;
    open.min_pos = 0;
    std::vector<float> out_c(out_n);
    attention(open.args(out_c.data(), nullptr, scratch.data()));
    EXPECT_NE(0, std::memcmp(out_a.data(), out_c.data(), out_n * sizeof(float)));
  }
}

// slot_end hides every slot at or beyond it, whatever it holds (a pool whose held states lie
// below it pays only for those): against the reference, the same bits for every call shape and
// the same bits as a pool where those slots are free, on every target.
TEST(Attention, SlotEndEqualsFreeingTheSlotsBeyondIt) {
  const std::vector<Shape> some = {
      {8, 2, 64, 130, kF32, Mask::kAllVisible}, {6, 3, 32, 77, kF16, Mask::kMixed},
      {16, 1, 128, 129, kF16, Mask::kAllVisible}, {4, 1, 6, 17, kF32, Mask::kMixed},
      {8, 2, 64, 130, kQ8, Mask::kAllVisible},   {6, 3, 32, 77, kQ4, Mask::kMixed, -1, true},
  };
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    for (const Shape& s : some) {
      for (int end : {1, 5, s.n_slot / 2, s.n_slot - 1, s.n_slot}) {
        SCOPED_TRACE(::testing::Message() << "slot_end " << end);
        Problem ended(s, 9);
        ended.slot_end = end;
        for (int g = 0; g < s.n_head_kv; ++g) ended.pos[static_cast<size_t>(g) * s.n_slot] = 0;
        expect_matches_ref(ended);
        expect_call_invariance(ended);
        Problem freed = ended;
        freed.slot_end = -1;
        for (int g = 0; g < s.n_head_kv; ++g) {
          for (int sl = end; sl < s.n_slot; ++sl) freed.pos[static_cast<size_t>(g) * s.n_slot + sl] = -1;
        }
        const size_t out_n = static_cast<size_t>(s.n_head) * s.head_dim;
        const size_t probs_n = static_cast<size_t>(s.n_head) * s.n_slot;
        std::vector<float> out_a(out_n), out_b(out_n), probs_a(probs_n, -1.f), probs_b(probs_n);
        std::vector<float> scratch(s.n_slot);
        attention(ended.args(out_a.data(), probs_a.data(), scratch.data()));
        attention(freed.args(out_b.data(), probs_b.data(), scratch.data()));
        EXPECT_EQ(0, std::memcmp(out_a.data(), out_b.data(), out_n * sizeof(float)));
        EXPECT_EQ(0, std::memcmp(probs_a.data(), probs_b.data(), probs_n * sizeof(float)));
        if (end < s.n_slot) {  // and the end did hide something
          Problem open = ended;
          open.slot_end = -1;
          std::vector<float> out_c(out_n);
          attention(open.args(out_c.data(), nullptr, scratch.data()));
          EXPECT_NE(0, std::memcmp(out_a.data(), out_c.data(), out_n * sizeof(float)));
        }
      }
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

// Soft-capping by hand: two states with scores 3 and 1 under cap 2 get weights proportional to
// exp(2 tanh(1.5)) and exp(2 tanh(0.5)).
TEST(Attention, SoftcapHandComputed) {
  const std::vector<float> q = {3.f, 1.f};  // head_dim 2, scale 1
  const std::vector<float> k = {1.f, 0.f, 0.f, 1.f};
  const std::vector<float> v = {1.f, 0.f, 0.f, 1.f};
  const std::vector<int64_t> pos = {0, 1};
  std::vector<float> out(2), probs(2), scratch(2);
  AttentionArgs a{.q = q.data(), .n_head = 1, .n_head_kv = 1, .head_dim = 2, .n_slot = 2,
                  .k = k.data(), .v = v.data(), .pos = pos.data(), .max_pos = 1, .scale = 1.f,
                  .softcap = 2.f, .out = out.data(), .probs = probs.data(),
                  .scratch = scratch.data()};
  attention(a);
  const double e0 = std::exp(2 * std::tanh(1.5)), e1 = std::exp(2 * std::tanh(0.5));
  EXPECT_NEAR(probs[0], e0 / (e0 + e1), 1e-6);
  EXPECT_NEAR(probs[1], e1 / (e0 + e1), 1e-6);
  EXPECT_NEAR(out[0], e0 / (e0 + e1), 1e-6);
}

// No visible state at all (a caller bug, but defined): output 0, probabilities 0.
TEST(Attention, NothingVisible) {
  Problem pb({4, 2, 16, 9, kF32, Mask::kMixed});
  std::fill(pb.pos.begin(), pb.pos.end(), -1);
  std::vector<float> out(4 * 16, 1.f), probs(4 * 9, 1.f), scratch(9);
  attention(pb.args(out.data(), probs.data(), scratch.data()));
  for (float x : out) EXPECT_EQ(x, 0.f);
  for (float x : probs) EXPECT_EQ(x, 0.f);
}

// Near-equal large scores: max subtraction keeps exp from overflowing, and probabilities that
// differ only in the last bits of the score stay ordered as in the reference.
TEST(Attention, LargeScoresAndNearTies) {
  const int hd = 16, n_slot = 40;
  std::vector<float> q(hd, 0.f), k(static_cast<size_t>(n_slot) * hd, 0.f), v(k.size());
  q[0] = 1.f;
  for (int s = 0; s < n_slot; ++s) {
    k[static_cast<size_t>(s) * hd] = 200.f + static_cast<float>(s % 4) * 1e-4f;
    for (int i = 0; i < hd; ++i) v[static_cast<size_t>(s) * hd + i] = static_cast<float>(s - i);
  }
  std::vector<int64_t> pos(n_slot);
  for (int s = 0; s < n_slot; ++s) pos[s] = s;
  std::vector<float> out(hd), out_ref(hd), probs(n_slot), probs_ref(n_slot), scratch(n_slot);
  AttentionArgs a{.q = q.data(),
                  .n_head = 1,
                  .n_head_kv = 1,
                  .head_dim = hd,
                  .n_slot = n_slot,
                  .k = k.data(),
                  .v = v.data(),
                  .pos = pos.data(),
                  .max_pos = n_slot,
                  .scale = 1.f,
                  .out = out.data(),
                  .probs = probs.data(),
                  .scratch = scratch.data()};
  attention(a);
  AttentionArgs r = a;
  r.out = out_ref.data();
  r.probs = probs_ref.data();
  attention_ref(r);
  for (int i = 0; i < hd; ++i) EXPECT_NEAR(out[i], out_ref[i], 1e-5 * std::fabs(out_ref[i]) + 1e-6);
  for (int s = 0; s < n_slot; ++s) {
    ASSERT_TRUE(std::isfinite(probs[s]));
    EXPECT_NEAR(probs[s], probs_ref[s], 1e-7);
    if (s >= 4) {
      EXPECT_EQ(probs[s], probs[s - 4]) << "equal scores, equal probabilities";
    }
  }
  EXPECT_LT(probs[0], probs[3]);
}

// By hand: two states with scores 0 and ln(3) -> probabilities 1/4 and 3/4.
TEST(Attention, HandComputed) {
  const float q[2] = {1.f, 0.f};
  const float k[4] = {0.f, 5.f, std::log(3.f), 1.f};
  const float v[4] = {4.f, 0.f, 0.f, 8.f};
  const int64_t pos[2] = {0, 1};
  float out[2], probs[2], scratch[2];
  attention({.q = q,
             .n_head = 1,
             .n_head_kv = 1,
             .head_dim = 2,
             .n_slot = 2,
             .k = k,
             .v = v,
             .pos = pos,
             .max_pos = 1,
             .scale = 1.f,
             .out = out,
             .probs = probs,
             .scratch = scratch});
  EXPECT_NEAR(probs[0], 0.25f, 1e-6);
  EXPECT_NEAR(probs[1], 0.75f, 1e-6);
  EXPECT_NEAR(out[0], 1.f, 1e-6);
  EXPECT_NEAR(out[1], 6.f, 1e-6);
}

}  // namespace
}  // namespace tova::kernels
