// Harness: the reasoning parsers (src/chat/think_parser, harmony_parser, reasoning.cpp:
// include/tova/reasoning.h) on arbitrary model output. Byte 0 picks the format (think, harmony,
// gemma4, none) and the prompt the answer follows (a plain generation prompt, one that opened a
// think block, a harmony header, Gemma 4's thought channel); byte 1 seeds how the text is cut
// into streamed pieces; the rest is the text. A parse never crashes; the streamed split (pieces
// of 1 to 8 bytes) equals the whole one; the parsers only take away (tags, the format's
// whitespace), never add; with no format everything is content.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "tova/reasoning.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tova::ReasoningFormat;
  using tova::TurnText;
  if (size < 2) return 0;
  static constexpr ReasoningFormat kFormats[] = {ReasoningFormat::kThink, ReasoningFormat::kHarmony,
                                                 ReasoningFormat::kGemma4, ReasoningFormat::kNone};
  static constexpr std::string_view kPrompts[] = {
      "<|im_start|>assistant\n", "<|im_start|>assistant\n<think>\n", "<|start|>assistant",
      "<start_of_turn>model\n<|channel>thought\n"};
  const ReasoningFormat f = kFormats[data[0] & 3];
  const std::string_view prompt = kPrompts[(data[0] >> 2) & 3];
  uint32_t cut = data[1];
  const std::string_view text(reinterpret_cast<const char*>(data) + 2, size - 2);

  const TurnText whole = tova::split_reasoning(f, prompt, text);
  tova::ReasoningParser p(f, prompt);
  TurnText streamed;
  for (size_t pos = 0; pos < text.size();) {
    cut = cut * 1103515245u + 12345u;
    const size_t n = std::min<size_t>(1 + (cut >> 16) % 8, text.size() - pos);
    const TurnText t = p.push(text.substr(pos, n));
    streamed.reasoning += t.reasoning;
    streamed.content += t.content;
    (void)p.in_reasoning();
    pos += n;
  }
  const TurnText rest = p.finish();
  streamed.reasoning += rest.reasoning;
  streamed.content += rest.content;
  if (streamed.reasoning != whole.reasoning || streamed.content != whole.content) {
    __builtin_trap();
  }
  if (whole.reasoning.size() + whole.content.size() > text.size()) __builtin_trap();
  if (f == ReasoningFormat::kNone && (whole.content != text || !whole.reasoning.empty())) {
    __builtin_trap();
  }
  return 0;
}
