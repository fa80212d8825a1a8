// The markers of OpenAI's harmony format (gpt-oss), written once for the reasoning parser
// (harmony_parser.cpp) and the tool-call parser (tool_calls/harmony.cpp):
//   <|start|>assistant<|channel|>analysis<|message|>...<|end|>
//   <|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>{...}<|call|>
#pragma once

#include <string_view>

namespace tova::chat::harmony {

inline constexpr std::string_view kStart = "<|start|>";
inline constexpr std::string_view kChannel = "<|channel|>";
inline constexpr std::string_view kMessage = "<|message|>";
inline constexpr std::string_view kEnd = "<|end|>";
inline constexpr std::string_view kReturn = "<|return|>";
inline constexpr std::string_view kCall = "<|call|>";

}  // namespace tova::chat::harmony
