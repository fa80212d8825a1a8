// The OpenAI wire format: parsing request bodies into GenerationRequests (every field checked,
// unsupported ones a clear 400) and building response objects and stream chunks.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>

#include "chat_template.h"
#include "job.h"
#include "tova/engine.h"

namespace tova::server {

struct ApiDefaults {
  std::string model_id;  // what /v1/models lists and requests may name
  runtime::CacheOptions cache;
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
                                                               const ChatRenderer* renderer,
                                                               const std::string& chat_error);

nlohmann::json error_json(const ApiError& e);
nlohmann::json kv_json(const KvReport& kv);
nlohmann::json usage_json(int64_t prompt, int64_t completion, int64_t reused);

}  // namespace tova::server
