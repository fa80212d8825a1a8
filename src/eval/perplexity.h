// `tova ppl` as one library call, so the CLI and Python get the same records: the input (text,
// tokenized without BOS and cut into chunks of ctx tokens, BOS first; or token ids as given),
// the configurations (every policy at every budget), and either chunked scoring (all
// configurations in shared forward passes, ppl_sweep.h) or streaming (the whole text as ONE
// sequence per configuration and position mode, windows of positions, stream_report.h). The
// result carries results.json and results.csv as the files hold them; tables and plots are
// the front-end's.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/result.h"
#include "eval/ppl_sweep.h"
#include "eval/stream_report.h"
#include "tova/engine.h"

namespace tova::eval {

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
  nlohmann::ordered_json json;  // results.json
  std::string csv;              // results.csv
};

Result<PplReport> run_ppl(const Engine& engine, const PplOptions& o);

}  // namespace tova::eval
