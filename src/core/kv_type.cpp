#include "core/kv_type.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "core/field_names.h"
#include "core/half.h"

namespace tova {

namespace {

constexpr std::string_view kNames[kKvTypeCount] = {"f32", "f16", "bf16", "q8_0", "q4_0"};

// The block size for head_dim, or 0 when none fits.
int block_for(KvType t, int head_dim) {
  if (!kv_quantized(t)) return 1;
  for (int b : {32, 16, 8}) {
    if (head_dim % b == 0) return b;
  }
  return 0;
}

size_t block_bytes(KvType t, int b) { return 2 + (t == KvType::kQ8_0 ? b : b / 2); }

// Bytes of the quants of one block in a key tile, before its scales.
size_t tile_quant_bytes(KvType t, int b) {
  return static_cast<size_t>(kKeyTileSlots) * (t == KvType::kQ8_0 ? b : b / 2);
}

uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
void store_u16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }

}  // namespace

std::string_view kv_type_name(KvType t) { return kNames[static_cast<int>(t)]; }

std::optional<KvType> kv_type_from_name(std::string_view name) {
  for (int i = 0; i < kKvTypeCount; ++i) {
    if (kNames[i] == name) return static_cast<KvType>(i);
  }
  return std::nullopt;
}

Status check_kv_rotation(const KvFormat& f) {
  if (!f.rotate || f.any_quantized()) return ok_status();
  return make_error("{}: +rot needs a quantized type (q8_0, q4_0); the K/V types are {}",
                    field::kKvRotate, KvFormat(f.k, f.v).label());
}

size_t KvFormat::slot_bytes(int head_dim) const {
  return kv_row_bytes(k, head_dim) + kv_row_bytes(v, head_dim);
}

std::optional<KvType> kv_type_from_tag(uint8_t tag) {
  if (tag >= kKvTypeCount) return std::nullopt;
  return static_cast<KvType>(tag);
}

Result<int> kv_block_size(KvType t, int head_dim) {
  if (kv_quantized(t) && head_dim > 512) {
    return make_error("K/V type {} supports a head_dim of at most 512, the model's is {}",
                      kv_type_name(t), head_dim);
  }
  const int b = head_dim > 0 ? block_for(t, head_dim) : 0;
  if (b == 0) {
    return make_error("K/V type {} needs a head_dim that is a multiple of 8 (blocks of 32, 16 or 8), "
                      "the model's is {}",
                      kv_type_name(t), head_dim);
  }
  return b;
}

size_t kv_row_bytes(KvType t, int head_dim) {
  switch (t) {
    case KvType::kF32:
      return 4 * static_cast<size_t>(head_dim);
    case KvType::kF16:
    case KvType::kBF16:
      return 2 * static_cast<size_t>(head_dim);
    case KvType::kQ8_0:
    case KvType::kQ4_0: {
      const int b = block_for(t, head_dim);
      TOVA_CHECK(b > 0);
      return static_cast<size_t>(head_dim / b) * block_bytes(t, b);
    }
  }
  return 0;
}

std::string KvFormat::label() const {
  std::string s = k == v ? std::string(kv_type_name(k))
                         : "k=" + std::string(kv_type_name(k)) + ",v=" + std::string(kv_type_name(v));
  if (rotate) s += "+rot";
  return s;
}

Status check_kv_format(const KvFormat& f, int head_dim) {
  for (KvType t : {f.k, f.v}) {
    auto b = kv_block_size(t, head_dim);
    if (!b.ok()) return b.error();
  }
  return ok_status();
}

int key_tile_slots(KvType t) { return kv_quantized(t) ? kKeyTileSlots : 1; }

size_t key_tile_bytes(KvType t, int head_dim) {
  return kv_row_bytes(t, head_dim) * static_cast<size_t>(key_tile_slots(t));
}

size_t key_pool_bytes(KvType t, int head_dim, int64_t n_slot) {
  const int64_t per = key_tile_slots(t);
  return static_cast<size_t>((n_slot + per - 1) / per) * key_tile_bytes(t, head_dim);
}

// Tile of one quantized block: [chunk][lane][4 bytes] quants, then [lane] f16 scales. Calls
// copy(offset in the tile, offset in the canonical row, bytes) for each piece of slot `lane`'s
// row: per block its scale, then its chunks of 4 quant bytes. (q4_0: canonical byte j holds
// elements j (low) and j + b/2 (high), so chunk c byte u holds elements 4c+u and b/2+4c+u, the
// same pairing.)
namespace {
template <class F>
void for_each_key_piece(KvType t, int head_dim, int lane, F&& copy) {
  const int b = block_for(t, head_dim);
  const size_t quant = tile_quant_bytes(t, b);
  const size_t in_block = block_bytes(t, b);
  const int n_chunk = t == KvType::kQ8_0 ? b / 4 : b / 8;
  for (int blk = 0; blk < head_dim / b; ++blk) {
    const size_t tile_at = blk * (quant + 2 * kKeyTileSlots), row_at = blk * in_block;
    copy(tile_at + quant + 2 * lane, row_at, 2);  // the scale
    for (int c = 0; c < n_chunk; ++c) {
      copy(tile_at + (static_cast<size_t>(c) * kKeyTileSlots + lane) * 4, row_at + 2 + 4 * c, 4);
    }
  }
}
}  // namespace

void key_put_row(KvType t, int head_dim, uint8_t* tile, int lane, const uint8_t* row) {
  if (!kv_quantized(t)) {
    std::memcpy(tile, row, kv_row_bytes(t, head_dim));
    return;
  }
  for_each_key_piece(t, head_dim, lane, [&](size_t at_tile, size_t at_row, size_t n) {
    std::memcpy(tile + at_tile, row + at_row, n);
  });
}

void key_get_row(KvType t, int head_dim, const uint8_t* tile, int lane, uint8_t* row) {
  if (!kv_quantized(t)) {
    std::memcpy(row, tile, kv_row_bytes(t, head_dim));
    return;
  }
  for_each_key_piece(t, head_dim, lane, [&](size_t at_tile, size_t at_row, size_t n) {
    std::memcpy(row + at_row, tile + at_tile, n);
  });
}

void kv_quantize_row_ref(KvType t, const float* src, uint8_t* dst, int head_dim) {
  switch (t) {
    case KvType::kF32:
      std::memcpy(dst, src, 4 * static_cast<size_t>(head_dim));
      return;
    case KvType::kF16:
      fp32_to_fp16_row(src, dst, head_dim);
      return;
    case KvType::kBF16:
      fp32_to_bf16_row(src, dst, head_dim);
      return;
    case KvType::kQ8_0: {
      const int b = block_for(t, head_dim);
      for (int blk = 0; blk < head_dim / b; ++blk, dst += 2 + b) {
        const float* x = src + blk * b;
        float amax = 0.f;
        for (int j = 0; j < b; ++j) amax = std::max(amax, std::fabs(x[j]));
        const float d = amax / 127.f;
        const float id = d != 0.f ? 1.f / d : 0.f;
        store_u16(dst, fp32_to_fp16(d));
        for (int j = 0; j < b; ++j) {
          dst[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::nearbyint(x[j] * id)));
        }
      }
      return;
    }
    case KvType::kQ4_0: {
      const int b = block_for(t, head_dim);
      for (int blk = 0; blk < head_dim / b; ++blk, dst += 2 + b / 2) {
        const float* x = src + blk * b;
        float amax = 0.f, mx = 0.f;
        for (int j = 0; j < b; ++j) {
          if (std::fabs(x[j]) > amax) {
            amax = std::fabs(x[j]);
            mx = x[j];
          }
        }
        const float d = mx / -8.f;
        const float id = d != 0.f ? 1.f / d : 0.f;
        store_u16(dst, fp32_to_fp16(d));
        for (int j = 0; j < b / 2; ++j) {
          const int lo = std::min(15, static_cast<int>(x[j] * id + 8.5f));
          const int hi = std::min(15, static_cast<int>(x[j + b / 2] * id + 8.5f));
          dst[2 + j] = static_cast<uint8_t>(lo | (hi << 4));
        }
      }
      return;
    }
  }
}

void kv_dequantize_row_ref(KvType t, const uint8_t* src, float* dst, int head_dim) {
  switch (t) {
    case KvType::kF32:
      std::memcpy(dst, src, 4 * static_cast<size_t>(head_dim));
      return;
    case KvType::kF16:
      for (int i = 0; i < head_dim; ++i) dst[i] = fp16_to_fp32(load_u16(src + 2 * i));
      return;
    case KvType::kBF16:
      for (int i = 0; i < head_dim; ++i) dst[i] = bf16_to_fp32(load_u16(src + 2 * i));
      return;
    case KvType::kQ8_0: {
      const int b = block_for(t, head_dim);
      for (int blk = 0; blk < head_dim / b; ++blk, src += 2 + b) {
        const float d = fp16_to_fp32(load_u16(src));
        for (int j = 0; j < b; ++j) dst[blk * b + j] = d * static_cast<int8_t>(src[2 + j]);
      }
      return;
    }
    case KvType::kQ4_0: {
      const int b = block_for(t, head_dim);
      for (int blk = 0; blk < head_dim / b; ++blk, src += 2 + b / 2) {
        const float d = fp16_to_fp32(load_u16(src));
        for (int j = 0; j < b / 2; ++j) {
          dst[blk * b + j] = d * static_cast<float>((src[2 + j] & 15) - 8);
          dst[blk * b + j + b / 2] = d * static_cast<float>((src[2 + j] >> 4) - 8);
        }
      }
      return;
    }
  }
}

int hadamard_size(int head_dim) { return head_dim & -head_dim; }

void hadamard_ref(float* x, int head_dim) {
  const int p = hadamard_size(head_dim);
  const float norm = 1.f / std::sqrt(static_cast<float>(p));
  for (int base = 0; base < head_dim; base += p) {
    float* y = x + base;
    for (int h = 1; h < p; h *= 2) {
      for (int i = 0; i < p; i += 2 * h) {
        for (int j = i; j < i + h; ++j) {
          const float a = y[j], c = y[j + h];
          y[j] = a + c;
          y[j + h] = a - c;
        }
      }
    }
    for (int i = 0; i < p; ++i) y[i] *= norm;
  }
}

}  // namespace tova
