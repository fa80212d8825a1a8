// Random-weight GGUF models of real shapes with a real vocabulary: speed depends on the shape
// and the weight types, not on the weight values, so these files let us benchmark (against
// llama.cpp too) without shipping gigabytes of trained weights.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/result.h"
#include "core/thread_pool.h"

namespace tova::model {

struct RandomShape {
  std::string name;         // "tinyllama", as given to --shape
  std::string description;  // "TinyLlama-1.1B"
  std::string arch;         // general.architecture: "llama" | "qwen2"
  int n_layer = 0;
  int n_embd = 0;
  int n_head = 0;
  int n_head_kv = 0;
  int n_ff = 0;
  int n_vocab = 0;
  int n_ctx = 0;
  float rope_base = 10000.f;
  float rms_eps = 1e-5f;
  bool tied_output = false;  // no output.weight: the token embedding is reused
  bool qkv_bias = false;     // qwen2: attn_{q,k,v}.bias
  int head_dim = 0;          // attention.key_length/value_length written when set (qwen3,
                             // mistral); 0: n_embd / n_head, not written
  bool qk_norm = false;      // qwen3: attn_{q,k}_norm.weight
  // Llama-3.x: rope_freqs.weight from llama3 scaling (factor 32, low/high frequency factors 1
  // and 4) over this original context, as the converter computes it; 0: none.
  int llama3_orig_ctx = 0;
  // Gemma 2/3: post_attention_norm and post_ffw_norm of every layer.
  bool post_norms = false;
  int sliding_window = 0;      // attention.sliding_window, written when set
  float attn_softcap = 0.f;    // attn_logit_softcapping, written when set (gemma2)
  float final_softcap = 0.f;   // final_logit_softcapping, written when set (gemma2)
  float rope_linear = 0.f;     // rope.scaling.type linear with this factor, written when set
  // Mixture of experts (n_expert > 0): ffn_gate_inp (float32, as llama-quantize leaves it)
  // and ffn_{gate,up,down}_exps in every layer instead of the dense feed-forward.
  int n_expert = 0;
  int n_expert_used = 0;
  int n_ff_exp = 0;    // expert_feed_forward_length, written when set (qwen*moe); 0: n_ff
  int n_ff_shexp = 0;  // > 0: a shared expert of this width (qwen2moe) and its gate
  bool shared_expert_ungated = false;  // granitehybrid: the shared expert without its gate
  int n_dense_lead = 0;   // leading_dense_block_count: the first layers keep a dense FFN
  int expert_gating = 0;  // expert_gating_func, written when set; 2 (sigmoid) also writes each
                          // MoE layer's exp_probs_b.bias selection bias (lfm2moe)
  // gpt-oss: attn_output.bias, attn_sinks.weight (N(0, 1) logits), the router's and experts'
  // biases, YaRN (rope.scaling.type yarn with this factor over yarn_orig_ctx positions), and
  // the feed-forward norm under another name.
  bool attn_out_bias = false;
  bool attn_sinks = false;
  bool moe_biases = false;
  float expert_gate_up_bias_std = 0.1f;  // moe_biases: ffn_{gate,up}_exps.bias are N(0, this)
  float rope_yarn = 0.f;
  int yarn_orig_ctx = 0;
  std::string ffn_norm_name = "ffn_norm";
  // Gated DeltaNet families (qwen35*; ssm_state > 0): the ssm.* keys, full_attention_interval
  // and rope.dimension_sections are written; a layer the interval makes recurrent gets the
  // DeltaNet tensors (attn_qkv, attn_gate, ssm_*), the others a gated attn_q of twice the rows.
  int ssm_conv_kernel = 0;
  int ssm_state = 0;      // ssm.state_size: a DeltaNet head's size
  int ssm_groups = 0;     // ssm.group_count: key heads
  int ssm_v_heads = 0;    // ssm.time_step_rank: value heads
  int full_attention_interval = 0;
  // Multi-token prediction blocks (Gated DeltaNet families): nextn_predict_layers written,
  // block_count n_layer + this, and after the main stack as many gated attention blocks with
  // the nextn tensors (eh_proj, enorm, hnorm, shared_head_norm), as convert_hf_to_gguf writes
  // Qwen3.5's MTP block.
  int nextn_predict_layers = 0;
  std::vector<int> rope_sections;  // rope.dimension_sections, written when set
  int n_rot = 0;          // rope.dimension_count (partial rotary) when set, else head_dim
  // Gated short-convolution families (lfm2; shortconv_l_cache > 0): shortconv.l_cache is
  // written and attention.head_count_kv as an array, n_head_kv at the attention_layers and 0
  // elsewhere; a 0 layer gets the shortconv.{in_proj,conv,out_proj} tensors instead of attn_*.
  int shortconv_l_cache = 0;
  std::vector<int> attention_layers;
  std::string output_norm_name = "output_norm";  // the final norm (lfm2: token_embd_norm)
  // Mamba2 families (granitehybrid; mamba2_d_state > 0): the ssm.* keys (conv_kernel,
  // inner_size, state_size, time_step_rank = heads, group_count) and attention.head_count_kv as
  // an array, n_head_kv at the attention_layers and 0 elsewhere; a 0 layer gets ssm_in,
  // ssm_conv1d.{weight,bias}, ssm_dt.bias, ssm_a, ssm_d, ssm_norm and ssm_out instead of attn_*.
  int mamba2_conv_kernel = 0;
  int mamba2_d_inner = 0;
  int mamba2_d_state = 0;
  int mamba2_heads = 0;
  int mamba2_groups = 0;
  // Granite's multipliers (embedding_scale, residual_scale, attention.scale, logit_scale),
  // each written when > 0; rope.scaling.finetuned written for Mamba2 shapes (false: no RoPE,
  // as the converter writes the hybrids).
  float embedding_scale = 0.f;
  float residual_scale = 0.f;
  float attention_scale = 0.f;
  float logit_scale = 0.f;
  bool rope_finetuned = true;
  float weight_std = 0.02f;   // matrices are N(0, weight_std)
  bool random_norms = false;  // norm weights 1 + N(0, 0.1) instead of 1 (fixtures: a norm
                              // weight applied to the wrong element shows)
  std::string vocab_file;     // default vocabulary, a file name in the vocab folder; empty:
                              // a synthetic vocabulary of n_vocab tokens (no real one of that
                              // size is at hand)
  // Gemma 4 (head_dim_swa > 0): window layers of their own head size and KV heads
  // (head_dim, n_head_kv are the global layers'), every swa_pattern-th layer global (written
  // as a bool per layer), q/k norms, post norms, K = V on the global layers (no attn_v), the
  // global layers' proportional RoPE (rope_freqs.weight: 1 for the first rope_partial of the
  // pairs, 1e30 for the rest), layer_output_scale per layer, and the E-model keys: the last
  // n_shared_kv layers without K/V of their own (no attn_k/attn_v/attn_k_norm), and with
  // n_embd_per_layer > 0 the per-layer embeddings (per_layer_token_embd, per_layer_model_proj,
  // per_layer_proj_norm, and inp_gate, proj, post_norm in every layer).
  struct Gemma4 {
    int head_dim_swa = 0;
    int n_head_kv_swa = 0;
    int swa_pattern = 0;
    float rope_base_swa = 10000.f;
    float rope_partial = 1.f;
    int n_shared_kv = 0;
    int n_embd_per_layer = 0;
    bool k_eq_v = true;  // global layers without attn_v (attention_k_eq_v; false in E4B)
    // use_double_wide_mlp: the shared-K/V layers' feed-forward is 2 n_ff wide (written as a
    // per-layer feed_forward_length array, as convert_hf_to_gguf does).
    bool double_wide_mlp = false;
  } gemma4;
};

// The known shapes, in a fixed order (real models first, then small ones for tests).
const std::vector<RandomShape>& random_shapes();
// "tinyllama, smollm, llama3.2-1b, qwen3-0.6b, tiny, tiny-qwen2, arch-..."
std::string random_shape_choices();
// An error lists the valid names.
Result<RandomShape> find_random_shape(std::string_view name);
// The fixture shape of an architecture family (--arch): a real converted model's tensors and
// keys, scaled down to well under a megabyte with stories260K's 512-token vocabulary.
std::string random_arch_choices();
Result<RandomShape> find_random_arch(std::string_view family);

// The fixture base (two layers of 64, stories260K's vocabulary, random norms) of an architecture
// family, for ArchSpec::fixtures: `family` is its --arch name ("llama3"), `arch` the file's
// general.architecture.
RandomShape fixture_shape(std::string family, std::string description, std::string arch);

// Sets one field of `shape` from "NAME=VALUE" (`tova make-random --set`): other sizes of a
// fixture (head counts, GQA ratio, experts, window, layers) for held-back checks against
// llama.cpp. The names are the fields' own (n_layer, n_head, ..., gemma4.head_dim_swa); an
// error names the unknown field or the value that is not a number. The shape is checked when
// the file is written.
Status set_shape_field(RandomShape& shape, std::string_view name_eq_value);
// The names set_shape_field knows, comma-separated.
std::string shape_field_choices();

// Weight types a random model can be written in (those tova computes with), e.g. "q4_0, f16".
std::string random_type_choices();
// An error lists the valid types.
Result<GgmlType> parse_random_type(std::string_view name);

// What a matrix is for: llama-quantize treats the output matrix (or the tied token embedding)
// differently from the rest.
// A mixture's experts (kExpert) and its other layer matrices (kMoeLayer) differ only for MXFP4
// (llama-quantize's MXFP4_MOE: MXFP4 experts, Q8_0 elsewhere).
// kAsConverted: a matrix llama-quantize never converts (Gemma 4's per_layer_model_proj:
// llama-quant.cpp keeps it "as it is"), so a quantized file holds it in the type of the F16
// conversion it was quantized from.
enum class MatrixRole { kTokenEmbd, kOutput, kLayer, kExpert, kMoeLayer, kAsConverted };

// The type llama-quantize gives a matrix with rows of n_in elements in a file of base type
// `base`: the output matrix (or tied embedding) of a 4/5-bit file is Q6_K, and a k-quant that
// does not divide the row falls back (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0).
GgmlType random_matrix_type(GgmlType base, MatrixRole role, bool tied_output, int64_t n_in);

// general.file_type (llama.cpp's llama_ftype) for a file of base type `base`.
uint32_t llama_file_type(GgmlType base);

struct RandomModelOptions {
  RandomShape shape;
  GgmlType type = GgmlType::kQ4_0;
  std::string vocab_path;  // a GGUF with tokenizer.ggml.* keys and exactly shape.n_vocab tokens;
                           // empty: a synthetic vocabulary (shapes without a vocab_file)
  uint64_t seed = 1;
  bool plan_only = false;  // list the tensors (RandomModelStats::tensors), write nothing
};

struct RandomModelStats {
  int n_tensors = 0;
  uint64_t n_params = 0;
  uint64_t n_bytes = 0;  // tensor data bytes
  struct Tensor {
    std::string name;
    GgmlType type = GgmlType::kF32;
    std::vector<int64_t> dims;  // ggml order: the row length first
    uint64_t n_bytes = 0;
  };
  std::vector<Tensor> tensors;  // in the file's order
};

// Writes the model (atomically: PATH.tmp renamed over PATH). Matrices are N(0, weight_std),
// norm weights 1 and biases 0 (or 1 + N(0, 0.1) and N(0, 0.1) with random_norms). The file's
// contents depend on the options only, not on the pool size.
Result<RandomModelStats> write_random_model(const RandomModelOptions& o, const std::string& path,
                                            ThreadPool& pool);

// Where the shared vocabularies may be: $TOVA_SHARED_DIR/vocab, then ../shared/vocab next to
// the source tree (executables live in REPO/BUILD/bin), then relative to the working folder.
std::vector<std::string> default_vocab_dirs();

// The default vocabulary of `shape`: the first of dirs/shape.vocab_file that exists; "" for a
// shape with a synthetic vocabulary.
Result<std::string> find_vocab(const RandomShape& shape, std::span<const std::string> dirs);

}  // namespace tova::model
