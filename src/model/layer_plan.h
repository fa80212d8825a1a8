// The layer plan (STYLE.md habits 19 and 21): per layer, the kind of its token mixer, where that
// mixer's state lives in the multi-state and, for a layer that reads another layer's K/V, which
// layer that is. Computed once at load (plan_layers, mixer_registry.cpp) from the kinds the
// family's loader chose, and read by everyone who walks the layers: the multi-state's options
// (Model::state_options), the forward step (Model::forward_step) and the layer kinds.
#pragma once

namespace tova::model {

// The token mixer kinds (layer_kinds.h: each one file and a line in mixer_registry.cpp).
//   kAttention  attention over the layer's own K/V (global, window or NoPE)
//   kSharedKv   attention whose queries read an earlier layer's K/V (Gemma 4 E2B/E4B;
//               ModelConfig::layer_kv_owner): wq, q_norm, wo and the norms only
//   kDeltaNet   Gated DeltaNet (qwen35, qwen35moe): conv1d + gated delta rule
//   kShortConv  gated short convolution (lfm2): in_proj to B, C, x; C * conv(B * x); out_proj
//   kMamba2     Mamba2 (SSD; granitehybrid, nemotron_h): conv1d + selective scan + gated group
//               RMSNorm
//   kNone       no token mixer: a layer whose only block is its feed-forward (Nemotron-H's MLP
//               layers; ModelConfig::layer_ffn_only)
//   kAttnMamba2 attention and Mamba2 side by side on the same normed input, their outputs
//               summed into the residual (Falcon-H1; ModelConfig::layer_parallel;
//               layer_parallel.cpp)
enum class MixerKind { kAttention, kSharedKv, kDeltaNet, kShortConv, kMamba2, kNone, kAttnMamba2 };

// What a mixer kind keeps per sequence in the multi-state (kv::MultiStateOptions).
enum class MixerState {
  kKv,              // K/V rows in one of the multi-state's layers, bounded by its policy
  kRecurrent,       // a fixed-size recurrent state (kv::RecurrentState), the same at any length
  kOwners,          // nothing: it reads an earlier layer's K/V, as that layer holds it
  kNothing,         // nothing at all: the layer mixes no tokens (MixerKind::kNone)
  kKvAndRecurrent,  // both: K/V rows of its attention and the recurrent state of the kind
                    // beside it (parallel mixers, MixerKind::kAttnMamba2)
};

struct LayerPlan {
  MixerKind mixer = MixerKind::kAttention;
  MixerState holds = MixerState::kKv;
  // kKv, kKvAndRecurrent: the layer's index among the multi-state's K/V layers; kRecurrent:
  // among its recurrent states; kOwners: its owner's K/V layer; kNothing: -1.
  int state = -1;
  // kKvAndRecurrent: the index of its recurrent state among the multi-state's; else -1.
  int recurrent = -1;
  // kOwners: the model layer whose K/V it reads; else the layer itself.
  int owner = -1;
};

}  // namespace tova::model
