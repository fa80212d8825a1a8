// Load-time repacking of weight matrices into tova's interleaved layouts (q4_0_r8 from Q4_0;
// kernels/types/weight_type.h's group_rows), so that few-token calls (decode, verify steps) read
// one activation block for a group of rows. In place: the model keeps one copy of its weights.
#pragma once

#include <cstdint>

#include "core/result.h"
#include "io/gguf.h"
#include "model/weights.h"

namespace tova::model {

// Whether Model::load repacks by default (ModelOptions::repack; `--no-repack` / `--repack` on
// the command line). On since the quiet-window benchmark of 2026-12-08 (docs/PERFORMANCE.md,
// "Q4_0 rows repacked at load"): verify steps of 2-8 tokens 0.66-0.97x the time, decode and
// prompts not slower, on AVX3_DL and AVX2.
inline constexpr bool kRepackByDefault = true;

struct RepackStats {
  int n_matrices = 0;    // matrices repacked
  uint64_t n_bytes = 0;  // their bytes (unchanged in size: the layout moves bytes only)
  double seconds = 0.0;  // time spent repacking
};

// Repacks, in place, every matrix of `w` that a layer's attention (q, k, v, o; shared-K/V
// layers too) or dense
// feed-forward (gate, up, down) reads, whose type has an interleaved layout and whose row count
// is a multiple of its group: its bytes are rewritten and its type becomes the layout's.
// Matrices that are row-addressed (token embeddings, a tied output head), the MoE experts, the
// other mixers and the prediction blocks keep their type. A matrix two fields share (Gemma 4's
// V = K) is repacked once. `file` must own the bytes `w` points into.
Result<RepackStats> repack_weights(io::GgufFile& file, ModelWeights& w);

}  // namespace tova::model
