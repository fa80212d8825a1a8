// lfm2moe: Liquid AI's LFM2 mixtures of experts (LFM2-8B-A1B, LFM2-24B-A2B). lfm2's layers
// (arch_lfm2.cpp: gated short convolutions around a few attention layers, the pattern in
// attention.head_count_kv), with a mixture of experts in every feed-forward after the first
// leading_dense_block_count: the router's logits go through a sigmoid, the experts are chosen
// by sigmoid + exp_probs_b (a per-layer selection bias) and weighted by their sigmoids,
// renormalized (llama.cpp fixes the renormalization for this architecture). Keys and tensors as
// llama.cpp's src/models/lfm2moe.cpp reads them.
#include <fmt/format.h>

#include "model/arch.h"

namespace tova::model {
namespace {

Status configure(KeyReader& keys, ModelConfig& c) {
  const std::string& path = keys.file().path();
  TOVA_RETURN_IF_ERROR(read_lfm2_keys(keys, c));
  TOVA_ASSIGN_OR_RETURN(uint32_t lead, keys.u32_or("leading_dense_block_count", 0));
  if (lead > static_cast<uint32_t>(c.n_layer)) {
    return make_error("{}: {} {} is more than the {} layers", path,
                      keys.key("leading_dense_block_count"), lead, c.n_layer);
  }
  c.n_layer_dense_lead = static_cast<int>(lead);
  // llama.cpp requires the gating function and the experts' width.
  for (const char* key : {"expert_gating_func", "expert_feed_forward_length"}) {
    if (!keys.has(key)) return make_error("{}: missing key '{}'", path, keys.key(key));
  }
  TOVA_RETURN_IF_ERROR(read_expert_keys(
      keys, c, {.required = true, .norm = true, .ff_exp_key = true, .sigmoid_gating = true}));
  if (!c.expert_weights_norm) {
    return make_error("{}: {} false: lfm2moe's chosen weights are always renormalized "
                      "(llama.cpp)",
                      path, keys.key("expert_weights_norm"));
  }
  return ok_status();
}

Status load_layer(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l) {
  TOVA_RETURN_IF_ERROR(load_lfm2_mixer(ld, c, il, l));
  if (il < c.n_layer_dense_lead) return load_dense_ffn(ld, c, il, l);
  TOVA_RETURN_IF_ERROR(load_moe_ffn(ld, c, il, l, /*shared_expert=*/false));
  TOVA_ASSIGN_OR_RETURN(l.moe.select_bias,
                        ld.vector(fmt::format("blk.{}.exp_probs_b.bias", il), c.n_expert));
  return ok_status();
}

}  // namespace

extern const ArchSpec kArchLfm2Moe{.name = "lfm2moe",
                                   .experts = true,
                                   .kv_heads_mark_recurrent = true,
                                   .output_norm = "token_embd_norm.weight",
                                   .configure = configure,
                                   .load_layer = load_layer};

}  // namespace tova::model
