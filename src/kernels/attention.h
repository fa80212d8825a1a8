// Attention of one token's query heads over the states held in a slot pool.
// Kernels know nothing of the cache object: they take plain spans (keys, values, which slots
// are live, where to write scores).
#pragma once

#include <cstdint>

#include "core/kv_type.h"

namespace tova::kernels {

struct AttentionArgs {
  const float* q = nullptr;  // [n_head][head_dim], post-RoPE
  int n_head = 0;
  int n_head_kv = 0;         // query head h reads KV head h / (n_head / n_head_kv)
  int head_dim = 0;
  // Slots per KV head: the stride of pos and probs, and of the K and V pools (KV head g's keys
  // start at g * key_pool_bytes(k_type, head_dim, n_slot), its values at
  // g * n_slot * kv_row_bytes(v_type, head_dim); see core/kv_type.h for both layouts).
  int n_slot = 0;
  // Only slots [0, slot_end) of each KV head are read; the rest are not seen whatever they
  // hold (their probs are 0). -1: n_slot. A cache whose held states all lie below slot_end
  // pays for what it holds, not for what it allocated.
  int slot_end = -1;
  const void* k = nullptr;  // [n_head_kv] key pools (tiles of 16 slots when quantized)
  const void* v = nullptr;  // [n_head_kv][n_slot] value rows
  KvType k_type = KvType::kF32;
  KvType v_type = KvType::kF32;
  // Keys stored Hadamard-rotated (KvFormat::rotate): the queries are rotated the same way
  // before the dot products. Values stored rotated: each output is rotated back.
  bool k_rotated = false;
  bool v_rotated = false;
  const int64_t* pos = nullptr;  // [n_head_kv][n_slot]; slots with pos < 0 are free
  int64_t max_pos = 0;           // causal limit: slots with pos > max_pos are not seen
  int64_t min_pos = 0;           // sliding window: slots with pos < min_pos are not seen
  float scale = 1.f;             // usually 1/sqrt(head_dim)
  // > 0: each seen score s (after `scale`) becomes softcap * tanh(s / softcap) before the
  // softmax (Gemma 2's attention soft-capping); 0: none.
  float softcap = 0.f;
  // [n_head] or nullptr: learned attention sinks (gpt-oss), one logit per query head that joins
  // the softmax's denominator (and its maximum) without a value: probabilities of the seen
  // slots sum to 1 - p_sink, and the output shrinks by as much.
  const float* sinks = nullptr;
  float* out = nullptr;          // [n_head][head_dim]
  // [n_head][n_slot]: receives the post-softmax probabilities (0 for unseen slots) when a
  // policy asked for scores; else nullptr and `scratch` ([n_slot]) is used.
  float* probs = nullptr;
  // Score rows when probs is nullptr: at least n_slot floats (one head at a time). Giving
  // min(n_head / n_head_kv, heads in [head_begin, head_end)) * n_slot floats, and saying so in
  // scratch_size, lets the kernel score a whole GQA group per pass over K and V (the fast
  // path); results are bit-identical whatever the size.
  float* scratch = nullptr;
  int64_t scratch_size = 0;  // floats at scratch; 0 means n_slot
  int head_begin = 0;  // compute query heads [head_begin, head_end) (threads split heads)
  int head_end = -1;   // -1: n_head
};

// Softmax over exactly the live, visible states (never over free or padding slots). A head
// with no visible state gets output 0 and probabilities 0. Highway SIMD, fused per GQA group
// (attention_simd.cpp); each head's result does not depend on the head range, the scratch size
// or whether probs is requested (bit for bit).
//
// Quantized keys are read as they are stored: each query head is rounded to int8 blocks of the
// keys' block size (quantize_query, float scale per block) and a tile of 16 slots is scored with
// int8 dot products, one slot per lane (VNNI vpdpbusd on AVX3_DL, vpmaddubsw on AVX2/AVX3,
// plain integer loops elsewhere); quantized values are widened row by row in registers. No
// dequantized copy of the cache is made.
void attention(const AttentionArgs& a);
// Plain scalar reference (double accumulation over the exact values of the stored rows and of
// the int8 queries quantize_query gives).
void attention_ref(const AttentionArgs& a);

// One query head as the int8 dot products with quantized keys see it: per block of `block`
// elements, q[i] = round-to-nearest-even(x[i] / d) with d = max |x| / 127 (float), its scale d
// and the sum of its q. The kernel and the reference share it, so both see the same integers.
void quantize_query(const float* x, int head_dim, int block, int8_t* q, float* d, int32_t* sum);

// attention() in three passes, for splitting ONE token's attention over threads with the same
// bits as attention(): every part of a pass must have finished before the next pass starts.
// rows: [n_head][n_slot] score rows (a.probs when the probabilities are wanted); a.scratch is
// not used.
// 1. Scores of slots [slot_begin, slot_end) (a part of [0, a.slot_end)) for the heads
//    [a.head_begin, a.head_end); unseen slots -inf. Each score is its own dot product.
void attention_scores(const AttentionArgs& a, float* rows, int slot_begin, int slot_end);
// 2. Softmax of the rows of heads [head_begin, head_end).
void attention_normalize(const AttentionArgs& a, float* rows, int head_begin, int head_end);
// 3. Outputs of heads [a.head_begin, a.head_end).
void attention_outputs(const AttentionArgs& a, const float* rows);

}  // namespace tova::kernels
