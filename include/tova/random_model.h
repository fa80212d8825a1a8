// Random-weight GGUF files of a real model's shape with a real vocabulary (`tova make-random`):
// benchmark inputs that both engines (ours and llama.cpp) load, without downloading weights.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tova/result.h"

namespace tova {

struct RandomModelOptions {
  // Exactly one of: a model shape by name ("tinyllama") or an architecture's test fixture
  // ("qwen3": every tensor and key of a converted model of the family, scaled down).
  std::string shape;
  std::string arch;
  std::string type = "q4_0";  // the weight type (random_type_choices())
  // A GGUF whose tokenizer.* keys are copied; empty: the shape's vocabulary found in
  // $TOVA_SHARED_DIR/vocab or ../shared/vocab.
  std::string vocab;
  uint64_t seed = 1;
  int n_threads = 0;  // 0: every core
  // Changes to the shape, "NAME=VALUE" each ("n_head=8", "n_expert_used=3"): other sizes of a
  // fixture for held-back checks; random_shape_field_choices() lists the names.
  std::vector<std::string> set;
  // Compute the file's tensors (RandomModelReport::tensors) and write nothing (`tova
  // make-random --plan`): a shape of many gigabytes checked without its weights.
  bool plan_only = false;
};

struct RandomModelReport {
  std::string description;  // the shape's model: "TinyLlama-1.1B"
  std::string type;         // the weight type's name: "q4_0"
  int n_tensors = 0;
  uint64_t n_params = 0;
  uint64_t n_bytes = 0;  // tensor data bytes
  struct Tensor {
    std::string name;
    std::string type;           // "q4_0", "f32"
    std::vector<int64_t> dims;  // ggml order: the row length first
    uint64_t n_bytes = 0;
  };
  std::vector<Tensor> tensors;  // every tensor, in the file's order
};

// Writes the file at `path`; an error names the unknown shape, type or missing vocabulary.
Result<RandomModelReport> make_random_model(const RandomModelOptions& o, const std::string& path);

std::string random_shape_choices();  // "tinyllama, smollm-135m, ..."
std::string random_arch_choices();   // "llama, qwen2, ..."
std::string random_type_choices();   // "f32, f16, q8_0, q4_0, ..."
std::string random_shape_field_choices();  // "n_layer, n_embd, ..."

}  // namespace tova
