#include "chat/harmony_parser.h"

#include "chat/harmony_markers.h"
#include "chat/tag_scan.h"

namespace tova::chat {
namespace {

using harmony::kCall;
using harmony::kChannel;
using harmony::kEnd;
using harmony::kMessage;
using harmony::kReturn;
using harmony::kStart;
// What a header the model writes begins with (a recipient may follow the prompt's role).
constexpr std::string_view kRecipient = " to=";

// A header that never reaches <|message|> is not one: past this many bytes it is content.
constexpr size_t kMaxHeader = 512;

bool starts_compatible(std::string_view text, std::string_view marker) {
  const size_t n = std::min(text.size(), marker.size());
  return text.substr(0, n) == marker.substr(0, n);
}

}  // namespace

HarmonyParser::HarmonyParser(std::string_view prompt) {
  // The prompt's last message: its header, and whether its body has begun.
  const size_t start = prompt.rfind(kStart);
  if (start == std::string_view::npos) return;
  const std::string_view tail = prompt.substr(start);
  const size_t message = tail.find(kMessage);
  if (message == std::string_view::npos) {
    prompt_header_ = tail;
    return;
  }
  if (tail.find(kEnd) != std::string_view::npos || tail.find(kReturn) != std::string_view::npos) {
    return;  // a closed message: the answer starts with a header of its own
  }
  begin_body(tail.substr(0, message));
}

bool HarmonyParser::not_a_header() const {
  if (header_.empty()) return false;
  for (std::string_view m : {kChannel, kStart, kRecipient}) {
    if (starts_compatible(header_, m)) return false;
  }
  return true;
}

void HarmonyParser::begin_body(std::string_view header) {
  in_header_ = false;
  const size_t channel = header.rfind(kChannel);
  std::string_view name;
  if (channel != std::string_view::npos) {
    name = header.substr(channel + kChannel.size());
    name = name.substr(0, std::min(name.find(' '), name.find("<|")));
  }
  if (header.find("to=") != std::string_view::npos) {
    dest_ = Dest::kVerbatim;
  } else if (name == "analysis") {
    dest_ = Dest::kReasoning;
  } else {
    dest_ = Dest::kContent;
  }
}

void HarmonyParser::emit(TurnText& out, std::string_view text) const {
  (dest_ == Dest::kReasoning ? out.reasoning : out.content) += text;
}

TurnText HarmonyParser::push(std::string_view piece) {
  TurnText out;
  if (in_header_) {
    header_ += piece;
  } else {
    held_ += piece;
  }
  for (;;) {
    if (in_header_) {
      const size_t m = header_.find(kMessage);
      // Decided the same way whatever pieces the text came in (a streamed answer must equal the
      // whole one; fuzz_reasoning checks it): a header starts like one, and its <|message|>
      // starts within kMaxHeader bytes.
      const bool too_long =
          m == std::string::npos ? header_.size() >= kMaxHeader + kMessage.size() : m > kMaxHeader;
      if (m == std::string::npos && !not_a_header() && !too_long) return out;
      if (not_a_header() || too_long) {
        // Text outside any message: content.
        in_header_ = false;
        dest_ = Dest::kContent;
        prompt_header_.clear();
        // The marker that began it is text too: scanning from it would begin the same header
        // again (and loop for ever).
        size_t skip = 0;
        for (std::string_view mk : {kStart, kChannel}) {
          if (std::string_view(header_).starts_with(mk)) skip = mk.size();
        }
        out.content += header_.substr(0, skip);
        held_ = header_.substr(skip);
        header_.clear();
        continue;
      }
      const std::string header = header_.substr(0, m);
      held_ = header_.substr(m + kMessage.size());
      header_.clear();
      begin_body(prompt_header_ + header);
      prompt_header_.clear();
      if (dest_ == Dest::kVerbatim) out.content += header + std::string(kMessage);
      continue;
    }
    // The first marker that ends the body.
    size_t at = std::string::npos;
    std::string_view marker;
    for (std::string_view mk : {kEnd, kReturn, kCall, kStart, kChannel}) {
      const size_t p = held_.find(mk);
      if (p < at) {
        at = p;
        marker = mk;
      }
    }
    if (at == std::string::npos) {
      const size_t keep = tag_overlap(held_, {kEnd, kReturn, kCall, kStart, kChannel});
      emit(out, std::string_view(held_).substr(0, held_.size() - keep));
      held_.erase(0, held_.size() - keep);
      return out;
    }
    emit(out, std::string_view(held_).substr(0, at));
    // A next header begins at <|start|> or <|channel|> (kept: it is part of the header); after
    // an end marker, the next <|start|> begins it.
    const bool opens = marker == kStart || marker == kChannel;
    // A marker that opens a header is written with that header (when it is kept verbatim, or
    // is no header), not here too.
    if (dest_ == Dest::kVerbatim && !opens) out.content += marker;
    header_ = (opens ? std::string(marker) : std::string()) + held_.substr(at + marker.size());
    held_.clear();
    in_header_ = true;
  }
}

TurnText HarmonyParser::finish() {
  TurnText out;
  if (in_header_) {
    // A header the answer ended in is markup, not text; text that never became a header is.
    if (not_a_header()) out.content += header_;
  } else {
    emit(out, held_);
  }
  header_.clear();
  held_.clear();
  return out;
}

}  // namespace tova::chat
