// Template text -> tokens, with jinja2's whitespace rules: `-` on either side of a tag strips the
// whitespace next to it, trim_blocks drops the first newline after a block or comment tag,
// lstrip_blocks drops the spaces and tabs before a block or comment tag that starts a line
// (`+` turns either off for one tag), newlines are normalised to "\n" and one trailing newline of
// the template is dropped (jinja2's keep_trailing_newline=False).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace tova::jinja {

struct Token {
  enum class Kind {
    kData,        // template text, whitespace control applied
    kVarBegin,    // {{
    kVarEnd,      // }}
    kBlockBegin,  // {%
    kBlockEnd,    // %}
    kName,
    kString,  // text: the unescaped value
    kInt,
    kFloat,
    kOp,  // text: the operator ("+", "//", "(", ...)
    kEnd,
  };
  Kind kind;
  std::string text;
  int line = 1;
  int column = 1;
};

struct LexOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
};

// Errors name the line and column ("line 3, column 7: unterminated string").
Result<std::vector<Token>> tokenize(std::string_view source, const LexOptions& options);

}  // namespace tova::jinja
