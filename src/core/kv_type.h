// K/V storage types of the multi-state: names, quantization blocks, the bytes of a row and how
// a pool lays rows out, and the scalar conversions every faster path is tested against.
//
// A row is one token's key (or value) for one KV head: head_dim numbers. Its canonical form
// (what session files store and the insert path writes) is
//   f32, f16, bf16: head_dim elements;
//   q8_0: head_dim / B blocks of {f16 d; int8 q[B]}, value d * q (llama.cpp's Q8_0);
//   q4_0: head_dim / B blocks of {f16 d; uint8 qs[B / 2]}, element j < B/2 the low nibble of
//         qs[j], element j + B/2 the high nibble, value d * (nibble - 8) (llama.cpp's Q4_0).
// B is 32 as in llama.cpp; a head_dim that is not a multiple of 32 uses the largest of 16 and 8
// that divides it (stories260K: 8, niah-13m: 16), and one that 8 does not divide is an error.
//
// In a pool, values are canonical rows, slot after slot. Quantized keys are stored in tiles of
// kKeyTileSlots slots so that the attention kernel scores a tile with int8 dot products whose
// lanes are slots (no horizontal sums): per block b, the quants as (B/4 for q8_0, B/8 for q4_0)
// chunks of [slot 0..15][4 bytes], then the 16 slots' f16 scales. A q8_0 chunk c holds elements
// 4c..4c+3 of each slot; a q4_0 chunk c holds elements 4c..4c+3 in the low nibbles and
// B/2+4c..B/2+4c+3 in the high nibbles. Float keys are one row per slot (tiles of one).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"
#include "tova/kv_format.h"

namespace tova {

inline constexpr int kKeyTileSlots = 16;

// Elements per block along the head dimension (1 for the float types), or an error naming the
// type and head_dim when no block divides it.
Result<int> kv_block_size(KvType t, int head_dim);
// Bytes of one canonical row; head_dim must be supported (kv_block_size).
size_t kv_row_bytes(KvType t, int head_dim);

// A format's types must both suit head_dim; the error names the type.
Status check_kv_format(const KvFormat& f, int head_dim);
// Rotation (+rot) needs a quantized type on at least one side: the one check, the one message
// ("kv rotate: +rot needs a quantized type ...", field::kKvRotate).
Status check_kv_rotation(const KvFormat& f);

// ---- key pool layout ----
// Slots per key tile: kKeyTileSlots for quantized types, 1 for float ones.
int key_tile_slots(KvType t);
// Bytes of one key tile and of a KV head's key pool of n_slot slots (whole tiles).
size_t key_tile_bytes(KvType t, int head_dim);
size_t key_pool_bytes(KvType t, int head_dim, int64_t n_slot);
// Where slot s's tile starts in a KV head's key pool.
inline size_t key_tile_offset(KvType t, int head_dim, int64_t s) {
  return static_cast<size_t>(s / key_tile_slots(t)) * key_tile_bytes(t, head_dim);
}
// Writes a canonical row into lane `lane` of a key tile, and reads it back.
void key_put_row(KvType t, int head_dim, uint8_t* tile, int lane, const uint8_t* row);
void key_get_row(KvType t, int head_dim, const uint8_t* tile, int lane, uint8_t* row);

// ---- scalar conversions (the references of kernels/kv_rows.h) ----
// One row of head_dim floats into the canonical form of t: IEEE half and bfloat16 round to
// nearest even; q8_0: d = amax / 127, q = x / d rounded to nearest even; q4_0 as llama.cpp: d =
// (the element of largest magnitude) / -8, nibble = min(15, trunc(x / d + 8.5)).
void kv_quantize_row_ref(KvType t, const float* src, uint8_t* dst, int head_dim);
void kv_dequantize_row_ref(KvType t, const uint8_t* src, float* dst, int head_dim);

// The fixed rotation: a normalized Walsh-Hadamard transform over each run of P elements of the
// row, P the largest power of two that divides head_dim (64 for head_dim 64, 16 for 48). It is
// orthogonal and its own inverse, so (H q).(H k) = q.k and H (H x) = x up to rounding.
void hadamard_ref(float* x, int head_dim);
int hadamard_size(int head_dim);

}  // namespace tova
