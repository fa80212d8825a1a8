#include "hostile_output.h"

#include <array>
#include <string_view>

namespace tova::server {
namespace {

// splitmix64: a small, well-mixed generator; a piece is a pure function of its inputs.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Byte sequences that are not UTF-8 (or are, at its edges).
constexpr std::array<std::string_view, 14> kBytes = {"\xFF",
                                                     "\xFE\xFF",
                                                     "\x80",
                                                     "\xBF\x80",
                                                     "\xC3",
                                                     "\xE2\x82",
                                                     "\xF0\x9F\x98",
                                                     "\xED\xA0\x80",
                                                     "\xC0\xAF",
                                                     "\xF4\x90\x80\x80",
                                                     "\xF8\x88\x80\x80\x80",
                                                     "\xC3\xA9",
                                                     "\xF0\x9F\x98\x80",
                                                     std::string_view("\x00", 1)};

// Every marker a format reads (tool calls: Hermes, Qwen3-Coder, Llama 3, Mistral, harmony;
// reasoning: think, harmony, Gemma 4), and JSON's punctuation.
constexpr std::array<std::string_view, 33> kMarkers = {"<tool_call>",
                                                       "</tool_call>",
                                                       "<function=",
                                                       "</function>",
                                                       "<parameter=",
                                                       "</parameter>",
                                                       "<|python_tag|>",
                                                       "[TOOL_CALLS]",
                                                       "[ARGS]",
                                                       "[CALL_ID]",
                                                       "<|start|>",
                                                       "<|channel|>",
                                                       "<|message|>",
                                                       "<|end|>",
                                                       "<|call|>",
                                                       "<|return|>",
                                                       "<|constrain|>",
                                                       " to=functions.",
                                                       "commentary json",
                                                       "analysis",
                                                       "final",
                                                       "<think>",
                                                       "</think>",
                                                       "<|channel>thought\n",
                                                       "<channel|>",
                                                       "{",
                                                       "}",
                                                       "[",
                                                       "]",
                                                       "\"",
                                                       "\\",
                                                       ":",
                                                       ","};

// Whole turns that parse (or nearly): calls of each format with broken bytes in them.
constexpr std::array<std::string_view, 9> kTurns = {
    // The reproducer of issue 49: a Qwen3-Coder parameter value that is not UTF-8.
    "<tool_call>\n<function=f>\n<parameter=s>\n1\xFF\xFF\xFF\n</parameter>\n</function>\n"
    "</tool_call>",
    "<tool_call>\n{\"name\": \"f\xC3\", \"arguments\": {\"s\": \"\xFF\"}}\n</tool_call>",
    "{\"name\": \"f\", \"parameters\": {\"s\": \"\xE2\x82\"}}",
    "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"s\": \"\x80\"}, \"id\": \"\xFF\"}]",
    "[TOOL_CALLS]f[CALL_ID]\xFF[ARGS]{\"s\": \"\xED\xA0\x80\"}",
    "<|channel|>commentary to=functions.f\xFF<|message|>{\"s\": \"\xC0\xAF\"}<|call|>",
    "<think>\xF0\x9F\x98</think>\xFF",
    "<|channel|>analysis<|message|>\xFE<|end|><|start|>assistant<|channel|>final<|message|>\xC3",
    "<|channel>thought\n\xFF<channel|>\xE2\x82",
};

constexpr std::array<std::string_view, 6> kText = {"hello", " ", "\n", "f", "s", "x"};

}  // namespace

size_t hostile_turn_count() { return kTurns.size(); }

std::string hostile_piece(uint64_t seed, uint64_t stream, int64_t step) {
  if (step == 0) return std::string(kTurns[stream % kTurns.size()]);
  uint64_t r = mix(mix(seed ^ mix(stream)) + static_cast<uint64_t>(step));
  auto draw = [&r](uint64_t n) {
    r = mix(r);
    return static_cast<size_t>(r % n);
  };
  std::string out;
  const int parts = 1 + static_cast<int>(draw(3));
  for (int i = 0; i < parts; ++i) {
    const size_t kind = draw(100);
    if (kind < 30) {
      out += kBytes[draw(kBytes.size())];
    } else if (kind < 60) {
      const std::string_view m = kMarkers[draw(kMarkers.size())];
      // Half the time only its beginning: a marker cut where a piece ends.
      out += draw(2) == 0 ? m : m.substr(0, 1 + draw(m.size()));
    } else if (kind < 75) {
      out += kText[draw(kText.size())];
    } else if (kind < 85) {
      out += kTurns[draw(kTurns.size())];
    } else if (kind < 98) {
      // A few random bytes.
      for (size_t n = 1 + draw(6); n > 0; --n) out += static_cast<char>(draw(256));
    } else {
      // A huge argument: 4-64 KiB of one character, or of random bytes.
      const size_t n = size_t{4096} << draw(5);
      if (draw(2) == 0) {
        out.append(n, 'a');
      } else {
        for (size_t k = 0; k < n; ++k) out += static_cast<char>(draw(256));
      }
    }
  }
  return out;
}

}  // namespace tova::server
