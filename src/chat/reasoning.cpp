#include "tova/reasoning.h"

#include <variant>

#include "chat/harmony_parser.h"
#include "chat/think_parser.h"

namespace tova {

std::string_view reasoning_format_name(ReasoningFormat f) {
  switch (f) {
    case ReasoningFormat::kNone:
      return "none";
    case ReasoningFormat::kThink:
      return "think";
    case ReasoningFormat::kHarmony:
      return "harmony";
    case ReasoningFormat::kGemma4:
      return "gemma4";
  }
  return "none";
}

bool parse_reasoning_format(std::string_view name, ReasoningFormat& out) {
  for (ReasoningFormat f : {ReasoningFormat::kNone, ReasoningFormat::kThink,
                            ReasoningFormat::kHarmony, ReasoningFormat::kGemma4}) {
    if (name == reasoning_format_name(f)) {
      out = f;
      return true;
    }
  }
  return false;
}

ReasoningFormat reasoning_format_of_template(std::string_view template_text) {
  if (template_text.find("<|channel|>") != std::string_view::npos) return ReasoningFormat::kHarmony;
  if (template_text.find(chat::ThinkParser::kGemma4Open) != std::string_view::npos) {
    return ReasoningFormat::kGemma4;
  }
  if (template_text.find("</think>") != std::string_view::npos) return ReasoningFormat::kThink;
  return ReasoningFormat::kNone;
}

std::vector<std::string> reasoning_special_texts(ReasoningFormat format) {
  if (format == ReasoningFormat::kHarmony) {
    return {"<|start|>", "<|channel|>", "<|message|>", "<|constrain|>", "<|end|>"};
  }
  if (format == ReasoningFormat::kGemma4) return {"<|channel>", "<channel|>"};
  return {};
}

struct ReasoningParser::Impl {
  ReasoningFormat format;
  std::variant<std::monostate, chat::ThinkParser, chat::HarmonyParser> parser;
};

ReasoningParser::ReasoningParser(ReasoningFormat format, std::string_view prompt)
    : impl_(std::make_unique<Impl>()) {
  impl_->format = format;
  if (format == ReasoningFormat::kThink) {
    impl_->parser.emplace<chat::ThinkParser>(chat::ThinkParser::opens_in_prompt(prompt));
  } else if (format == ReasoningFormat::kHarmony) {
    impl_->parser.emplace<chat::HarmonyParser>(prompt);
  } else if (format == ReasoningFormat::kGemma4) {
    using chat::ThinkParser;
    impl_->parser.emplace<ThinkParser>(
        ThinkParser::opens_in_prompt(prompt, ThinkParser::kGemma4Open), ThinkParser::kGemma4Open,
        ThinkParser::kGemma4Close);
  }
}

ReasoningParser::~ReasoningParser() = default;
ReasoningParser::ReasoningParser(ReasoningParser&&) noexcept = default;
ReasoningParser& ReasoningParser::operator=(ReasoningParser&&) noexcept = default;

ReasoningFormat ReasoningParser::format() const { return impl_->format; }

TurnText ReasoningParser::push(std::string_view piece) {
  if (auto* t = std::get_if<chat::ThinkParser>(&impl_->parser)) return t->push(piece);
  if (auto* h = std::get_if<chat::HarmonyParser>(&impl_->parser)) return h->push(piece);
  return TurnText{.content = std::string(piece)};
}

TurnText ReasoningParser::finish() {
  if (auto* t = std::get_if<chat::ThinkParser>(&impl_->parser)) return t->finish();
  if (auto* h = std::get_if<chat::HarmonyParser>(&impl_->parser)) return h->finish();
  return {};
}

bool ReasoningParser::in_reasoning() const {
  if (auto* t = std::get_if<chat::ThinkParser>(&impl_->parser)) return t->in_reasoning();
  if (auto* h = std::get_if<chat::HarmonyParser>(&impl_->parser)) return h->in_reasoning();
  return false;
}

TurnText split_reasoning(ReasoningFormat format, std::string_view prompt, std::string_view text) {
  ReasoningParser p(format, prompt);
  TurnText out = p.push(text);
  TurnText last = p.finish();
  out.reasoning += last.reasoning;
  out.content += last.content;
  return out;
}

}  // namespace tova
