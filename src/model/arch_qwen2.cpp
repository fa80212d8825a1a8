// qwen2: Qwen1.5/2/2.5. llama's layer plus q/k/v biases, RoPE on halves (NEOX).
#include "model/arch.h"

namespace tova::model {
namespace {

Status configure(KeyReader& /*keys*/, ModelConfig& c) {
  c.rope.mode = kernels::RopeMode::kNeox;
  return ok_status();
}

Status load_layer(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l) {
  TOVA_RETURN_IF_ERROR(load_llama_layer(ld, c, il, l));
  return load_qkv_bias(ld, c, il, l);
}

}  // namespace

extern const ArchSpec kArchQwen2{
    .name = "qwen2", .configure = configure, .load_layer = load_layer};

}  // namespace tova::model
