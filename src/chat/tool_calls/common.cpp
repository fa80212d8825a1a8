#include "chat/tool_calls/common.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/json_text.h"
#include "grammar/gbnf.h"
#include "tova/grammar.h"
#include "tova/utf8.h"

namespace tova::chat {

size_t json_end(std::string_view t, size_t pos) {
  while (pos < t.size() && (t[pos] == ' ' || t[pos] == '\n' || t[pos] == '\t' || t[pos] == '\r')) {
    ++pos;
  }
  if (pos >= t.size() || (t[pos] != '{' && t[pos] != '[')) return std::string_view::npos;
  int depth = 0;
  for (size_t i = pos; i < t.size(); ++i) {
    const char c = t[i];
    if (c == '"') {
      for (++i; i < t.size() && t[i] != '"'; ++i) {
        if (t[i] == '\\') ++i;
      }
      if (i >= t.size()) return std::string_view::npos;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

ordered_json parse_json(std::string_view text) {
  // nlohmann-json refuses a string holding bytes that are not UTF-8: a model's call with one
  // broken character in an argument would be lost. Its bytes are replaced instead.
  if (is_valid_utf8(text)) return ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  return ordered_json::parse(valid_utf8(text), nullptr, /*allow_exceptions=*/false);
}

std::optional<ordered_json> parse_object(std::string_view text) {
  auto j = parse_json(text);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

std::optional<ToolCall> call_from_object(const ordered_json& o, std::string_view args_key) {
  const std::string key(args_key);
  if (!o.contains("name") || !o["name"].is_string() || o["name"].get<std::string>().empty()) {
    return std::nullopt;
  }
  ToolCall call{.name = o["name"].get<std::string>()};
  if (!o.contains(key)) {
    call.arguments = "{}";
  } else if (o[key].is_object()) {
    call.arguments = json_text(o[key]);
  } else if (o[key].is_string()) {  // arguments already as JSON text
    auto inner = parse_object(o[key].get<std::string>());
    if (!inner) return std::nullopt;
    call.arguments = json_text(*inner);
  } else {
    return std::nullopt;
  }
  if (o.contains("id") && o["id"].is_string()) call.id = o["id"].get<std::string>();
  return call;
}

std::string_view trim(std::string_view s) {
  constexpr std::string_view kSpace = " \t\n\r";
  const size_t b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(kSpace) - b + 1);
}

ParsedToolCalls parse_tagged_calls(
    std::string_view text, std::string_view open_tag, std::string_view close_tag,
    const std::function<std::optional<ToolCall>(std::string_view body)>& read) {
  ParsedToolCalls out;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t open = text.find(open_tag, pos);
    if (open == std::string_view::npos) break;
    const size_t body = open + open_tag.size();
    const size_t close = text.find(close_tag, body);
    const size_t body_end = close == std::string_view::npos ? text.size() : close;
    const std::optional<ToolCall> call = read(text.substr(body, body_end - body));
    if (!call) {
      out.content += text.substr(pos, body - pos);
      pos = body;
      continue;
    }
    out.content += text.substr(pos, open - pos);
    out.calls.push_back(*call);
    pos = close == std::string_view::npos ? text.size() : close + close_tag.size();
  }
  out.content += text.substr(std::min(pos, text.size()));
  if (!out.calls.empty()) out.content = std::string(trim(out.content));
  return out;
}

size_t before_marker(std::string_view text, std::string_view marker) {
  const size_t at = text.find(marker);
  if (at != std::string_view::npos) return at;
  for (size_t n = std::min(marker.size() - 1, text.size()); n > 0; --n) {
    if (text.substr(text.size() - n) == marker.substr(0, n)) return text.size() - n;
  }
  return text.size();
}

std::string gbnf_literal(std::string_view s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7F) {
      out += fmt::format("\\x{:02X}", c);
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

Result<std::string> argument_rules(const ToolDefinition& tool, const std::string& prefix) {
  const std::string schema = tool.parameters.empty() ? R"({"type": "object"})" : tool.parameters;
  auto g = json_schema_grammar(schema);
  if (!g.ok()) return make_error("parameters: {}", g.message());
  return grammar::prefix_gbnf_rules(*g, prefix);
}

}  // namespace tova::chat
