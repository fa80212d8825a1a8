// The K/V storage types a user chooses (f32, f16, bf16, q8_0, q4_0) and a multi-state's format:
// the types of its keys and values and whether quantized rows are rotated. How rows of each type
// are laid out is the library's own (core/kv_type.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tova {

// The numbers are the session file's tags (f32 = 0 and f16 = 1 as in version 1 files).
enum class KvType : uint8_t { kF32 = 0, kF16 = 1, kBF16 = 2, kQ8_0 = 3, kQ4_0 = 4 };
inline constexpr int kKvTypeCount = 5;

std::string_view kv_type_name(KvType t);  // "q8_0"
std::optional<KvType> kv_type_from_name(std::string_view name);
std::optional<KvType> kv_type_from_tag(uint8_t tag);
inline bool kv_quantized(KvType t) { return t == KvType::kQ8_0 || t == KvType::kQ4_0; }

// The types of a multi-state's keys and values, and whether quantized rows are stored rotated
// by a fixed Hadamard transform (keys with the queries, values with the outputs; the
// library's hadamard_ref): rotation spreads a few large channels over a whole block, so one scale fits
// them all better. Implicitly made from one type (keys and values alike).
struct KvFormat {
  KvType k = KvType::kF32;
  KvType v = KvType::kF32;
  bool rotate = false;
  KvFormat() = default;
  KvFormat(KvType t) : k(t), v(t) {}  // NOLINT: "--kv-type f16" is one type for both
  KvFormat(KvType k_type, KvType v_type, bool rot = false) : k(k_type), v(v_type), rotate(rot) {}
  bool operator==(const KvFormat&) const = default;
  bool any_quantized() const { return kv_quantized(k) || kv_quantized(v); }
  // "f16", "q8_0", "q4_0+rot", "k=q8_0,v=f16".
  std::string label() const;
  // Bytes of one slot of one KV head: its key and value rows.
  size_t slot_bytes(int head_dim) const;
};

namespace kv {
using ::tova::KvFormat;
using ::tova::KvType;
}  // namespace kv

}  // namespace tova
