// Harness: JSON Schema to grammar (src/grammar/json_schema.cpp: response_format's schemas and
// tools' parameters) on arbitrary text. An error is non-empty; an accepted schema's grammar is
// one the GBNF parser accepts, with its root; a small one is run by the matcher over a few JSON
// probes (no crash, and accepts() agrees with accept()).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "tova/grammar.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto gbnf = tova::json_schema_grammar(text);
  if (!gbnf.ok()) {
    if (gbnf.message().empty()) __builtin_trap();
    return 0;
  }
  auto g = tova::grammar::parse_gbnf(*gbnf);
  if (!g.ok()) __builtin_trap();  // the schema's grammar must be one
  if (g->names[g->root] != "root") __builtin_trap();
  if (g->elems.size() > 2048) return 0;
  tova::grammar::Matcher m(std::make_shared<const tova::grammar::Grammar>(std::move(*g)));
  static const char* kProbes[] = {"{", "\"", "a", "1", " ", "}", "[", "true", ":", ",", "\xC3\xA9"};
  for (int step = 0; step < 24; ++step) {
    const char* p = kProbes[(step * 5 + size) % 11];
    const bool would = m.accepts(p);
    if (m.accept(p) != would) __builtin_trap();
  }
  (void)m.can_end();
  return 0;
}
