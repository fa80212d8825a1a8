// llama: LLaMA-1/2/3.x, Mistral, TinyLlama, SmolLM, Yi... Pre-norm decoder with RMSNorm,
// grouped-query attention, RoPE on adjacent pairs (the converter permutes Q/K rows), SiLU-gated
// feed-forward. Llama-3.x files carry rope_freqs.weight; Mistral files set key_length.
#include "model/arch.h"

namespace tova::model {
namespace {

Status configure(KeyReader& /*keys*/, ModelConfig& c) {
  c.rope.mode = kernels::RopeMode::kNorm;
  return ok_status();
}

std::vector<RandomShape> fixtures() {
  RandomShape l3 = fixture_shape("llama3", "Llama-3.2-1B (scaled down)", "llama");
  l3.rope_base = 500000.f;
  l3.tied_output = true;
  l3.head_dim = 16;
  l3.llama3_orig_ctx = 64;
  RandomShape mi = fixture_shape("mistral", "Mistral-Nemo-12B (scaled down)", "llama");
  mi.rope_base = 1000000.f;
  mi.head_dim = 32;  // attention.key_length: n_head * head_dim != n_embd, as Nemo's 32 x 128
                     // != 5120
  return {l3, mi};
}

}  // namespace

extern const ArchSpec kArchLlama{.name = "llama",
                                 .rope_freqs = true,
                                 .configure = configure,
                                 .load_layer = load_llama_layer,
                                 .fixtures = fixtures};

}  // namespace tova::model
