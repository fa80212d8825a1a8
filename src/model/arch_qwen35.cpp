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

// The fixture shape of both qwen35 families: 8 layers (3 DeltaNet + 1 attention, twice), 2
// key heads and 4 value heads of 16 in the DeltaNet layers (value heads shared by key heads,
// as Qwen3.5-4B's 16 over 32), 4 query heads over 2 KV heads of 32 with a quarter rotated
// (8 of 32 dims: 4 pairs, sections [2, 1, 1, 0]) in the attention layers.
RandomShape qwen35_fixture(std::string family, std::string description, std::string arch) {
  RandomShape q = fixture_shape(std::move(family), std::move(description), std::move(arch));
  q.n_layer = 8;
  q.head_dim = 32;
  q.n_rot = 8;
  q.rope_sections = {2, 1, 1, 0};
  q.rope_base = 10000000.f;
  q.rms_eps = 1e-6f;
  q.tied_output = false;
  q.qk_norm = true;
  q.ffn_norm_name = "post_attention_norm";
  q.ssm_conv_kernel = 4;
  q.ssm_state = 16;
  q.ssm_groups = 2;
  q.ssm_v_heads = 4;
  q.full_attention_interval = 4;
  return q;
}

namespace {
std::vector<RandomShape> fixtures() {
  // As llama.cpp's converter writes Qwen3.5 files since May 2026: with the multi-token
  // prediction block past the main stack (4 layers here, to keep the file small).
  RandomShape mtp = qwen35_fixture("qwen35-mtp", "Qwen3.5-4B with its MTP block (scaled down)",
                                   "qwen35");
  mtp.n_layer = 4;
  mtp.nextn_predict_layers = 1;
  return {qwen35_fixture("qwen35", "Qwen3.5-4B (scaled down)", "qwen35"), mtp};
}
}  // namespace

extern const ArchSpec kArchQwen35{.name = "qwen35",
                                  .configure = configure,
                                  .load_layer = load_layer,
                                  .fixtures = fixtures};

}  // namespace tova::model
