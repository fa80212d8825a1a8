// The attention kinds' buffers (layer_attention.cpp, layer_attention_shared.cpp; batch_prep.cpp
// marks which storage types the call converts new keys and values to), per forward call,
// reused across calls: part of ForwardScratch.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/kv_type.h"
#include "kernels/ops.h"
#include "kv/layer_step.h"
#include "model/moved_keys.h"

namespace tova::model {

struct AttentionScratch {
  std::vector<float> q;                // [n_tok][n_head * head_dim] queries
  std::vector<float> k, v;             // [n_tok][n_head_kv * head_dim] new keys, values
  std::vector<float> att;              // [n_tok][n_head * head_dim] attention outputs
  std::vector<float> q_gated;          // [n_tok][n_head][2][head_dim] queries and gates (q_gate)
  std::vector<float> gate;             // [n_tok][n_head * head_dim] output gates (q_gate)
  std::vector<float> rope_cs;          // [n_tok][n_rot] cos/sin at each token's position
  kernels::RopeParams rope_cs_params;  // what rope_cs was computed for
  bool rope_cs_valid = false;
  // Position modes that move positions (kv::PositionMode gap, rank): cos/sin of mapped
  // positions 0 .. moved_cs_n - 1, [moved_cs_n][n_rot], grown as needed, kept across calls.
  std::vector<float> moved_cs;
  int64_t moved_cs_n = 0;
  kernels::RopeParams moved_cs_params;
  // The layer's new keys and values converted once per layer into every storage type some pool
  // of the batch (a sequence's or a follower's) uses: [n_tok] canonical rows each
  // (core/kv_type.h). f32 pools read k and v directly.
  struct Converted {
    KvType type = KvType::kF32;
    bool rotated = false;
    bool active = false;  // some pool of this call uses it
    std::vector<uint8_t> rows;
  };
  std::vector<Converted> conv_k, conv_v;
  std::vector<kv::StoredRows> stored_k, stored_v;  // what step_layer sees of them
  // Queries before RoPE, [n_tok][q_dim], kept only for the sequences whose policy reads them
  // (kv::MultiState::needs_queries), with the layer's rotation as the policy sees it.
  std::vector<float> q_pre;
  bool any_q_pre = false;
  kv::QueryRope query_rope;
  // What one thread needs to step a sequence through a layer, reused (no allocation per step).
  struct AttendScratch {
    kv::StepScratch step;
    MovedKeys moved;
    std::vector<float> scores;  // [heads][n_slot] the attention kernel's score rows
  };
  std::vector<AttendScratch> per_thread;       // [pool threads]
  std::vector<std::pair<int64_t, int>> order;  // sequences by cost, costliest first
};

}  // namespace tova::model
