// gpt-oss (harmony) calls: a message to the recipient functions.NAME on the commentary channel,
//   <|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{...}<|call|>
// or with the recipient after the channel (<|channel|>commentary to=functions.NAME ...). The
// generation prompt ends in "<|start|>assistant", so the first message of a reply has no
// <|start|>. Every other message (analysis, final) stays content as written, for the reasoning
// parser to take apart.
#include "chat/harmony_markers.h"
#include "chat/tool_calls/common.h"

namespace tova::chat {
namespace {

constexpr std::string_view kTo = "to=functions.";
using harmony::kCall;
using harmony::kEnd;
using harmony::kMessage;
using harmony::kStart;

// Where the message holding text[at] begins: after the previous message's end.
size_t message_begin(std::string_view text, size_t at) {
  size_t b = 0;
  for (std::string_view m : {kEnd, kCall}) {
    const size_t e = text.rfind(m, at);
    if (e != std::string_view::npos) b = std::max(b, e + m.size());
  }
  const size_t s = text.rfind(kStart, at);
  if (s != std::string_view::npos && s >= b) b = s;
  return b;
}

}  // namespace

ParsedToolCalls parse_harmony(std::string_view text) {
  ParsedToolCalls out;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t to = text.find(kTo, pos);
    if (to == std::string_view::npos) break;
    const size_t begin = std::max(pos, message_begin(text, to));
    const size_t name_start = to + kTo.size();
    size_t name_end = name_start;
    while (name_end < text.size() && text[name_end] != ' ' && text[name_end] != '<' &&
           text[name_end] != '\n') {
      ++name_end;
    }
    const size_t msg = text.find(kMessage, name_end);
    const size_t next_to = text.find(kTo, name_end);
    ToolCall call{.name = valid_utf8(text.substr(name_start, name_end - name_start))};
    bool ok = !call.name.empty() && msg != std::string_view::npos &&
              (next_to == std::string_view::npos || msg < next_to);
    size_t stop = text.size();
    if (ok) {
      const size_t body = msg + kMessage.size();
      const size_t end = json_end(text, body);
      const auto args = end == std::string_view::npos ? std::nullopt
                                                      : parse_object(text.substr(body, end - body));
      ok = args.has_value();
      if (ok) {
        call.arguments = json_text(*args);
        stop = end;
        for (std::string_view m : {kCall, kEnd}) {
          if (text.substr(stop).starts_with(m)) {
            stop += m.size();
            break;
          }
        }
      }
    }
    if (!ok) {
      out.content += text.substr(pos, name_start - pos);
      pos = name_start;
      continue;
    }
    out.content += text.substr(pos, begin - pos);
    out.calls.push_back(std::move(call));
    pos = stop;
  }
  out.content += text.substr(std::min(pos, text.size()));
  return out;
}

size_t harmony_safe_prefix(std::string_view text) {
  // Everything before the message that holds a call's recipient is content (other channels'
  // messages, for the reasoning parser); a message whose header is still being written may yet
  // name one; in a message's body, only a half-written marker at the end is held back.
  const size_t to = text.find(kTo);
  if (to != std::string_view::npos) return message_begin(text, to);
  const size_t b = message_begin(text, text.size());
  if (text.find(kMessage, b) == std::string_view::npos) return b;
  const size_t open = text.rfind("<|");
  if (open != std::string_view::npos && text.find("|>", open + 2) == std::string_view::npos) {
    return open;
  }
  return text.ends_with('<') ? text.size() - 1 : text.size();
}

Result<std::string> harmony_grammar(const std::vector<ToolDefinition>& tools) {
  // One call: a harmony turn ends at <|call|>.
  return calls_grammar(tools, false, "", "", "", [&](size_t i, const std::string& args) {
    return gbnf_literal(" to=functions." + tools[i].name +
                        "<|channel|>commentary json<|message|>") +
           " " + args + " " + gbnf_literal("<|call|>");
  });
}

}  // namespace tova::chat
