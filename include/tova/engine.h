// The Engine: a loaded model, its tokenizer and the thread pool that runs it. Immutable after
// load and shared by every session (const); sessions keep a pointer to it, so it outlives them.
// The pool takes one caller at a time: whoever runs forward passes on it holds the engine's
// run lock (a session feeding on its own, the batch scheduler, an evaluation), so sessions of one
// engine may be driven from several threads (Python's, with the GIL released) one pass at a
// time. A server drives them all from one scheduler thread, batched into shared passes.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tova/result.h"
#include "tova/chat.h"
#include "tova/options.h"
#include "tova/reasoning.h"
#include "tova/session.h"
#include "tova/vision.h"

namespace tova {

class ThreadPool;
namespace grammar {
class TokenTrie;
}
namespace model {
class Model;
}
namespace tok {
class Tokenizer;
}
namespace vision {
class Mmproj;
}

struct EngineOptions {
  std::string model_path;  // empty: the bundled stories260K (see bundled_model_path)
  int n_threads = 0;       // 0: every core
  // Keep activations in float32 for quantized weights (exact dequantized rows; slower) instead
  // of rounding them to Q8 blocks as llama.cpp does.
  bool f32_activations = false;
  bool mmap = false;  // map the file instead of reading it into memory
  // Repack weights at load into interleaved rows (Q4_0 -> q4_0_r8: faster few-token steps, the
  // same memory); unset: the library's default (model/weight_repack.h).
  std::optional<bool> repack;
  bool need_tokenizer = true;
  // A draft model for speculative decoding (llama.cpp's -md): loaded beside the model, its
  // vocabulary checked against the model's (an error names both files).
  std::string draft_model_path;
  // A vision encoder + projector (llama.cpp's mmproj GGUF) beside the model: sessions then take
  // images (Session::queue_image). Refused, naming both files, when it does not fit the model
  // (its projection width, its text family).
  std::string mmproj_path;
};

// A session file read back (Engine::load_session).
struct LoadedSession {
  std::unique_ptr<Session> session;
  std::string note;         // what the front-end that saved it kept with it (SaveOptions::note)
  uint64_t file_bytes = 0;  // the file's size
};

class Engine {
 public:
  static Result<std::unique_ptr<Engine>> load(const EngineOptions& o);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const std::string& path() const { return path_; }
  double load_seconds() const { return load_seconds_; }
  int n_threads() const;
  int n_vocab() const;
  int64_t n_ctx_train() const;  // the training context from the model's metadata (0: unknown)
  int n_layer() const;
  int n_head_kv() const;        // K/V heads per attention layer
  const std::string& architecture() const;  // general.architecture: "llama"
  // Weight memory: bytes of weight data a forward pass streams, and those of the file's
  // multi-token prediction (MTP) blocks, loaded and validated with it but not run by the main
  // pass (0 bytes and 0 blocks without).
  uint64_t weight_bytes() const;
  uint64_t mtp_bytes() const;
  int n_mtp_blocks() const;

  // Text. These need the tokenizer (loaded unless EngineOptions::need_tokenizer is false).
  bool has_tokenizer() const { return tokenizer_ != nullptr; }
  // add_bos: add BOS (and EOS) as the vocabulary says; parse_special: read the text of control
  // tokens ("<|im_end|>") as those tokens.
  std::vector<int32_t> tokenize(std::string_view text, bool add_bos = true,
                                bool parse_special = false) const;
  // The text of ids; an error (check_token_ids) if one is not in the vocabulary.
  Result<std::string> detokenize(std::span<const int32_t> ids) const;
  // Every id in [0, n_vocab()), or an error naming the first that is not ("token ids: ...").
  Status check_token_ids(std::span<const int32_t> ids) const;
  bool is_eog(int32_t id) const;  // end of generation (EOS, EOT, ...)
  // The text of token `id` as it reads after token `prev` (-1: at the start), as a stream of
  // tokens shows it one by one (an OpenAI logprob's token); "" for an id not in the vocabulary.
  std::string token_piece(int32_t id, int32_t prev = -1) const;

  // The model's tokenizer.chat_template (Jinja text), empty if it has none.
  std::string chat_template_text() const;
  // The template `name` names (a family's name or a .jinja file), or the model's own for an
  // empty name (an error when it has none), resolved once for many renders.
  Result<ChatTemplate> chat_template(std::string_view name = {}) const;
  // A conversation's prompt: the messages rendered with the chat template o names (tova/chat.h)
  // and tokenized, special tokens parsed, BOS added unless the template wrote it. An error names
  // the template's fault or the message it cannot render.
  Result<std::vector<int32_t>> chat_prompt(const std::vector<ChatMessage>& messages,
                                           const ChatOptions& o = {}) const;
  // The two halves of chat_prompt: the rendered text (the template's default switches, such as
  // enable_thinking for a thinking template, applied where o.vars does not set them), and that
  // text as the model reads it (a front-end that feeds only what a turn added tokenizes the
  // new suffix itself).
  Result<std::string> chat_text(const std::vector<ChatMessage>& messages,
                                const ChatOptions& o = {}) const;
  std::vector<int32_t> chat_tokens(std::string_view text) const;  // requires has_tokenizer()
  // How answers under the template o names carry reasoning (think blocks, harmony channels).
  Result<ReasoningFormat> chat_reasoning(const ChatOptions& o = {}) const;

  // A K/V format this model's states can take: rotation only with a quantized type (that
  // error first), then each type suited to the model's head_dim (the error names the type).
  Status check_kv_format(const KvFormat& f) const;
  // K/V bytes a session under `o` allocates for a prompt of n_prompt tokens: its fixed size
  // when bounded, n_ctx tokens' worth when unbounded (what a server reserves for it); with an
  // mmproj, the room an image's step takes and, under keep_images, the kept images' states.
  // With speculative decoding `spec`, the drafter's own K/V too (draft-mtp's block,
  // draft-simple's model), under the same options.
  uint64_t reserve_bytes(const CacheOptions& o, int64_t n_prompt, int64_t n_ctx,
                         const SpeculativeOptions& spec = {}) const;

  // Images (EngineOptions::mmproj_path).
  bool has_mmproj() const { return mmproj_ != nullptr; }
  const std::string& mmproj_path() const;  // empty without one
  // Decodes (PNG, JPEG, what stb_image reads) and encodes an image held in memory; `name` is
  // what errors name. Errors: no mmproj, bytes that are not an image (truncated, lying, empty),
  // an image over the decoder's pixel limit. The same bytes again return the rows encoded
  // before (the last few images are kept), so a second question about an image re-encodes
  // nothing. Takes the run lock while it encodes.
  Result<Image> encode_image(std::span<const uint8_t> bytes, const std::string& name) const;
  Result<Image> encode_image_file(const std::string& path) const;
  // Most tokens one image takes (0 without an mmproj).
  int max_image_tokens() const;
  // `text` as a session's tokens with `images` at its media markers (kMediaMarker), one per
  // marker in order, as llama.cpp's mtmd cuts a prompt: each piece of text tokenized on its own
  // (o: tova/session.h's TextOptions), each image as its begin marker, one image_token_id per
  // image token, its end marker. Session::queue(tokens, images) queues the result; prefix
  // reuse compares it as any history. Errors: more or fewer markers than images, no tokenizer.
  Result<std::vector<int32_t>> tokens_with_images(std::string_view text,
                                                  std::span<const Image> images,
                                                  const TextOptions& o) const;

  // A fresh session of this model.
  Result<std::unique_ptr<Session>> new_session(const SessionOptions& o) const;
  // A session saved by Session::save, continuing exactly where it stopped: its multi-state,
  // history, random state and logits (a sampled token not yet fed is queued). The cache options
  // (policy, budget, K/V type, positions, chunk size) are the saved state's; of o.cache only
  // the reserve is used, and the K/V format as o.kv_override changes it. Errors name the file (truncated, corrupted, another model's, ...).
  Result<LoadedSession> load_session(const std::string& path, const SessionOptions& o) const;

 private:
  // The parts, for the library's own layers (the batch scheduler, evaluations, drafters):
  // reached through runtime/engine_access.h, not part of this face.
  friend class EngineAccess;
  const tok::Tokenizer& tokenizer() const;  // requires has_tokenizer()
  std::shared_ptr<const grammar::TokenTrie> grammar_vocab() const;

  Engine();
  // Opens EngineOptions::mmproj_path beside the model (engine_vision.cpp).
  Status open_mmproj(const std::string& path);
  std::string path_;
  std::unique_ptr<model::Model> model_;
  std::unique_ptr<model::Model> draft_;
  std::unique_ptr<tok::Tokenizer> tokenizer_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<vision::Mmproj> mmproj_;
  std::vector<int32_t> image_begin_, image_end_;  // the projector's markers as token ids
  mutable std::mutex images_mu_;
  mutable std::vector<Image> recent_images_;  // the last images encoded, newest last
  mutable std::mutex run_mu_;
  mutable std::once_flag grammar_once_;
  mutable std::shared_ptr<const grammar::TokenTrie> grammar_vocab_;
  double load_seconds_ = 0;
};

// The bundled default model (assets/stories260K.gguf), found next to the executable, in the
// install's share/tova, or in the working folder.
std::string bundled_model_path();

}  // namespace tova
