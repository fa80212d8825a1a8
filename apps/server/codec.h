// The OpenAI wire format, as pure functions: a request body becomes a typed request (every
// field checked; a field tova does not implement is a 400 that names it, never ignored), and
// results become response objects and stream chunks. Nothing here tokenizes, allocates K/V or
// knows about sockets: the handlers (http_server.cpp) call the library between decode and
// encode.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "job.h"
#include "state_view.h"
#include "tools.h"
#include "tova/chat.h"
#include "tova/options.h"
#include "tova/reasoning.h"

namespace tova::server {

// What a request may ask for and the server's defaults (flags).
// Images in chat requests (image_url parts with data: URLs; serve's --mmproj and --image-*).
struct ImageLimits {
  bool enabled = false;                 // an mmproj is loaded
  uint64_t max_bytes = uint64_t{20} << 20;  // --image-max-bytes: one image's decoded bytes
  int64_t max_pixels = int64_t{4096} * 4096;  // --image-max-pixels: width x height
  int max_count = 8;                    // --image-max-count: images in one request
};

struct ApiDefaults {
  std::string model_id;  // the served name (--alias, else the file's stem)
  CacheOptions cache;
  int64_t ctx = 4096;
  int max_tokens_cap = 4096;
  int64_t max_prompt_tokens = 32768;
  uint64_t kv_memory = 0;
  int default_max_tokens = 256;  // chat; completions default to 16 as OpenAI's
  // How the chat template's answers carry reasoning (--reasoning-format; auto: the template's).
  ReasoningFormat reasoning = ReasoningFormat::kNone;
  int max_n = 16;                // most choices one request may ask for
  SpeculativeOptions speculative;  // --spec-* (a request's speculative.* fields change it)
  ImageLimits images;
};

// A decoded POST /v1/chat/completions or /v1/completions body.
struct CompletionRequest {
  bool chat = false;
  std::vector<ChatMessage> messages;  // chat (a developer message is a system message)
  std::string prompt_text;           // completions, a text prompt
  std::vector<int32_t> prompt_ids;   // completions, token ids (checked against the vocabulary later)
  bool prompt_is_ids = false;
  int max_tokens = 16;
  SamplerParams sampling;  // seed set (random when the request gives none)
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;
  int n = 1;
  // Log-probabilities of the generated tokens: -1 none, else how many alternatives each
  // (chat: logprobs true + top_logprobs; completions: logprobs N).
  int logprobs = -1;
  CacheOptions cache;
  SpeculativeOptions speculative;  // speculative.type, .n_max, .n_min, .p_min, .ngram_size_*
  bool allow_reuse = true;  // cache_prompt
  bool ignore_eos = false;
  std::string user;  // the end user (OpenAI's field): the access log shows it
  // Chat: template variables (chat_template_kwargs, reasoning_effort: turn.h), as JSON.
  nlohmann::json template_vars = nlohmann::json::object();
  ToolsRequest tools;  // chat: tools, tool_choice, parallel_tool_calls
  // Chat: the images of image_url parts, in order, as bytes (checked against ImageLimits, their
  // headers read); each part's place in its message's content is a kMediaMarker.
  std::vector<std::vector<uint8_t>> images;
};

std::variant<CompletionRequest, ApiError> decode_completion_request(std::string_view body,
                                                                    bool chat,
                                                                    const ApiDefaults& d);

// POST /tokenize {"content": STRING, "add_special": BOOL?} and POST /detokenize
// {"tokens": [ID, ...]} (ids checked against n_vocab).
struct TokenizeRequest {
  std::string content;
  bool add_special = false;
};
std::variant<TokenizeRequest, ApiError> decode_tokenize_request(std::string_view body);
// The ids as given: Engine::detokenize checks them against the vocabulary.
std::variant<std::vector<int32_t>, ApiError> decode_detokenize_request(std::string_view body);

// A client's string as an error message shows it: control characters escaped (\n, \xNN) so the
// message stays one line, cut to 64 bytes with "..." after.
std::string shown(std::string_view client_text);
ApiError bad_request(const std::string& param, const std::string& message);
// 404 for a model name this server does not serve (GET /v1/models/NAME).
ApiError model_not_found(std::string_view name, const std::string& served);

// ---- responses ----------------------------------------------------------------------------

// The text of a response object. Bytes that are not UTF-8 (a detokenized byte token, a model
// name from a percent-encoded path) become U+FFFD instead of making the serialiser throw.
std::string to_json_text(const nlohmann::json& j);
// "data: JSON\n\n"
std::string sse_event(const nlohmann::json& j);

struct ResponseHead {
  bool chat = false;
  std::string id;  // chatcmpl-... / cmpl-...
  int64_t created = 0;
  std::string model;
};

struct Choice {
  int index = 0;
  std::string text;
  std::string reasoning;  // chat: the message's reasoning_content (left out when empty)
  std::string finish_reason;
  bool with_logprobs = false;
  std::vector<TokenLogprob> logprobs;
  std::vector<ToolCall> tool_calls;  // chat with tools: the calls taken out of `text`
};

nlohmann::json error_json(const ApiError& e);
nlohmann::json kv_json(const KvReport& kv);
// llama-server's timings object (its token counts; tova reports its times elsewhere): cache_n
// (prompt tokens continued from a held state), prompt_n (processed), predicted_n, and where
// speculative decoding drafted, draft_n and draft_n_accepted.
nlohmann::json timings_json(int64_t prompt, int64_t completion, int64_t reused, int64_t draft_n,
                            int64_t draft_n_accepted);
nlohmann::json usage_json(int64_t prompt, int64_t completion, int64_t reused);
// A whole (non-streamed) completion.
nlohmann::json completion_json(const ResponseHead& h, const std::vector<Choice>& choices,
                               const nlohmann::json& usage, const KvReport& kv);
// One stream chunk of choice `index`: `text` (chat: the delta's content; `role_only`: the first
// chunk, {"role": "assistant"}), its tokens' log-probabilities if asked for (completions: their
// text offsets start at `text_offset`, the bytes the choice streamed before), and the finish
// reason on a choice's last chunk (empty: none).
nlohmann::json chunk_json(const ResponseHead& h, int index, std::string_view text,
                          const std::vector<TokenLogprob>* logprobs,
                          std::string_view finish_reason, bool role_only = false,
                          int64_t text_offset = 0);
// The last chunk when stream_options.include_usage: no choices, the usage.
nlohmann::json usage_chunk_json(const ResponseHead& h, const nlohmann::json& usage);
// GET /v1/sessions/ID: `pieces[p]` is the text of the token at position p.
nlohmann::json state_view_json(const StateView& v, const std::vector<std::string>& pieces);

}  // namespace tova::server
