// Flags shared by several commands, declared once, and their conversion to library options.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "core/result.h"
#include "core/thread_pool.h"
#include "model/model.h"
#include "runtime/sampler.h"
#include "runtime/sequence.h"
#include "tokenizer/tokenizer.h"

namespace tova::cli {

struct ModelFlags {
  std::string model;  // empty: the bundled assets/stories260K.gguf
  int threads = 0;    // 0: every core
  bool f32_activations = false;
  bool mmap = false;
  void add(CLI::App& app);
  model::ModelOptions options() const {
    return {.f32_activations = f32_activations, .mmap = mmap};
  }
  std::string model_path() const;
  int n_threads() const;
};

struct CacheFlags {
  std::string policy = "full";
  int budget = 0;
  std::string prefill = "exact";
  std::string kv_type = "f32";
  void add(CLI::App& app);
  Result<runtime::CacheOptions> options() const;
};

struct SamplingFlags {
  runtime::SamplerParams p;
  int64_t seed = -1;  // -1: random
  void add(CLI::App& app);
  runtime::SamplerParams params() const;
};

struct LoadedModel {
  std::unique_ptr<model::Model> model;
  std::unique_ptr<tok::Tokenizer> tokenizer;
  double load_seconds = 0;
};
Result<LoadedModel> load_model(const std::string& path, bool need_tokenizer = true,
                               const model::ModelOptions& options = {});

// The path of the bundled default model, found next to the executable or the working folder.
std::string bundled_model_path();

// Prints "tova: error: MESSAGE" on stderr and returns 1.
int fail(const std::string& message);

// Reads a whole text file; the error names the file.
Result<std::string> read_text_file(const std::string& path);
// Reads a JSON list of token ids (or an object with a "tokens" list).
Result<std::vector<int32_t>> read_token_file(const std::string& path);

// The ids a command scores: those of tokens_file as given if it is set, else text_file
// tokenized without BOS (an error if the text is empty). from_text says which. The tokenizer
// is only used for text; it may be null when tokens_file is set.
struct InputIds {
  std::vector<int32_t> ids;
  bool from_text = false;
};
Result<InputIds> read_input_ids(const std::string& tokens_file, const std::string& text_file,
                                const tok::Tokenizer* tokenizer);

std::string format_bytes(uint64_t bytes);

}  // namespace tova::cli
