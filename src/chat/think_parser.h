// The think format (Qwen3, Qwen3.5, DeepSeek-R1, SmolLM3): an answer that begins with
// `<think>` (after whitespace), or whose prompt ended with `<think>`, is reasoning up to
// `</think>`; what follows is content. Whitespace around the reasoning and before the content is
// the format's, not the text's: it is dropped (as llama-server does). A `<think>` later in the
// content is content.
#pragma once

#include <string>
#include <string_view>

#include "tova/reasoning.h"

namespace tova::chat {

class ThinkParser {
 public:
  static constexpr std::string_view kOpen = "<think>";
  static constexpr std::string_view kClose = "</think>";

  // Whether the answer after `prompt` starts inside a block: the prompt ends with `<think>`.
  static bool opens_in_prompt(std::string_view prompt);

  explicit ThinkParser(bool inside) : inside_(inside), at_start_(!inside) {}
  TurnText push(std::string_view piece);
  TurnText finish();
  bool in_reasoning() const { return inside_; }

 private:
  bool inside_;
  bool at_start_;          // no content yet: a `<think>` here opens a block
  bool trim_lead_ = true;  // whitespace at the start of this section is dropped
  std::string held_;       // not handed out yet: may begin a tag, or whitespace that may be trimmed
};

}  // namespace tova::chat
