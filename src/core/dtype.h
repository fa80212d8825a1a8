// ggml tensor types as stored in GGUF files: ids, block sizes and bytes per block.
// The ids and sizes are the on-disk format's facts; which types tova can compute with is
// `is_compute_supported`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "core/result.h"

namespace tova {

enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  kMXFP4 = 39,
  // tova's own layouts, made at load from a file's tensors and never read from or written to a
  // file (find_type_traits does not know them): ids past ggml's, clear of ik_llama.cpp's
  // repacked ids (200 and up), which name other byte layouts.
  kQ4_0_R8 = 130,  // Q4_0 rows interleaved in groups of 8 (kernels/types/q4_0_r8.cpp)
};

struct TypeTraits {
  std::string_view name;  // lower case, as llama.cpp prints it ("q4_0", "f16")
  int64_t block_size;     // elements per block
  int64_t type_size;      // bytes per block
};

// Traits of a type id read from a file; nullptr for an id that is not a known ggml type (tova's
// own load-time layouts included: a file cannot claim them).
const TypeTraits* find_type_traits(uint32_t id);
const TypeTraits& type_traits(GgmlType type);  // for known enum values only, tova's own too
std::string_view type_name(GgmlType type);
// Parses "q4_0", "F16", ... (case-insensitive).
Result<GgmlType> parse_type_name(std::string_view name);
// True for the types tova's kernels implement: compute_types().
bool is_compute_supported(GgmlType type);
// The weight types tova's kernels implement, in a fixed order (F32, F16, BF16, Q8_0, Q4_0, Q4_1,
// Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, MXFP4): the one list tests and tools
// iterate.
std::span<const GgmlType> compute_types();
// Bytes of one row of n elements; an error if n is not a multiple of the block size.
Result<uint64_t> bytes_per_row(GgmlType type, int64_t n);

}  // namespace tova
