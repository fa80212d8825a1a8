// Position modes that move positions (kv::PositionMode gap, rank): the pool keeps keys before
// RoPE, and each step rotates every held key, and the query, by the position the mode maps
// its state to at that step (kv::MultiStateOptions::positions says why).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/ops.h"
#include "kv/multi_state.h"

namespace tova::model {

// One layer of one sequence at one step; the buffers are reused from step to step.
struct MovedKeys {
  // [n_head_kv][n_slot][head_dim] rows of `type`, post-RoPE: the pool's type when it is f32 or
  // f16, float otherwise (bf16 and quantized keys are widened, and rotated back from the
  // Hadamard basis where they were stored rotated, before RoPE).
  std::vector<uint8_t> keys;
  KvType type = KvType::kF32;
  std::vector<int64_t> mapped;  // [n_head_kv][n_slot], -1 = free
  std::vector<int32_t> order;
  std::vector<float> row;  // [head_dim]
  std::vector<uint8_t> stored;  // one stored key row
  std::vector<float> q;    // [n_head][head_dim]

  // cos_sin: [m][rope.n_rot] for every mapped position m the layer's states can take.
  void rotate_keys(const kv::LayerState& L, kv::PositionMode mode, const kernels::RopeParams& rope,
                   std::span<const float> cos_sin);

  // The query of the state at original position p, each head rotated by the mapped position
  // that state has in its KV head (head-wise policies hold different states per KV head).
  // rotate_keys ran for this step first.
  const float* rotate_query(const kv::LayerState& L, const float* q_in, int64_t p, int n_head,
                            const kernels::RopeParams& rope, std::span<const float> cos_sin);
};

}  // namespace tova::model
