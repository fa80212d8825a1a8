// GBNF, the grammar notation of llama.cpp (its grammars/README.md), read into a Grammar:
//   name ::= alternatives       (a rule; `root` is where matching starts)
//   "literal" [a-z0-9_] [^"\\] . (terminals; escapes \n \r \t \\ \" \[ \] \- \xHH \uHHHH
//                                 \UHHHHHHHH)
//   a b | c    ( ... )          (sequence, alternation, grouping)
//   x* x+ x? x{m} x{m,} x{m,n}  (repetition)
//   # comment to the end of the line
// Newlines end a rule except inside parentheses and after `::=` or `|`. Errors name the line,
// the column and the rule: syntax, bad escapes, undefined or twice-defined rules, a missing
// root, left recursion (which a top-down matcher cannot run).
#pragma once

#include <string_view>

#include "core/result.h"
#include "grammar/grammar.h"

namespace tova::grammar {

Result<Grammar> parse_gbnf(std::string_view text);

// The same grammar with every rule renamed PREFIX+name (root too), so that grammars made apart
// (one JSON Schema per tool) can live in one text without their rules colliding. An error for
// a grammar that does not parse.
Result<std::string> prefix_gbnf_rules(std::string_view gbnf, std::string_view prefix);

}  // namespace tova::grammar
