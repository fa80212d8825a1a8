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

}  // namespace

extern const ArchSpec kArchLlama{.name = "llama",
                                 .arch = Arch::kLlama,
                                 .rope_freqs = true,
                                 .configure = configure,
                                 .load_layer = load_llama_layer};

}  // namespace tova::model
