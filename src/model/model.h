// A loaded model: the mapped GGUF file, its config, weights and layer plan (immutable, shared by
// all sequences), and the batched forward pass, which wires each layer's kinds (layer_kinds.h).
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
#include "kv/multi_state.h"
#include "model/config.h"
#include "model/forward_scratch.h"
#include "model/layer_plan.h"
#include "model/weight_repack.h"
#include "model/weights.h"

namespace tova::model {

struct ModelOptions {
  // Keep activations in float32 for quantized weights too (dequantize rows, float dot
  // products) instead of rounding them to Q8 blocks for int8 dot products as llama.cpp does.
  // Slower; computes what the weights mean, for comparisons with a float64 reference.
  bool f32_activations = false;
  // Map the file (shared with the page cache, opens at once) rather than read it into memory of
  // its own (a copy at load time, ~30 % faster weight streaming; see io::read_file_to_memory).
  // false: own memory where it fits, else mapped (choose_weight_holding).
  bool mmap = false;
  // Repack the attention and dense feed-forward matrices at load into interleaved layouts
  // (q4_0_r8 from Q4_0; model/weight_repack.h), in place. Not with f32_activations (whose row
  // dequantization reads rows one by one).
  bool repack = kRepackByDefault;
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
  // What the load-time repack did (ModelOptions::repack; all zero when off).
  const RepackStats& repack_stats() const { return repack_stats_; }
  // Per layer its mixer kind, its state in the multi-state and its K/V owner (layer_plan.h).
  std::span<const LayerPlan> plan() const { return plan_; }
  // A hash of the shape, the weights' size and the embedding's first 64 KiB, computed once at
  // load: a session file or a stored state loads only into the model that wrote it.
  uint64_t fingerprint() const { return fingerprint_; }

  // Runs the batch through every layer. For each sequence, its tokens join each layer's
  // multi-state and the policy evicts exactly as if they were fed one by one (see
  // spec/POLICIES.md), unless the sequence was created for chunked prefill (max_new > 1):
  // then its tokens in this batch form one chunk, and eviction happens after the chunk.
  // logits: [number of tokens with .logits][n_vocab], in batch order.
  // followers: sequences that ride along with one in the batch (see Follower); each must be
  // at its leader's position, exact (not chunked), and must not need to evict within the batch.
  // hidden, if given: [n_tok][n_embd], every token's final-normed residual stream (the row the
  // output projection reads; llama.cpp's h_nextn), which the multi-token prediction block takes.
  Status forward(std::span<const BatchToken> batch, ThreadPool& pool, ForwardScratch& scratch,
                 float* logits, std::span<const Follower> followers = {},
                 float* hidden = nullptr) const;

  // Multi-token prediction block `block` (< ModelConfig::n_nextn; nextn_forward.cpp): every
  // batch token (its state made with nextn_state_options) joins the block's K/V together with
  // its row of h ([n_tok][n_embd]: the main model's final-normed hidden state at the position
  // before, or the block's own h_out of the token before when chaining drafts). logits: rows
  // of the tokens with .logits, [..][n_vocab]; h_out (if given): [n_tok][n_embd], the block's
  // final-normed output (its head's input), which chains to the next draft.
  Status forward_nextn(int block, std::span<const BatchToken> batch, const float* h,
                       ThreadPool& pool, ForwardScratch& scratch, float* logits,
                       float* h_out) const;
  // Options for the multi-state of a prediction block: one attention layer of the model's
  // shape, no recurrent state.
  kv::MultiStateOptions nextn_state_options(const kv::PolicySpec& policy,
                                            const KvFormat& kv_type) const;

  // Options for a new sequence's multi-state matching this model's shape.
  kv::MultiStateOptions state_options(const kv::PolicySpec& policy, const KvFormat& kv_type,
                                      int max_new = 1) const;

 private:
  Model() = default;
  // forward() of a batch whose every sequence's step ends its evictions at the end.
  Status forward_step(std::span<const BatchToken> batch, ThreadPool& pool,
                      ForwardScratch& scratch, float* logits, std::span<const Follower> followers,
                      float* hidden) const;
  // Some sequence of the batch would evict between two of its tokens (kv::
  // evicts_between_tokens): a model with shared-K/V layers then feeds the batch token by token.
  bool splits_between_tokens(std::span<const BatchToken> batch,
                             std::span<const Follower> followers, ForwardScratch& scratch) const;

  std::unique_ptr<io::GgufFile> file_;
  ModelConfig config_;
  ModelWeights weights_;
  std::vector<LayerPlan> plan_;  // [n_layer]
  // The prediction blocks' view of the config (n_nextn > 0): one full-attention layer, no
  // per-layer arrays (nextn_forward.cpp).
  ModelConfig nextn_config_;
  ModelOptions options_;
  bool mapped_ = false;
  RepackStats repack_stats_;
  uint64_t fingerprint_ = 0;
};

}  // namespace tova::model
