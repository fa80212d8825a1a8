// Tokens -> the statement tree, with jinja2's grammar and operator precedence (the loopcontrols
// extension's break/continue included). A filter or test the renderer does not have is an error
// here, as jinja2 fails when it compiles such a template.
#pragma once

#include <vector>

#include "core/result.h"
#include "jinja/ast.h"
#include "jinja/lexer.h"

namespace tova::jinja {

// The deepest nesting of expressions and blocks a template may have (a hostile template must not
// exhaust the stack).
inline constexpr int kMaxParseDepth = 200;

Result<Body> parse(const std::vector<Token>& tokens);

}  // namespace tova::jinja
