// Reasoning in an assistant's answer: the text a thinking model writes before its answer, split
// from the answer as it streams. Three formats:
// - think: Qwen3, Qwen3.5, DeepSeek-R1, SmolLM3: `<think>...</think>` then the answer. A
//   template that opens the block in the prompt (the generation prompt ends with `<think>`)
//   makes the answer start inside it.
// - harmony: gpt-oss: messages `<|channel|>analysis<|message|>...<|end|>` then
//   `<|start|>assistant<|channel|>final<|message|>...<|return|>`. The analysis channel is
//   reasoning; final (and commentary addressed to no one) is content. A message addressed to a
//   recipient (`to=functions.NAME`, a tool call) is kept as the model wrote it, header and all,
//   in the content, for a tool-call parser to read.
// - gemma4: Gemma 4's thought channel, `<|channel>thought\n...<channel|>` then the answer (the
//   channel marks are control tokens). With thinking off the template writes an empty channel
//   at the end of the prompt, and the answer is content.
// The parser is fed pieces of generated text in order (a tag may be split over pieces: the
// bytes that may begin one are held back until it is known) and hands out what each piece
// adds to the reasoning and to the content.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tova {

enum class ReasoningFormat {
  kNone,     // everything is content
  kThink,    // <think>...</think>
  kHarmony,  // gpt-oss's channels
  kGemma4,   // <|channel>thought...<channel|>
};

// "none" | "think" | "harmony" | "gemma4"
std::string_view reasoning_format_name(ReasoningFormat f);
// The inverse; false for an unknown name.
bool parse_reasoning_format(std::string_view name, ReasoningFormat& out);
// The format a chat template's Jinja text writes: harmony if it writes `<|channel|>`, gemma4 if
// it writes `<|channel>thought`, think if it writes `</think>`, else none.
ReasoningFormat reasoning_format_of_template(std::string_view template_text);

// A piece of an assistant turn, split.
struct TurnText {
  std::string reasoning;
  std::string content;
  bool empty() const { return reasoning.empty() && content.empty(); }
};

class ReasoningParser {
 public:
  // `prompt`: the rendered prompt the answer follows (its end says where the answer starts:
  // inside a think block the template opened, or in a harmony message header).
  ReasoningParser(ReasoningFormat format, std::string_view prompt);
  ~ReasoningParser();
  ReasoningParser(ReasoningParser&&) noexcept;
  ReasoningParser& operator=(ReasoningParser&&) noexcept;

  ReasoningFormat format() const;
  // What `piece` (the next generated text) adds.
  TurnText push(std::string_view piece);
  // The end of the answer: what was held back (an unclosed block stays reasoning).
  TurnText finish();
  // Inside a reasoning block now (the web page and `tova chat` show it so).
  bool in_reasoning() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Control tokens whose text the format's parser reads (harmony's `<|channel|>`, ...): a
// generation renders them (GenerateOptions::render_special) instead of nothing.
std::vector<std::string> reasoning_special_texts(ReasoningFormat format);

// A whole answer at once.
TurnText split_reasoning(ReasoningFormat format, std::string_view prompt, std::string_view text);

}  // namespace tova
