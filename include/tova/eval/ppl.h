// Perplexity sweeps (tova ppl): chunked or streaming, every policy at every budget.
// Part of the evaluation API (tova/eval.h); each takes a loaded Engine and returns plain records.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tova/engine.h"
#include "tova/kv_format.h"
#include "tova/policy_spec.h"
#include "tova/position_mode.h"
#include "tova/result.h"

namespace tova::eval {

// ---- Perplexity (tova ppl) --------------------------------------------------------------------
// The input (text, tokenized without BOS and cut into chunks of ctx tokens, BOS first; or token
// ids as given), the configurations (every policy at every budget), and either chunked scoring
// (all configurations in shared forward passes) or streaming (the whole text as ONE sequence per
// configuration and position mode, windows of positions). Every prediction of a chunk is scored
// (ctx - 1 per chunk), unlike llama-perplexity, which scores only the second half of each chunk.

struct SweepProgress {
  int64_t steps_done = 0;  // token steps fed, summed over configurations
  int64_t steps_total = 0;
  double seconds = 0;
};

struct ConfigResult {
  kv::PolicySpec policy;
  KvFormat kv_type;
  double mean_nll = 0;
  double ppl = 0;
  double ppl_se = 0;  // delta method over per-chunk means; NaN with one chunk
  // Against `full` (only when it is in the sweep; in the first format when there are several):
  // mean and 99th percentile over predictions of KL(p_full || p_config), and the share of
  // predictions with the same argmax.
  std::optional<double> kl_mean, kl_p99, top1_agree;
  // Paired against `full` on the same chunks: the mean over chunks of (this configuration's
  // mean NLL - full's) and its standard error (sd of the differences / sqrt(chunks); NaN with
  // one chunk). The chunks' difficulty, which both share, cancels out.
  std::optional<double> dnll_mean, dnll_se;
  std::vector<double> nll_by_position;  // [ctx - 1], mean over chunks
  std::vector<double> nll_by_chunk;     // [n_chunks], mean over the chunk's predictions
  std::vector<double> token_nll;        // [n_chunks][ctx - 1], if keep_token_nll
};

struct SweepResult {
  int ctx = 0;
  int n_chunks = 0;
  int64_t n_predictions = 0;  // per configuration: n_chunks * (ctx - 1)
  int64_t n_forward_calls = 0;
  // (configuration, chunk, position) steps that rode along with the chunk's largest
  // configuration instead of being computed (SweepOptions::share_prefix).
  int64_t n_shared_steps = 0;
  double seconds = 0;
  std::vector<ConfigResult> configs;  // in SweepOptions::configs order (x kv_types)
  bool several_kv_types = false;      // configurations differ in their K/V format
  // "tova k=64" or, with several formats, "tova k=64 q8_0"; the policy's label alone for `full`.
  std::string name(const ConfigResult& c) const;
};

struct StreamCurve {
  std::string label;  // "tova k=512 gap", "full"
  kv::PolicySpec policy;
  kv::PositionMode positions = kv::PositionMode::kAbsolute;
  int64_t n_predictions = 0;
  double ppl = 0;  // over every prediction scored
  // Window w covers predictions [w * window, min((w + 1) * window, n)) of the sequence, i.e.
  // the predictions of positions 1 .. ; window_end[w] is its last position (exclusive end).
  std::vector<int64_t> window_end;
  std::vector<double> window_ppl;
  std::vector<double> cumulative_ppl;  // over predictions [0, window_end[w])
};

struct PplOptions {
  // The input: `text` (tokenized without BOS; chunks start with BOS) or `tokens` (used as
  // given) when it is not empty. The labels name them in the records ("text" / "tokens_file").
  std::string text;
  std::vector<int32_t> tokens;
  std::string text_label;
  std::string tokens_label;
  std::string model_label;  // "model" in the records; empty: the engine's path
  std::vector<std::string> policies;
  std::vector<int> budgets;
  int ctx = 0;     // tokens per chunk, BOS included (0: the training context, or 512); --stream:
                   // the most tokens read (0: all)
  int chunks = 0;  // the first M chunks (0: all)
  // K/V storage formats (empty: f32). Several (chunked only): every configuration runs in each,
  // and KL / top-1 compare with `full` in the first (SweepOptions::kv_types).
  std::vector<kv::KvFormat> kv_types;
  // One mode, or (streaming only) several: every bounded configuration runs in each.
  std::vector<kv::PositionMode> positions = {kv::PositionMode::kAbsolute};
  int n_batch = 32;
  bool batched = true;
  bool share_prefix = true;
  bool stream = false;
  int window = 1024;     // --stream: positions per window
  int max_full_ctx = 0;  // --stream: `full` over the first N tokens (0: 4x the training context)
  // --stream: the context the model was really trained on, for the plot's line and
  // max_full_ctx's default (0: the GGUF's context_length)
  int trained_ctx = 0;
  bool f32_activations = false;  // recorded in the header (the engine was loaded with it)
  std::function<void(const SweepProgress&)> on_progress;
};

struct PplReport {
  bool stream = false;
  std::string title;    // "MODEL on TEXT: ctx 1024, 3 chunks" / "MODEL streaming TEXT: ..."
  SweepResult sweep;    // chunked
  std::vector<StreamCurve> curves;  // streaming
  int64_t n_tokens = 0;
  int64_t trained_ctx = 0;  // streaming: the trained context used (for the plot's line)
  int64_t n_forward_calls = 0;
  double sweep_seconds = 0;
  std::string json;  // results.json's text
  std::string csv;              // results.csv
};

Result<PplReport> run_ppl(const Engine& engine, const PplOptions& o);

}  // namespace tova::eval
