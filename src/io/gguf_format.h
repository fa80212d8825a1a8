// On-disk facts of the GGUF format shared by the reader and the writer (internal to io/).
#pragma once

#include <cstdint>

#include "io/gguf.h"

namespace tova::io::gguf_format {

inline constexpr char kMagic[4] = {'G', 'G', 'U', 'F'};
inline constexpr uint32_t kWriteVersion = 3;
inline constexpr uint64_t kDefaultAlignment = 32;
inline constexpr const char* kAlignmentKey = "general.alignment";
inline constexpr uint32_t kMaxDims = 4;  // ggml tensors have at most 4 dimensions

inline bool is_valid_value_type(uint32_t id) { return id <= 12; }

// Bytes a scalar of this type takes in the file; 0 for strings and arrays.
inline uint64_t scalar_size(GgufValueType t) {
  switch (t) {
    case GgufValueType::kUint8:
    case GgufValueType::kInt8:
    case GgufValueType::kBool:
      return 1;
    case GgufValueType::kUint16:
    case GgufValueType::kInt16:
      return 2;
    case GgufValueType::kUint32:
    case GgufValueType::kInt32:
    case GgufValueType::kFloat32:
      return 4;
    case GgufValueType::kUint64:
    case GgufValueType::kInt64:
    case GgufValueType::kFloat64:
      return 8;
    case GgufValueType::kString:
    case GgufValueType::kArray:
      return 0;
  }
  return 0;
}

// The fewest bytes one value of this type can take: used to reject element counts that
// cannot fit in what is left of the file before allocating anything for them.
inline uint64_t min_encoded_size(GgufValueType t) {
  if (t == GgufValueType::kString) return 8;  // u64 length
  if (t == GgufValueType::kArray) return 12;  // u32 element type + u64 count
  return scalar_size(t);
}

inline bool is_integer(GgufValueType t) {
  switch (t) {
    case GgufValueType::kUint8:
    case GgufValueType::kInt8:
    case GgufValueType::kUint16:
    case GgufValueType::kInt16:
    case GgufValueType::kUint32:
    case GgufValueType::kInt32:
    case GgufValueType::kUint64:
    case GgufValueType::kInt64:
      return true;
    default:
      return false;
  }
}

inline bool is_signed_integer(GgufValueType t) {
  return t == GgufValueType::kInt8 || t == GgufValueType::kInt16 || t == GgufValueType::kInt32 ||
         t == GgufValueType::kInt64;
}

}  // namespace tova::io::gguf_format
