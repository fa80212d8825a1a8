// The public face of tool-call parsing (tova/tool_calls.h): which format a template teaches,
// and the dispatch to each format's file.
#include "chat/tool_calls/common.h"

namespace tova {
namespace {
bool has(std::string_view t, std::string_view s) { return t.find(s) != std::string_view::npos; }
}  // namespace

std::string_view tool_call_format_name(ToolCallFormat f) {
  switch (f) {
    case ToolCallFormat::kHermes:
      return "hermes";
    case ToolCallFormat::kQwen3Coder:
      return "qwen3_coder";
    case ToolCallFormat::kLlama3:
      return "llama3";
    case ToolCallFormat::kMistral:
      return "mistral";
    case ToolCallFormat::kMistralArgs:
      return "mistral_args";
    case ToolCallFormat::kHarmony:
      return "harmony";
    case ToolCallFormat::kLfm2:
      return "lfm2";
    case ToolCallFormat::kNone:
      break;
  }
  return "none";
}

std::span<const ToolCallFormat> tool_call_formats() {
  static constexpr ToolCallFormat kAll[] = {
      ToolCallFormat::kNone,    ToolCallFormat::kHermes,      ToolCallFormat::kQwen3Coder,
      ToolCallFormat::kLlama3,  ToolCallFormat::kMistral,     ToolCallFormat::kMistralArgs,
      ToolCallFormat::kHarmony, ToolCallFormat::kLfm2};
  return kAll;
}

ToolCallFormat detect_tool_call_format(std::string_view t) {
  // LFM2 lists the tools between its own control tokens; LFM2.5 as plain "List of tools: [".
  if ((has(t, "<|tool_list_start|>") && has(t, "<|tool_list_end|>")) ||
      has(t, "List of tools: [")) {
    return ToolCallFormat::kLfm2;
  }
  // Most specific first: Qwen3-Coder's XML also sits in <tool_call> tags.
  if (has(t, "<function=") && has(t, "<parameter=")) return ToolCallFormat::kQwen3Coder;
  if (has(t, "<tool_call>")) return ToolCallFormat::kHermes;
  if (has(t, "[TOOL_CALLS]")) {
    return has(t, "[ARGS]") ? ToolCallFormat::kMistralArgs : ToolCallFormat::kMistral;
  }
  if (has(t, "<|channel|>") && has(t, "to=") && has(t, "functions.")) {
    return ToolCallFormat::kHarmony;
  }
  if (has(t, "<|start_header_id|>") && has(t, "\"parameters\": ")) return ToolCallFormat::kLlama3;
  return ToolCallFormat::kNone;
}

ParsedToolCalls parse_tool_calls(ToolCallFormat f, std::string_view text,
                                 const std::vector<ToolDefinition>& tools) {
  switch (f) {
    case ToolCallFormat::kHermes:
      return chat::parse_hermes(text);
    case ToolCallFormat::kQwen3Coder:
      return chat::parse_qwen3_coder(text, tools);
    case ToolCallFormat::kLlama3:
      return chat::parse_llama3(text);
    case ToolCallFormat::kMistral:
    case ToolCallFormat::kMistralArgs:
      return chat::parse_mistral(text);
    case ToolCallFormat::kHarmony:
      return chat::parse_harmony(text);
    case ToolCallFormat::kLfm2:
      return chat::parse_lfm2(text);
    case ToolCallFormat::kNone:
      break;
  }
  return {.content = std::string(text)};
}

size_t tool_call_safe_prefix(ToolCallFormat f, std::string_view text) {
  switch (f) {
    case ToolCallFormat::kHermes:
    case ToolCallFormat::kQwen3Coder:
      return chat::hermes_safe_prefix(text);
    case ToolCallFormat::kLlama3:
      return chat::llama3_safe_prefix(text);
    case ToolCallFormat::kMistral:
    case ToolCallFormat::kMistralArgs:
      return chat::mistral_safe_prefix(text);
    case ToolCallFormat::kHarmony:
      return chat::harmony_safe_prefix(text);
    case ToolCallFormat::kLfm2:
      return chat::lfm2_safe_prefix(text);
    case ToolCallFormat::kNone:
      break;
  }
  return text.size();
}

Result<std::string> forced_tool_call_grammar(ToolCallFormat f,
                                             const std::vector<ToolDefinition>& tools,
                                             bool parallel) {
  switch (f) {
    case ToolCallFormat::kHermes:
      return chat::hermes_grammar(tools, parallel);
    case ToolCallFormat::kQwen3Coder:
      return chat::qwen3_coder_grammar(tools, parallel);
    case ToolCallFormat::kLlama3:
      return chat::llama3_grammar(tools);
    case ToolCallFormat::kMistral:
      return chat::mistral_grammar(tools, parallel, false);
    case ToolCallFormat::kMistralArgs:
      return chat::mistral_grammar(tools, parallel, true);
    case ToolCallFormat::kHarmony:
      return chat::harmony_grammar(tools);
    case ToolCallFormat::kLfm2:
      return chat::lfm2_grammar(tools, parallel);
    case ToolCallFormat::kNone:
      break;
  }
  return make_error("tools: the chat template has no tool-call format to force a call in");
}

}  // namespace tova
