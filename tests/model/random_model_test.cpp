// Random-weight models: the file our loader reads back has the shape's config, llama-quantize's
// tensor types, the vocabulary copied verbatim, weights of the stated distribution, and runs.
#include "model/fixture/fixture.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "io/gguf.h"
#include "kernels/quant.h"
#include "model/arch.h"
#include "model/fixture/families.h"
#include "model/model.h"
#include "runtime/sequence.h"
#include "test_data.h"

namespace tova::model {
namespace {

using testing::shared_path;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class RandomModelTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::make_temp_dir(); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Writes `shape` in `type` with its default shared vocabulary.
  std::string write(const std::string& shape, GgmlType type, int threads = 2,
                    uint64_t seed = 7) {
    auto s = find_random_shape(shape);
    EXPECT_TRUE(s.ok()) << s.message();
    ThreadPool pool(threads);
    const std::string path =
        fmt::format("{}/{}-{}-t{}-s{}.gguf", dir_, shape, type_name(type), threads, seed);
    auto st = write_fixture(
        {.shape = *s, .type = type, .vocab_path = shared_path("vocab/" + s->vocab_file),
         .seed = seed},
        path, pool);
    EXPECT_TRUE(st.ok()) << st.message();
    return path;
  }

  std::string dir_;
};

TEST(RandomShapes, RealShapesAreThePublishedOnes) {
  auto t = find_random_shape("tinyllama");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->n_layer, 22);
  EXPECT_EQ(t->n_embd, 2048);
  EXPECT_EQ(t->n_head, 32);
  EXPECT_EQ(t->n_head_kv, 4);
  EXPECT_EQ(t->n_ff, 5632);
  EXPECT_EQ(t->n_vocab, 32000);
  EXPECT_FALSE(t->tied_output);
  auto s = find_random_shape("smollm");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->n_layer, 30);
  EXPECT_EQ(s->n_embd, 576);
  EXPECT_EQ(s->n_head, 9);
  EXPECT_EQ(s->n_head_kv, 3);
  EXPECT_EQ(s->n_ff, 1536);
  EXPECT_EQ(s->n_vocab, 49152);
  EXPECT_EQ(s->rope_base, 100000.f);
  EXPECT_TRUE(s->tied_output);
}

TEST(RandomShapes, UnknownNamesListTheValidOnes) {
  auto s = find_random_shape("gpt5");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("unknown shape 'gpt5'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("tinyllama, smollm"), std::string::npos) << s.message();
  auto t = parse_random_type("iq2_xxs");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.message().find("q4_0"), std::string::npos) << t.message();
  EXPECT_NE(t.message().find("bf16"), std::string::npos) << t.message();
  EXPECT_EQ(*parse_random_type("Q4_K"), GgmlType::kQ4_K);
}

// The fixture families and the architectures are two lists (fixture_registry.cpp,
// arch_registry.cpp): every architecture has its fixtures, every family's shapes are files of a
// registered architecture, and every fixture name is found by --arch.
TEST(RandomShapes, EveryArchitectureHasItsFixtureFamily) {
  for (const ArchSpec* a : all_archs()) {
    const FixtureFamily* family = nullptr;
    for (const FixtureFamily* f : all_fixture_families()) {
      if (std::string_view(f->arch) == a->name) family = f;
    }
    ASSERT_NE(family, nullptr) << a->name << " has no FixtureFamily in fixture_registry.cpp";
    EXPECT_FALSE(family->fixtures().empty()) << a->name;
  }
  for (const FixtureFamily* f : all_fixture_families()) {
    EXPECT_NE(find_arch(f->arch), nullptr) << f->arch;
    std::vector<RandomShape> shapes = f->fixtures();
    if (f->shapes != nullptr) {
      for (RandomShape& r : f->shapes()) shapes.push_back(std::move(r));
    }
    for (const RandomShape& r : shapes) EXPECT_EQ(r.arch, f->arch) << r.name;
    for (const RandomShape& r : f->fixtures()) EXPECT_TRUE(find_random_arch(r.name).ok()) << r.name;
  }
}

// `make-random --set`: other sizes of a fixture (held-back checks, scripts/check_heldback.sh).
TEST(RandomShapes, SetChangesOneFieldAndNamesBadInput) {
  RandomShape s = *find_random_arch("gemma4");
  ASSERT_TRUE(set_shape_field(s, "n_head=8").ok());
  ASSERT_TRUE(set_shape_field(s, "gemma4.n_head_kv_swa=4").ok());
  ASSERT_TRUE(set_shape_field(s, "gemma4.rope_partial=0.5").ok());
  ASSERT_TRUE(set_shape_field(s, "tied_output=0").ok());
  EXPECT_EQ(s.n_head, 8);
  EXPECT_EQ(s.gemma4.n_head_kv_swa, 4);
  EXPECT_EQ(s.gemma4.rope_partial, 0.5f);
  EXPECT_FALSE(s.tied_output);
  EXPECT_EQ(s.n_layer, find_random_arch("gemma4")->n_layer);  // the rest as it was
  // The E variant's fields (held-back E fixtures are the dense fixture with these set).
  ASSERT_TRUE(set_shape_field(s, "gemma4.n_shared_kv=2").ok());
  ASSERT_TRUE(set_shape_field(s, "gemma4.n_embd_per_layer=64").ok());
  ASSERT_TRUE(set_shape_field(s, "gemma4.double_wide_mlp=1").ok());
  ASSERT_TRUE(set_shape_field(s, "gemma4.k_eq_v=0").ok());
  EXPECT_EQ(s.gemma4.n_shared_kv, 2);
  EXPECT_EQ(s.gemma4.n_embd_per_layer, 64);
  EXPECT_TRUE(s.gemma4.double_wide_mlp);
  EXPECT_FALSE(s.gemma4.k_eq_v);
  EXPECT_FALSE(set_shape_field(s, "gemma4.k_eq_v=2").ok());

  auto st = set_shape_field(s, "n_heads=8");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("unknown shape field 'n_heads'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("n_head_kv"), std::string::npos) << st.message();
  st = set_shape_field(s, "n_head");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("NAME=VALUE"), std::string::npos) << st.message();
  for (const char* bad : {"n_head=x", "n_head=-2", "n_head=3.5", "n_head=", "tied_output=2",
                          "rope_base=inf", "rope_base=1e5x"}) {
    st = set_shape_field(s, bad);
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_NE(st.message().find(bad), std::string::npos) << st.message();
  }
  EXPECT_EQ(s.n_head, 8);
}

// What llama-quantize does, worked out by hand from its rules.
TEST(RandomShapes, TensorTypesFollowLlamaQuantize) {
  using enum GgmlType;
  struct Case {
    GgmlType base;
    MatrixRole role;
    bool tied;
    int64_t n_in;
    GgmlType want;
  };
  const Case cases[] = {
      // TinyLlama: untied; the output matrix gets Q6_K, the embedding keeps the base type.
      {kQ4_0, MatrixRole::kOutput, false, 2048, kQ6_K},
      {kQ4_0, MatrixRole::kTokenEmbd, false, 2048, kQ4_0},
      {kQ4_0, MatrixRole::kLayer, false, 5632, kQ4_0},
      {kQ5_1, MatrixRole::kOutput, false, 2048, kQ6_K},
      {kQ4_K, MatrixRole::kLayer, false, 5632, kQ4_K},
      {kQ8_0, MatrixRole::kOutput, false, 2048, kQ8_0},
      {kQ6_K, MatrixRole::kOutput, false, 2048, kQ6_K},
      {kF16, MatrixRole::kOutput, false, 2048, kF16},
      {kBF16, MatrixRole::kTokenEmbd, true, 576, kBF16},
      // SmolLM: 576 = 2.25 super-blocks, so Q6_K and the k-quants fall back.
      {kQ4_0, MatrixRole::kTokenEmbd, true, 576, kQ8_0},
      {kQ4_K, MatrixRole::kLayer, true, 576, kQ5_0},
      {kQ5_K, MatrixRole::kLayer, true, 576, kQ5_1},
      {kQ6_K, MatrixRole::kLayer, true, 576, kQ8_0},
      {kQ4_K, MatrixRole::kLayer, true, 1536, kQ4_K},  // ffn_down rows divide
      {kQ4_K, MatrixRole::kTokenEmbd, true, 576, kQ8_0},
      // The low-bit mixes' fallbacks: Q2_K / Q3_K -> Q4_0, IQ4_XS -> IQ4_NL (576 = 18 x 32).
      {kQ2_K, MatrixRole::kLayer, true, 576, kQ4_0},
      {kQ3_K, MatrixRole::kLayer, false, 576, kQ4_0},
      {kQ3_K, MatrixRole::kLayer, false, 2048, kQ3_K},
      {kQ2_K, MatrixRole::kOutput, false, 2048, kQ6_K},
      {kIQ4_XS, MatrixRole::kLayer, true, 576, kIQ4_NL},
      {kIQ4_XS, MatrixRole::kTokenEmbd, false, 2048, kIQ4_XS},
      {kIQ4_NL, MatrixRole::kOutput, false, 2048, kQ6_K},
      {kIQ4_NL, MatrixRole::kLayer, true, 576, kIQ4_NL},
      // MXFP4_MOE: Q8_0 for the embedding and output; dense layer matrices keep MXFP4 here.
      {kMXFP4, MatrixRole::kOutput, false, 2048, kQ8_0},
      {kMXFP4, MatrixRole::kTokenEmbd, false, 2048, kQ8_0},
      {kMXFP4, MatrixRole::kLayer, false, 576, kMXFP4},
      // In a mixture: MXFP4 experts, Q8_0 for its other layer matrices (attention).
      {kMXFP4, MatrixRole::kExpert, false, 2880, kMXFP4},
      {kMXFP4, MatrixRole::kMoeLayer, false, 2880, kQ8_0},
      {kQ4_0, MatrixRole::kExpert, false, 2048, kQ4_0},
      {kQ4_0, MatrixRole::kMoeLayer, false, 2048, kQ4_0},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(random_matrix_type(c.base, c.role, c.tied, c.n_in), c.want)
        << type_name(c.base) << " role " << static_cast<int>(c.role) << " n_in " << c.n_in;
  }
  EXPECT_EQ(llama_file_type(kQ4_0), 2u);
  EXPECT_EQ(llama_file_type(kQ8_0), 7u);
  EXPECT_EQ(llama_file_type(kF16), 1u);
  EXPECT_EQ(llama_file_type(kBF16), 32u);
  EXPECT_EQ(llama_file_type(kQ2_K), 10u);
  EXPECT_EQ(llama_file_type(kIQ4_XS), 30u);
  EXPECT_EQ(llama_file_type(kMXFP4), 38u);
}

TEST_F(RandomModelTest, LoaderReadsTheShapeTypesAndVocabulary) {
  TOVA_REQUIRE_SHARED();
  const std::string path = write("tiny", GgmlType::kQ4_K);
  auto m = Model::load(path);
  ASSERT_TRUE(m.ok()) << m.message();
  const ModelConfig& c = (*m)->config();
  EXPECT_EQ(c.arch_name, "llama");
  EXPECT_EQ(c.n_layer, 2);
  EXPECT_EQ(c.n_embd, 256);
  EXPECT_EQ(c.n_head, 4);
  EXPECT_EQ(c.n_head_kv, 2);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.n_ff, 512);
  EXPECT_EQ(c.n_vocab, 32000);
  EXPECT_EQ(c.n_ctx_train, 512);
  EXPECT_FALSE(c.tied_output);
  const ModelWeights& w = (*m)->weights();
  EXPECT_EQ(w.output.type, GgmlType::kQ6_K);
  EXPECT_EQ(w.token_embd.type, GgmlType::kQ4_K);
  EXPECT_EQ(w.layers[1].w_down.type, GgmlType::kQ4_K);
  EXPECT_EQ(w.layers[0].w_down.n_in, 512);
  const io::GgufFile& f = (*m)->file();
  EXPECT_EQ(f.find_tensor("blk.0.attn_norm.weight")->type, GgmlType::kF32);
  EXPECT_EQ(*f.get_u32("general.file_type"), 14u);
  EXPECT_EQ(*f.get_u32("general.quantization_version"), 2u);

  // Every tokenizer.* key of the vocabulary file, copied verbatim.
  auto vocab = io::GgufFile::open(shared_path("vocab/ggml-vocab-llama-spm.gguf"));
  ASSERT_TRUE(vocab.ok()) << vocab.message();
  int n_copied = 0;
  for (const auto& [key, value] : (*vocab)->metadata()) {
    if (key.rfind("tokenizer.", 0) != 0) continue;
    const io::GgufValue* mine = f.find(key);
    ASSERT_NE(mine, nullptr) << key;
    EXPECT_TRUE(*mine == value) << key;
    ++n_copied;
  }
  EXPECT_GE(n_copied, 4);
}

TEST_F(RandomModelTest, Qwen2ShapeHasBiasesAndTiedEmbedding) {
  TOVA_REQUIRE_SHARED();
  const std::string path = write("tiny-qwen2", GgmlType::kQ4_0);
  // The file's own types: without the load-time repack (on by default, Q4_0 -> q4_0_r8).
  ModelOptions keep;
  keep.repack = false;
  auto m = Model::load(path, keep);
  ASSERT_TRUE(m.ok()) << m.message();
  const ModelConfig& c = (*m)->config();
  EXPECT_EQ(c.arch_name, "qwen2");
  EXPECT_FALSE((*m)->weights().layers[0].bq.empty());
  EXPECT_TRUE(c.tied_output);
  EXPECT_EQ(c.n_vocab, 49152);
  EXPECT_FLOAT_EQ(c.rope.freq_base, 1e6f);
  const ModelWeights& w = (*m)->weights();
  EXPECT_EQ(w.token_embd.type, GgmlType::kQ6_K);  // tied: quantized as the output
  EXPECT_EQ(w.layers[0].wq.type, GgmlType::kQ4_0);
  ASSERT_EQ(w.layers[0].bq.size(), 256u);
  // Loaded with the default, the same matrix is repacked into 8-row groups.
  auto r = Model::load(path);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ((*r)->weights().layers[0].wq.type, GgmlType::kQ4_0_R8);
  EXPECT_EQ(w.layers[0].bk[5], 0.f);
  EXPECT_EQ(w.layers[1].ffn_norm[17], 1.f);
}

TEST_F(RandomModelTest, WeightsAreNormalWithSd002) {
  TOVA_REQUIRE_SHARED();
  const std::string path = write("tiny", GgmlType::kF16);
  auto f = io::GgufFile::open(path);
  ASSERT_TRUE(f.ok()) << f.message();
  for (const char* name : {"blk.0.ffn_up.weight", "output.weight"}) {
    const io::GgufTensorInfo* t = (*f)->find_tensor(name);
    ASSERT_NE(t, nullptr);
    ASSERT_EQ(t->type, GgmlType::kF16);
    std::vector<float> x(t->n_elements);
    kernels::dequantize_row_ref(t->type, t->data, x.data(), t->n_elements);
    double s = 0, s2 = 0, s4 = 0;
    int64_t n_big = 0;
    for (float v : x) {
      s += v;
      s2 += double(v) * v;
      s4 += double(v) * v * v * v;
      n_big += std::fabs(v) > 2 * 0.02;
    }
    const double n = static_cast<double>(x.size());
    const double var = s2 / n;
    EXPECT_NEAR(s / n, 0.0, 5e-4) << name;
    EXPECT_NEAR(std::sqrt(var), 0.02, 4e-4) << name;
    EXPECT_NEAR(s4 / n / (var * var), 3.0, 0.1) << name;  // kurtosis of a normal
    EXPECT_NEAR(n_big / n, 0.0455, 0.004) << name;        // P(|z| > 2)
  }
  auto norm = (*f)->find_tensor("blk.1.attn_norm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(reinterpret_cast<const float*>(norm->data)[0], 1.f);
}

TEST_F(RandomModelTest, SameSeedSameBytesWhateverTheThreads) {
  TOVA_REQUIRE_SHARED();
  const std::string a = slurp(write("tiny", GgmlType::kQ8_0, 1, 3));
  const std::string b = slurp(write("tiny", GgmlType::kQ8_0, 2, 3));
  const std::string c = slurp(write("tiny", GgmlType::kQ8_0, 2, 4));
  ASSERT_GT(a.size(), 1000000u);
  EXPECT_TRUE(a == b);
  EXPECT_EQ(a.size(), c.size());
  EXPECT_FALSE(a == c);
}

TEST_F(RandomModelTest, RunsAForwardPassWithFiniteLogits) {
  TOVA_REQUIRE_SHARED();
  const std::string path = write("tiny", GgmlType::kQ4_0);
  auto m = Model::load(path);
  ASSERT_TRUE(m.ok()) << m.message();
  ThreadPool pool(2);
  CacheOptions o;
  o.policy = *kv::parse_policy("full", 0);
  auto state = runtime::make_state(**m, o, 8);
  ASSERT_TRUE(state.ok()) << state.message();
  ForwardScratch scratch;
  std::vector<float> logits((*m)->config().n_vocab);
  const std::vector<int32_t> ids = {1, 450, 4996, 17354, 1701, 432, 17204, 975};
  ASSERT_TRUE(runtime::feed(**m, pool, scratch, **state, ids, 4, logits.data()).ok());
  double sq = 0;
  for (float v : logits) {
    ASSERT_TRUE(std::isfinite(v));
    sq += double(v) * v;
  }
  EXPECT_GT(sq, 0.0);
}

// A prompt large enough that the per-token work between the matrix products (norms, RoPE,
// residual adds, SiLU, the f16 K/V conversion) and the prompt's attention (its tokens handed
// out whole to the threads) are split over the pool, then tokens decoded one at a time at a
// depth where each token's attention is split over the pool in parts (slots, then heads): every
// thread count, more threads than this machine's cores included, gives the bits of one thread.
// Under `full` (f16 K/V) and under a budget the prompt does not fill (`window`), the prompt's
// tokens join first and attend at once; under chunk:C with `tova` (which scores) each chunk's
// tokens attend at once and the policy observes them in order, evicting after each chunk.
TEST_F(RandomModelTest, SameBitsWithAnyThreadCount) {
  TOVA_REQUIRE_SHARED();
  const std::string path = write("tiny", GgmlType::kQ4_0);
  auto m = Model::load(path);
  ASSERT_TRUE(m.ok()) << m.message();
  const int n_vocab = (*m)->config().n_vocab;
  constexpr int kPrompt = 300, kDecode = 4;  // 300 x 4 heads x 64 > the split's 64K
  std::vector<int32_t> ids(kPrompt + kDecode);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 7919 + 13) % 31000);
  struct Config {
    const char* policy;
    int budget;
    const char* prefill;
    int batch;  // prompt tokens per forward call
  };
  for (const Config& cfg : {Config{"full", 0, "exact", kPrompt}, Config{"window", 400, "exact", 100},
                            Config{"tova", 96, "chunk:64", 64}}) {
    const std::string name = fmt::format("{} k={} {}", cfg.policy, cfg.budget, cfg.prefill);
    std::vector<float> ref;
    for (int threads : {1, 2, 3, 8}) {
      ThreadPool pool(threads);
      CacheOptions o;
      o.policy = *kv::parse_policy(cfg.policy, cfg.budget);
      o.prefill = *parse_prefill(cfg.prefill);
      o.kv_type = kv::KvType::kF16;
      auto state = runtime::make_state(**m, o, static_cast<int64_t>(ids.size()));
      ASSERT_TRUE(state.ok()) << state.message();
      ForwardScratch scratch;
      std::vector<float> logits(ids.size() * n_vocab);
      for (int b = 0; b < kPrompt; b += cfg.batch) {
        std::vector<BatchToken> batch;
        for (int i = b; i < std::min(kPrompt, b + cfg.batch); ++i) {
          batch.push_back({.token = ids[i], .state = state->get(), .logits = true});
        }
        ASSERT_TRUE((*m)->forward(batch, pool, scratch, &logits[b * n_vocab]).ok()) << name;
      }
      for (int i = kPrompt; i < kPrompt + kDecode; ++i) {
        const BatchToken one{.token = ids[i], .state = state->get(), .logits = true};
        ASSERT_TRUE((*m)->forward({&one, 1}, pool, scratch, &logits[i * n_vocab]).ok()) << name;
      }
      if (cfg.budget > 0) {
        const int64_t held = (*state)->layer(0).n_held();
        EXPECT_EQ(held, std::min<int64_t>(cfg.budget, kPrompt + kDecode)) << name;
      }
      if (ref.empty()) {
        ref = logits;
        continue;
      }
      for (size_t i = 0; i < ref.size(); ++i) {
        ASSERT_EQ(logits[i], ref[i]) << name << " threads=" << threads << " token " << i / n_vocab;
      }
    }
  }
}

TEST_F(RandomModelTest, ErrorsNameTheProblem) {
  TOVA_REQUIRE_SHARED();
  ThreadPool pool(1);
  RandomModelOptions o{.shape = *find_random_shape("tiny"),
                       .type = GgmlType::kQ8_0,
                       .vocab_path = shared_path("vocab/ggml-vocab-starcoder.gguf")};
  auto st = write_fixture(o, dir_ + "/x.gguf", pool);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("has 49152 tokens, but shape 'tiny' needs 32000"),
            std::string::npos)
      << st.message();
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/x.gguf"));

  o.vocab_path = shared_path("vocab/ggml-vocab-llama-spm.gguf");
  st = write_fixture(o, dir_ + "/no/such/dir/x.gguf", pool);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("cannot create"), std::string::npos) << st.message();

  o.type = GgmlType::kIQ2_XXS;  // a ggml type tova does not compute with
  st = write_fixture(o, dir_ + "/x.gguf", pool);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("iq2_xxs"), std::string::npos) << st.message();

  const std::vector<std::string> dirs = {dir_, shared_path("vocab")};
  auto v = find_vocab(*find_random_shape("smollm"), dirs);
  ASSERT_TRUE(v.ok()) << v.message();
  EXPECT_NE(v->find("ggml-vocab-starcoder.gguf"), std::string::npos);
  const std::vector<std::string> none = {dir_};
  v = find_vocab(*find_random_shape("smollm"), none);
  ASSERT_FALSE(v.ok());
  // The field, which each front-end spells (the CLI: --vocab).
  EXPECT_EQ(v.message().rfind("vocabulary: ", 0), 0u) << v.message();
}

}  // namespace
}  // namespace tova::model
