// Harness: the GBNF parser (src/grammar/gbnf.cpp) on arbitrary text. An error is one line; a
// grammar it accepts has a root, and every reference names a rule; it is then run by the
// matcher over a few bytes (no crash, accepts() agrees with accept(), the readings stay under
// the matcher's cap).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "grammar/gbnf.h"
#include "grammar/matcher.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto g = tova::grammar::parse_gbnf(text);
  if (!g.ok()) {
    if (g.message().find('\n') != std::string::npos) __builtin_trap();  // one-line errors
    return 0;
  }
  const tova::grammar::Grammar& gr = *g;
  if (gr.root >= static_cast<uint32_t>(gr.n_rule()) || gr.names[gr.root] != "root") {
    __builtin_trap();
  }
  for (const auto& e : gr.elems) {
    if (e.kind == tova::grammar::ElemKind::kRef && e.value >= static_cast<uint32_t>(gr.n_rule())) {
      __builtin_trap();
    }
    if (e.kind == tova::grammar::ElemKind::kChars && e.value >= gr.classes.size()) {
      __builtin_trap();
    }
  }
  // Any grammar: the matcher's work per byte is bounded whatever the grammar (hash-consed
  // stacks, at most Matcher::kMaxStacks readings; finding 15), so a slow input is a finding.
  tova::grammar::Matcher m(std::make_shared<const tova::grammar::Grammar>(std::move(*g)));
  static const char* kProbes[] = {"a", "{\"", "0", " ", "\xC3\xA9", "\xE2\x82", "]", "\"\\n"};
  for (int step = 0; step < 16; ++step) {
    const char* p = kProbes[(step * 7 + size) % 8];
    const bool would = m.accepts(p);
    if (m.accept(p) != would) __builtin_trap();
    if (m.state().stacks.size() > tova::grammar::Matcher::kMaxStacks) __builtin_trap();
  }
  if (m.error().find('\n') != std::string::npos) __builtin_trap();  // one-line errors
  (void)m.can_end();
  return 0;
}
