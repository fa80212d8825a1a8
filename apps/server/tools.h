// OpenAI tool calling on /v1/chat/completions, the server's part: `tools`, `tool_choice` and
// `parallel_tool_calls` decoded and checked (a malformed definition is a 400 naming it); the
// prompt's tools and the forced-call grammar planned against the chat template's tool-call
// format; a finished answer taken apart into content and `tool_calls` (ids made here); and the
// stream's deltas (content held back while a call may be starting, each call as id + name,
// then its arguments). The parsing itself is the library's (tova/tool_calls.h).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "job.h"
#include "tova/chat.h"
#include "tova/tool_calls.h"

namespace tova::server {

struct ToolsRequest {
  nlohmann::ordered_json tools;  // as sent (the template gets them); null: none
  std::vector<ToolDefinition> definitions;
  std::string choice = "auto";  // auto | none | required | function
  std::string function;         // choice "function": the tool named
  bool parallel = true;
  // The model is shown tools and its answer is read for calls.
  bool active() const { return !definitions.empty() && choice != "none"; }
  // The grammar forces a call.
  bool forced() const { return active() && choice != "auto"; }
};

// `body`: the request (fields tools, tool_choice, parallel_tool_calls); keys keep their order.
std::optional<ApiError> decode_tools(const nlohmann::ordered_json& body, ToolsRequest& out);

// The prompt of a chat request that may carry tools (shown to the template when active) and
// tool turns in its history; `param` of an error: the field at fault.
// `vars`: the template switches (enable_thinking, reasoning_effort, ...), a JSON object; the
// template's defaults apply to those it does not set.
std::variant<std::string, ApiError> render_with_tools(
    const ChatTemplate& chat, const std::vector<ChatMessage>& messages, const ToolsRequest& t,
    const nlohmann::json& vars = nlohmann::json::object());

// The forced-call grammar of a request (tool_choice required or a named function) in `format`:
// a 400 naming the tool whose schema cannot be one, or the template without a format.
std::variant<std::string, ApiError> forced_grammar(const ToolsRequest& t, ToolCallFormat format);

// Ids for the calls of one answer ("call_" and 24 letters or digits; Mistral's templates
// require 9 letters or digits).
std::string new_tool_call_id(ToolCallFormat format);

// A finished choice: content (null when empty and there are calls) and tool_calls. Calls
// without an id get one.
struct AssistantTurn {
  std::string content;
  std::vector<ToolCall> calls;
};
AssistantTurn take_apart(ToolCallFormat format, const ToolsRequest& t, std::string_view text);
nlohmann::json tool_calls_json(const std::vector<ToolCall>& calls);

// A streamed choice: text pieces in, content that is surely content out; at the end, the rest
// of the content and the calls.
class ToolStream {
 public:
  ToolStream(ToolCallFormat format, const ToolsRequest* tools) : format_(format), tools_(tools) {}
  // The content to send now.
  std::string feed(std::string_view piece);
  // The turn's end: what content is left to send, and the calls.
  AssistantTurn finish();

 private:
  ToolCallFormat format_;
  const ToolsRequest* tools_;
  std::string text_;
  size_t sent_ = 0;
};

// The stream chunks of a choice's calls: for each, {index, id, type, function: {name,
// arguments: ""}}, then {index, function: {arguments}} (`chunk` makes a chunk of a delta).
template <typename Chunk>
std::string tool_call_events(const std::vector<ToolCall>& calls, Chunk chunk) {
  std::string out;
  for (size_t i = 0; i < calls.size(); ++i) {
    const ToolCall& c = calls[i];
    out += chunk(nlohmann::json{
        {"tool_calls",
         nlohmann::json::array({{{"index", i},
                                 {"id", c.id},
                                 {"type", "function"},
                                 {"function", {{"name", c.name}, {"arguments", ""}}}}})}});
    out += chunk(nlohmann::json{
        {"tool_calls",
         nlohmann::json::array({{{"index", i}, {"function", {{"arguments", c.arguments}}}}})}});
  }
  return out;
}

}  // namespace tova::server
