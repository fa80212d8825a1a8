#include "model/random_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/field_names.h"
#include "core/hash.h"
#include "io/gguf.h"
#include "kernels/quant.h"
#include "model/arch.h"

namespace tova::model {
namespace {

std::vector<RandomShape> make_shapes() {
  std::vector<RandomShape> s;
  s.push_back({.name = "tinyllama",
               .description = "TinyLlama-1.1B",
               .arch = "llama",
               .n_layer = 22,
               .n_embd = 2048,
               .n_head = 32,
               .n_head_kv = 4,
               .n_ff = 5632,
               .n_vocab = 32000,
               .n_ctx = 2048,
               .rope_base = 10000.f,
               .rms_eps = 1e-5f,
               .tied_output = false,
               .vocab_file = "ggml-vocab-llama-spm.gguf"});
  s.push_back({.name = "smollm",
               .description = "SmolLM2-135M",
               .arch = "llama",
               .n_layer = 30,
               .n_embd = 576,
               .n_head = 9,
               .n_head_kv = 3,
               .n_ff = 1536,
               .n_vocab = 49152,
               .n_ctx = 8192,
               .rope_base = 100000.f,
               .rms_eps = 1e-5f,
               .tied_output = true,
               .vocab_file = "ggml-vocab-starcoder.gguf"});
  // The newer families' vocabularies (128,256 and 151,936 tokens) are not among the shared vocab
  // files: these shapes get a synthetic vocabulary of their size (vocab_file empty; see
  // write_synthetic_vocab). Speed depends on the number of tokens, not on their strings.
  s.push_back({.name = "llama3.2-1b",
               .description = "Llama-3.2-1B",
               .arch = "llama",
               .n_layer = 16,
               .n_embd = 2048,
               .n_head = 32,
               .n_head_kv = 8,
               .n_ff = 8192,
               .n_vocab = 128256,
               .n_ctx = 131072,
               .rope_base = 500000.f,
               .rms_eps = 1e-5f,
               .tied_output = true,
               .head_dim = 64,
               .llama3_orig_ctx = 8192});
  s.push_back({.name = "qwen3-0.6b",
               .description = "Qwen3-0.6B",
               .arch = "qwen3",
               .n_layer = 28,
               .n_embd = 1024,
               .n_head = 16,
               .n_head_kv = 8,
               .n_ff = 3072,
               .n_vocab = 151936,
               .n_ctx = 40960,
               .rope_base = 1000000.f,
               .rms_eps = 1e-6f,
               .tied_output = true,
               .head_dim = 128,
               .qk_norm = true});
  // Small shapes for tests and quick benchmarks; rows are multiples of 256 so every k-quant fits.
  s.push_back({.name = "qwen3-30b-a3b",
               .description = "Qwen3-30B-A3B",
               .arch = "qwen3moe",
               .n_layer = 48,
               .n_embd = 2048,
               .n_head = 32,
               .n_head_kv = 4,
               .n_ff = 6144,
               .n_vocab = 151936,
               .n_ctx = 40960,
               .rope_base = 1000000.f,
               .rms_eps = 1e-6f,
               .tied_output = false,
               .head_dim = 128,
               .qk_norm = true,
               .n_expert = 128,
               .n_expert_used = 8,
               .n_ff_exp = 768});
  // gpt-oss-20b: MXFP4 experts as it ships with --type mxfp4 (Q8_0 elsewhere); a synthetic
  // vocabulary of o200k's size. A file of ~12 GB, written tensor by tensor.
  s.push_back({.name = "gpt-oss-20b",
               .description = "gpt-oss-20b",
               .arch = "gpt-oss",
               .n_layer = 24,
               .n_embd = 2880,
               .n_head = 64,
               .n_head_kv = 8,
               .n_ff = 2880,
               .n_vocab = 201088,
               .n_ctx = 131072,
               .rope_base = 150000.f,
               .rms_eps = 1e-5f,
               .tied_output = false,
               .qkv_bias = true,
               .head_dim = 64,
               .sliding_window = 128,
               .n_expert = 32,
               .n_expert_used = 4,
               .n_ff_exp = 2880,
               .attn_out_bias = true,
               .attn_sinks = true,
               .moe_biases = true,
               .rope_yarn = 32.f,
               .yarn_orig_ctx = 4096,
               .ffn_norm_name = "post_attention_norm"});
  // Qwen3.5-4B (Qwen/Qwen3.5-4B's config.json as convert_hf_to_gguf writes it: 32 layers,
  // every 4th full attention with 16 query heads over 4 KV heads of 256 (a query gate per
  // head, q/k norms, RoPE on the first 64 dims of each head, interleaved M-RoPE sections
  // [11, 11, 10, 0], base 1e7); the other 24 Gated DeltaNet with 16 key heads and 32 value
  // heads of 128 and a 4-tap conv1d; a 9216-wide SwiGLU; tied embeddings; 248,320 tokens,
  // here a synthetic vocabulary of that size).
  // Checked 2026-11-29 against two public transcriptions of the real model (not the file
  // itself): THUDM/slime scripts/models/qwen3.5-4B.sh and the copies of it "derived from HF
  // config.json" (32 layers, hidden 2560, ffn 9216, 16 heads, 4 query groups, kv channels 256,
  // rotary 25 %, base 1e7, eps 1e-6, vocab 248320, tied embeddings), and the GGUF metadata of
  // a Qwen3.5-4B file quoted in quantumaikr/quant.cpp issue 94 (ssm v_heads 32, k_heads 16,
  // key/value dims 128, conv 4, attn_qkv [2560, 8192], rope.dimension_count 64,
  // full_attention_interval 4). The M-RoPE sections [11, 11, 10] are the family's (the
  // 35B-A3B's Megatron arguments and a qwen35 GGUF reader quote them), not seen for the 4B.
  s.push_back({.name = "qwen3.5-4b",
               .description = "Qwen3.5-4B",
               .arch = "qwen35",
               .n_layer = 32,
               .n_embd = 2560,
               .n_head = 16,
               .n_head_kv = 4,
               .n_ff = 9216,
               .n_vocab = 248320,
               .n_ctx = 262144,
               .rope_base = 10000000.f,
               .rms_eps = 1e-6f,
               .tied_output = true,
               .head_dim = 256,
               .qk_norm = true,
               .ffn_norm_name = "post_attention_norm",
               .ssm_conv_kernel = 4,
               .ssm_state = 128,
               .ssm_groups = 16,
               .ssm_v_heads = 32,
               .full_attention_interval = 4,
               .rope_sections = {11, 11, 10, 0},
               .n_rot = 64});
  // LFM2-1.2B (issue 46's benchmark shape): 16 layers of 2048, attention at [2, 5, 8, 10, 12,
  // 14] (the default full_attn_idxs a public LFM2 reimplementation, kreasof-ai/OpenFormer,
  // quotes), the others gated short convolutions of kernel 3; feed-forward 8192 (what
  // conversion/lfm2.py writes for block_ff_dim 12288 auto-adjusted, and the width llama.cpp's
  // loader names 1.2B); 32 query heads over 8 KV heads of 64, vocabulary 65536, rope base 1e6,
  // eps 1e-5, tied embeddings (recalled from the model card's config.json, not checked against
  // a file here), with a synthetic vocabulary of that size.
  s.push_back({.name = "lfm2-1.2b",
               .description = "LFM2-1.2B",
               .arch = "lfm2",
               .n_layer = 16,
               .n_embd = 2048,
               .n_head = 32,
               .n_head_kv = 8,
               .n_ff = 8192,
               .n_vocab = 65536,
               .n_ctx = 128000,
               .rope_base = 1000000.f,
               .rms_eps = 1e-5f,
               .tied_output = true,
               .qk_norm = true,
               .shortconv_l_cache = 3,
               .attention_layers = {2, 5, 8, 10, 12, 14},
               .output_norm_name = "token_embd_norm"});
  // LFM2-8B-A1B (issue 46's benchmark shape): 24 layers of 2048, attention at [2, 6, 10, 14,
  // 18, 21], the others gated short convolutions of kernel 3; the first 2 feed-forwards dense
  // (7168), then 32 experts of 1792 with 4 chosen by sigmoid + selection bias (conversion/
  // lfm2.py's num_dense_layers, moe_intermediate_size, expert_gating_func 2; llama.cpp names 24
  // layers 8B-A1B); 32 query heads over 8 KV heads of 64, vocabulary 65536, rope base 1e6, tied
  // embeddings (recalled from the model card's config.json, not checked against a file here).
  s.push_back({.name = "lfm2-8b-a1b",
               .description = "LFM2-8B-A1B",
               .arch = "lfm2moe",
               .n_layer = 24,
               .n_embd = 2048,
               .n_head = 32,
               .n_head_kv = 8,
               .n_ff = 7168,
               .n_vocab = 65536,
               .n_ctx = 128000,
               .rope_base = 1000000.f,
               .rms_eps = 1e-5f,
               .tied_output = true,
               .qk_norm = true,
               .n_expert = 32,
               .n_expert_used = 4,
               .n_ff_exp = 1792,
               .n_dense_lead = 2,
               .expert_gating = 2,
               .shortconv_l_cache = 3,
               .attention_layers = {2, 6, 10, 14, 18, 21},
               .output_norm_name = "token_embd_norm"});
  // Granite-4.0-H-Tiny (issue 46's benchmark shape; 7B-A1B): 40 layers of 1536, attention at
  // [5, 15, 25, 35] (12 query heads over 4 KV heads of 128, no RoPE), the others Mamba2 of 48
  // heads of 64 (d_inner 3072 = 2 x 1536) in 1 group, state 128, conv kernel 4; every
  // feed-forward 64 experts of 512, 6 chosen, and an ungated shared expert of 1024; Granite's
  // multipliers embedding 12, residual 0.22, attention 1/128, logits / 6; eps 1e-5, tied
  // embeddings, vocabulary 100352 (Granite 4.0's 100,352-row table, synthetic here). Recalled
  // from ibm-granite/granite-4.0-h-tiny's config.json (layer_types, mamba_*, num_local_experts,
  // shared_intermediate_size, *_multiplier, logits_scaling), not checked against a file here.
  s.push_back({.name = "granite-4.0-h-tiny",
               .description = "Granite-4.0-H-Tiny",
               .arch = "granitehybrid",
               .n_layer = 40,
               .n_embd = 1536,
               .n_head = 12,
               .n_head_kv = 4,
               .n_ff = 512,
               .n_vocab = 100352,
               .n_ctx = 131072,
               .rms_eps = 1e-5f,
               .tied_output = true,
               .n_expert = 64,
               .n_expert_used = 6,
               .n_ff_shexp = 1024,
               .shared_expert_ungated = true,
               .attention_layers = {5, 15, 25, 35},
               .mamba2_conv_kernel = 4,
               .mamba2_d_inner = 3072,
               .mamba2_d_state = 128,
               .mamba2_heads = 48,
               .mamba2_groups = 1,
               .embedding_scale = 12.f,
               .residual_scale = 0.22f,
               .attention_scale = 0.0078125f,
               .logit_scale = 6.f,
               .rope_finetuned = false});
  // ---- Gemma 4 shapes (issue 34; kept in one block) ----
  // Gemma-4-E4B's text decoder. From published text_config blocks of google/gemma-4-E4B
  // (searched 2026-11-29: a config-parsing test of an MLX runtime quoting E4B's config.json, a
  // conversion notebook's E4B dictionary, and a Darwin-4B E4B fine-tune's config.json agree):
  // 42 layers, hidden 2560, per-layer input 256 (its table over all 262,144 tokens), intermediate
  // 10240, 8 query heads over 2 KV heads in every layer, head sizes 256 (window) and 512
  // (global), layers (5 window, 1 global) x 7, a 512-token window, 18 shared-K/V layers,
  // use_double_wide_mlp false, attention_k_eq_v false (global layers have attn_v), window RoPE
  // base 1e4, global proportional RoPE base 1e6 with partial factor 0.25, eps 1e-6, final
  // soft-cap 30, tied embeddings, 131,072 context; the vocabulary here is a synthetic one of
  // that size. The per-layer values llama.cpp reads from the file are what this writes
  // (`tova make-random --shape gemma-4-e4b --plan` lists every tensor without writing one).
  s.push_back({.name = "gemma-4-e4b",
               .description = "Gemma-4-E4B",
               .arch = "gemma4",
               .n_layer = 42,
               .n_embd = 2560,
               .n_head = 8,
               .n_head_kv = 2,
               .n_ff = 10240,
               .n_vocab = 262144,
               .n_ctx = 131072,
               .rope_base = 1000000.f,
               .rms_eps = 1e-6f,
               .tied_output = true,
               .head_dim = 512,
               .sliding_window = 512,
               .final_softcap = 30.f,
               .gemma4 = {.head_dim_swa = 256,
                          .n_head_kv_swa = 2,
                          .swa_pattern = 6,
                          .rope_base_swa = 10000.f,
                          .rope_partial = 0.25f,
                          .n_shared_kv = 18,
                          .n_embd_per_layer = 256,
                          .k_eq_v = false}});
  // ---- end of the Gemma 4 shapes ----
  s.push_back({.name = "tiny",
               .description = "tiny llama (tests)",
               .arch = "llama",
               .n_layer = 2,
               .n_embd = 256,
               .n_head = 4,
               .n_head_kv = 2,
               .n_ff = 512,
               .n_vocab = 32000,
               .n_ctx = 512,
               .rope_base = 10000.f,
               .rms_eps = 1e-5f,
               .tied_output = false,
               .vocab_file = "ggml-vocab-llama-spm.gguf"});
  s.push_back({.name = "tiny-qwen2",
               .description = "tiny qwen2 (tests)",
               .arch = "qwen2",
               .n_layer = 2,
               .n_embd = 256,
               .n_head = 4,
               .n_head_kv = 2,
               .n_ff = 512,
               .n_vocab = 49152,
               .n_ctx = 512,
               .rope_base = 1000000.f,
               .rms_eps = 1e-6f,
               .tied_output = true,
               .qkv_bias = true,
               .vocab_file = "ggml-vocab-starcoder.gguf"});
  // The weight-type fixtures (tests/data/quant, scripts/make_quant_goldens.sh): rows of 256 and
  // 512 for the super-block types, stories260K's 512-token vocabulary so that the files and
  // their logits stay small.
  s.push_back({.name = "tiny-quant",
               .description = "tiny llama for weight-type goldens (tests)",
               .arch = "llama",
               .n_layer = 2,
               .n_embd = 256,
               .n_head = 4,
               .n_head_kv = 2,
               .n_ff = 512,
               .n_vocab = 512,
               .n_ctx = 256,
               .rms_eps = 1e-5f,
               .weight_std = 0.08f,  // the arch fixtures' 0.15 at 64 wide, scaled by 1/sqrt(4)
               .random_norms = true,
               .vocab_file = "stories260K.gguf"});
  // The same for the mixture-of-experts files people download (MXFP4_MOE, Q3_K_M and Q2_K of
  // Qwen3-30B-A3B): a qwen3moe whose expert rows are 256 wide, so that llama-quantize gives the
  // experts the file type's own block type instead of a fallback.
  s.push_back({.name = "tiny-quant-moe",
               .description = "tiny qwen3moe for weight-type goldens (tests)",
               .arch = "qwen3moe",
               .n_layer = 2,
               .n_embd = 256,
               .n_head = 4,
               .n_head_kv = 2,
               .n_ff = 256,
               .n_vocab = 512,
               .n_ctx = 256,
               .rope_base = 1000000.f,
               .rms_eps = 1e-6f,
               .head_dim = 64,
               .qk_norm = true,
               .n_expert = 8,
               .n_expert_used = 2,
               .n_ff_exp = 256,
               .weight_std = 0.08f,
               .random_norms = true,
               .vocab_file = "stories260K.gguf"});
  // Architecture fixtures (--arch): each architecture file lists its own (ArchSpec::fixtures).
  for (const ArchSpec* a : all_archs()) {
    for (RandomShape f : a->fixtures()) {
      f.name = "arch-" + f.name;
      s.push_back(std::move(f));
    }
  }
  return s;
}

// Every type tova computes with can be written: the registry's list (core/dtype).
const std::span<const GgmlType> kRandomTypes = compute_types();

bool divides(GgmlType t, int64_t n_in) { return n_in % type_traits(t).block_size == 0; }

// llama-quantize's fallback for a 256-block type whose super-block does not divide the row
// (tensor_type_fallback in its llama-quant.cpp).
GgmlType fallback(GgmlType t, int64_t n_in) {
  if (divides(t, n_in)) return t;
  GgmlType f = GgmlType::kF16;
  switch (t) {
    case GgmlType::kQ2_K: f = GgmlType::kQ4_0; break;
    case GgmlType::kQ3_K: f = GgmlType::kQ4_0; break;
    case GgmlType::kQ4_K: f = GgmlType::kQ5_0; break;
    case GgmlType::kQ5_K: f = GgmlType::kQ5_1; break;
    case GgmlType::kQ6_K: f = GgmlType::kQ8_0; break;
    case GgmlType::kIQ4_XS: f = GgmlType::kIQ4_NL; break;
    default: break;
  }
  return divides(f, n_in) ? f : GgmlType::kF16;
}

bool is_quantized(GgmlType t) {
  return t != GgmlType::kF32 && t != GgmlType::kF16 && t != GgmlType::kBF16;
}

uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t hash_name(std::string_view s) { return fnv1a(s.data(), s.size()); }

// n values of N(0, sd), a function of (stream, row) only, so threads may split rows freely.
void gaussian_row(uint64_t stream, int64_t row, float sd, float* out, int64_t n) {
  uint64_t s = stream ^ (static_cast<uint64_t>(row) * 0xD1B54A32D192ED03ull);
  splitmix64(s);
  constexpr double kTwoPi = 6.283185307179586;
  for (int64_t i = 0; i < n; i += 2) {
    // Box-Muller on two 53-bit uniforms; u1 in (0, 1] keeps the log finite.
    const double u1 = ((splitmix64(s) >> 11) + 1) * 0x1.0p-53;
    const double u2 = (splitmix64(s) >> 11) * 0x1.0p-53;
    const double r = std::sqrt(-2.0 * std::log(u1)) * sd;
    out[i] = static_cast<float>(r * std::cos(kTwoPi * u2));
    if (i + 1 < n) out[i + 1] = static_cast<float>(r * std::sin(kTwoPi * u2));
  }
}

class Builder {
 public:
  Builder(const RandomModelOptions& o, ThreadPool& pool) : o_(o), pool_(pool) {}

  // A [n_out][n_in] matrix of random weights in `type`.
  void matrix(const std::string& name, GgmlType type, int64_t n_in, int64_t n_out) {
    rows(name, type, n_in, n_out, {n_in, n_out});
  }

  // n_mat random [n_out][n_in] matrices stacked as one tensor of ggml dims {n_in, n_out,
  // n_mat} (a mixture's experts).
  void matrices(const std::string& name, GgmlType type, int64_t n_in, int64_t n_out,
                int64_t n_mat) {
    rows(name, type, n_in, n_out * n_mat, {n_in, n_out, n_mat});
  }

  // n_out rows of n_in random weights in `type`, as a tensor of `dims`.
  // The rows are drawn when the file is written, one tensor at a time (GgufWriter's deferred
  // tensors), so a model of many gigabytes never sits in memory whole.
  void rows(const std::string& name, GgmlType type, int64_t n_in, int64_t n_out,
            std::vector<int64_t> dims) {
    const uint64_t row_bytes = *bytes_per_row(type, n_in);
    const uint64_t stream = o_.seed * 0x9E3779B97F4A7C15ull ^ hash_name(name);
    const float sd = o_.shape.weight_std;
    ThreadPool& pool = pool_;
    count(name, type, dims, row_bytes * n_out);
    w_.add_tensor(name, type, std::move(dims), [=, &pool](std::span<uint8_t> data) {
      pool.parallel_for(n_out, 16, [&](int64_t r0, int64_t r1) {
        std::vector<float> row(n_in);
        for (int64_t r = r0; r < r1; ++r) {
          gaussian_row(stream, r, sd, row.data(), n_in);
          kernels::quantize_row_ref(type, row.data(), data.data() + r * row_bytes, n_in);
        }
      });
    });
  }

  // A float32 vector filled with `value` (norm weights 1, biases 0), plus N(0, sd) if sd > 0.
  void vector(const std::string& name, int64_t n, float value, float sd = 0.f) {
    std::vector<float> v(n + 1, 0.f);
    if (sd > 0.f)
      gaussian_row(o_.seed * 0x9E3779B97F4A7C15ull ^ hash_name(name), 0, sd, v.data(), n);
    std::vector<uint8_t> data(n * sizeof(float));
    for (int64_t i = 0; i < n; ++i) {
      const float x = value + v[i];
      std::memcpy(&data[i * sizeof(float)], &x, sizeof(float));
    }
    add(name, GgmlType::kF32, {n}, std::move(data));
  }
  // n_vec such vectors, ggml dims {n, n_vec} (a mixture's per-expert biases).
  void vectors(const std::string& name, int64_t n, int64_t n_vec, float value, float sd) {
    std::vector<float> v(n * n_vec + 1, 0.f);
    if (sd > 0.f) {
      gaussian_row(o_.seed * 0x9E3779B97F4A7C15ull ^ hash_name(name), 0, sd, v.data(), n * n_vec);
    }
    std::vector<uint8_t> data(n * n_vec * sizeof(float));
    for (int64_t i = 0; i < n * n_vec; ++i) {
      const float x = value + v[i];
      std::memcpy(&data[i * sizeof(float)], &x, sizeof(float));
    }
    add(name, GgmlType::kF32, {n, n_vec}, std::move(data));
  }
  void vector(const std::string& name, const std::vector<float>& v) {
    std::vector<uint8_t> data(v.size() * sizeof(float));
    std::memcpy(data.data(), v.data(), data.size());
    add(name, GgmlType::kF32, {static_cast<int64_t>(v.size())}, std::move(data));
  }

  io::GgufWriter& writer() { return w_; }
  const RandomModelStats& stats() const { return stats_; }

 private:
  void count(const std::string& name, GgmlType type, const std::vector<int64_t>& dims,
             uint64_t n_bytes) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    stats_.tensors.push_back({.name = name, .type = type, .dims = dims, .n_bytes = n_bytes});
    ++stats_.n_tensors;
    stats_.n_params += static_cast<uint64_t>(n);
    stats_.n_bytes += n_bytes;
  }
  void add(const std::string& name, GgmlType type, std::vector<int64_t> dims,
           std::vector<uint8_t> data) {
    count(name, type, dims, data.size());
    w_.add_tensor(name, type, std::move(dims), std::move(data));
  }

  const RandomModelOptions& o_;
  ThreadPool& pool_;
  io::GgufWriter w_;
  RandomModelStats stats_;
};

// Copies every tokenizer.* key of the vocabulary file, after checking its size.
// A SentencePiece-style vocabulary of n tokens (tokenizer.ggml.model "llama"): <unk>, <s>, </s>,
// the 256 byte-fallback tokens <0x00>..<0xFF>, then distinct made-up pieces ("▁a", "▁b", ...,
// "▁ba", ...) with decreasing scores. It tokenizes any text (mostly into bytes) and loads in
// llama.cpp too; it stands in for a real vocabulary of that size in speed benchmarks.
void write_synthetic_vocab(int n, io::GgufWriter& w) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};  // unknown, control, control
  for (int b = 0; b < 256 && static_cast<int>(tokens.size()) < n; ++b) {
    tokens.push_back(fmt::format("<0x{:02X}>", b));
    types.push_back(6);  // byte
  }
  for (int i = 0; static_cast<int>(tokens.size()) < n; ++i) {
    std::string piece;
    for (int v = i;; v = v / 26 - 1) {
      piece.insert(piece.begin(), static_cast<char>('a' + v % 26));
      if (v < 26) break;
    }
    piece.insert(0, "\xe2\x96\x81");  // U+2581, SentencePiece's word boundary
    tokens.push_back(std::move(piece));
    types.push_back(1);  // normal
  }
  std::vector<float> scores(tokens.size());
  for (size_t i = 0; i < scores.size(); ++i) scores[i] = -static_cast<float>(i);
  w.set("tokenizer.ggml.model", io::GgufValue::make_str("llama"));
  w.set("tokenizer.ggml.tokens", io::GgufValue::make_str_array(tokens));
  w.set("tokenizer.ggml.scores", io::GgufValue::make_f32_array(scores));
  w.set("tokenizer.ggml.token_type", io::GgufValue::make_i32_array(types));
  w.set("tokenizer.ggml.bos_token_id", io::GgufValue::make_u32(1));
  w.set("tokenizer.ggml.eos_token_id", io::GgufValue::make_u32(2));
  w.set("tokenizer.ggml.unknown_token_id", io::GgufValue::make_u32(0));
  w.set("tokenizer.ggml.add_bos_token", io::GgufValue::make_bool(true));
}

Status copy_vocab(const RandomModelOptions& o, io::GgufWriter& w) {
  if (o.vocab_path.empty()) {
    if (!o.shape.vocab_file.empty()) {
      return make_error("shape '{}' needs a vocabulary file ({})", o.shape.name,
                        o.shape.vocab_file);
    }
    if (o.shape.n_vocab < 259) {
      return make_error("a synthetic vocabulary needs at least 259 tokens, shape '{}' has {}",
                        o.shape.name, o.shape.n_vocab);
    }
    write_synthetic_vocab(o.shape.n_vocab, w);
    return ok_status();
  }
  TOVA_ASSIGN_OR_RETURN(auto vf, io::GgufFile::open(o.vocab_path));
  const io::GgufValue* tokens = vf->find("tokenizer.ggml.tokens");
  if (tokens == nullptr || tokens->type != io::GgufValueType::kArray) {
    return make_error("{}: no tokenizer.ggml.tokens list: not a vocabulary file", o.vocab_path);
  }
  if (tokens->arr.size() != static_cast<size_t>(o.shape.n_vocab)) {
    return make_error("{}: the vocabulary has {} tokens, but shape '{}' needs {}", o.vocab_path,
                      tokens->arr.size(), o.shape.name, o.shape.n_vocab);
  }
  for (const auto& [key, value] : vf->metadata()) {
    if (key.rfind("tokenizer.", 0) == 0) w.set(key, value);
  }
  return ok_status();
}

// Fails fast (before minutes of work) when the output cannot be created.
Status check_writable(const std::string& path) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return make_error("{}: cannot create: {}", tmp, std::strerror(errno));
  std::fclose(f);
  std::remove(tmp.c_str());
  return ok_status();
}

}  // namespace

const std::vector<RandomShape>& random_shapes() {
  static const std::vector<RandomShape> shapes = make_shapes();
  return shapes;
}

std::string random_shape_choices() {
  std::string s;
  for (const RandomShape& r : random_shapes()) s += (s.empty() ? "" : ", ") + r.name;
  return s;
}

std::string random_arch_choices() {
  std::string s;
  for (const RandomShape& r : random_shapes()) {
    if (r.name.starts_with("arch-")) s += (s.empty() ? "" : ", ") + r.name.substr(5);
  }
  return s;
}

Result<RandomShape> find_random_arch(std::string_view family) {
  for (const RandomShape& r : random_shapes()) {
    if (r.name.starts_with("arch-") && r.name.substr(5) == family) return r;
  }
  return make_error("unknown architecture fixture '{}' (valid: {})", family, random_arch_choices());
}

RandomShape fixture_shape(std::string family, std::string description, std::string arch) {
  // Every tensor and key of a converted model of the family, scaled down; the vocabulary is
  // stories260K's (512 tokens), so the fixtures share test inputs.
  return RandomShape{.name = std::move(family),
                     .description = std::move(description),
                     .arch = std::move(arch),
                     .n_layer = 2,
                     .n_embd = 64,
                     .n_head = 4,
                     .n_head_kv = 2,
                     .n_ff = 160,
                     .n_vocab = 512,
                     .n_ctx = 256,
                     .rms_eps = 1e-5f,
                     .weight_std = 0.15f,  // not near-uniform logits: greedy varies
                     .random_norms = true,
                     .vocab_file = "stories260K.gguf"};
}

Result<RandomShape> find_random_shape(std::string_view name) {
  for (const RandomShape& r : random_shapes()) {
    if (r.name == name) return r;
  }
  return make_error("unknown shape '{}' (valid: {})", name, random_shape_choices());
}

namespace {

// The fields `--set` may change: sizes and switches, never names or the vocabulary.
struct ShapeField {
  std::string_view name;
  int RandomShape::*i = nullptr;
  float RandomShape::*f = nullptr;
  bool RandomShape::*b = nullptr;
  int RandomShape::Gemma4::*gi = nullptr;
  float RandomShape::Gemma4::*gf = nullptr;
  bool RandomShape::Gemma4::*gb = nullptr;
};

const std::vector<ShapeField>& shape_fields() {
  using S = RandomShape;
  using G = RandomShape::Gemma4;
  static const std::vector<ShapeField> f = {
      {.name = "n_layer", .i = &S::n_layer},
      {.name = "n_embd", .i = &S::n_embd},
      {.name = "n_head", .i = &S::n_head},
      {.name = "n_head_kv", .i = &S::n_head_kv},
      {.name = "n_ff", .i = &S::n_ff},
      {.name = "n_ctx", .i = &S::n_ctx},
      {.name = "head_dim", .i = &S::head_dim},
      {.name = "n_rot", .i = &S::n_rot},
      {.name = "sliding_window", .i = &S::sliding_window},
      {.name = "n_expert", .i = &S::n_expert},
      {.name = "n_expert_used", .i = &S::n_expert_used},
      {.name = "n_ff_exp", .i = &S::n_ff_exp},
      {.name = "n_ff_shexp", .i = &S::n_ff_shexp},
      {.name = "yarn_orig_ctx", .i = &S::yarn_orig_ctx},
      {.name = "ssm_conv_kernel", .i = &S::ssm_conv_kernel},
      {.name = "ssm_state", .i = &S::ssm_state},
      {.name = "ssm_groups", .i = &S::ssm_groups},
      {.name = "ssm_v_heads", .i = &S::ssm_v_heads},
      {.name = "full_attention_interval", .i = &S::full_attention_interval},
      {.name = "shortconv_l_cache", .i = &S::shortconv_l_cache},
      {.name = "mamba2_conv_kernel", .i = &S::mamba2_conv_kernel},
      {.name = "mamba2_d_inner", .i = &S::mamba2_d_inner},
      {.name = "mamba2_d_state", .i = &S::mamba2_d_state},
      {.name = "mamba2_heads", .i = &S::mamba2_heads},
      {.name = "mamba2_groups", .i = &S::mamba2_groups},
      {.name = "embedding_scale", .f = &S::embedding_scale},
      {.name = "residual_scale", .f = &S::residual_scale},
      {.name = "attention_scale", .f = &S::attention_scale},
      {.name = "logit_scale", .f = &S::logit_scale},
      {.name = "rope_finetuned", .b = &S::rope_finetuned},
      {.name = "n_dense_lead", .i = &S::n_dense_lead},
      {.name = "nextn_predict_layers", .i = &S::nextn_predict_layers},
      {.name = "rope_base", .f = &S::rope_base},
      {.name = "rms_eps", .f = &S::rms_eps},
      {.name = "attn_softcap", .f = &S::attn_softcap},
      {.name = "final_softcap", .f = &S::final_softcap},
      {.name = "rope_yarn", .f = &S::rope_yarn},
      {.name = "weight_std", .f = &S::weight_std},
      {.name = "expert_gate_up_bias_std", .f = &S::expert_gate_up_bias_std},
      {.name = "tied_output", .b = &S::tied_output},
      {.name = "qkv_bias", .b = &S::qkv_bias},
      {.name = "qk_norm", .b = &S::qk_norm},
      {.name = "random_norms", .b = &S::random_norms},
      {.name = "gemma4.head_dim_swa", .gi = &G::head_dim_swa},
      {.name = "gemma4.n_head_kv_swa", .gi = &G::n_head_kv_swa},
      {.name = "gemma4.swa_pattern", .gi = &G::swa_pattern},
      {.name = "gemma4.rope_base_swa", .gf = &G::rope_base_swa},
      {.name = "gemma4.rope_partial", .gf = &G::rope_partial},
      {.name = "gemma4.n_shared_kv", .gi = &G::n_shared_kv},
      {.name = "gemma4.n_embd_per_layer", .gi = &G::n_embd_per_layer},
      {.name = "gemma4.double_wide_mlp", .gb = &G::double_wide_mlp},
      {.name = "gemma4.k_eq_v", .gb = &G::k_eq_v},
  };
  return f;
}

}  // namespace

std::string shape_field_choices() {
  std::string s;
  for (const ShapeField& f : shape_fields()) s += (s.empty() ? "" : ", ") + std::string(f.name);
  return s;
}

Status set_shape_field(RandomShape& shape, std::string_view name_eq_value) {
  const size_t eq = name_eq_value.find('=');
  if (eq == std::string_view::npos) {
    return make_error("'{}': give NAME=VALUE (names: {})", name_eq_value, shape_field_choices());
  }
  const std::string_view name = name_eq_value.substr(0, eq);
  const std::string value(name_eq_value.substr(eq + 1));
  for (const ShapeField& f : shape_fields()) {
    if (f.name != name) continue;
    char* end = nullptr;
    errno = 0;
    const bool flag = f.b != nullptr || f.gb != nullptr;
    if (f.i != nullptr || f.gi != nullptr || flag) {
      const long v = std::strtol(value.c_str(), &end, 10);
      const bool bad = value.empty() || *end != '\0' || errno != 0 || v < 0 || v > (1 << 30) ||
                       (flag && v > 1);
      if (bad) {
        return make_error("'{}': {} takes {}", name_eq_value, name,
                          flag ? "0 or 1" : "a whole number >= 0");
      }
      if (f.i != nullptr) shape.*f.i = static_cast<int>(v);
      if (f.gi != nullptr) shape.gemma4.*f.gi = static_cast<int>(v);
      if (f.b != nullptr) shape.*f.b = v == 1;
      if (f.gb != nullptr) shape.gemma4.*f.gb = v == 1;
    } else {
      const float v = std::strtof(value.c_str(), &end);
      if (value.empty() || *end != '\0' || errno != 0 || !std::isfinite(v) || v < 0.f) {
        return make_error("'{}': {} takes a finite number >= 0", name_eq_value, name);
      }
      if (f.f != nullptr) shape.*f.f = v;
      if (f.gf != nullptr) shape.gemma4.*f.gf = v;
    }
    return ok_status();
  }
  return make_error("'{}': unknown shape field '{}' (names: {})", name_eq_value, name,
                    shape_field_choices());
}

std::string random_type_choices() {
  std::string s;
  for (GgmlType t : kRandomTypes) s += (s.empty() ? "" : ", ") + std::string(type_name(t));
  return s;
}

Result<GgmlType> parse_random_type(std::string_view name) {
  auto t = parse_type_name(name);
  if (t.ok()) {
    for (GgmlType k : kRandomTypes) {
      if (k == *t) return k;
    }
  }
  return make_error("unknown or unsupported weight type '{}' (valid: {})", name,
                    random_type_choices());
}

GgmlType random_matrix_type(GgmlType base, MatrixRole role, bool tied_output, int64_t n_in) {
  if (!is_quantized(base)) return base;
  if (role == MatrixRole::kAsConverted) return GgmlType::kF16;
  const bool is_output =
      role == MatrixRole::kOutput || (tied_output && role == MatrixRole::kTokenEmbd);
  if (base == GgmlType::kMXFP4) {
    // llama-quantize's MXFP4_MOE writes MXFP4 into expert tensors only and Q8_0 everywhere
    // else. The embedding and output follow it; the dense layer matrices of these shapes
    // (which have no experts) take MXFP4, so that a file of --type mxfp4 computes with it.
    if (is_output || role == MatrixRole::kTokenEmbd || role == MatrixRole::kMoeLayer) {
      return fallback(GgmlType::kQ8_0, n_in);
    }
    return fallback(base, n_in);
  }
  if (is_output) {
    // llama-quantize: Q8_0 if the base type does not divide the row, the base type itself for
    // Q8_0 (and Q6_K), else Q6_K; then the k-quant fallback.
    GgmlType t = GgmlType::kQ6_K;
    if (!divides(base, n_in)) {
      t = GgmlType::kQ8_0;
    } else if (base == GgmlType::kQ8_0) {
      t = GgmlType::kQ8_0;
    }
    return fallback(t, n_in);
  }
  return fallback(base, n_in);
}

uint32_t llama_file_type(GgmlType base) {
  switch (base) {
    case GgmlType::kF32: return 0;
    case GgmlType::kF16: return 1;
    case GgmlType::kQ4_0: return 2;
    case GgmlType::kQ4_1: return 3;
    case GgmlType::kQ8_0: return 7;
    case GgmlType::kQ5_0: return 8;
    case GgmlType::kQ5_1: return 9;
    case GgmlType::kQ4_K: return 14;  // Q4_K_S: Q4_K everywhere but the output
    case GgmlType::kQ5_K: return 16;  // Q5_K_S
    case GgmlType::kQ6_K: return 18;
    case GgmlType::kQ2_K: return 10;
    case GgmlType::kQ3_K: return 11;    // Q3_K_S: Q3_K everywhere but the output
    case GgmlType::kIQ4_NL: return 25;
    case GgmlType::kIQ4_XS: return 30;
    case GgmlType::kMXFP4: return 38;   // MXFP4_MOE
    case GgmlType::kBF16: return 32;
    default: return 0;
  }
}

Result<RandomModelStats> write_random_model(const RandomModelOptions& o, const std::string& path,
                                            ThreadPool& pool) {
  const RandomShape& s = o.shape;
  bool type_ok = false;
  for (GgmlType k : kRandomTypes) type_ok |= k == o.type;
  if (!type_ok) {
    return make_error("unsupported weight type '{}' (valid: {})", type_name(o.type),
                      random_type_choices());
  }
  if (s.n_layer < 1 || s.n_embd < 1 || s.n_head < 1 || s.n_head_kv < 1 || s.n_ff < 1 ||
      s.n_vocab < 1 || (s.head_dim == 0 && s.n_embd % s.n_head != 0) ||
      s.n_head % s.n_head_kv != 0 || s.n_embd % 32 != 0 || s.n_ff % 32 != 0 ||
      s.head_dim < 0 || s.head_dim % 2 != 0 || s.n_expert < 0 ||
      s.gemma4.n_shared_kv >= s.n_layer ||
      (s.shortconv_l_cache > 0 && s.attention_layers.empty()) ||
      (s.mamba2_d_state > 0 &&
       (s.attention_layers.empty() || s.mamba2_heads < 1 || s.mamba2_groups < 1 ||
        s.mamba2_heads % s.mamba2_groups != 0 || s.mamba2_d_inner % s.mamba2_heads != 0 ||
        s.mamba2_conv_kernel < 1)) ||
      (s.nextn_predict_layers > 0 && (s.ssm_state == 0 || s.nextn_predict_layers > 16)) ||
      (s.ssm_state > 0 && (s.full_attention_interval < 1 || s.ssm_groups < 1 ||
                           s.ssm_v_heads % s.ssm_groups != 0 || s.ssm_conv_kernel < 1)) ||
      (s.n_expert > 0 && (s.n_expert_used < 1 || s.n_expert_used > s.n_expert ||
                          s.n_ff_exp % 32 != 0 || s.n_ff_shexp % 32 != 0))) {
    return make_error("shape '{}' is not a valid model shape", s.name);
  }
  TOVA_RETURN_IF_ERROR(check_writable(path));

  Builder b(o, pool);
  io::GgufWriter& w = b.writer();
  const std::string a = s.arch + ".";
  const int head_dim = s.head_dim > 0 ? s.head_dim : s.n_embd / s.n_head;
  const float norm_sd = s.random_norms ? 0.1f : 0.f;
  w.set("general.architecture", io::GgufValue::make_str(s.arch));
  w.set("general.name",
        io::GgufValue::make_str(fmt::format("{} shape, random weights", s.description)));
  w.set("general.file_type", io::GgufValue::make_u32(llama_file_type(o.type)));
  if (is_quantized(o.type)) w.set("general.quantization_version", io::GgufValue::make_u32(2));
  w.set(a + "context_length", io::GgufValue::make_u32(s.n_ctx));
  w.set(a + "embedding_length", io::GgufValue::make_u32(s.n_embd));
  w.set(a + "block_count", io::GgufValue::make_u32(s.n_layer + s.nextn_predict_layers));
  w.set(a + "feed_forward_length", io::GgufValue::make_u32(s.n_ff));
  w.set(a + "attention.head_count", io::GgufValue::make_u32(s.n_head));
  w.set(a + "attention.head_count_kv", io::GgufValue::make_u32(s.n_head_kv));
  w.set(a + "rope.freq_base", io::GgufValue::make_f32(s.rope_base));
  w.set(a + "attention.layer_norm_rms_epsilon", io::GgufValue::make_f32(s.rms_eps));
  w.set(a + "rope.dimension_count", io::GgufValue::make_u32(s.n_rot > 0 ? s.n_rot : head_dim));
  const bool deltanet = s.ssm_state > 0;
  if (deltanet) {
    w.set(a + "ssm.conv_kernel", io::GgufValue::make_u32(s.ssm_conv_kernel));
    w.set(a + "ssm.state_size", io::GgufValue::make_u32(s.ssm_state));
    w.set(a + "ssm.group_count", io::GgufValue::make_u32(s.ssm_groups));
    w.set(a + "ssm.time_step_rank", io::GgufValue::make_u32(s.ssm_v_heads));
    w.set(a + "ssm.inner_size", io::GgufValue::make_u32(s.ssm_state * s.ssm_v_heads));
    w.set(a + "full_attention_interval", io::GgufValue::make_u32(s.full_attention_interval));
    if (s.nextn_predict_layers > 0) {
      w.set(a + "nextn_predict_layers", io::GgufValue::make_u32(s.nextn_predict_layers));
    }
  }
  // LFM2: the layers without attention are short-convolution layers; Granite 4.0-H: Mamba2.
  const bool shortconv = s.shortconv_l_cache > 0, mamba2 = s.mamba2_d_state > 0;
  auto not_attention = [&](int il) {
    return std::find(s.attention_layers.begin(), s.attention_layers.end(), il) ==
           s.attention_layers.end();
  };
  auto conv_layer = [&](int il) { return shortconv && not_attention(il); };
  auto mamba2_layer = [&](int il) { return mamba2 && not_attention(il); };
  if (shortconv) w.set(a + "shortconv.l_cache", io::GgufValue::make_u32(s.shortconv_l_cache));
  if (mamba2) {
    w.set(a + "ssm.conv_kernel", io::GgufValue::make_u32(s.mamba2_conv_kernel));
    w.set(a + "ssm.inner_size", io::GgufValue::make_u32(s.mamba2_d_inner));
    w.set(a + "ssm.state_size", io::GgufValue::make_u32(s.mamba2_d_state));
    w.set(a + "ssm.time_step_rank", io::GgufValue::make_u32(s.mamba2_heads));
    w.set(a + "ssm.group_count", io::GgufValue::make_u32(s.mamba2_groups));
    w.set(a + "rope.scaling.finetuned", io::GgufValue::make_bool(s.rope_finetuned));
  }
  if (shortconv || mamba2) {
    std::vector<int32_t> kv_heads;
    for (int il = 0; il < s.n_layer; ++il) kv_heads.push_back(not_attention(il) ? 0 : s.n_head_kv);
    w.set(a + "attention.head_count_kv", io::GgufValue::make_i32_array(kv_heads));
  }
  const std::pair<const char*, float> multipliers[] = {{"embedding_scale", s.embedding_scale},
                                                       {"residual_scale", s.residual_scale},
                                                       {"attention.scale", s.attention_scale},
                                                       {"logit_scale", s.logit_scale}};
  for (const auto& [key, v] : multipliers) {
    if (v > 0.f) w.set(a + key, io::GgufValue::make_f32(v));
  }
  if (!s.rope_sections.empty()) {
    w.set(a + "rope.dimension_sections",
          io::GgufValue::make_i32_array({s.rope_sections.begin(), s.rope_sections.end()}));
  }
  w.set(a + "vocab_size", io::GgufValue::make_u32(s.n_vocab));
  const bool phi3 = s.arch == "phi3";
  if (phi3) {
    // convert_hf_to_gguf's Phi3MiniModel writes both; sliding_window 0 marks Phi-4.
    w.set(a + "rope.scaling.original_context_length", io::GgufValue::make_u32(s.n_ctx));
    w.set(a + "attention.sliding_window", io::GgufValue::make_u32(0));
  }
  if (s.sliding_window > 0) {
    w.set(a + "attention.sliding_window", io::GgufValue::make_u32(s.sliding_window));
  }
  if (s.attn_softcap > 0.f) {
    w.set(a + "attn_logit_softcapping", io::GgufValue::make_f32(s.attn_softcap));
  }
  if (s.final_softcap > 0.f) {
    w.set(a + "final_logit_softcapping", io::GgufValue::make_f32(s.final_softcap));
  }
  if (s.rope_linear > 0.f) {
    w.set(a + "rope.scaling.type", io::GgufValue::make_str("linear"));
    w.set(a + "rope.scaling.factor", io::GgufValue::make_f32(s.rope_linear));
  }
  if (s.rope_yarn > 0.f) {
    w.set(a + "rope.scaling.type", io::GgufValue::make_str("yarn"));
    w.set(a + "rope.scaling.factor", io::GgufValue::make_f32(s.rope_yarn));
    w.set(a + "rope.scaling.original_context_length", io::GgufValue::make_u32(s.yarn_orig_ctx));
  }
  if (s.n_expert > 0) {
    w.set(a + "expert_count", io::GgufValue::make_u32(s.n_expert));
    w.set(a + "expert_used_count", io::GgufValue::make_u32(s.n_expert_used));
    if (s.n_ff_exp > 0) {
      w.set(a + "expert_feed_forward_length", io::GgufValue::make_u32(s.n_ff_exp));
    }
    if (s.n_ff_shexp > 0) {
      w.set(a + "expert_shared_feed_forward_length", io::GgufValue::make_u32(s.n_ff_shexp));
    }
    if (s.n_dense_lead > 0) {
      w.set(a + "leading_dense_block_count", io::GgufValue::make_u32(s.n_dense_lead));
    }
    if (s.expert_gating > 0) {
      w.set(a + "expert_gating_func", io::GgufValue::make_u32(s.expert_gating));
    }
  }
  if (s.head_dim > 0) {
    w.set(a + "attention.key_length", io::GgufValue::make_u32(head_dim));
    w.set(a + "attention.value_length", io::GgufValue::make_u32(head_dim));
  }
  const RandomShape::Gemma4& g4 = s.gemma4;
  const bool gemma4 = g4.head_dim_swa > 0;
  // Gemma 4: is layer il a window layer (else global)?
  auto swa = [&](int il) { return gemma4 && (il + 1) % std::max(1, g4.swa_pattern) != 0; };
  if (gemma4) {
    std::vector<int32_t> kv_heads;
    std::vector<io::GgufValue> pattern;
    for (int il = 0; il < s.n_layer; ++il) {
      kv_heads.push_back(swa(il) ? g4.n_head_kv_swa : s.n_head_kv);
      pattern.push_back(io::GgufValue::make_bool(swa(il)));
    }
    w.set(a + "attention.head_count_kv", io::GgufValue::make_i32_array(kv_heads));
    w.set(a + "attention.sliding_window_pattern",
          io::GgufValue::make_array(io::GgufValueType::kBool, std::move(pattern)));
    w.set(a + "attention.key_length_swa", io::GgufValue::make_u32(g4.head_dim_swa));
    w.set(a + "attention.value_length_swa", io::GgufValue::make_u32(g4.head_dim_swa));
    w.set(a + "rope.dimension_count_swa", io::GgufValue::make_u32(g4.head_dim_swa));
    w.set(a + "rope.freq_base_swa", io::GgufValue::make_f32(g4.rope_base_swa));
    w.set(a + "attention.shared_kv_layers", io::GgufValue::make_u32(g4.n_shared_kv));
    w.set(a + "embedding_length_per_layer_input", io::GgufValue::make_u32(g4.n_embd_per_layer));
  }
  // Gemma 4 E2B/E4B: the last n_shared_kv layers compute no K/V.
  auto shared_kv = [&](int il) { return gemma4 && il >= s.n_layer - g4.n_shared_kv; };
  // A layer's feed-forward width (Gemma 4's double-wide MLP of the shared layers).
  auto layer_ff = [&](int il) -> int64_t {
    return gemma4 && g4.double_wide_mlp && shared_kv(il) ? 2 * int64_t{s.n_ff} : s.n_ff;
  };
  if (gemma4 && g4.double_wide_mlp) {
    std::vector<int32_t> ff;
    for (int il = 0; il < s.n_layer; ++il) ff.push_back(static_cast<int32_t>(layer_ff(il)));
    w.set(a + "feed_forward_length", io::GgufValue::make_i32_array(ff));
  }
  TOVA_RETURN_IF_ERROR(copy_vocab(o, w));

  auto mtype = [&](MatrixRole role, int64_t n_in) {
    return random_matrix_type(o.type, role, s.tied_output, n_in);
  };
  b.matrix("token_embd.weight", mtype(MatrixRole::kTokenEmbd, s.n_embd), s.n_embd, s.n_vocab);
  b.vector(s.output_norm_name + ".weight", s.n_embd, 1.f, norm_sd);
  if (!s.tied_output) {
    b.matrix("output.weight", mtype(MatrixRole::kOutput, s.n_embd), s.n_embd, s.n_vocab);
  }
  if (s.llama3_orig_ctx > 0) {
    // convert_hf_to_gguf.py's LlamaModel for rope_type "llama3".
    constexpr double kFactor = 32, kLow = 1, kHigh = 4;
    const double low_wavelen = s.llama3_orig_ctx / kLow, high_wavelen = s.llama3_orig_ctx / kHigh;
    std::vector<float> factors;
    for (int i = 0; i < head_dim; i += 2) {
      const double freq =
          1.0 / std::pow(static_cast<double>(s.rope_base), static_cast<double>(i) / head_dim);
      const double wavelen = 2 * M_PI / freq;
      if (wavelen < high_wavelen) {
        factors.push_back(1.f);
      } else if (wavelen > low_wavelen) {
        factors.push_back(static_cast<float>(kFactor));
      } else {
        const double smooth = (s.llama3_orig_ctx / wavelen - kLow) / (kHigh - kLow);
        factors.push_back(static_cast<float>(1 / ((1 - smooth) / kFactor + smooth)));
      }
    }
    b.vector("rope_freqs.weight", factors);
  }
  if (gemma4) {
    // convert_hf_to_gguf's Gemma4Model: the global layers' proportional RoPE as divisors.
    const int n_pair = head_dim / 2;
    const int n_rotated = static_cast<int>(head_dim * g4.rope_partial / 2);
    std::vector<float> factors(n_pair, 1e30f);
    for (int i = 0; i < n_rotated; ++i) factors[i] = 1.f;
    b.vector("rope_freqs.weight", factors);
  }
  if (gemma4 && g4.n_embd_per_layer > 0) {
    // The per-layer embeddings as convert_hf_to_gguf's Gemma4Model names them: a row of
    // n_layer * P per token, the projection from the embedding and its norm.
    const int64_t n_all = int64_t{s.n_layer} * g4.n_embd_per_layer;
    b.matrix("per_layer_token_embd.weight", mtype(MatrixRole::kTokenEmbd, n_all), n_all,
             s.n_vocab);
    b.matrix("per_layer_model_proj.weight", mtype(MatrixRole::kAsConverted, s.n_embd), s.n_embd,
             n_all);
    b.vector("per_layer_proj_norm.weight", g4.n_embd_per_layer, 1.f, norm_sd);
  }
  const MatrixRole layer_role = s.n_expert > 0 ? MatrixRole::kMoeLayer : MatrixRole::kLayer;
  // Block il: a layer of the main stack, or (il >= n_layer) a multi-token prediction block's
  // decoder layer, a gated attention layer.
  auto write_layer = [&](int il) {
    const std::string p = fmt::format("blk.{}.", il);
    // Gemma 4's window layers have their own head size and KV heads.
    const int64_t layer_hd = swa(il) ? g4.head_dim_swa : head_dim;
    const int64_t q_dim = static_cast<int64_t>(s.n_head) * layer_hd;
    const int64_t kv_dim = (swa(il) ? g4.n_head_kv_swa : s.n_head_kv) * layer_hd;
    b.vector(p + "attn_norm.weight", s.n_embd, 1.f, norm_sd);
    const bool recurrent =
        (deltanet && il < s.n_layer && (il + 1) % s.full_attention_interval != 0) ||
        conv_layer(il) || mamba2_layer(il);
    if (mamba2_layer(il)) {
      // A Mamba2 mixer as convert_hf_to_gguf writes Granite 4.0-H's: in_proj rows z, x, B, C,
      // dt; the conv [x|B|C][kernel] (squeezed) and its bias, dt bias, ssm_a = -exp(A_log) < 0
      // and ssm_d as [1][heads], ssm_norm as [groups][d_inner / groups], all float32.
      const int64_t D = s.mamba2_d_inner, GN = int64_t{s.mamba2_groups} * s.mamba2_d_state;
      const int64_t H = s.mamba2_heads, CD = D + 2 * GN;
      b.matrix(p + "ssm_in.weight", mtype(layer_role, s.n_embd), s.n_embd, 2 * D + 2 * GN + H);
      b.vectors(p + "ssm_conv1d.weight", s.mamba2_conv_kernel, CD, 0.f, 0.3f);
      b.vector(p + "ssm_conv1d.bias", CD, 0.f, 0.2f);
      b.vector(p + "ssm_dt.bias", H, 0.f, 0.5f);
      b.vectors(p + "ssm_a", 1, H, -2.f, 0.5f);
      b.vectors(p + "ssm_d", 1, H, 1.f, 0.3f);
      b.vectors(p + "ssm_norm.weight", D / s.mamba2_groups, s.mamba2_groups, 1.f, norm_sd);
      b.matrix(p + "ssm_out.weight", mtype(layer_role, D), D, s.n_embd);
    } else if (conv_layer(il)) {
      // A gated short convolution as LFM2's converter writes it: in_proj rows B, C, x; the
      // conv [n_embd][l_cache] (squeezed to 2-D) in float32; out_proj.
      b.matrix(p + "shortconv.in_proj.weight", mtype(layer_role, s.n_embd), s.n_embd,
               3 * int64_t{s.n_embd});
      b.vectors(p + "shortconv.conv.weight", s.shortconv_l_cache, s.n_embd, 0.f, 0.5f);
      b.matrix(p + "shortconv.out_proj.weight", mtype(layer_role, s.n_embd), s.n_embd, s.n_embd);
    } else if (recurrent) {
      // A Gated DeltaNet mixer as convert_hf_to_gguf writes Qwen3.5's: ssm_a = -exp(A_log) < 0,
      // the conv1d [C][kernel] and the small vectors in float32.
      const int64_t key_dim = int64_t{s.ssm_groups} * s.ssm_state;
      const int64_t value_dim = int64_t{s.ssm_v_heads} * s.ssm_state;
      const int64_t conv_dim = 2 * key_dim + value_dim;
      b.matrix(p + "attn_qkv.weight", mtype(layer_role, s.n_embd), s.n_embd, conv_dim);
      b.matrix(p + "attn_gate.weight", mtype(layer_role, s.n_embd), s.n_embd, value_dim);
      b.vectors(p + "ssm_conv1d.weight", s.ssm_conv_kernel, conv_dim, 0.f, 0.3f);
      b.vector(p + "ssm_dt.bias", s.ssm_v_heads, 0.f, 0.5f);
      b.vector(p + "ssm_a", s.ssm_v_heads, -2.f, 0.5f);
      b.matrix(p + "ssm_beta.weight", mtype(layer_role, s.n_embd), s.n_embd, s.ssm_v_heads);
      b.matrix(p + "ssm_alpha.weight", mtype(layer_role, s.n_embd), s.n_embd, s.ssm_v_heads);
      b.vector(p + "ssm_norm.weight", s.ssm_state, 1.f, norm_sd);
      b.matrix(p + "ssm_out.weight", mtype(layer_role, value_dim), value_dim, s.n_embd);
    } else if (deltanet) {  // gated attention: per head a query then a gate
      b.matrix(p + "attn_q.weight", mtype(layer_role, s.n_embd), s.n_embd, 2 * q_dim);
      b.matrix(p + "attn_k.weight", mtype(layer_role, s.n_embd), s.n_embd, kv_dim);
      b.matrix(p + "attn_v.weight", mtype(layer_role, s.n_embd), s.n_embd, kv_dim);
    } else if (phi3) {  // fused: rows q, k, v
      b.matrix(p + "attn_qkv.weight", mtype(MatrixRole::kLayer, s.n_embd), s.n_embd,
               q_dim + 2 * kv_dim);
    } else {
      b.matrix(p + "attn_q.weight", mtype(layer_role, s.n_embd), s.n_embd, q_dim);
      if (!shared_kv(il)) {
        b.matrix(p + "attn_k.weight", mtype(layer_role, s.n_embd), s.n_embd, kv_dim);
      }
      // Gemma 4's global layers: K = V where attention_k_eq_v.
      if ((!gemma4 || swa(il) || !g4.k_eq_v) && !shared_kv(il)) {
        b.matrix(p + "attn_v.weight", mtype(layer_role, s.n_embd), s.n_embd, kv_dim);
      }
    }
    if (s.qkv_bias) {
      b.vector(p + "attn_q.bias", q_dim, 0.f, norm_sd);
      b.vector(p + "attn_k.bias", kv_dim, 0.f, norm_sd);
      b.vector(p + "attn_v.bias", kv_dim, 0.f, norm_sd);
    }
    if ((s.qk_norm || gemma4) && !recurrent) {
      // Gemma 4's scores are q.k of unit-RMS heads at scale 1: norm weights of 0.5 keep the
      // random fixture's softmax from saturating (a chaotic network amplifies any rounding).
      const float qk = gemma4 ? 0.5f : 1.f;
      b.vector(p + "attn_q_norm.weight", layer_hd, qk, norm_sd * qk);
      if (!shared_kv(il)) b.vector(p + "attn_k_norm.weight", layer_hd, qk, norm_sd * qk);
    }
    if (!recurrent) b.matrix(p + "attn_output.weight", mtype(layer_role, q_dim), q_dim, s.n_embd);
    if (s.attn_out_bias) b.vector(p + "attn_output.bias", s.n_embd, 0.f, norm_sd);
    if (s.attn_sinks) b.vector(p + "attn_sinks.weight", s.n_head, 0.f, 1.f);
    if (s.post_norms || gemma4) {
      b.vector(p + "post_attention_norm.weight", s.n_embd, 1.f, norm_sd);
    }
    if (gemma4) b.vector(p + "layer_output_scale.weight", 1, 1.f, 0.2f);
    b.vector(p + s.ffn_norm_name + ".weight", s.n_embd, 1.f, norm_sd);
    if (gemma4 && s.n_expert > 0) {
      // Gemma 4's MoE layer (26B-A4B): the dense feed-forward (ffn_down below) beside the
      // experts, each with its norms, the router's input scale, gate and up of the experts
      // fused (ffn_gate_up_exps, gate rows first) and a scale per expert
      // (ffn_down_exps.scale, convert_hf_to_gguf's router.per_expert_scale).
      const int64_t ff = s.n_ff_exp;
      b.matrix(p + "ffn_gate.weight", mtype(MatrixRole::kLayer, s.n_embd), s.n_embd, layer_ff(il));
      b.matrix(p + "ffn_up.weight", mtype(MatrixRole::kLayer, s.n_embd), s.n_embd, layer_ff(il));
      b.matrix(p + "ffn_gate_inp.weight", GgmlType::kF32, s.n_embd, s.n_expert);
      b.vector(p + "ffn_gate_inp.scale", s.n_embd, 1.f, norm_sd);
      b.vector(p + "pre_ffw_norm_2.weight", s.n_embd, 1.f, norm_sd);
      b.vector(p + "post_ffw_norm_1.weight", s.n_embd, 1.f, norm_sd);
      b.vector(p + "post_ffw_norm_2.weight", s.n_embd, 1.f, norm_sd);
      b.matrices(p + "ffn_gate_up_exps.weight", mtype(MatrixRole::kExpert, s.n_embd), s.n_embd,
                 2 * ff, s.n_expert);
      b.matrices(p + "ffn_down_exps.weight", mtype(MatrixRole::kExpert, ff), ff, s.n_embd,
                 s.n_expert);
      b.vector(p + "ffn_down_exps.scale", s.n_expert, 1.f, 0.3f);
    } else if (s.n_expert > 0 && il >= s.n_dense_lead) {
      const int64_t ff = s.n_ff_exp > 0 ? s.n_ff_exp : s.n_ff;
      b.matrix(p + "ffn_gate_inp.weight", GgmlType::kF32, s.n_embd, s.n_expert);
      if (s.moe_biases) b.vector(p + "ffn_gate_inp.bias", s.n_expert, 0.f, 0.5f);
      // lfm2moe's selection bias (sigmoid gating), float32 as converted.
      if (s.expert_gating == 2) b.vector(p + "exp_probs_b.bias", s.n_expert, 0.f, 0.5f);
      b.matrices(p + "ffn_gate_exps.weight", mtype(MatrixRole::kExpert, s.n_embd), s.n_embd, ff,
                 s.n_expert);
      b.matrices(p + "ffn_up_exps.weight", mtype(MatrixRole::kExpert, s.n_embd), s.n_embd, ff,
                 s.n_expert);
      b.matrices(p + "ffn_down_exps.weight", mtype(MatrixRole::kExpert, ff), ff, s.n_embd,
                 s.n_expert);
      if (s.moe_biases) {
        b.vectors(p + "ffn_gate_exps.bias", ff, s.n_expert, 0.f, s.expert_gate_up_bias_std);
        b.vectors(p + "ffn_up_exps.bias", ff, s.n_expert, 0.f, s.expert_gate_up_bias_std);
        b.vectors(p + "ffn_down_exps.bias", s.n_embd, s.n_expert, 0.f, 0.1f);
      }
      if (s.n_ff_shexp > 0) {
        if (!s.shared_expert_ungated) {
          b.vector(p + "ffn_gate_inp_shexp.weight", s.n_embd, 0.f, 0.5f);
        }
        b.matrix(p + "ffn_gate_shexp.weight", mtype(layer_role, s.n_embd), s.n_embd,
                 s.n_ff_shexp);
        b.matrix(p + "ffn_up_shexp.weight", mtype(layer_role, s.n_embd), s.n_embd,
                 s.n_ff_shexp);
        b.matrix(p + "ffn_down_shexp.weight", mtype(layer_role, s.n_ff_shexp),
                 s.n_ff_shexp, s.n_embd);
      }
    } else if (phi3) {  // fused: rows gate, up
      b.matrix(p + "ffn_up.weight", mtype(MatrixRole::kLayer, s.n_embd), s.n_embd, 2 * s.n_ff);
    } else {
      b.matrix(p + "ffn_gate.weight", mtype(MatrixRole::kLayer, s.n_embd), s.n_embd, layer_ff(il));
      b.matrix(p + "ffn_up.weight", mtype(MatrixRole::kLayer, s.n_embd), s.n_embd, layer_ff(il));
    }
    if (s.n_expert == 0 || gemma4 || il < s.n_dense_lead) {
      b.matrix(p + "ffn_down.weight", mtype(MatrixRole::kLayer, layer_ff(il)), layer_ff(il),
               s.n_embd);
    }
    if (s.post_norms || gemma4) b.vector(p + "post_ffw_norm.weight", s.n_embd, 1.f, norm_sd);
    if (gemma4 && g4.n_embd_per_layer > 0) {
      b.matrix(p + "inp_gate.weight", mtype(MatrixRole::kLayer, s.n_embd), s.n_embd,
               g4.n_embd_per_layer);
      b.matrix(p + "proj.weight", mtype(MatrixRole::kLayer, g4.n_embd_per_layer),
               g4.n_embd_per_layer, s.n_embd);
      b.vector(p + "post_norm.weight", s.n_embd, 1.f, norm_sd);
    }
  };
  for (int il = 0; il < s.n_layer; ++il) write_layer(il);
  for (int il = s.n_layer; il < s.n_layer + s.nextn_predict_layers; ++il) {
    write_layer(il);
    const std::string p = fmt::format("blk.{}.nextn.", il);
    b.matrix(p + "eh_proj.weight", mtype(layer_role, 2 * s.n_embd), 2 * s.n_embd, s.n_embd);
    b.vector(p + "enorm.weight", s.n_embd, 1.f, norm_sd);
    b.vector(p + "hnorm.weight", s.n_embd, 1.f, norm_sd);
    b.vector(p + "shared_head_norm.weight", s.n_embd, 1.f, norm_sd);
  }
  if (o.plan_only) return b.stats();  // the tensors' list only: nothing is drawn or written
  TOVA_RETURN_IF_ERROR(w.write_file(path));
  return b.stats();
}

std::vector<std::string> default_vocab_dirs() {
  namespace fs = std::filesystem;
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("TOVA_SHARED_DIR"); env != nullptr && *env != '\0') {
    dirs.push_back((fs::path(env) / "vocab").string());
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) dirs.push_back((exe.parent_path() / "../../../shared/vocab").lexically_normal());
  // The architecture fixtures' vocabulary is the bundled model's.
  if (!ec) dirs.push_back((exe.parent_path() / "../../assets").lexically_normal());
  dirs.push_back("../shared/vocab");
  dirs.push_back("shared/vocab");
  return dirs;
}

Result<std::string> find_vocab(const RandomShape& shape, std::span<const std::string> dirs) {
  if (shape.vocab_file.empty()) return std::string();  // synthetic
  std::error_code ec;
  std::string tried;
  for (const std::string& d : dirs) {
    if (d.empty()) continue;
    const std::filesystem::path p = std::filesystem::path(d) / shape.vocab_file;
    if (std::filesystem::is_regular_file(p, ec)) return p.string();
    tried += (tried.empty() ? "" : ", ") + p.string();
  }
  return make_error("{}: {} for shape '{}' not found (looked at: {}); give the file", field::kVocab,
                    shape.vocab_file, shape.name, tried.empty() ? "nothing" : tried);
}

}  // namespace tova::model
