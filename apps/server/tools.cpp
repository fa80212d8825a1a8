#include "tools.h"

#include <fmt/format.h>

#include <cctype>
#include <random>

#include "codec.h"

namespace tova::server {

using ojson = nlohmann::ordered_json;

namespace {

// OpenAI's rule for a function's name.
bool valid_name(const std::string& n) {
  if (n.empty() || n.size() > 64) return false;
  for (const char c : n) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '-')) {
      return false;
    }
  }
  return true;
}

std::optional<ApiError> decode_definition(const ojson& t, size_t i, ToolDefinition& out) {
  const std::string at = fmt::format("tools[{}]", i);
  if (!t.is_object() || !t.contains("type") || t["type"] != "function") {
    return bad_request("tools", at + ": expected {\"type\": \"function\", \"function\": {...}}");
  }
  for (const auto& [key, v] : t.items()) {
    if (key != "type" && key != "function") {
      return bad_request("tools", fmt::format("{}: unknown field '{}'", at, shown(key)));
    }
  }
  if (!t.contains("function") || !t["function"].is_object()) {
    return bad_request("tools", at + ": 'function' must be an object");
  }
  const ojson& f = t["function"];
  for (const auto& [key, v] : f.items()) {
    if (key != "name" && key != "description" && key != "parameters" && key != "strict") {
      return bad_request("tools", fmt::format("{}.function: unknown field '{}'", at, shown(key)));
    }
  }
  if (!f.contains("name") || !f["name"].is_string() || !valid_name(f["name"])) {
    return bad_request("tools", at + ".function.name must be 1 to 64 letters, digits, '_' or '-'");
  }
  out.name = f["name"].get<std::string>();
  if (f.contains("description") && !f["description"].is_string()) {
    return bad_request("tools",
                       fmt::format("{} ('{}'): 'description' must be a string", at, out.name));
  }
  if (f.contains("strict") && !f["strict"].is_boolean()) {
    return bad_request("tools", fmt::format("{} ('{}'): 'strict' must be a boolean", at, out.name));
  }
  if (f.contains("parameters")) {
    const ojson& p = f["parameters"];
    if (!p.is_object()) {
      return bad_request("tools", fmt::format("{} ('{}'): 'parameters' must be a JSON Schema "
                                              "object",
                                              at, out.name));
    }
    if (p.contains("type") && p["type"] != "object") {
      return bad_request("tools", fmt::format("{} ('{}'): 'parameters' must describe an object "
                                              "(\"type\": \"object\")",
                                              at, out.name));
    }
    out.parameters = p.dump();
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> decode_tools(const ojson& j, ToolsRequest& out) {
  auto present = [&](const char* k) { return j.contains(k) && !j[k].is_null(); };
  if (present("tools")) {
    const ojson& ts = j["tools"];
    if (!ts.is_array() || ts.empty() || ts.size() > 128) {
      return bad_request("tools", "'tools' must be a list of 1 to 128 tools");
    }
    for (size_t i = 0; i < ts.size(); ++i) {
      ToolDefinition d;
      if (auto e = decode_definition(ts[i], i, d)) return e;
      for (const ToolDefinition& other : out.definitions) {
        if (other.name == d.name) {
          return bad_request("tools",
                             fmt::format("tools[{}]: the name '{}' is used twice", i, d.name));
        }
      }
      out.definitions.push_back(std::move(d));
    }
    out.tools = ts;
  }
  if (present("parallel_tool_calls")) {
    if (!j["parallel_tool_calls"].is_boolean()) {
      return bad_request("parallel_tool_calls", "'parallel_tool_calls' must be a boolean");
    }
    out.parallel = j["parallel_tool_calls"].get<bool>();
  }
  if (!present("tool_choice")) return std::nullopt;
  const ojson& c = j["tool_choice"];
  if (c.is_string()) {
    out.choice = c.get<std::string>();
    if (out.choice != "auto" && out.choice != "none" && out.choice != "required") {
      return bad_request("tool_choice", fmt::format("'tool_choice' '{}' is not one of auto, none, "
                                                    "required or {{\"type\": \"function\", ...}}",
                                                    shown(out.choice)));
    }
  } else if (c.is_object() && c.contains("type") && c["type"] == "function" &&
             c.contains("function") && c["function"].is_object() &&
             c["function"].contains("name") && c["function"]["name"].is_string()) {
    out.choice = "function";
    out.function = c["function"]["name"].get<std::string>();
    bool known = false;
    for (const ToolDefinition& d : out.definitions) known = known || d.name == out.function;
    if (!known) {
      return bad_request("tool_choice", fmt::format("'tool_choice' names '{}', which is not in "
                                                    "'tools'",
                                                    shown(out.function)));
    }
  } else {
    return bad_request("tool_choice",
                       "'tool_choice' must be auto, none, required or "
                       "{\"type\": \"function\", \"function\": {\"name\": ...}}");
  }
  if (out.choice != "auto" && out.choice != "none" && out.definitions.empty()) {
    return bad_request("tool_choice", "'tool_choice' needs 'tools'");
  }
  return std::nullopt;
}

std::variant<std::string, ApiError> render_with_tools(const ChatTemplate& chat,
                                                      const std::vector<ChatMessage>& messages,
                                                      const ToolsRequest& t,
                                                      const nlohmann::json& vars) {
  const ToolCallFormat format = chat.tool_call_format();
  if (t.active() && format == ToolCallFormat::kNone) {
    return bad_request(
        "tools",
        fmt::format("the chat template '{}' renders no tool calls tova can read (Hermes "
                    "<tool_call>, Qwen3-Coder XML, Llama 3 JSON, Mistral [TOOL_CALLS], LFM2, gpt-oss "
                    "harmony): tools need the model's own template or --chat-template FILE.jinja",
                    chat.name()));
  }
  if (!chat.is_jinja()) {
    for (const ChatMessage& m : messages) {
      if (m.role == "tool" || !m.tool_calls.empty()) {
        return bad_request("messages",
                           fmt::format("tool calls and 'tool' messages need a Jinja chat "
                                       "template (the model's own, or --chat-template "
                                       "FILE.jinja); this server's is '{}'",
                                       chat.name()));
      }
    }
  }
  ChatOptions o{.add_generation_prompt = true};
  if (t.active()) o.tools = t.tools.dump();
  for (const auto& item : vars.items()) o.vars.emplace_back(item.key(), item.value().dump());
  auto text = chat.render(messages, o);
  if (!text.ok()) return bad_request("messages", text.message());
  return *text;
}

std::variant<std::string, ApiError> forced_grammar(const ToolsRequest& t, ToolCallFormat format) {
  std::vector<ToolDefinition> chosen;
  for (const ToolDefinition& d : t.definitions) {
    if (t.choice != "function" || d.name == t.function) chosen.push_back(d);
  }
  auto g = forced_tool_call_grammar(format, chosen, t.parallel && t.choice != "function");
  if (!g.ok()) return bad_request("tools", g.message());
  return *g;
}

std::string new_tool_call_id(ToolCallFormat format) {
  static constexpr char kAlnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const bool mistral = format == ToolCallFormat::kMistral || format == ToolCallFormat::kMistralArgs;
  std::string id = mistral ? "" : "call_";
  for (int i = 0; i < (mistral ? 9 : 24); ++i) id += kAlnum[rng() % 62];
  return id;
}

AssistantTurn take_apart(ToolCallFormat format, const ToolsRequest& t, std::string_view text) {
  ParsedToolCalls p = parse_tool_calls(format, text, t.definitions);
  for (ToolCall& c : p.calls) {
    if (c.id.empty()) c.id = new_tool_call_id(format);
  }
  return {.content = std::move(p.content), .calls = std::move(p.calls)};
}

nlohmann::json tool_calls_json(const std::vector<ToolCall>& calls) {
  nlohmann::json out = nlohmann::json::array();
  for (const ToolCall& c : calls) {
    out.push_back({{"id", c.id},
                   {"type", "function"},
                   {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
  }
  return out;
}

std::string ToolStream::feed(std::string_view piece) {
  text_ += piece;
  const size_t safe = std::max(sent_, tool_call_safe_prefix(format_, text_));
  std::string out = text_.substr(sent_, safe - sent_);
  sent_ = safe;
  return out;
}

AssistantTurn ToolStream::finish() {
  AssistantTurn turn = take_apart(format_, *tools_, text_);
  // What was sent is a prefix of the content (a call never starts in it): send the rest.
  if (turn.content.size() >= sent_ && turn.content.compare(0, sent_, text_, 0, sent_) == 0) {
    turn.content.erase(0, sent_);
    return turn;
  }
  // The content was trimmed around its calls: what was sent, trimmed alike, is its beginning.
  std::string_view sent(text_.data(), sent_);
  while (!sent.empty() && std::isspace(static_cast<unsigned char>(sent.front())))
    sent.remove_prefix(1);
  while (!sent.empty() && std::isspace(static_cast<unsigned char>(sent.back())))
    sent.remove_suffix(1);
  if (std::string_view(turn.content).starts_with(sent)) {
    turn.content.erase(0, sent.size());
  } else {
    turn.content.clear();
  }
  return turn;
}

}  // namespace tova::server
