// Golden blocks from ggml itself for tova's weight formats. Built OUTSIDE the repository against
// libggml-base by scripts/make_quant_blocks.sh (never part of tova's build).
//   ggml_quant_dump TYPE N_ROWS N_PER_ROW BLOCKS.bin FLOATS.f32 [ACTS.f32 DOTS.f32]
// Quantizes N_ROWS x N_PER_ROW deterministic pseudo-random floats (a fixed LCG, Gaussian-like
// sums of uniforms, every 97th value x8 as an outlier) with ggml's own quantizer for TYPE
// (ggml_quantize_chunk: the reference quantizers llama-quantize calls, no importance matrix),
// writes the blocks, then ggml's dequantization of those blocks (type_traits.to_float).
// With ACTS and DOTS: one activation row of N_PER_ROW floats (another LCG stream) and the dot
// product of every weight row with it as ggml's CPU backend computes it (the activations
// converted by its from_float to the type's vec_dot_type, then its SIMD vec_dot).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ggml-cpu.h"
#include "ggml.h"

int main(int argc, char** argv) {
  if (argc != 6 && argc != 8) {
    std::fprintf(stderr, "usage: %s TYPE N_ROWS N_PER_ROW BLOCKS.bin FLOATS.f32 [ACTS DOTS]\n",
                 argv[0]);
    return 2;
  }
  ggml_type type = GGML_TYPE_COUNT;
  for (int t = 0; t < GGML_TYPE_COUNT; ++t) {
    const char* name = ggml_type_name(static_cast<ggml_type>(t));
    if (name != nullptr && std::string(name) == argv[1]) type = static_cast<ggml_type>(t);
  }
  if (type == GGML_TYPE_COUNT) {
    std::fprintf(stderr, "unknown type %s\n", argv[1]);
    return 1;
  }
  const int64_t rows = std::atoll(argv[2]), n = std::atoll(argv[3]);
  std::vector<float> x(static_cast<size_t>(rows * n));
  uint32_t s = 12345u + static_cast<uint32_t>(type);
  auto uni = [&] {
    s = s * 1664525u + 1013904223u;
    return static_cast<float>(s >> 8) / 16777216.0f - 0.5f;
  };
  for (size_t i = 0; i < x.size(); ++i) {
    float v = 0;
    for (int k = 0; k < 4; ++k) v += uni();
    x[i] = i % 97 == 0 ? 8.0f * v : v;
  }
  std::vector<uint8_t> q(ggml_row_size(type, n) * static_cast<size_t>(rows));
  ggml_quantize_chunk(type, x.data(), q.data(), 0, rows, n, nullptr);
  std::vector<float> y(x.size());
  ggml_get_type_traits(type)->to_float(q.data(), y.data(), rows * n);
  std::FILE* f = std::fopen(argv[4], "wb");
  std::fwrite(q.data(), 1, q.size(), f);
  std::fclose(f);
  f = std::fopen(argv[5], "wb");
  std::fwrite(y.data(), 4, y.size(), f);
  std::fclose(f);
  if (argc == 8) {
    ggml_cpu_init();
    const ggml_type_traits_cpu* cpu = ggml_get_type_traits_cpu(type);
    std::vector<float> a(static_cast<size_t>(n));
    for (auto& v : a) v = 4.0f * (uni() + uni());
    std::vector<uint8_t> aq(ggml_row_size(cpu->vec_dot_type, n));
    ggml_get_type_traits_cpu(cpu->vec_dot_type)->from_float(a.data(), aq.data(), n);
    std::vector<float> dots(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      cpu->vec_dot(static_cast<int>(n), &dots[r], 0, q.data() + r * ggml_row_size(type, n), 0,
                   aq.data(), 0, 1);
    }
    f = std::fopen(argv[6], "wb");
    std::fwrite(a.data(), 4, a.size(), f);
    std::fclose(f);
    f = std::fopen(argv[7], "wb");
    std::fwrite(dots.data(), 4, dots.size(), f);
    std::fclose(f);
  }
  return 0;
}
