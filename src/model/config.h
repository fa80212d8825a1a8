// Hyper-parameters of a decoder read from GGUF metadata ({arch}.*), validated.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "io/gguf.h"
#include "kernels/ops.h"

namespace tova::model {

// The gated feed-forward's activation: act(gate) * up; kSwigluOai is gpt-oss's clamped SwiGLU
// (kernels::swiglu_oai_mul: alpha 1.702, limit 7, up + 1).
enum class FfnAct { kSilu, kGeluTanh, kSwigluOai };

// How a mixture's router turns logits into the chosen experts' weights.
enum class MoeGating {
  kSoftmax,          // softmax over all experts, then the top k (their probabilities)
  kSoftmaxOfChosen,  // the top k logits, then a softmax over those k (gpt-oss)
};

struct ModelConfig {
  std::string arch_name;  // general.architecture
  std::string name;       // general.name, if any
  int n_vocab = 0;
  int n_ctx_train = 0;
  int n_embd = 0;
  int n_layer = 0;
  int n_head = 0;
  int n_head_kv = 0;
  int head_dim = 0;
  int n_ff = 0;
  float rms_eps = 1e-5f;
  kernels::RopeParams rope;
  bool tied_output = false;  // no output.weight: the token embedding is reused
  FfnAct ffn_act = FfnAct::kSilu;
  // kSwigluOai's clamp of gate (above) and up (both sides); gpt-oss's files carry no key for
  // it (llama.cpp fixes 7 too). A field so that tests can lift it (MoeGptOss).
  float swiglu_limit = kernels::kSwigluOaiLimit;
  float embd_scale = 1.f;     // token embeddings are multiplied by it (Gemma: sqrt(n_embd))
  float attn_scale = 0.f;     // attention scores' scale; 0: 1/sqrt(head_dim)
  float attn_softcap = 0.f;   // > 0: scores become cap * tanh(score / cap) (Gemma 2)
  float final_softcap = 0.f;  // > 0: logits become cap * tanh(logit / cap) (Gemma 2)
  // Sliding-window attention: per layer, how many positions a query sees, its own included (0:
  // all); empty when no layer has a window. Window layers rotate with rope_window.
  std::vector<int> layer_window;
  kernels::RopeParams rope_window;
  // Mixture of experts ({arch}.expert_count > 0; families with ArchSpec::experts): every
  // layer's feed-forward routes each token to n_expert_used of n_expert experts.
  int n_expert = 0;
  int n_expert_used = 0;
  int n_ff_exp = 0;                  // an expert's feed-forward width
  int n_ff_shexp = 0;                // the shared expert's (qwen2moe), 0: none
  bool expert_weights_norm = false;  // chosen experts' weights divided by their sum
  float expert_weights_scale = 1.f;  // and then multiplied by this
  MoeGating moe_gating = MoeGating::kSoftmax;
  // The "{arch}." metadata keys the loader read (every such key of the file), sorted.
  std::vector<std::string> keys_read;
};

// The architectures tova implements, for error messages: "llama, qwen2, ..." (the registry's).
std::string supported_architectures();

Result<ModelConfig> load_config(const io::GgufFile& file);

}  // namespace tova::model
