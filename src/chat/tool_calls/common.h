// What the tool-call formats share: finding a JSON value inside text, reading a call object,
// holding back a marker that may be half written, and the grammar pieces of a forced call.
// Each format is one file (hermes.cpp, qwen3_coder.cpp, llama3.cpp, mistral.cpp,
// harmony.cpp, lfm2.cpp) declaring its parser and grammar here.
#pragma once

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json_text.h"
#include "core/result.h"
#include "tova/tool_calls.h"
#include "tova/utf8.h"

namespace tova::chat {

using ordered_json = nlohmann::ordered_json;

// Where the JSON object or array starting at text[pos] (after whitespace) ends (one past its
// closing bracket), or npos when there is none or it is unfinished. Strings are skipped whole,
// so brackets inside them do not count.
size_t json_end(std::string_view text, size_t pos);
// Model output as JSON (discarded when it is not JSON), its bytes that are not UTF-8 replaced by
// U+FFFD first (tova/utf8.h): every JSON a parser reads goes through here, every JSON it writes
// through json_text() (core/json_text.h), so no call is lost to, and no exception comes from, a
// broken character. Names and ids outside JSON go through valid_utf8(). Content stays the
// bytes the model wrote (front-ends serialise it with the same replacement).
ordered_json parse_json(std::string_view text);
// An object parsed from text (parse_json), or none.
std::optional<ordered_json> parse_object(std::string_view text);
// {"name": STRING, ARGS_KEY: OBJECT or a string holding one} -> a call; none otherwise.
std::optional<ToolCall> call_from_object(const ordered_json& o, std::string_view args_key);
std::string_view trim(std::string_view s);
// Bytes of `text` before `marker` (or before a tail that could be its beginning).
size_t before_marker(std::string_view text, std::string_view marker);
// Calls each written between an OPEN and a CLOSE tag (Hermes' JSON, Qwen3-Coder's XML): `read`
// takes a body apart (none: not a call, and the text stays content, the search going on after
// the tag). An unclosed last call (the turn ended at the end-of-turn token) still counts when
// read() takes it. Text around the calls is content, trimmed when there are calls.
ParsedToolCalls parse_tagged_calls(
    std::string_view text, std::string_view open_tag, std::string_view close_tag,
    const std::function<std::optional<ToolCall>(std::string_view body)>& read);

// ---- grammar pieces -------------------------------------------------------------------------
// A GBNF string literal of raw bytes.
std::string gbnf_literal(std::string_view s);
// The grammar rules of a tool's arguments (its schema, or any object), every rule renamed
// PREFIX+name so that tools share a grammar; its start rule is PREFIX+"root".
Result<std::string> argument_rules(const ToolDefinition& tool, const std::string& prefix);
// root ::= call (SEP call)* (parallel) | call; call ::= one alternative per tool, each
// PREFIX(name) args SUFFIX(name). `call_text(i, args_rule)` gives a tool's call expression.
template <typename CallText>
Result<std::string> calls_grammar(const std::vector<ToolDefinition>& tools, bool parallel,
                                  std::string_view separator, std::string_view open,
                                  std::string_view close, CallText call_text) {
  if (tools.empty()) return make_error("tools: no tool to call");
  std::string rules;
  std::string alts;
  for (size_t i = 0; i < tools.size(); ++i) {
    auto args = argument_rules(tools[i], fmt::format("t{}-", i));
    if (!args.ok()) return make_error("tools[{}] ('{}'): {}", i, tools[i].name, args.message());
    rules += *args;
    if (i > 0) alts += " | ";
    alts += call_text(i, fmt::format("t{}-root", i));
  }
  auto lit = [](std::string_view s) { return s.empty() ? std::string() : gbnf_literal(s) + " "; };
  std::string root = fmt::format("root ::= {}call", lit(open));
  if (parallel) root += fmt::format(" ({}call)*", lit(separator));
  if (!close.empty()) root += fmt::format(" {}", gbnf_literal(close));
  return fmt::format("{}\ncall ::= {}\n{}", root, alts, rules);
}

// ---- the formats ----------------------------------------------------------------------------
ParsedToolCalls parse_hermes(std::string_view text);
size_t hermes_safe_prefix(std::string_view text);
Result<std::string> hermes_grammar(const std::vector<ToolDefinition>& tools, bool parallel);

ParsedToolCalls parse_qwen3_coder(std::string_view text, const std::vector<ToolDefinition>& tools);
Result<std::string> qwen3_coder_grammar(const std::vector<ToolDefinition>& tools, bool parallel);

ParsedToolCalls parse_llama3(std::string_view text);
size_t llama3_safe_prefix(std::string_view text);
Result<std::string> llama3_grammar(const std::vector<ToolDefinition>& tools);

ParsedToolCalls parse_mistral(std::string_view text);
size_t mistral_safe_prefix(std::string_view text);
Result<std::string> mistral_grammar(const std::vector<ToolDefinition>& tools, bool parallel,
                                    bool args_form);

ParsedToolCalls parse_lfm2(std::string_view text);
size_t lfm2_safe_prefix(std::string_view text);
Result<std::string> lfm2_grammar(const std::vector<ToolDefinition>& tools, bool parallel);

ParsedToolCalls parse_harmony(std::string_view text);
size_t harmony_safe_prefix(std::string_view text);
Result<std::string> harmony_grammar(const std::vector<ToolDefinition>& tools);

}  // namespace tova::chat
