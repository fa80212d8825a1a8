// What one architecture file (arch_<name>.cpp) provides: how to read the family's own metadata
// keys and tensors, and the test fixtures of the family. The forward pass is shared and driven
// by what was loaded (a layer with q/k norm weights applies them, a config with rope frequency
// factors uses them), so adding a family means adding one file here and one line in
// arch_registry.cpp, not threading a flag through the forward pass. Keys and tensors each
// family reads: docs/ARCHITECTURES.md.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "model/config.h"
#include "model/key_reader.h"
#include "model/random_model.h"
#include "model/tensor_loader.h"
#include "model/weights.h"

namespace tova::model {

struct ArchSpec {
  const char* name;  // general.architecture
  // Reads an optional "rope_freqs.weight" (per-frequency RoPE divisors: Llama-3.x's llama3
  // scaling as the converter writes it).
  bool rope_freqs = false;
  // Reads the family's keys beyond the common ones (load_config reads embedding_length,
  // block_count, feed_forward_length, head counts, key/value length, context_length, rms
  // epsilon, rope base, dimension count and linear scaling) and sets the family's fields of c.
  Status (*configure)(KeyReader& keys, ModelConfig& c);
  // Reads layer il's tensors (the names are "blk.{il}." + ...).
  Status (*load_layer)(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l);
  // `tova make-random --arch NAME` fixtures (fixture_shape): every tensor and key a converted
  // model of the family has, scaled down; tests/data/arch holds each one's llama.cpp goldens.
  std::vector<RandomShape> (*fixtures)();
};

// The architectures (arch_registry.cpp: the one list), and one by name (nullptr if unknown).
std::span<const ArchSpec* const> all_archs();
const ArchSpec* find_arch(std::string_view name);

// Tensors most families share, for the architecture files.
// attn_norm, attn_q/k/v/output, ffn_norm, ffn_gate/up/down: llama's layer.
Status load_llama_layer(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l);
// attn_q/k/v.bias.
Status load_qkv_bias(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l);
// attn_q_norm/attn_k_norm.weight [head_dim]: per-head RMSNorm of queries and keys (qwen3, gemma3).
Status load_qk_norm(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l);

// Every family so far: the rope scaling keys (none or linear; another type is an error).
Status read_rope_scaling(KeyReader& keys, ModelConfig& c);

}  // namespace tova::model
