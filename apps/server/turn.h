// An assistant turn as the chat API returns it: the model's text split into reasoning
// (`reasoning_content`, as llama-server returns it) and content, whole or streamed
// (`delta.reasoning_content`), and the request switches that reach the chat template
// (`reasoning_effort`, `chat_template_kwargs`).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "codec.h"
#include "job.h"
#include "tova/reasoning.h"

namespace tova::server {

// `chat_template_kwargs` (an object: each key a template variable, e.g. {"enable_thinking":
// false}) and `reasoning_effort` ("low" | "medium" | "high": the variable gpt-oss's template
// reads) into `vars`; a malformed one is a 400 naming it.
std::optional<ApiError> decode_template_switches(const nlohmann::json& body, nlohmann::json& vars);

// One choice's text, split as it arrives.
class TurnSplitter {
 public:
  explicit TurnSplitter(const GenerationRequest& r) : parser_(r.reasoning, r.prompt_text) {}
  TurnText push(std::string_view text) { return parser_.push(text); }
  TurnText finish() { return parser_.finish(); }

 private:
  ReasoningParser parser_;
};

// A stream chunk of choice `index` whose delta is `{"reasoning_content": reasoning}`.
nlohmann::json reasoning_chunk_json(const ResponseHead& h, int index, std::string_view reasoning);

}  // namespace tova::server
