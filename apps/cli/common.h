// Flags shared by several commands, declared once, and their conversion to library options.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tova/result.h"
#include "tova/policy_spec.h"
#include "tova/engine.h"
#include "tova/options.h"

namespace tova::cli {

// llama.cpp's GPU flags (-ngl/--gpu-layers/--n-gpu-layers, -fa/--flash-attn), accepted so that
// commands written for llama.cpp run; tova runs on the CPU, so they have no effect and say so.
struct GpuFlags {
  std::string gpu_layers;
  std::string flash_attn;
  void add(CLI::App& app);
  // One note on stderr if any was given.
  void note() const;
};

// --repack / --no-repack (EngineOptions::repack), for commands that declare their own flags.
void add_repack_flags(CLI::App& app, std::optional<bool>& repack);

struct ModelFlags {
  std::string model;  // empty: the bundled assets/stories260K.gguf
  int threads = 0;    // 0: every core
  bool f32_activations = false;
  bool mmap = false;
  std::optional<bool> repack;  // --repack / --no-repack; unset: the library's default
  GpuFlags gpu;
  void add(CLI::App& app);
  std::string model_path() const;
  int n_threads() const;
  EngineOptions engine_options(bool need_tokenizer = true) const;
  // Notes the flags that have no effect, then loads the model (the error names the file).
  Result<std::unique_ptr<Engine>> load(bool need_tokenizer = true) const;
};

// K/V storage: --kv-type T (keys and values; a comma-separated list where a command takes
// several), -ctk/--cache-type-k and -ctv/--cache-type-v (llama.cpp's) for one side, --kv-rotate.
struct KvTypeFlags {
  std::string both;
  std::string k, v;
  bool rotate = false;
  void add(CLI::App& app, const std::string& default_type, bool list = false);
  // The flags that were given, as a change of a saved format (a resumed session converts).
  KvOverride override_of_saved() const;
  // Every format named, as labels parse_cache_options / parse_kv_format take.
  std::vector<std::string> texts() const;
  std::string text() const { return texts().front(); }

 private:
  std::vector<CLI::Option*> opts_;
};

struct CacheFlags {
  std::string policy = "full";
  int budget = 0;
  std::string prefill = "exact";
  KvTypeFlags kv_type;
  std::string positions = "absolute";
  void add(CLI::App& app);
  // The options; warns when --kv-budget is given to an unbounded policy (it has no effect).
  Result<CacheOptions> options() const;
  // The cache flags given on the command line ("--kv-policy, --kv-budget"), empty if none.
  std::string given() const;

 private:
  std::vector<const CLI::Option*> opts_;
};

// --kv-positions, for commands that declare their --kv-* flags themselves.
void add_positions_option(CLI::App& app, std::string& positions);

struct SamplingFlags {
  SamplerParams p;
  int64_t seed = -1;  // -1: random
  void add(CLI::App& app);
  SamplerParams params() const;
};

// Speculative decoding, with llama.cpp's spellings: --spec-type, -md/--spec-draft-model (which
// implies draft-simple), --spec-draft-n-max, --spec-draft-n-min, --spec-draft-p-min,
// --spec-ngram-simple-size-n, --spec-ngram-simple-size-m (also --spec-ngram-size-n/-m).
struct SpecFlags {
  SpeculativeOptions o;
  std::string draft_model;
  void add(CLI::App& app);
  // The options (validated: the error names the flag) and the engine's draft model.
  Result<SpeculativeOptions> options() const;
  void apply(EngineOptions& e) const { e.draft_model_path = draft_model; }
};

// --mmproj: a vision encoder + projector (llama.cpp's mmproj GGUF) beside the model, so that
// images can join the text (run's --image, chat's /image, serve's image_url parts).
// --kv-keep-images [--kv-keep-images-max N]: image states are never a policy's victims
// (CacheOptions::keep_images), declared with --mmproj by the commands that take images.
struct MmprojFlags {
  std::string path;
  bool keep_images = false;
  int max_kept_images = 8;
  void add(CLI::App& app);
  void apply(EngineOptions& e) const { e.mmproj_path = path; }
  void apply(CacheOptions& c) const {
    c.keep_images = keep_images;
    c.max_kept_images = max_kept_images;
  }
  // The keep flags given on the command line ("--kv-keep-images"), empty if none.
  std::string keep_given() const;

 private:
  std::vector<const CLI::Option*> keep_opts_;
};

using tova::bundled_model_path;  // the library's (tova/engine.h)

// Prints "tova: error: MESSAGE" on stderr and returns 1.
int fail(const std::string& message);
// "tova: warning: MESSAGE" (a flag that has no effect, ...) and "tova: note: MESSAGE" on stderr.
void warn(const std::string& message);
void note(const std::string& message);
// Unwraps a result, or prints its error and ends the command with exit code 1.
template <typename T>
T or_fail(Result<T> r) {
  if (!r.ok()) throw CLI::RuntimeError(fail(r.message()));
  return std::move(r).value();
}
inline void or_fail(const Status& s) {
  if (!s.ok()) throw CLI::RuntimeError(fail(s.message()));
}

// Reads a whole text file; the error names the file.
Result<std::string> read_text_file(const std::string& path);
// Reads a JSON list of token ids (or an object with a "tokens" list).
Result<std::vector<int32_t>> read_token_file(const std::string& path);

// The input of a command that reads token ids (--tokens) or a text (-f) into options with
// tokens/tokens_label and text/text_label (eval::PplOptions, eval::TraceRunOptions): the ids of
// tokens_file if it is set, else the text of text_file, each labelled with its file.
template <typename Options>
void read_input(Options& o, const std::string& text_file, const std::string& tokens_file) {
  if (!tokens_file.empty()) {
    o.tokens = or_fail(read_token_file(tokens_file));
    o.tokens_label = tokens_file;
  } else {
    o.text = or_fail(read_text_file(text_file));
    o.text_label = text_file;
  }
}

// The ids a command scores: those of tokens_file as given if it is set, else text_file
// tokenized without BOS (an error if the text is empty). from_text says which. The tokenizer
// is only used for text; it may be null when tokens_file is set.
struct InputIds {
  std::vector<int32_t> ids;
  bool from_text = false;
};
Result<InputIds> read_input_ids(const std::string& tokens_file, const std::string& text_file,
                                const Engine& engine);

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
