// Writes the gguf_model seed corpus: tiny valid models (a few KiB each) of llama, qwen2 and the
// Gemma families (post norms, soft-caps, a sliding window of 2 so the window layer evicts), in
// f32, f16 and q8_0, tied and untied, so the fuzzer starts from files that reach the forward
// pass. Usage: fuzz_make_gguf_seeds OUT_DIR (scripts/fuzz.sh does not need it; the output is
// committed under tests/fuzz/corpus/gguf_model/).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/half.h"
#include "io/gguf.h"

namespace {

using tova::GgmlType;
using tova::io::GgufValue;
using tova::io::GgufWriter;

struct Shape {
  const char* file;
  const char* arch;
  GgmlType type;
  int n_embd, n_head, n_head_kv, n_ff, n_vocab, n_layer;
  bool tied;
};

uint32_t g_rng = 12345;
float next_weight() {
  g_rng = g_rng * 1664525u + 1013904223u;
  return (static_cast<float>(g_rng >> 8) / 16777216.f - 0.5f) * 0.2f;
}

// Row-major [rows][n_in] in ggml dims {n_in, rows}; norm vectors are ones.
std::vector<uint8_t> tensor_bytes(GgmlType type, int64_t n_in, int64_t rows, bool ones) {
  std::vector<uint8_t> out;
  for (int64_t r = 0; r < rows; ++r) {
    if (type == GgmlType::kQ8_0) {
      for (int64_t b = 0; b < n_in / 32; ++b) {
        const uint16_t d = tova::fp32_to_fp16(0.01f);
        out.push_back(d & 0xff);
        out.push_back(d >> 8);
        for (int k = 0; k < 32; ++k)
          out.push_back(static_cast<uint8_t>(static_cast<int8_t>(next_weight() * 600)));
      }
      continue;
    }
    for (int64_t k = 0; k < n_in; ++k) {
      const float w = ones ? 1.f : next_weight();
      if (type == GgmlType::kF16) {
        const uint16_t h = tova::fp32_to_fp16(w);
        out.push_back(h & 0xff);
        out.push_back(h >> 8);
      } else {
        uint8_t b[4];
        std::memcpy(b, &w, 4);
        out.insert(out.end(), b, b + 4);
      }
    }
  }
  return out;
}

void write(const Shape& s, const std::string& dir) {
  GgufWriter w;
  const std::string a = s.arch;
  const int head_dim = s.n_embd / s.n_head;
  w.set("general.architecture", GgufValue::make_str(a));
  w.set(a + ".embedding_length", GgufValue::make_u32(s.n_embd));
  w.set(a + ".block_count", GgufValue::make_u32(s.n_layer));
  w.set(a + ".feed_forward_length", GgufValue::make_u32(s.n_ff));
  w.set(a + ".attention.head_count", GgufValue::make_u32(s.n_head));
  w.set(a + ".attention.head_count_kv", GgufValue::make_u32(s.n_head_kv));
  w.set(a + ".context_length", GgufValue::make_u32(64));
  w.set(a + ".rope.freq_base", GgufValue::make_f32(10000.f));
  w.set(a + ".attention.layer_norm_rms_epsilon", GgufValue::make_f32(1e-5f));
  const bool bias = a == "qwen2";
  const bool gemma = a == "gemma2" || a == "gemma3";
  if (gemma) {
    w.set(a + ".attention.sliding_window", GgufValue::make_u32(2));
    w.set(a + ".attention.sliding_window_pattern", GgufValue::make_u32(2));
  }
  if (a == "gemma2") {
    w.set(a + ".attn_logit_softcapping", GgufValue::make_f32(50.f));
    w.set(a + ".final_logit_softcapping", GgufValue::make_f32(30.f));
  }
  auto mat = [&](const std::string& name, int64_t n_in, int64_t rows) {
    w.add_tensor(name, s.type, {n_in, rows}, tensor_bytes(s.type, n_in, rows, false));
  };
  auto vec = [&](const std::string& name, int64_t n, bool ones) {
    w.add_tensor(name, GgmlType::kF32, {n}, tensor_bytes(GgmlType::kF32, n, 1, ones));
  };
  mat("token_embd.weight", s.n_embd, s.n_vocab);
  vec("output_norm.weight", s.n_embd, true);
  if (!s.tied) mat("output.weight", s.n_embd, s.n_vocab);
  const int q_dim = s.n_head * head_dim;
  const int kv_dim = s.n_head_kv * head_dim;
  for (int il = 0; il < s.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    vec(p + "attn_norm.weight", s.n_embd, true);
    mat(p + "attn_q.weight", s.n_embd, q_dim);
    mat(p + "attn_k.weight", s.n_embd, kv_dim);
    mat(p + "attn_v.weight", s.n_embd, kv_dim);
    mat(p + "attn_output.weight", q_dim, s.n_embd);
    if (bias) {
      vec(p + "attn_q.bias", q_dim, false);
      vec(p + "attn_k.bias", kv_dim, false);
      vec(p + "attn_v.bias", kv_dim, false);
    }
    if (gemma) vec(p + "post_attention_norm.weight", s.n_embd, true);
    if (a == "gemma3") {
      vec(p + "attn_q_norm.weight", head_dim, true);
      vec(p + "attn_k_norm.weight", head_dim, true);
    }
    vec(p + "ffn_norm.weight", s.n_embd, true);
    if (gemma) vec(p + "post_ffw_norm.weight", s.n_embd, true);
    mat(p + "ffn_gate.weight", s.n_embd, s.n_ff);
    mat(p + "ffn_up.weight", s.n_embd, s.n_ff);
    mat(p + "ffn_down.weight", s.n_ff, s.n_embd);
  }
  const std::string path = dir + "/" + s.file;
  const auto st = w.write_file(path);
  if (!st.ok()) {
    std::fprintf(stderr, "fuzz_make_gguf_seeds: %s\n", st.message().c_str());
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_gguf_seeds OUT_DIR\n");
    return 2;
  }
  const Shape shapes[] = {
      {"llama-f32.gguf", "llama", GgmlType::kF32, 8, 2, 1, 8, 6, 1, false},
      {"llama-f16-tied-2layer.gguf", "llama", GgmlType::kF16, 8, 2, 2, 12, 5, 2, true},
      {"qwen2-f32.gguf", "qwen2", GgmlType::kF32, 8, 4, 2, 8, 7, 1, false},
      {"llama-q8_0.gguf", "llama", GgmlType::kQ8_0, 32, 4, 1, 32, 3, 1, true},
      {"gemma2-f32-2layer.gguf", "gemma2", GgmlType::kF32, 8, 2, 1, 8, 6, 2, true},
      {"gemma3-f16-2layer.gguf", "gemma3", GgmlType::kF16, 8, 2, 2, 12, 5, 2, true},
  };
  for (const Shape& s : shapes) write(s, argv[1]);
  return 0;
}
