// A loaded model: the mapped GGUF file, its config and weights (immutable, shared by all
// sequences), and the batched forward pass, which wires each layer's kinds (layer_kinds.h).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "core/thread_pool.h"
#include "io/gguf.h"
#include "kv/layer_step.h"
#include "kv/multi_state.h"
#include "model/config.h"
#include "model/moved_keys.h"
#include "model/weights.h"

namespace tova::model {

// One token of a batch. Tokens of the same sequence appear in order; each takes the next
// position of its sequence (MultiState::n_seen()). Several sequences with different policies
// and budgets may share one batch.
struct BatchToken {
  int32_t token = 0;
  kv::MultiState* state = nullptr;
  bool logits = false;  // write this token's logits
};

// A sequence that rides along with another while their multi-states are equal. Until a bounded
// sequence first evicts, it holds exactly the tokens a sequence with a larger budget (or `full`)
// holds, in the same slots, so its outputs are bit-identical to that leader's. A follower's
// tokens are not in the batch: each of its layers receives the leader's keys and values and,
// if its policy scores, the leader's attention probabilities, and it computes nothing else.
// Its logits are the leader's.
struct Follower {
  kv::MultiState* leader = nullptr;  // in the batch
  kv::MultiState* state = nullptr;   // not in the batch
};

// The tokens of one sequence within a batch: their indices, in order, and its followers.
struct SequenceRun {
  kv::MultiState* state = nullptr;
  std::vector<int> idx;
  std::vector<kv::MultiState*> followers;
};

// Per-call buffers, reused across calls (one per thread that calls forward).
struct ForwardScratch {
  std::vector<float> x;                // [n_tok][n_embd] the residual stream
  std::vector<float> xb;               // [n_tok][n_embd] a block's normed input, then its output
  std::vector<float> q;                // [n_tok][n_head * head_dim] queries (attention)
  std::vector<float> k, v;             // [n_tok][n_head_kv * head_dim] new keys, values
  std::vector<float> att;              // [n_tok][n_head * head_dim] attention outputs
  std::vector<float> q_gated;          // [n_tok][n_head][2][head_dim] queries and gates (q_gate)
  std::vector<float> gate;             // [n_tok][n_head * head_dim] output gates (q_gate)
  std::vector<float> hb, hb2;          // [n_tok][n_ff] gate and up projections (dense FFN)
  std::vector<float> logit_in;         // [n_out][n_embd] final-normed rows that want logits
  std::vector<float> rope_cs;          // [n_tok][n_rot] cos/sin at each token's position
  kernels::RopeParams rope_cs_params;  // what rope_cs was computed for
  bool rope_cs_valid = false;
  // Position modes that move positions (kv::PositionMode gap, rank): cos/sin of mapped
  // positions 0 .. moved_cs_n - 1, [moved_cs_n][n_rot], grown as needed, kept across calls.
  std::vector<float> moved_cs;
  int64_t moved_cs_n = 0;
  kernels::RopeParams moved_cs_params;
  std::vector<int64_t> pos;       // [n_tok]
  std::vector<SequenceRun> runs;  // the batch's sequences
  // The layer's new keys and values converted once per layer into every storage type some pool
  // of the batch (a sequence's or a follower's) uses: [n_tok] canonical rows each
  // (core/kv_type.h). f32 pools read k and v directly.
  struct Converted {
    KvType type = KvType::kF32;
    bool rotated = false;
    bool active = false;  // some pool of this call uses it
    std::vector<uint8_t> rows;
  };
  std::vector<Converted> conv_k, conv_v;
  std::vector<kv::StoredRows> stored_k, stored_v;  // what step_layer sees of them
  // Queries before RoPE, [n_tok][q_dim], kept only for the sequences whose policy reads them
  // (kv::MultiState::needs_queries), with the layer's rotation as the policy sees it.
  std::vector<float> q_pre;
  bool any_q_pre = false;
  kv::QueryRope query_rope;
  // What one thread needs to step a sequence through a layer, reused (no allocation per step).
  struct AttendScratch {
    kv::StepScratch step;
    MovedKeys moved;
    std::vector<float> scores;  // [heads][n_slot] the attention kernel's score rows
  };
  std::vector<AttendScratch> per_thread;       // [pool threads]
  std::vector<std::pair<int64_t, int>> order;  // sequences by cost, costliest first
  // The mixture-of-experts kind (layer_ffn_moe.cpp); n_pick = n_tok * n_expert_used, one
  // row per (token, chosen expert), rows grouped by expert.
  struct Moe {
    std::vector<float> probs;       // [n_tok][n_expert] router logits, then probabilities
    std::vector<int> chosen;        // [n_tok][n_expert_used] expert ids, most probable first
    std::vector<float> weight;      // [n_tok][n_expert_used] their weights
    std::vector<int> begin;         // [n_expert + 1] each expert's first row
    std::vector<int> next;          // [n_expert] its next free row while grouping
    std::vector<int> row_of;        // [n_tok][n_expert_used] the row of (token, j)
    std::vector<int> token_of;      // [n_pick] the token of each row
    std::vector<float> xe;          // [n_pick][n_embd] inputs gathered by expert
    std::vector<float> gate, up;    // [n_pick][n_ff_exp] expert gate and up projections
    std::vector<float> ye;          // [n_pick][n_embd] expert outputs
    std::vector<kernels::MatmulJob> jobs;  // the experts' products of one step (run_experts)
    std::vector<float> shared_gate;          // [n_tok] sigmoid gate of the shared expert
    std::vector<float> shared_h;    // [n_tok][n_ff_shexp] shared expert's gate projection
    std::vector<float> shared_h2;   // [n_tok][max(n_ff_shexp, n_embd)] its up projection, then
                                    // its output
    // Gemma 4 (ModelConfig::moe_beside_dense): the router's input and the dense
    // feed-forward's output beside the experts, each [n_tok][n_embd].
    std::vector<float> router_in, dense_out;
  } moe;
  // The Gated DeltaNet kind (layer_deltanet.cpp); C, K, V as in DeltaNetWeights, H = n_v_head.
  struct DeltaNet {
    std::vector<float> qkv;    // [n_tok][C] projections, then their conv1d + silu
    std::vector<float> z;      // [n_tok][V] output gates
    std::vector<float> beta;   // [n_tok][H] projections, then sigmoid
    std::vector<float> g;      // [n_tok][H] projections, then the log decay
    std::vector<float> o;      // [n_tok][V] the delta rule's outputs, then gated-normed
    std::vector<float> scratch;  // [pool threads][delta_chunk_workspace_floats(S)] chunked rule
  } deltanet;
  // Gemma 4 E2B/E4B's per-layer embeddings (layer_per_layer_input.cpp), P = n_embd_per_layer.
  std::vector<float> ple;       // [n_tok][n_layer][P] every layer's input
  std::vector<float> ple_gate;  // [n_tok][P] a layer's gate, then gate * input
  std::vector<int32_t> tokens;  // [n_tok] the batch's token ids
  std::vector<int> state_of;    // [n_layer] a layer's multi-state K/V layer (-1: none)
};

struct ModelOptions {
  // Keep activations in float32 for quantized weights too (dequantize rows, float dot
  // products) instead of rounding them to Q8 blocks for int8 dot products as llama.cpp does.
  // Slower; computes what the weights mean, for comparisons with a float64 reference.
  bool f32_activations = false;
  // Map the file (shared with the page cache, opens at once) rather than read it into memory of
  // its own (a copy at load time, ~30 % faster weight streaming; see io::read_file_to_memory).
  // false: own memory where it fits, else mapped (choose_weight_holding).
  bool mmap = false;
};

// How Model::load holds a file of file_bytes when ModelOptions::mmap is false, with
// available_bytes of memory available (core/memory.h; 0: unknown).
//   kRead: memory of its own (huge pages, faster streaming), read through the page cache, which
//     keeps its copy as long as memory allows: two copies, so only while both fit in half of
//     the available memory (file_bytes <= available / 2).
//   kReadDropCache: memory of its own, the page cache's copy of each chunk dropped as it is
//     copied (io::read_file_to_memory): one copy, for files up to 80 % of the available memory
//     (a 12-17 GB MoE on 24 GiB); the rest stays for K/V, activations and the system.
//   kMap: a mapping of the file (one copy, shared with the page cache, pages the kernel may
//     evict and read again) for anything larger.
enum class WeightHolding { kRead, kReadDropCache, kMap };
WeightHolding choose_weight_holding(uint64_t file_bytes, uint64_t available_bytes);

class Model {
 public:
  static Result<std::unique_ptr<Model>> load(const std::string& path,
                                             const ModelOptions& options = {});
  // A model over an already parsed file (e.g. io::GgufFile::from_bytes): config and weight
  // table validated exactly as load() does. options.mmap is ignored (the file is loaded).
  static Result<std::unique_ptr<Model>> from_file(std::unique_ptr<io::GgufFile> file,
                                                  const ModelOptions& options = {});

  const ModelConfig& config() const { return config_; }
  const io::GgufFile& file() const { return *file_; }
  const ModelWeights& weights() const { return weights_; }
  // Whether the weights are a mapping of the file (else memory of the model's own).
  bool mapped() const { return mapped_; }

  // Runs the batch through every layer. For each sequence, its tokens join each layer's
  // multi-state and the policy evicts exactly as if they were fed one by one (see
  // spec/POLICIES.md), unless the sequence was created for chunked prefill (max_new > 1):
  // then its tokens in this batch form one chunk, and eviction happens after the chunk.
  // logits: [number of tokens with .logits][n_vocab], in batch order.
  // followers: sequences that ride along with one in the batch (see Follower); each must be
  // at its leader's position, exact (not chunked), and must not need to evict within the batch.
  Status forward(std::span<const BatchToken> batch, ThreadPool& pool, ForwardScratch& scratch,
                 float* logits, std::span<const Follower> followers = {}) const;

  // Options for a new sequence's multi-state matching this model's shape.
  kv::MultiStateOptions state_options(const kv::PolicySpec& policy, const KvFormat& kv_type,
                                      int max_new = 1) const;

 private:
  Model() = default;
  // forward() of a batch whose every sequence's step ends its evictions at the end.
  Status forward_step(std::span<const BatchToken> batch, ThreadPool& pool,
                      ForwardScratch& scratch, float* logits,
                      std::span<const Follower> followers) const;
  // Some sequence of the batch would evict between two of its tokens (kv::
  // evicts_between_tokens): a model with shared-K/V layers then feeds the batch token by token.
  bool splits_between_tokens(std::span<const BatchToken> batch,
                             std::span<const Follower> followers, ForwardScratch& scratch) const;

  std::unique_ptr<io::GgufFile> file_;
  ModelConfig config_;
  ModelWeights weights_;
  ModelOptions options_;
  bool mapped_ = false;
};

}  // namespace tova::model
