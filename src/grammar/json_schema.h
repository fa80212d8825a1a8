// JSON Schema -> GBNF (tova/grammar.h's json_schema_grammar): the schema is walked once,
// each subschema becoming a grammar expression (a rule when it is named by $ref or large). The
// grammar generates a subset of the texts the schema accepts (no whitespace beyond single
// spaces, properties in declared order, numbers without exponents when bounded, 1-16 digit
// integral parts), so every generated text validates.
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"

namespace tova::grammar {

Result<std::string> json_schema_to_gbnf(std::string_view schema_json);
// A JSON Schema regular expression (the subset: literals, . [] [^] \d \w \s and their
// negations, groups, |, * + ? {m,n}, ^ $ at the ends) as a GBNF expression for the *contents*
// of a JSON string (escaping what JSON escapes). `chars`: the rule name of one JSON string
// character (for unanchored ends). Errors name what is unsupported.
Result<std::string> regex_to_gbnf(std::string_view pattern, const std::string& chars);

}  // namespace tova::grammar
