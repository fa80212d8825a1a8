#include "chat/think_parser.h"

#include "chat/tag_scan.h"

namespace tova::chat {

bool ThinkParser::opens_in_prompt(std::string_view prompt, std::string_view open) {
  const std::string_view p = trim_right(prompt);
  return p.size() >= open.size() && p.substr(p.size() - open.size()) == open;
}

TurnText ThinkParser::push(std::string_view piece) {
  TurnText out;
  held_ += piece;
  for (;;) {
    if (inside_) {
      if (trim_lead_) {
        const size_t first = held_.size() - trim_left(held_).size();
        held_.erase(0, first);
        if (held_.empty()) return out;
        trim_lead_ = false;
      }
      const size_t close = held_.find(close_);
      if (close != std::string::npos) {
        out.reasoning += trim_right(std::string_view(held_).substr(0, close));
        held_.erase(0, close + close_.size());
        inside_ = false;
        trim_lead_ = true;
        continue;
      }
      // Held: what may begin the closing tag, and the whitespace before it (trimmed if it closes).
      size_t keep = tag_overlap(held_, close_);
      const std::string_view before = std::string_view(held_).substr(0, held_.size() - keep);
      keep += before.size() - trim_right(before).size();
      out.reasoning += std::string_view(held_).substr(0, held_.size() - keep);
      held_.erase(0, held_.size() - keep);
      return out;
    }
    if (at_start_) {
      // Leading whitespace is held until it is known whether a block opens after it.
      const std::string_view s = trim_left(held_);
      if (s.size() >= open_.size() && s.substr(0, open_.size()) == open_) {
        held_.erase(0, held_.size() - s.size() + open_.size());
        at_start_ = false;
        inside_ = true;
        trim_lead_ = true;
        continue;
      }
      if (open_.substr(0, s.size()) == s) return out;  // (s empty too: only whitespace so far)
      at_start_ = false;
      trim_lead_ = false;  // an answer without a block keeps its text as it is
    }
    if (trim_lead_) {
      const size_t first = held_.size() - trim_left(held_).size();
      held_.erase(0, first);
      if (held_.empty()) return out;
      trim_lead_ = false;
    }
    out.content += held_;
    held_.clear();
    return out;
  }
}

TurnText ThinkParser::finish() {
  TurnText out;
  if (inside_) {
    out.reasoning += trim_right(held_);
  } else if (!trim_lead_) {
    out.content += held_;
  } else if (at_start_) {
    out.content += held_;  // only whitespace, or the beginning of the opening tag and no more
  }
  held_.clear();
  at_start_ = false;
  return out;
}

}  // namespace tova::chat
