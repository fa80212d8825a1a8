// Gemma 4's vision encoder and projector (llama.cpp's projector type "gemma4v"): patches
// embedded by a matrix (the stride-patch convolution), learned x and y position tables, a ViT
// of RMS-normed layers with q/k/v norms and a 2-D RoPE (x rotates the first half of each head,
// y the second, NEOX pairs, attention scale 1, no mask: every patch sees every patch),
// sandwich norms and a per-layer output scale; then n_merge x n_merge average pooling times
// sqrt(n_embd), an optional standardisation (std_bias, std_scale), an unweighted RMS norm and
// the projection to the text model's width. Every matrix product may clamp its input and
// output (Gemma4ClippableLinear: the file's NAME.input_min/max, NAME.output_min/max scalars).
#pragma once

#include <cfloat>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/thread_pool.h"
#include "io/gguf.h"
#include "kernels/matmul.h"
#include "vision/mmproj_config.h"
#include "vision/preprocess.h"

namespace tova::vision {

// A matrix with Gemma4ClippableLinear's bounds (+-FLT_MAX: none).
struct ClampedMatrix {
  kernels::WeightMatrix w;
  float in_min = -FLT_MAX;
  float in_max = FLT_MAX;
  float out_min = -FLT_MAX;
  float out_max = FLT_MAX;
};

struct Gemma4vLayer {
  std::vector<float> ln1;             // [n_embd] v.blk.N.ln1.weight (pre-attention RMS norm)
  ClampedMatrix q, k, v, o;           // attn_q [n_embd -> n_head*hd], attn_k/v [-> n_head_kv*hd],
                                      // attn_out [n_head*hd -> n_embd]
  std::vector<float> q_norm, k_norm;  // [head_dim] per-head RMS norms
  std::vector<float> attn_post_norm;  // [n_embd]
  std::vector<float> ln2;             // [n_embd] pre-FFN norm
  ClampedMatrix gate, up, down;       // ffn_gate/up [n_embd -> n_ff], ffn_down [n_ff -> n_embd]
  std::vector<float> ffn_post_norm;   // [n_embd]
  std::vector<float> out_scale;       // [1] or [n_embd]: the layer's output times this; empty: 1
};

struct Gemma4vWeights {
  // Movable, not copyable: patch_embd may point into patch_embd_owned (a move keeps the buffer).
  Gemma4vWeights() = default;
  Gemma4vWeights(const Gemma4vWeights&) = delete;
  Gemma4vWeights& operator=(const Gemma4vWeights&) = delete;
  Gemma4vWeights(Gemma4vWeights&&) = default;
  Gemma4vWeights& operator=(Gemma4vWeights&&) = default;

  // v.patch_embd.weight, ggml dims {patch, patch, 3, n_embd}: as a matrix of n_out = n_embd rows
  // of [3][patch][patch] (channel-major patches, the order im2col lays a patch out in). In F16:
  // ggml_conv_2d lays the patches out in F16 (im2col) and multiplies them with the kernel as an
  // F16 matrix, so an F32 kernel is rounded to F16 here (into patch_embd_owned) and the
  // encoder rounds the patches to F16 before the product, as there: 4e-4 of difference
  // otherwise. A BF16 kernel is widened to F32 (ggml's im2col is F32 then).
  kernels::WeightMatrix patch_embd;
  std::vector<uint8_t> patch_embd_owned;  // the converted kernel, when it is not the file's
  int pos_size = 0;                  // rows of each position table
  std::vector<float> pos_x, pos_y;   // [pos_size][n_embd] each (v.position_embd.weight's halves)
  std::vector<Gemma4vLayer> layers;
  std::vector<float> std_bias, std_scale;  // [n_embd] or empty
  ClampedMatrix proj;                      // mm.input_projection [n_embd -> projection_dim]
};

// An image's embeddings: n_tokens rows of the text model's width.
struct ImageEmbeddings {
  int n_tokens = 0;
  int n_embd = 0;
  int grid_x = 0;  // tokens per row (the pooled grid's width)
  int grid_y = 0;
  std::vector<float> data;  // [n_tokens][n_embd], row-major over the pooled grid
};

// Reads the gemma4v tensors of `f` (whose config `c` is) and checks their shapes and types; an
// error names the tensor. Every tensor of the file must be read (else refused by name), but the
// audio encoder's (a.*, mm.a.*) of a file that has one.
Result<Gemma4vWeights> load_gemma4v(const io::GgufFile& f, const MmprojConfig& c);

// The encoder's forward pass over a preprocessed image (sides multiples of patch_size *
// n_merge). Errors: a size that is not, or more patches per side than the position tables have.
Result<ImageEmbeddings> encode_gemma4v(const Gemma4vWeights& w, const MmprojConfig& c,
                                       const PlanarImage& img, ThreadPool& pool);

}  // namespace tova::vision
