// smollm3: Hugging Face's SmolLM3 (3B). llama's layer (RMSNorm, grouped-query attention, RoPE on
// adjacent pairs as the converter permutes Q/K rows, SiLU-gated feed-forward, tied output),
// except that every fourth layer (il + 1 divisible by 4: layers 3, 7, 11, ...) applies no RoPE
// at all (NoPE). The GGUF carries no key for it: the converter writes none, and llama.cpp
// 34af94cd fixes the step at 4 for this architecture (hparams.n_no_rope_layer_step), which is the
// Hugging Face config's no_rope_layers of the released model. On a NoPE layer keys carry no
// position, so the position modes (gap, rank) leave that layer's attention unchanged.
#include <fmt/format.h>

#include "model/arch.h"

namespace tova::model {
namespace {

// llama.cpp's n_no_rope_layer_step for LLM_ARCH_SMOLLM3.
constexpr int kNoRopeStep = 4;

Status configure(KeyReader& keys, ModelConfig& c) {
  c.rope.mode = kernels::RopeMode::kNorm;
  // llama.cpp's graph asserts n_rot == head_dim for this family: a partial rotation is refused
  // rather than computed differently.
  if (c.rope.n_rot != c.head_dim) {
    return make_error("{}: {} {} differs from the head size {} (smollm3 rotates whole heads)",
                      keys.file().path(), keys.key("rope.dimension_count"), c.rope.n_rot,
                      c.head_dim);
  }
  c.layer_nope.assign(c.n_layer, 0);
  for (int il = 0; il < c.n_layer; ++il) c.layer_nope[il] = (il + 1) % kNoRopeStep == 0;
  return ok_status();
}

}  // namespace

extern const ArchSpec kArchSmolLM3{
    .name = "smollm3", .configure = configure, .load_layer = load_llama_layer};

}  // namespace tova::model
