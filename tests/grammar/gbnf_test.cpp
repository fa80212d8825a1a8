// The GBNF parser: grammars as llama.cpp writes them are read, and every kind of fault is an
// error naming its line, column and rule.
#include "grammar/gbnf.h"

#include <gtest/gtest.h>

#include <string>

#include "grammar/matcher.h"

namespace tova::grammar {
namespace {

// Whether `text` is a whole sentence of `gbnf`.
bool full_match(const std::string& gbnf, std::string_view text) {
  auto g = parse_gbnf(gbnf);
  EXPECT_TRUE(g.ok()) << g.message();
  if (!g.ok()) return false;
  Matcher m(std::make_shared<const Grammar>(std::move(*g)));
  return m.accept(text) && m.can_end();
}

std::string error_of(const std::string& gbnf) {
  auto g = parse_gbnf(gbnf);
  return g.ok() ? std::string("(parsed)") : g.message();
}

// llama.cpp's grammars/json.gbnf, as users write it (comments, multi-line groups).
const char* kJson = R"(# a JSON value
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
)";

TEST(Gbnf, ReadsLlamaCppJsonGrammar) {
  EXPECT_TRUE(full_match(kJson, R"({"a": [1, 2.5, "x\n"], "b": {"c": null}})"));
  EXPECT_TRUE(full_match(kJson, "{}"));
  EXPECT_FALSE(full_match(kJson, R"({"a": })"));
  EXPECT_FALSE(full_match(kJson, R"({"a": 1)"));  // a prefix, not a sentence
  EXPECT_FALSE(full_match(kJson, "[1]"));         // root is an object
}

TEST(Gbnf, Repetitions) {
  const std::string g = "root ::= \"a\"{2} \"b\"{1,3} \"c\"{2,} \"d\"* \"e\"+ \"f\"?\n";
  EXPECT_TRUE(full_match(g, "aabcce"));
  EXPECT_TRUE(full_match(g, "aabbbcccccdddeeef"));
  EXPECT_FALSE(full_match(g, "abcce"));      // one a
  EXPECT_FALSE(full_match(g, "aabbbbcce"));  // four b
  EXPECT_FALSE(full_match(g, "aabce"));      // one c
  EXPECT_FALSE(full_match(g, "aabcc"));      // no e
  EXPECT_FALSE(full_match(g, "aabcceff"));   // two f
  // A group repeated as one item; a literal repeated whole.
  EXPECT_TRUE(full_match("root ::= (\"x\" | \"yz\"){2,3}", "xyzx"));
  EXPECT_FALSE(full_match("root ::= (\"x\" | \"yz\"){2,3}", "x"));
  EXPECT_TRUE(full_match("root ::= \"ab\"+", "ababab"));
  EXPECT_FALSE(full_match("root ::= \"ab\"+", "aba"));
}

TEST(Gbnf, CharClassesAndEscapes) {
  const std::string g = R"(root ::= [a-cx] [^0-9] [\x41-\x43] "\u00e9" [\U0001F600-\U0001F64F] . "\t\"\\")";
  EXPECT_TRUE(full_match(g, "b!Bé\xF0\x9F\x98\x80Z\t\"\\"));
  EXPECT_FALSE(full_match(g, "d!Bé\xF0\x9F\x98\x80Z\t\"\\"));  // d not in [a-cx]
  EXPECT_FALSE(full_match(g, "b5Bé\xF0\x9F\x98\x80Z\t\"\\"));  // 5 in [^0-9]
  EXPECT_TRUE(full_match("root ::= [-a] [a-] [\\]\\[]", "-a]"));
  EXPECT_TRUE(full_match("root ::= [é-ë]+", "éêë"));
  EXPECT_FALSE(full_match("root ::= [é-ë]+", "è"));
}

TEST(Gbnf, RulesAnyOrderAndEmptyAlternatives) {
  const std::string g = "item ::= | \"x\"\nroot ::= item \"-\" item  # trailing comment\n";
  EXPECT_TRUE(full_match(g, "x-x"));
  EXPECT_TRUE(full_match(g, "-"));
  EXPECT_FALSE(full_match(g, "xx-"));
}

TEST(Gbnf, RightRecursionIsFine) {
  const std::string g = "root ::= \"(\" root \")\" | \"\"";
  EXPECT_TRUE(full_match(g, "((()))"));
  EXPECT_FALSE(full_match(g, "(()"));
}

TEST(Gbnf, ErrorsNameLineColumnAndRule) {
  EXPECT_EQ(error_of(""), "grammar: line 1, column 1: the grammar is empty (no rules)");
  EXPECT_EQ(error_of("  # only a comment\n"),
            "grammar: line 1, column 1: the grammar is empty (no rules)");
  EXPECT_EQ(error_of("item ::= \"a\""),
            "grammar: line 1, column 1: the grammar has no 'root' rule");
  EXPECT_EQ(error_of("root ::= a\n\nx ::= \"b\" y\n"),
            "grammar: line 1, column 10: undefined rule 'a' (in rule 'root')");
  EXPECT_EQ(error_of("root ::= \"a\"\nx ::= \"b\" yy\n"),
            "grammar: line 2, column 11: undefined rule 'yy' (in rule 'x')");
  EXPECT_EQ(error_of("root ::= \"a\\q\""),
            "grammar: line 1, column 12: unknown escape '\\q' (in rule 'root')");
  EXPECT_EQ(error_of("root ::= [\\x4]"),
            "grammar: line 1, column 11: bad escape: '\\x' needs 2 hex digits (in rule 'root')");
  EXPECT_EQ(error_of("root ::= \"abc"),
            "grammar: line 1, column 10: unterminated string literal (in rule 'root')");
  EXPECT_EQ(error_of("root ::= [ab"),
            "grammar: line 1, column 10: unterminated character class (in rule 'root')");
  EXPECT_EQ(error_of("root ::= (\"a\" | \"b\""),
            "grammar: line 1, column 20: expected ')' (in rule 'root')");
  EXPECT_EQ(error_of("root ::= \"a\"\nroot ::= \"b\""),
            "grammar: line 2, column 1: rule 'root' is defined twice (first at line 1, column "
            "1) (in rule 'root')");
  EXPECT_EQ(error_of("root ::= * \"a\""),
            "grammar: line 1, column 10: '*' follows nothing to repeat (in rule 'root')");
  EXPECT_EQ(error_of("root ::= \"a\"{3,1}"),
            "grammar: line 1, column 18: repetition {3,1} has max < min (in rule 'root')");
  EXPECT_EQ(error_of("root = \"a\""),
            "grammar: line 1, column 6: expected '::=' after the rule name (in rule 'root')");
  EXPECT_EQ(error_of("root ::= <|im_end|>"),
            "grammar: line 1, column 10: token references (<...>, !<...>) are not supported: "
            "write the text (in rule 'root')");
}

TEST(Gbnf, LeftRecursionIsRefused) {
  EXPECT_EQ(error_of("root ::= expr\nexpr ::= expr \"+\" term | term\nterm ::= [0-9]\n"),
            "grammar: line 2, column 1: rule 'expr' is left-recursive (expr -> expr)");
  // Through another rule, and through a nullable prefix.
  EXPECT_EQ(error_of("root ::= a\na ::= b \"x\"\nb ::= a | \"y\"\n"),
            "grammar: line 2, column 1: rule 'a' is left-recursive (a -> b -> a)");
  EXPECT_EQ(error_of("root ::= opt root \"x\" | \"y\"\nopt ::= \"z\"?\n"),
            "grammar: line 1, column 1: rule 'root' is left-recursive (root -> root)");
  // A repetition of something that may be empty would loop the same way.
  EXPECT_NE(error_of("root ::= (\"a\"?)*").find("left-recursive"), std::string::npos);
}

TEST(Gbnf, HugeRepetitionIsRefused) {
  EXPECT_NE(error_of("root ::= (\"a\"{10000}){10000}").find("too large"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"{100001}").find("repetition count above"), std::string::npos);
}

}  // namespace
}  // namespace tova::grammar
