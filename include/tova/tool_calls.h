// Tool calls in a model's output, as each family writes them, and the grammar that forces a
// valid one (OpenAI's tool_choice "required" or a named tool). The family's format is read
// from its chat template (the template shows the model how a call looks); a parser takes the
// generated text apart into content and calls, and text that is not a well-formed call stays
// content. docs/TOOLS.md describes each format.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tova/result.h"

namespace tova {

enum class ToolCallFormat {
  kNone,         // the template shows no tool-call syntax tova reads
  kHermes,       // Qwen 2.5/3, Hermes: <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>
  kQwen3Coder,   // <tool_call>\n<function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n...
  kLlama3,       // Llama 3.1/3.2: {"name": ..., "parameters": {...}} as the whole message
  kMistral,      // Mistral Nemo: [TOOL_CALLS][{"name": ..., "arguments": {...}, "id": ...}]
  kMistralArgs,  // Mistral Small 3.2: [TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{...} (id optional)
  kHarmony,      // gpt-oss: to=functions.NAME<|channel|>commentary json<|message|>{...}<|call|>
  kLfm2,         // LFM2 / LFM2.5: <|tool_call_start|>[NAME(key="value", n=3)]<|tool_call_end|>
};

// Every format above, kNone first: the one list tests, harnesses and front-ends iterate.
std::span<const ToolCallFormat> tool_call_formats();

// "hermes", "qwen3_coder", "llama3", "mistral", "mistral_args", "harmony", "lfm2", "none".
std::string_view tool_call_format_name(ToolCallFormat f);
// The format a chat template (its Jinja text) teaches its model; kNone for a template that
// renders no tool calls.
ToolCallFormat detect_tool_call_format(std::string_view chat_template);

// A tool as the request defines it: its name and its parameters' JSON Schema (JSON text; empty:
// any object).
struct ToolDefinition {
  std::string name;
  std::string parameters;
};

struct ToolCall {
  std::string id;  // the model's own where the format carries one (Mistral), else empty
  std::string name;
  std::string arguments;  // a JSON object as text
};

// An assistant turn taken apart: the text that is not a call, and the calls in order.
struct ParsedToolCalls {
  std::string content;
  std::vector<ToolCall> calls;
};

// `tools` (optional) give the parameter types that the XML format (Qwen3-Coder) needs to tell
// the string "42" from the number 42.
ParsedToolCalls parse_tool_calls(ToolCallFormat f, std::string_view text,
                                 const std::vector<ToolDefinition>& tools = {});

// How many leading bytes of a growing output are content whatever follows (no call starts
// in them, nor could one): what a stream may send before the turn is complete.
size_t tool_call_safe_prefix(ToolCallFormat f, std::string_view text);

// The GBNF grammar of a turn that is one call (parallel: one or more) to one of `tools`, in the
// format's syntax, arguments valid for the tool's schema: parse_tool_calls reads every text it
// generates as calls. An error names the tool whose schema cannot be made a grammar.
Result<std::string> forced_tool_call_grammar(ToolCallFormat f,
                                             const std::vector<ToolDefinition>& tools,
                                             bool parallel);

}  // namespace tova
