// gpt-oss's harmony format: an answer is a sequence of messages, each a header then a body:
//   [<|start|>assistant]<|channel|>CHANNEL[ to=RECIPIENT][ <|constrain|>TYPE]<|message|>BODY
// and a body ends at <|end|>, <|return|>, <|call|> or the next <|start|> / <|channel|> (a
// detokenizer that drops <|end|>, as llama.cpp's does, leaves the next header right after the
// body). The analysis channel is reasoning; final and commentary (a preamble to no one) are
// content; a message with a recipient (a tool call) goes to the content as written, header
// included. Text outside any message (a model that does not follow the format) is content.
#pragma once

#include <string>
#include <string_view>

#include "tova/reasoning.h"

namespace tova::chat {

class HarmonyParser {
 public:
  // The answer continues the prompt's last message: after `<|start|>assistant` (what the
  // template's generation prompt ends with) it starts in a header.
  explicit HarmonyParser(std::string_view prompt);
  TurnText push(std::string_view piece);
  TurnText finish();
  bool in_reasoning() const { return !in_header_ && dest_ == Dest::kReasoning; }

 private:
  enum class Dest { kReasoning, kContent, kVerbatim };
  void begin_body(std::string_view header);
  // header_ cannot be (the beginning of) a header: the model wrote text outside a message.
  bool not_a_header() const;
  void emit(TurnText& out, std::string_view text) const;

  bool in_header_ = true;
  Dest dest_ = Dest::kContent;
  std::string prompt_header_;  // the header the prompt began (`<|start|>assistant`)
  std::string header_;         // the header read so far, markers included (as written)
  std::string held_;           // body text that may begin a marker
};

}  // namespace tova::chat
