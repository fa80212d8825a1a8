// qwen35: Qwen3.5 and Qwen3.6 dense (0.8B to 27B). A hybrid: of every full_attention_interval
// (4) layers the first three are Gated DeltaNet layers (layer_deltanet.cpp: a causal conv1d and
// a delta-rule state per value head, fixed in size) and the fourth attends with a gate: attn_q
// gives per head a query and a gate, the output is multiplied by sigmoid(gate) before wo;
// per-head RMSNorm of queries and keys; RoPE (NeoX halves) on the first rope.dimension_count
// dims of each head (interleaved M-RoPE whose sections all carry the text position). Every
// layer: x += mixer(rms_norm(x) · attn_norm); x += SwiGLU(rms_norm(x) · post_attention_norm).
// Keys and tensors as llama.cpp's src/models/qwen35.cpp reads them (deltanet_loader.cpp).
#include "model/arch.h"

namespace tova::model {
namespace {

Status configure(KeyReader& keys, ModelConfig& c) { return read_deltanet_keys(keys, c); }

Status load_layer(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l) {
  TOVA_RETURN_IF_ERROR(load_qwen35_mixer(ld, c, il, l));
  return load_dense_ffn(ld, c, il, l, "post_attention_norm");
}

}  // namespace

namespace {
}  // namespace

extern const ArchSpec kArchQwen35{.name = "qwen35",
                                  .configure = configure,
                                  .load_layer = load_layer};

}  // namespace tova::model
