// Harness: chat templates (src/tokenizer/chat_template) on arbitrary bytes. The first byte picks
// what the rest is: a GGUF tokenizer.chat_template text to detect (and, if recognised, render a
// fixed conversation with), or a conversation (messages separated by NUL, each "role\ncontent")
// rendered by the family the second byte names. Errors must be one line; a rendering must
// contain every message's content it was given (up to surrounding whitespace) (a template never
// drops a message silently).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/chat_template.h"

namespace {

using tova::ChatMessage;
using tova::tok::ChatTemplate;

constexpr const char* kFamilies[] = {"chatml",  "qwen2.5", "qwen3",  "llama2", "llama3", "llama3.1",
                                     "mistral", "gemma",   "gemma3", "phi3",   "zephyr"};

void check_error(const std::string& message) {
  if (message.empty() || message.find('\n') != std::string::npos) __builtin_trap();
}

void render_and_check(const ChatTemplate& t, const std::vector<ChatMessage>& ms) {
  for (bool gen : {false, true}) {
    auto text = t.render(ms, gen);
    if (!text.ok()) {
      check_error(text.message());
      continue;
    }
    for (const ChatMessage& m : ms) {
      // Qwen3 drops the reasoning of earlier assistant turns by design; every other content
      // appears verbatim.
      if (t.family() == ChatTemplate::Family::kQwen3 && m.role == "assistant") continue;
      // Some families trim a message's surrounding whitespace (Llama-3's `| trim`).
      const size_t b = m.content.find_first_not_of(" \t\n\r\f\v");
      if (b == std::string::npos) continue;
      const size_t e = m.content.find_last_not_of(" \t\n\r\f\v");
      if (text->find(m.content.substr(b, e - b + 1)) == std::string::npos) __builtin_trap();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 2, size - 2);
  if (data[0] % 2 == 0) {
    auto t = ChatTemplate::detect(rest);
    if (!t.ok()) {
      check_error(t.message());
      return 0;
    }
    render_and_check(
        *t, {{"system", "Be brief."}, {"user", "Hi!"}, {"assistant", "Hello."}, {"user", "Bye."}});
    return 0;
  }
  auto t = ChatTemplate::by_name(kFamilies[data[1] % std::size(kFamilies)]);
  if (!t.ok()) __builtin_trap();  // every listed name exists
  std::vector<ChatMessage> ms;
  size_t start = 0;
  while (start <= rest.size() && ms.size() < 64) {
    size_t end = rest.find('\0', start);
    if (end == std::string_view::npos) end = rest.size();
    const std::string_view m = rest.substr(start, end - start);
    const size_t nl = m.find('\n');
    ms.push_back({std::string(m.substr(0, nl)),
                  nl == std::string_view::npos ? std::string() : std::string(m.substr(nl + 1))});
    start = end + 1;
  }
  render_and_check(*t, ms);
  return 0;
}
