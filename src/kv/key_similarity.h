// KeyDiff's score: how close each held key is to its KV head's mean key direction. The cache
// computes it for a policy that asks (KvPolicy::needs_key_similarity), so policies still never
// read K/V memory.
#pragma once

#include <cstdint>

#include "core/kv_type.h"

namespace tova::kv {

// One layer's keys as the pool stores them.
struct KeyRows {
  // [n_head_kv] key pools of key_pool_bytes(type, head_dim, n_slot) bytes (core/kv_type.h).
  // Keys stored Hadamard-rotated need no undoing: the rotation keeps cosines and means.
  const void* keys = nullptr;
  KvType type = KvType::kF32;
  const int64_t* pos = nullptr;  // [n_head_kv][n_slot]; -1: free
  int n_head_kv = 0;
  int n_slot = 0;
  int slot_end = 0;  // every held slot lies below it
  int head_dim = 0;
};

// For every KV head g: the anchor a_g is the mean, over the held slots, of the keys scaled to
// unit length (a zero key counts as zero); out[g * n_slot + s] = cos(k_s, a_g) for each held
// slot s below slot_end (0 if k_s or a_g is zero). Double precision throughout. Other entries
// of out are left as they are.
void key_similarity(const KeyRows& rows, double* out);

}  // namespace tova::kv
