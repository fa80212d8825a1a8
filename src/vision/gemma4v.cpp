#include "vision/gemma4v.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/half.h"
#include "kernels/attention.h"
#include "kernels/ops.h"
#include "kernels/quant.h"
#include "model/tensor_loader.h"

namespace tova::vision {

namespace {

using kernels::WeightMatrix;

std::string blk(int il, const char* what) { return fmt::format("v.blk.{}.{}", il, what); }

// A scalar tensor ([1] float) or the default when absent.
Result<float> scalar_or(model::TensorLoader& ld, const std::string& name, float fallback) {
  if (!ld.has(name)) return fallback;
  TOVA_ASSIGN_OR_RETURN(const std::vector<float> v, ld.vector(name, 1));
  return v[0];
}

// NAME.weight as a matrix, with the clamp scalars NAME.input_min/max, NAME.output_min/max.
Result<ClampedMatrix> clamped(model::TensorLoader& ld, const std::string& base, int64_t n_in,
                              int64_t n_out) {
  ClampedMatrix m;
  TOVA_ASSIGN_OR_RETURN(m.w, ld.matrix(base + ".weight", n_in, n_out));
  TOVA_ASSIGN_OR_RETURN(m.in_min, scalar_or(ld, base + ".input_min", -FLT_MAX));
  TOVA_ASSIGN_OR_RETURN(m.in_max, scalar_or(ld, base + ".input_max", FLT_MAX));
  TOVA_ASSIGN_OR_RETURN(m.out_min, scalar_or(ld, base + ".output_min", -FLT_MAX));
  TOVA_ASSIGN_OR_RETURN(m.out_max, scalar_or(ld, base + ".output_max", FLT_MAX));
  if (m.in_min > m.in_max || m.out_min > m.out_max) {
    return make_error("{}: tensor '{}' has clamp bounds min > max", ld.file().path(), base);
  }
  return m;
}

Result<std::vector<float>> optional_vector(model::TensorLoader& ld, const std::string& name,
                                           int64_t n) {
  if (!ld.has(name)) return std::vector<float>{};
  return ld.vector(name, n);
}

// A tensor read whole as float32 (f32 or f16), checked against `dims`; marked read.
Result<std::vector<float>> float_tensor(model::TensorLoader& ld, const std::string& name,
                                        const std::vector<int64_t>& dims) {
  const io::GgufTensorInfo* t = ld.file().find_tensor(name);
  if (t == nullptr) return make_error("{}: missing tensor '{}'", ld.file().path(), name);
  TOVA_RETURN_IF_ERROR(ld.unused(name, dims));  // checks the shape and marks it read
  if (t->type != GgmlType::kF32 && t->type != GgmlType::kF16) {
    return make_error("{}: tensor '{}' has type {}, expected f32 or f16", ld.file().path(), name,
                      type_name(t->type));
  }
  std::vector<float> out(static_cast<size_t>(t->n_elements));
  kernels::dequantize_row_ref(t->type, t->data, out.data(), t->n_elements);
  return out;
}

// The patch convolution as a matrix over [3][patch][patch] rows: F16 as it is, F32 rounded to
// F16 (llama.cpp's convolution runs in F16), BF16 widened to F32.
Status load_patch_embd(const io::GgufFile& f, model::TensorLoader& ld, const MmprojConfig& c,
                       Gemma4vWeights& w) {
  const int64_t d = c.n_embd;
  const int64_t ps = c.patch_size;
  const std::string name = "v.patch_embd.weight";
  const io::GgufTensorInfo* t = f.find_tensor(name);
  if (t == nullptr) return make_error("{}: missing tensor '{}'", f.path(), name);
  TOVA_RETURN_IF_ERROR(ld.unused(name, {ps, ps, 3, d}));
  const int64_t n_in = 3 * ps * ps;
  const int64_t n = n_in * d;
  switch (t->type) {
    case GgmlType::kF16:
      w.patch_embd = WeightMatrix{.type = GgmlType::kF16, .data = t->data, .n_in = n_in,
                                  .n_out = d, .row_bytes = static_cast<uint64_t>(n_in) * 2};
      break;
    case GgmlType::kF32: {
      w.patch_embd_owned.resize(static_cast<size_t>(n) * 2);
      std::vector<float> v(static_cast<size_t>(n));
      std::memcpy(v.data(), t->data, v.size() * sizeof(float));
      kernels::quantize_row_ref(GgmlType::kF16, v.data(), w.patch_embd_owned.data(), n);
      w.patch_embd = WeightMatrix{.type = GgmlType::kF16, .data = w.patch_embd_owned.data(),
                                  .n_in = n_in, .n_out = d,
                                  .row_bytes = static_cast<uint64_t>(n_in) * 2};
      break;
    }
    case GgmlType::kBF16: {
      w.patch_embd_owned.resize(static_cast<size_t>(n) * 4);
      kernels::dequantize_row_ref(GgmlType::kBF16, t->data,
                                  reinterpret_cast<float*>(w.patch_embd_owned.data()), n);
      w.patch_embd = WeightMatrix{.type = GgmlType::kF32, .data = w.patch_embd_owned.data(),
                                  .n_in = n_in, .n_out = d,
                                  .row_bytes = static_cast<uint64_t>(n_in) * 4};
      break;
    }
    default:
      return make_error("{}: tensor '{}' has type {}, expected f32, f16 or bf16 (llama.cpp's "
                        "convolution takes no other)",
                        f.path(), name, type_name(t->type));
  }
  return ok_status();
}

// The position embeddings: two lookup tables stacked, x positions, then y positions.
Status load_position_tables(const io::GgufFile& f, model::TensorLoader& ld,
                            const MmprojConfig& c, Gemma4vWeights& w) {
  const int64_t d = c.n_embd;
  const std::string name = "v.position_embd.weight";
  const io::GgufTensorInfo* t = f.find_tensor(name);
  if (t == nullptr) return make_error("{}: missing tensor '{}'", f.path(), name);
  if (t->dims.size() != 3 || t->dims[0] != d || t->dims[2] != 2) {
    return make_error("{}: tensor '{}' has shape [{}], expected [{}, positions, 2]", f.path(),
                      name, fmt::join(t->dims, ", "), d);
  }
  w.pos_size = static_cast<int>(t->dims[1]);
  TOVA_ASSIGN_OR_RETURN(std::vector<float> tab, float_tensor(ld, name, t->dims));
  const auto half = static_cast<std::ptrdiff_t>(tab.size() / 2);
  w.pos_x.assign(tab.begin(), tab.begin() + half);
  w.pos_y.assign(tab.begin() + half, tab.end());
  return ok_status();
}

// The encoder's layers.
Status load_layers(const io::GgufFile& f, model::TensorLoader& ld, const MmprojConfig& c,
                   Gemma4vWeights& w) {
  const int64_t d = c.n_embd;
  const int64_t hd = c.head_dim;
  const int64_t n_q = int64_t{c.n_head} * hd;
  const int64_t n_kv = int64_t{c.n_head_kv} * hd;
  w.layers.resize(c.n_layer);
  for (int il = 0; il < c.n_layer; ++il) {
    Gemma4vLayer& l = w.layers[il];
    TOVA_ASSIGN_OR_RETURN(l.ln1, ld.vector(blk(il, "ln1.weight"), d));
    TOVA_ASSIGN_OR_RETURN(l.q, clamped(ld, blk(il, "attn_q"), d, n_q));
    TOVA_ASSIGN_OR_RETURN(l.k, clamped(ld, blk(il, "attn_k"), d, n_kv));
    TOVA_ASSIGN_OR_RETURN(l.v, clamped(ld, blk(il, "attn_v"), d, n_kv));
    TOVA_ASSIGN_OR_RETURN(l.o, clamped(ld, blk(il, "attn_out"), n_q, d));
    TOVA_ASSIGN_OR_RETURN(l.q_norm, ld.vector(blk(il, "attn_q_norm.weight"), hd));
    TOVA_ASSIGN_OR_RETURN(l.k_norm, ld.vector(blk(il, "attn_k_norm.weight"), hd));
    TOVA_ASSIGN_OR_RETURN(l.attn_post_norm, ld.vector(blk(il, "attn_post_norm.weight"), d));
    TOVA_ASSIGN_OR_RETURN(l.ln2, ld.vector(blk(il, "ln2.weight"), d));
    TOVA_ASSIGN_OR_RETURN(l.gate, clamped(ld, blk(il, "ffn_gate"), d, c.n_ff));
    TOVA_ASSIGN_OR_RETURN(l.up, clamped(ld, blk(il, "ffn_up"), d, c.n_ff));
    TOVA_ASSIGN_OR_RETURN(l.down, clamped(ld, blk(il, "ffn_down"), c.n_ff, d));
    TOVA_ASSIGN_OR_RETURN(l.ffn_post_norm, ld.vector(blk(il, "ffn_post_norm.weight"), d));
    const std::string os = blk(il, "out_scale.weight");
    if (ld.has(os)) {
      const io::GgufTensorInfo* t = f.find_tensor(os);
      const int64_t n = t->n_elements == 1 ? 1 : d;
      TOVA_ASSIGN_OR_RETURN(l.out_scale, ld.vector(os, n));
    }
  }
  return ok_status();
}

}  // namespace

Result<Gemma4vWeights> load_gemma4v(const io::GgufFile& f, const MmprojConfig& c) {
  model::TensorLoader ld(f);
  Gemma4vWeights w;
  const int64_t d = c.n_embd;
  TOVA_RETURN_IF_ERROR(load_patch_embd(f, ld, c, w));
  TOVA_RETURN_IF_ERROR(load_position_tables(f, ld, c, w));
  TOVA_RETURN_IF_ERROR(load_layers(f, ld, c, w));
  TOVA_ASSIGN_OR_RETURN(w.std_bias, optional_vector(ld, "v.std_bias", d));
  TOVA_ASSIGN_OR_RETURN(w.std_scale, optional_vector(ld, "v.std_scale", d));
  if (w.std_bias.empty() != w.std_scale.empty()) {
    // llama.cpp applies the standardisation only when both are present.
    return make_error("{}: tensor '{}' without '{}': the standardisation needs both", f.path(),
                      w.std_bias.empty() ? "v.std_scale" : "v.std_bias",
                      w.std_bias.empty() ? "v.std_bias" : "v.std_scale");
  }
  TOVA_ASSIGN_OR_RETURN(w.proj, clamped(ld, "mm.input_projection", d, c.projection_dim));

  if (c.has_audio_encoder) {  // the audio encoder's tensors: not part of an image's arithmetic
    for (const io::GgufTensorInfo& t : f.tensors()) {
      if (t.name.starts_with("a.") || t.name.starts_with("mm.a.")) {
        TOVA_RETURN_IF_ERROR(ld.unused(t.name, t.dims));
      }
    }
  }
  TOVA_RETURN_IF_ERROR(ld.check_all_read("gemma4v"));
  return w;
}

namespace {

// y = clamp(W clamp(x)), Gemma4ClippableLinear. x: [n_tok][n_in]; y: [n_tok][n_out].
void clamped_matmul(const ClampedMatrix& m, const float* x, int64_t n_tok, float* y,
                    std::vector<float>& tmp, ThreadPool& pool) {
  const int64_t n_in = m.w.n_in;
  const float* in = x;
  if (m.in_min != -FLT_MAX || m.in_max != FLT_MAX) {
    tmp.resize(static_cast<size_t>(n_tok * n_in));
    for (int64_t i = 0; i < n_tok * n_in; ++i) tmp[i] = std::clamp(x[i], m.in_min, m.in_max);
    in = tmp.data();
  }
  kernels::matmul(m.w, in, n_tok, y, pool);
  if (m.out_min != -FLT_MAX || m.out_max != FLT_MAX) {
    for (int64_t i = 0; i < n_tok * m.w.n_out; ++i) y[i] = std::clamp(y[i], m.out_min, m.out_max);
  }
}

// RMS norm of each of n rows of `width` floats, in place, with weight w (ones: unweighted).
void norm_rows(float* x, int64_t n, int64_t width, const float* w, float eps, ThreadPool& pool) {
  pool.parallel_for(n, 16, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) kernels::rms_norm(x + i * width, w, x + i * width, width, eps);
  });
}

}  // namespace

namespace {

// One image's pass through the encoder: its patch grid, the residual rows and the buffers every
// layer reuses.
struct EncoderPass {
  EncoderPass(const Gemma4vWeights& w_, const MmprojConfig& c_, ThreadPool& pool_, int npx_,
              int npy_)
      : w(w_), c(c_), pool(pool_), npx(npx_), npy(npy_), n_pat(int64_t{npx_} * npy_),
        d(c_.n_embd), hd(c_.head_dim), n_q(int64_t{c_.n_head} * c_.head_dim),
        n_kv(int64_t{c_.n_head_kv} * c_.head_dim),
        rp{.n_rot = c_.head_dim / 2, .freq_base = c_.rope_theta, .mode = kernels::RopeMode::kNeox},
        ones(static_cast<size_t>(std::max<int64_t>(d, hd)), 1.f),
        x(static_cast<size_t>(n_pat * d)), h(x.size()), q(static_cast<size_t>(n_pat * n_q)),
        k(static_cast<size_t>(n_pat * n_kv)), v(k.size()), kp(k.size()), vp(k.size()),
        pos(static_cast<size_t>(c_.n_head_kv * n_pat), 0), attn(q.size()),
        gate(static_cast<size_t>(n_pat * c_.n_ff)), up(gate.size()) {
    // RoPE factors per patch column (x) and row (y): each half of a head is rotated NEOX-style
    // over its hd/2 dims.
    cs_x.resize(static_cast<size_t>(npx) * (hd / 2));
    cs_y.resize(static_cast<size_t>(npy) * (hd / 2));
    for (int i = 0; i < npx; ++i) kernels::rope_cos_sin(i, rp, &cs_x[static_cast<size_t>(i) * (hd / 2)]);
    for (int i = 0; i < npy; ++i) kernels::rope_cos_sin(i, rp, &cs_y[static_cast<size_t>(i) * (hd / 2)]);
  }

  // The patch embedding (the convolution as a matmul) plus the x and y position tables.
  void embed_patches(const PlanarImage& img) {
    const int ps = c.patch_size;
    // Patches as rows of [3][ps][ps], pixels mapped from the normalised range to 2x - 1.
    const int64_t n_in = 3 * int64_t{ps} * ps;
    std::vector<float> patches(static_cast<size_t>(n_pat * n_in));  // [n_pat][3][ps][ps]
    const int64_t plane = int64_t{img.width} * img.height;
    for (int py = 0; py < npy; ++py) {
      for (int px = 0; px < npx; ++px) {
        float* row = &patches[(int64_t{py} * npx + px) * n_in];
        for (int ch = 0; ch < 3; ++ch) {
          for (int ky = 0; ky < ps; ++ky) {
            const float* src = &img.data[ch * plane + int64_t{py * ps + ky} * img.width + px * ps];
            for (int kx = 0; kx < ps; ++kx) row[(ch * ps + ky) * ps + kx] = src[kx] * 2.0f + -1.0f;
          }
        }
      }
    }
    if (w.patch_embd.type == GgmlType::kF16) {
      // ggml_conv_2d's im2col holds the patches in F16 (see Gemma4vWeights::patch_embd); tova's
      // F16 matmul reads activations in F32, so they are rounded here.
      for (float& p : patches) p = fp16_to_fp32(fp32_to_fp16(p));
    }
    kernels::matmul(w.patch_embd, patches.data(), n_pat, x.data(), pool);
    for (int64_t p = 0; p < n_pat; ++p) {
      const int64_t col = p % npx, rowi = p / npx;
      kernels::add(&x[p * d], &w.pos_x[col * d], d);
      kernels::add(&x[p * d], &w.pos_y[rowi * d], d);
    }
  }

  void rope_rows(float* m, int n_head) {
    pool.parallel_for(n_pat, 16, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const float* csx = &cs_x[static_cast<size_t>(p % npx) * (hd / 2)];
        const float* csy = &cs_y[static_cast<size_t>(p / npx) * (hd / 2)];
        for (int hh = 0; hh < n_head; ++hh) {
          float* head = m + p * n_head * hd + int64_t{hh} * hd;
          kernels::rope_apply(head, 1, hd / 2, csx, rp);
          kernels::rope_apply(head + hd / 2, 1, hd / 2, csy, rp);
        }
      }
    });
  }

  // Every patch attends to every patch (all positions 0, the causal limit 0): no mask.
  void attend_all() {
    const int group = c.n_head / c.n_head_kv;
    for (int64_t p = 0; p < n_pat; ++p) {
      for (int g = 0; g < c.n_head_kv; ++g) {
        const float* ks = &k[(p * c.n_head_kv + g) * hd];
        const float* vs = &v[(p * c.n_head_kv + g) * hd];
        std::copy(ks, ks + hd, &kp[(g * n_pat + p) * hd]);
        std::copy(vs, vs + hd, &vp[(g * n_pat + p) * hd]);
      }
    }
    pool.parallel_for(n_pat, 4, [&](int64_t b, int64_t e) {
      std::vector<float> scratch(static_cast<size_t>(group) * n_pat);
      for (int64_t p = b; p < e; ++p) {
        kernels::AttentionArgs a{.q = &q[p * n_q],
                                 .n_head = c.n_head,
                                 .n_head_kv = c.n_head_kv,
                                 .head_dim = hd,
                                 .n_slot = static_cast<int>(n_pat),
                                 .k = kp.data(),
                                 .v = vp.data(),
                                 .pos = pos.data(),
                                 .max_pos = 0,
                                 .min_pos = 0,
                                 .scale = 1.f,
                                 .out = &attn[p * n_q],
                                 .scratch = scratch.data(),
                                 .scratch_size = static_cast<int64_t>(scratch.size())};
        kernels::attention(a);
      }
    });
  }

  void attention(const Gemma4vLayer& l) {
    const float eps = c.eps;
    std::copy(x.begin(), x.end(), h.begin());
    norm_rows(h.data(), n_pat, d, l.ln1.data(), eps, pool);
    clamped_matmul(l.q, h.data(), n_pat, q.data(), tmp, pool);
    clamped_matmul(l.k, h.data(), n_pat, k.data(), tmp, pool);
    clamped_matmul(l.v, h.data(), n_pat, v.data(), tmp, pool);
    norm_rows(q.data(), n_pat * c.n_head, hd, l.q_norm.data(), eps, pool);
    norm_rows(k.data(), n_pat * c.n_head_kv, hd, l.k_norm.data(), eps, pool);
    norm_rows(v.data(), n_pat * c.n_head_kv, hd, ones.data(), eps, pool);
    rope_rows(q.data(), c.n_head);
    rope_rows(k.data(), c.n_head_kv);
    attend_all();
    clamped_matmul(l.o, attn.data(), n_pat, h.data(), tmp, pool);
    norm_rows(h.data(), n_pat, d, l.attn_post_norm.data(), eps, pool);
    kernels::add(x.data(), h.data(), n_pat * d);
  }

  void feed_forward(const Gemma4vLayer& l) {
    const float eps = c.eps;
    std::copy(x.begin(), x.end(), h.begin());
    norm_rows(h.data(), n_pat, d, l.ln2.data(), eps, pool);
    clamped_matmul(l.gate, h.data(), n_pat, gate.data(), tmp, pool);
    clamped_matmul(l.up, h.data(), n_pat, up.data(), tmp, pool);
    const int64_t n_g = n_pat * c.n_ff;
    switch (c.ffn_act) {
      case VisionFfnAct::kGeluTanh: kernels::gelu_mul(gate.data(), up.data(), n_g); break;
      case VisionFfnAct::kSilu: kernels::silu_mul(gate.data(), up.data(), n_g); break;
      case VisionFfnAct::kGeluQuick:
        // x sigmoid(1.702 x) = silu(1.702 x) / 1.702.
        kernels::scale(gate.data(), 1.702f, n_g);
        kernels::silu_mul(gate.data(), up.data(), n_g);
        kernels::scale(gate.data(), 1.f / 1.702f, n_g);
        break;
    }
    clamped_matmul(l.down, gate.data(), n_pat, h.data(), tmp, pool);
    norm_rows(h.data(), n_pat, d, l.ffn_post_norm.data(), eps, pool);
    kernels::add(x.data(), h.data(), n_pat * d);
    if (l.out_scale.size() == 1) {
      kernels::scale(x.data(), l.out_scale[0], n_pat * d);
    } else if (!l.out_scale.empty()) {
      for (int64_t p = 0; p < n_pat; ++p) {
        for (int64_t i = 0; i < d; ++i) x[p * d + i] *= l.out_scale[i];
      }
    }
  }

  // Average pooling over n_merge x n_merge patches (row by row of the pooled grid), times
  // sqrt(n_embd), the standardisation if the file has it, the unweighted norm and the
  // projection into the text model's width.
  ImageEmbeddings pool_and_project() {
    const int km = c.n_merge;
    const int gx = npx / km, gy = npy / km;
    const int64_t n_tok = int64_t{gx} * gy;
    std::vector<float> pooled(static_cast<size_t>(n_tok * d));
    const float area = static_cast<float>(km * km);
    const float emb_scale = std::sqrt(static_cast<float>(d));
    for (int oy = 0; oy < gy; ++oy) {
      for (int ox = 0; ox < gx; ++ox) {
        float* out = &pooled[(int64_t{oy} * gx + ox) * d];
        for (int64_t i = 0; i < d; ++i) {
          float s = 0.f;
          for (int ky = 0; ky < km; ++ky) {
            for (int kx = 0; kx < km; ++kx) {
              s += x[(int64_t{oy * km + ky} * npx + (ox * km + kx)) * d + i];
            }
          }
          out[i] = (s / area) * emb_scale;
        }
      }
    }
    if (!w.std_bias.empty()) {
      for (int64_t t = 0; t < n_tok; ++t) {
        for (int64_t i = 0; i < d; ++i) {
          float& e = pooled[t * d + i];
          e = (e - w.std_bias[i]) * w.std_scale[i];
        }
      }
    }
    norm_rows(pooled.data(), n_tok, d, ones.data(), c.eps, pool);
    ImageEmbeddings out{.n_tokens = static_cast<int>(n_tok),
                        .n_embd = c.projection_dim,
                        .grid_x = gx,
                        .grid_y = gy};
    out.data.resize(static_cast<size_t>(n_tok) * c.projection_dim);
    clamped_matmul(w.proj, pooled.data(), n_tok, out.data.data(), tmp, pool);
    return out;
  }

  const Gemma4vWeights& w;
  const MmprojConfig& c;
  ThreadPool& pool;
  const int npx, npy;  // patches per row and column
  const int64_t n_pat, d;
  const int hd;
  const int64_t n_q, n_kv;
  const kernels::RopeParams rp;
  const std::vector<float> ones;
  std::vector<float> tmp;  // clamped_matmul's
  std::vector<float> x;    // [n_pat][n_embd], the residual
  std::vector<float> h, q, k, v;
  std::vector<float> kp, vp;  // [n_head_kv][n_pat][hd]: the attention kernel's pools
  std::vector<int64_t> pos;
  std::vector<float> attn, gate, up;
  std::vector<float> cs_x, cs_y;
};

}  // namespace

Result<ImageEmbeddings> encode_gemma4v(const Gemma4vWeights& w, const MmprojConfig& c,
                                       const PlanarImage& img, ThreadPool& pool) {
  const int ps = c.patch_size;
  const int align = ps * c.n_merge;
  if (img.width <= 0 || img.height <= 0 || img.width % align != 0 || img.height % align != 0) {
    return make_error("image of {} x {} pixels: sides must be multiples of {} (patch {} x merge {})",
                      img.width, img.height, align, ps, c.n_merge);
  }
  const int npx = img.width / ps;  // patches per row
  const int npy = img.height / ps;
  if (npx > w.pos_size || npy > w.pos_size) {
    return make_error("image of {} x {} pixels has {} x {} patches; the position tables hold {}",
                      img.width, img.height, npx, npy, w.pos_size);
  }
  EncoderPass e(w, c, pool, npx, npy);
  e.embed_patches(img);
  for (const Gemma4vLayer& l : w.layers) {
    e.attention(l);
    e.feed_forward(l);
  }
  return e.pool_and_project();
}

}  // namespace tova::vision
