// Flags shared by several commands, declared once, and their conversion to library options.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/thread_pool.h"
#include "kv/policy_registry.h"
#include "model/model.h"
#include "runtime/sampler.h"
#include "runtime/sequence.h"
#include "tokenizer/tokenizer.h"
#include "tova/engine.h"

namespace tova::cli {

struct ModelFlags {
  std::string model;  // empty: the bundled assets/stories260K.gguf
  int threads = 0;    // 0: every core
  bool f32_activations = false;
  bool mmap = false;
  void add(CLI::App& app);
  model::ModelOptions options() const { return {.f32_activations = f32_activations, .mmap = mmap}; }
  std::string model_path() const;
  int n_threads() const;
};

struct CacheFlags {
  std::string policy = "full";
  int budget = 0;
  std::string prefill = "exact";
  std::string kv_type = "f32";
  std::string positions = "absolute";
  void add(CLI::App& app);
  Result<runtime::CacheOptions> options() const;
};

// --kv-positions, for commands that declare their --kv-* flags themselves.
void add_positions_option(CLI::App& app, std::string& positions);

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

using tova::bundled_model_path;  // the library's (tova/engine.h)

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

namespace tova::cli {

// "a,b,c" -> {"a", "b", "c"} (an empty string gives one empty item).
std::vector<std::string> split_list(const std::string& s);
// "512,1024" -> {512, 1024}; every entry an integer in [lo, hi]; the error names the flag.
Result<std::vector<int>> parse_int_list(const std::string& flag, const std::string& s, int lo,
                                        int hi);
// Every policy of a comma-separated list at every budget of a comma-separated list; an
// unbounded policy (`full`) appears once, whatever the budgets.
Result<std::vector<kv::PolicySpec>> parse_policy_grid(const std::string& policies,
                                                      const std::string& budgets);
// "805306368", "768M", "1.5G", "64K" (powers of 1024) -> bytes.
Result<uint64_t> parse_bytes(const std::string& flag, const std::string& s);
// A markdown table on stdout; columns whose index right(i) says align right. Widths count
// code points, so "±" takes one column.
void print_markdown_table(const std::vector<std::string>& head,
                          const std::vector<std::vector<std::string>>& rows,
                          const std::function<bool(size_t)>& right);

}  // namespace tova::cli
