// qwen3: Qwen3 dense models. llama's layer without biases, plus an RMSNorm of every query and
// key head (weights of head_dim, shared by the heads) before RoPE on halves (NEOX).
#include "model/arch.h"

namespace tova::model {
namespace {

Status configure(KeyReader& /*keys*/, ModelConfig& c) {
  c.rope.mode = kernels::RopeMode::kNeox;
  return ok_status();
}

Status load_layer(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l) {
  TOVA_RETURN_IF_ERROR(load_llama_layer(ld, c, il, l));
  return load_qk_norm(ld, c, il, l);
}

}  // namespace

extern const ArchSpec kArchQwen3{
    .name = "qwen3", .configure = configure, .load_layer = load_layer};

}  // namespace tova::model
