#include "vision/gemma4v_fixture.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "io/gguf.h"
#include "kernels/quant.h"

namespace tova::vision {

namespace {

// splitmix64 with Box-Muller: the same numbers on every platform and standard library.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }
  float normal(float stdev) {
    const double u1 = uniform(), u2 = uniform();
    return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2) *
                              stdev);
  }

 private:
  uint64_t s_;
};

std::vector<uint8_t> encode(GgmlType type, const std::vector<float>& v, int64_t row) {
  const uint64_t row_bytes = bytes_per_row(type, row).value();
  std::vector<uint8_t> out(row_bytes * (v.size() / row));
  for (size_t r = 0; r < v.size() / row; ++r) {
    kernels::quantize_row_ref(type, &v[r * row], &out[r * row_bytes], row);
  }
  return out;
}

// The fixture's clip.* keys.
void write_keys(const Gemma4vFixtureOptions& o, io::GgufWriter& w) {
  w.set("general.architecture", io::GgufValue::make_str("clip"));
  w.set("general.name", io::GgufValue::make_str("gemma4v random fixture"));
  w.set("general.file_type", io::GgufValue::make_u32(o.type == GgmlType::kF32   ? 0
                                                     : o.type == GgmlType::kF16 ? 1
                                                                                : 7));
  w.set("clip.has_vision_encoder", io::GgufValue::make_bool(true));
  w.set("clip.vision.projector_type", io::GgufValue::make_str("gemma4v"));
  w.set("clip.vision.image_size", io::GgufValue::make_u32(224));
  w.set("clip.vision.patch_size", io::GgufValue::make_u32(o.patch_size));
  w.set("clip.vision.embedding_length", io::GgufValue::make_u32(o.n_embd));
  w.set("clip.vision.feed_forward_length", io::GgufValue::make_u32(o.n_ff));
  w.set("clip.vision.block_count", io::GgufValue::make_u32(o.n_layer));
  w.set("clip.vision.projection_dim", io::GgufValue::make_u32(o.projection_dim));
  w.set("clip.vision.attention.head_count", io::GgufValue::make_u32(o.n_head));
  w.set("clip.vision.attention.layer_norm_epsilon", io::GgufValue::make_f32(1e-6f));
  // Not Gemma 4's (0, 1): a mean or std applied to the wrong channel shows.
  w.set("clip.vision.image_mean", io::GgufValue::make_f32_array({0.48f, 0.46f, 0.41f}));
  w.set("clip.vision.image_std", io::GgufValue::make_f32_array({0.27f, 0.26f, 0.28f}));
}

// Random tensors in the order the fixture holds them (the random stream depends on it).
class TensorAdder {
 public:
  TensorAdder(io::GgufWriter& w, Gemma4vFixtureStats& st, uint64_t seed, GgmlType matrix_type)
      : w_(w), st_(st), rng_(seed), mt_(matrix_type) {}

  void add(const std::string& name, GgmlType type, std::vector<int64_t> dims,
           const std::vector<float>& v) {
    st_.n_tensors++;
    std::vector<uint8_t> bytes = encode(type, v, dims[0]);
    st_.n_bytes += bytes.size();
    w_.add_tensor(name, type, std::move(dims), std::move(bytes));
  }
  std::vector<float> randv(int64_t n, float mean, float stdev) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = mean + rng_.normal(stdev);
    return v;
  }
  void matrix(const std::string& name, int64_t n_in, int64_t n_out) {
    add(name, mt_, {n_in, n_out},
        randv(n_in * n_out, 0.f, 1.f / std::sqrt(static_cast<float>(n_in))));
  }
  void norm(const std::string& name, int64_t n) {
    add(name, GgmlType::kF32, {n}, randv(n, 1.f, 0.1f));
  }
  void scalar(const std::string& name, float v) {
    add(name, GgmlType::kF32, {1}, std::vector<float>{v});
  }

 private:
  io::GgufWriter& w_;
  Gemma4vFixtureStats& st_;
  Rng rng_;
  GgmlType mt_;
};

// Encoder layer il.
void write_layer(const Gemma4vFixtureOptions& o, int il, TensorAdder& t) {
  const int64_t d = o.n_embd, ff = o.n_ff;
  const int head_dim = o.n_embd / o.n_head;
  auto b = [&](const char* what) { return fmt::format("v.blk.{}.{}", il, what); };
  t.norm(b("ln1.weight"), d);
  t.matrix(b("attn_q.weight"), d, d);
  t.matrix(b("attn_k.weight"), d, d);
  t.matrix(b("attn_v.weight"), d, d);
  t.matrix(b("attn_out.weight"), d, d);
  t.norm(b("attn_q_norm.weight"), head_dim);
  t.norm(b("attn_k_norm.weight"), head_dim);
  t.norm(b("attn_post_norm.weight"), d);
  t.norm(b("ln2.weight"), d);
  t.matrix(b("ffn_gate.weight"), d, ff);
  t.matrix(b("ffn_up.weight"), d, ff);
  t.matrix(b("ffn_down.weight"), ff, d);
  t.norm(b("ffn_post_norm.weight"), d);
  t.scalar(b("out_scale.weight"), 0.8f + 0.1f * static_cast<float>(il));
  // Gemma4ClippableLinear bounds tight enough to clip some values. Matrices that read the
  // same input get the same input bounds: llama.cpp clamps a shared input in place
  // (ggml_clamp is a view), so there the first matrix's bounds also bound the others'
  // input, which differs from clamping each matrix's own copy unless the bounds agree.
  for (const char* m : {"attn_q", "attn_k", "attn_v"}) {
    t.scalar(b(fmt::format("{}.input_min", m).c_str()), -2.0f);
    t.scalar(b(fmt::format("{}.input_max", m).c_str()), 2.0f);
  }
  for (const char* m : {"ffn_gate", "ffn_up"}) {
    t.scalar(b(fmt::format("{}.input_min", m).c_str()), -2.5f);
    t.scalar(b(fmt::format("{}.input_max", m).c_str()), 2.5f);
  }
  t.scalar(b("attn_out.output_min"), -1.5f);
  t.scalar(b("attn_out.output_max"), 1.5f);
  t.scalar(b("ffn_down.input_min"), -0.75f);
  t.scalar(b("ffn_down.input_max"), 0.75f);
}

}  // namespace

Result<Gemma4vFixtureStats> write_gemma4v_fixture(const Gemma4vFixtureOptions& o,
                                                  const std::string& path) {
  if (o.type != GgmlType::kF32 && o.type != GgmlType::kF16 && o.type != GgmlType::kQ8_0) {
    return make_error("gemma4v fixture: type {} not offered (f32, f16, q8_0)", type_name(o.type));
  }
  if (o.n_embd % o.n_head != 0 || (o.n_embd / o.n_head) % 4 != 0) {
    return make_error("gemma4v fixture: n_embd {} / n_head {} must be a multiple of 4", o.n_embd,
                      o.n_head);
  }
  if (o.type == GgmlType::kQ8_0 && (o.n_embd % 32 != 0 || o.n_ff % 32 != 0)) {
    return make_error("gemma4v fixture: q8_0 needs n_embd and n_ff multiples of 32");
  }
  io::GgufWriter w;
  Gemma4vFixtureStats st;
  const int64_t d = o.n_embd, ps = o.patch_size;
  write_keys(o, w);
  TensorAdder t(w, st, o.seed, o.type);
  t.add("v.patch_embd.weight", o.type == GgmlType::kF32 ? GgmlType::kF32 : GgmlType::kF16,
        {ps, ps, 3, d},
        t.randv(ps * ps * 3 * d, 0.f, 1.f / std::sqrt(static_cast<float>(3 * ps * ps))));
  t.add("v.position_embd.weight", GgmlType::kF32, {d, o.pos_size, 2},
        t.randv(d * o.pos_size * 2, 0.f, 0.5f));
  for (int il = 0; il < o.n_layer; ++il) write_layer(o, il, t);
  t.add("v.std_bias", GgmlType::kF32, {d}, t.randv(d, 0.f, 0.1f));
  t.add("v.std_scale", GgmlType::kF32, {d}, t.randv(d, 1.f, 0.1f));
  t.matrix("mm.input_projection.weight", d, o.projection_dim);
  t.scalar("mm.input_projection.input_min", -2.5f);
  t.scalar("mm.input_projection.input_max", 2.5f);
  TOVA_RETURN_IF_ERROR(w.write_file(path));
  return st;
}

}  // namespace tova::vision
