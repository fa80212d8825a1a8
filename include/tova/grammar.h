// Constrained decoding: the grammars SamplerParams::grammar takes, written by hand in GBNF (as
// llama.cpp reads it: docs/GRAMMAR.md) or made from a JSON Schema.
#pragma once

#include <string>
#include <string_view>

#include "tova/result.h"

namespace tova {

// Checks a GBNF grammar; the error names the line, column and rule at fault.
Status check_grammar(std::string_view gbnf);

// The GBNF grammar of the JSON texts a JSON Schema (given as JSON text) accepts, for the
// subset docs/GRAMMAR.md lists: every text the grammar generates validates against the schema.
// A keyword outside the subset that would change what is valid is an error naming it and its
// place in the schema ("/properties/age: 'multipleOf' is not supported"), never ignored.
Result<std::string> json_schema_grammar(std::string_view schema);

// The grammar of any JSON object (OpenAI's response_format {"type": "json_object"}).
std::string json_object_grammar();

}  // namespace tova
