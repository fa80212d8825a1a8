// A reasoning block between two tags: the think format (Qwen3, Qwen3.5, DeepSeek-R1, SmolLM3:
// `<think>` ... `</think>`) and Gemma 4's thought channel (`<|channel>thought` ... `<channel|>`).
// An answer that begins with the opening tag (after whitespace), or whose prompt ended with it,
// is reasoning up to the closing tag; what follows is content. Whitespace around the reasoning
// and before the content is the format's, not the text's: it is dropped (as llama-server does).
// An opening tag later in the content is content.
#pragma once

#include <string>
#include <string_view>

#include "tova/reasoning.h"

namespace tova::chat {

class ThinkParser {
 public:
  static constexpr std::string_view kOpen = "<think>";
  static constexpr std::string_view kClose = "</think>";
  // Gemma 4: the channel tokens and the channel's name.
  static constexpr std::string_view kGemma4Open = "<|channel>thought";
  static constexpr std::string_view kGemma4Close = "<channel|>";

  // Whether the answer after `prompt` starts inside a block: the prompt ends with `open`
  // (whitespace after it aside).
  static bool opens_in_prompt(std::string_view prompt, std::string_view open = kOpen);

  // `open` and `close` must outlive the parser (the constants above do).
  ThinkParser(bool inside, std::string_view open = kOpen, std::string_view close = kClose)
      : open_(open), close_(close), inside_(inside), at_start_(!inside) {}
  TurnText push(std::string_view piece);
  TurnText finish();
  bool in_reasoning() const { return inside_; }

 private:
  std::string_view open_;
  std::string_view close_;
  bool inside_;
  bool at_start_;          // no content yet: a `<think>` here opens a block
  bool trim_lead_ = true;  // whitespace at the start of this section is dropped
  std::string held_;       // not handed out yet: may begin a tag, or whitespace that may be trimmed
};

}  // namespace tova::chat
