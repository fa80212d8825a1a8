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

std::vector<RandomShape> fixtures() {
  RandomShape q3 = fixture_shape("qwen3", "Qwen3-0.6B (scaled down)", "qwen3");
  q3.rope_base = 1000000.f;
  q3.rms_eps = 1e-6f;
  q3.tied_output = true;
  q3.head_dim = 32;  // n_head * head_dim = 128 != n_embd, as Qwen3-0.6B's 16 x 128 != 1024
  q3.qk_norm = true;
  return {q3};
}

}  // namespace

extern const ArchSpec kArchQwen3{
    .name = "qwen3", .configure = configure, .load_layer = load_layer, .fixtures = fixtures};

}  // namespace tova::model
