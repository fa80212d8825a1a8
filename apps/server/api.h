// The OpenAI wire format: parsing request bodies into GenerationRequests (every field checked,
// unsupported ones a clear 400) and building response objects and stream chunks.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "job.h"
#include "tokenizer/chat_template.h"
#include "state_view.h"
#include "tova/engine.h"

namespace tova::server {

struct ApiDefaults {
  std::string model_id;  // what /v1/models lists and requests may name
  CacheOptions cache;
  int64_t ctx = 4096;
  int max_tokens_cap = 4096;
  int64_t max_prompt_tokens = 32768;
  uint64_t kv_memory = 0;
  int default_max_tokens = 256;
};

struct ParsedRequest {
  GenerationRequest gen;
  bool chat = false;
  bool stream = false;
  bool include_usage = false;
  std::string model;
};

// body: the request's JSON text. chat: /v1/chat/completions (messages) or /v1/completions
// (prompt). renderer: null when the model has no usable chat template (error: chat_error).
std::variant<ParsedRequest, ApiError> parse_generation_request(const std::string& body, bool chat,
                                                               const Engine& engine,
                                                               const ApiDefaults& d,
                                                               const tok::ChatTemplate* renderer,
                                                               const std::string& chat_error);

// POST /tokenize {"content": STRING, "add_special": BOOL?} and POST /detokenize
// {"tokens": [ID, ...]} (ids checked against n_vocab).
struct TokenizeRequest {
  std::string content;
  bool add_special = false;
};
std::variant<TokenizeRequest, ApiError> parse_tokenize_request(const std::string& body);
std::variant<std::vector<int32_t>, ApiError> parse_detokenize_request(const std::string& body,
                                                                     int32_t n_vocab);

// A client's string as an error message shows it: control characters escaped (\n, \xNN) so the
// message stays one line, cut to 64 bytes with "..." after.
std::string shown(std::string_view client_text);
// 404 for a model name this server does not serve.
ApiError model_not_found(std::string_view name, const std::string& served);

// The text of a response object. Bytes that are not UTF-8 (a detokenized byte token, a model
// name from a percent-encoded path) become U+FFFD instead of making the serialiser throw.
std::string to_json_text(const nlohmann::json& j);

nlohmann::json error_json(const ApiError& e);
nlohmann::json kv_json(const KvReport& kv);
nlohmann::json usage_json(int64_t prompt, int64_t completion, int64_t reused);
// GET /v1/sessions/ID: `pieces[p]` is the text of the token at position p.
nlohmann::json state_view_json(const StateView& v, const std::vector<std::string>& pieces);

}  // namespace tova::server
