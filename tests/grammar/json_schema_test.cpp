// JSON Schema -> GBNF, keyword by keyword: texts the grammar must accept (valid and in the
// generated subset) and texts it must refuse (invalid), and the errors for what is not
// supported.
#include "grammar/json_schema.h"

#include <gtest/gtest.h>

#include <string>

#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "tova/grammar.h"

namespace tova::grammar {
namespace {

bool accepts(const std::string& schema, std::string_view text) {
  auto gbnf = json_schema_to_gbnf(schema);
  EXPECT_TRUE(gbnf.ok()) << gbnf.message();
  if (!gbnf.ok()) return false;
  auto g = parse_gbnf(*gbnf);
  EXPECT_TRUE(g.ok()) << g.message() << "\n" << *gbnf;
  if (!g.ok()) return false;
  Matcher m(std::make_shared<const Grammar>(std::move(*g)));
  return m.accept(text) && m.can_end();
}

std::string schema_error_of(const std::string& schema) {
  auto gbnf = json_schema_to_gbnf(schema);
  return gbnf.ok() ? "(converted)" : gbnf.message();
}

TEST(JsonSchema, Types) {
  EXPECT_TRUE(accepts(R"({"type": "string"})", R"("hé\"llo\n")"));
  EXPECT_FALSE(accepts(R"({"type": "string"})", "\"a\nb\""));  // raw control character
  EXPECT_TRUE(accepts(R"({"type": "number"})", "-12.5e3"));
  EXPECT_FALSE(accepts(R"({"type": "number"})", "012"));
  EXPECT_TRUE(accepts(R"({"type": "integer"})", "-42"));
  EXPECT_FALSE(accepts(R"({"type": "integer"})", "4.2"));
  EXPECT_TRUE(accepts(R"({"type": "boolean"})", "false"));
  EXPECT_TRUE(accepts(R"({"type": "null"})", "null"));
  EXPECT_FALSE(accepts(R"({"type": "null"})", "nul"));
  EXPECT_TRUE(accepts(R"({"type": ["string", "null"]})", "null"));
  EXPECT_TRUE(accepts(R"({"type": ["string", "null"]})", R"("x")"));
  EXPECT_FALSE(accepts(R"({"type": ["string", "null"]})", "1"));
  EXPECT_TRUE(accepts(R"({})", R"([1, {"a": "b"}, null])"));
  EXPECT_TRUE(accepts("true", R"({"x": [true]})"));
}

TEST(JsonSchema, ObjectPropertiesRequired) {
  const std::string s = R"({"type": "object", "properties": {"name": {"type": "string"},
      "age": {"type": "integer"}, "tag": {"type": "string"}}, "required": ["age"]})";
  EXPECT_TRUE(accepts(s, R"({"age": 3})"));
  EXPECT_TRUE(accepts(s, R"({"name": "x", "age": 3, "tag": "t"})"));
  EXPECT_TRUE(accepts(s, R"({"name": "x", "age": 3})"));
  EXPECT_TRUE(accepts(s, R"({ "age": 3,"tag": "t" })"));
  EXPECT_FALSE(accepts(s, R"({"name": "x"})"));          // age is required
  EXPECT_FALSE(accepts(s, R"({"age": "3"})"));           // wrong type
  EXPECT_FALSE(accepts(s, R"({"age": 3, "other": 1})"));  // undeclared (not generated)
  EXPECT_FALSE(accepts(s, R"({"age": 3,})"));
  // All optional: any subset in order, commas right.
  const std::string o = R"({"properties": {"a": {"const": 1}, "b": {"const": 2}}})";
  for (const char* t : {"{}", R"({"a": 1})", R"({"b": 2})", R"({"a": 1, "b": 2})"}) {
    EXPECT_TRUE(accepts(o, t)) << t;
  }
  EXPECT_FALSE(accepts(o, R"({, "b": 2})"));
  EXPECT_FALSE(accepts(o, R"({"a": 1 "b": 2})"));
}

TEST(JsonSchema, AdditionalProperties) {
  const std::string closed = R"({"properties": {"a": {"type": "integer"}},
                                 "additionalProperties": false})";
  EXPECT_TRUE(accepts(closed, R"({"a": 1})"));
  EXPECT_FALSE(accepts(closed, R"({"a": 1, "b": 2})"));
  const std::string typed = R"({"properties": {"a": {"type": "integer"}},
                                "additionalProperties": {"type": "string"}})";
  EXPECT_TRUE(accepts(typed, R"({"a": 1, "b": "x", "cc": "y"})"));
  EXPECT_TRUE(accepts(typed, R"({"ab": "x"})"));
  EXPECT_FALSE(accepts(typed, R"({"b": 2})"));       // extra values are strings
  EXPECT_FALSE(accepts(typed, R"({"a": 1, "a": "x"})"));  // a declared name is not "extra"
  const std::string map = R"({"type": "object", "additionalProperties": {"type": "boolean"}})";
  EXPECT_TRUE(accepts(map, R"({"x": true, "y": false})"));
  EXPECT_TRUE(accepts(map, "{}"));
  EXPECT_FALSE(accepts(map, R"({"x": 1})"));
}

TEST(JsonSchema, EnumConst) {
  const std::string s = R"({"enum": ["red", 3, null, {"k": [1]}]})";
  EXPECT_TRUE(accepts(s, R"("red")"));
  EXPECT_TRUE(accepts(s, "3"));
  EXPECT_TRUE(accepts(s, "null"));
  EXPECT_TRUE(accepts(s, R"({"k":[1]})"));
  EXPECT_FALSE(accepts(s, R"("blue")"));
  EXPECT_TRUE(accepts(R"({"const": "only \"this\""})", R"("only \"this\"")"));
  EXPECT_FALSE(accepts(R"({"const": "only"})", R"("other")"));
}

TEST(JsonSchema, Arrays) {
  const std::string s = R"({"type": "array", "items": {"type": "integer"}, "minItems": 2,
                            "maxItems": 3})";
  EXPECT_TRUE(accepts(s, "[1, 2]"));
  EXPECT_TRUE(accepts(s, "[1,2,3]"));
  EXPECT_FALSE(accepts(s, "[1]"));
  EXPECT_FALSE(accepts(s, "[1, 2, 3, 4]"));
  EXPECT_FALSE(accepts(s, "[1, \"2\"]"));
  EXPECT_TRUE(accepts(R"({"type": "array"})", "[]"));
  EXPECT_TRUE(accepts(R"({"type": "array", "maxItems": 0})", "[]"));
  EXPECT_FALSE(accepts(R"({"type": "array", "maxItems": 0})", "[1]"));
  const std::string t = R"({"prefixItems": [{"type": "string"}, {"type": "integer"}],
                            "items": false})";
  EXPECT_TRUE(accepts(t, R"(["a", 1])"));
  EXPECT_FALSE(accepts(t, R"(["a", 1, 2])"));
  EXPECT_FALSE(accepts(t, R"([1, "a"])"));
  const std::string u = R"({"prefixItems": [{"const": 0}], "items": {"type": "boolean"},
                            "maxItems": 3})";
  EXPECT_TRUE(accepts(u, "[0, true, false]"));
  EXPECT_FALSE(accepts(u, "[0, true, false, true]"));
}

TEST(JsonSchema, AnyOfOneOfAllOf) {
  const std::string any = R"({"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 1}]})";
  EXPECT_TRUE(accepts(any, "5"));
  EXPECT_TRUE(accepts(any, R"("x")"));
  EXPECT_FALSE(accepts(any, R"("xy")"));
  const std::string one = R"({"oneOf": [
      {"properties": {"kind": {"const": "a"}, "x": {"type": "integer"}}, "required": ["kind"]},
      {"properties": {"kind": {"const": "b"}}, "required": ["kind"]}]})";
  EXPECT_TRUE(accepts(one, R"({"kind": "a", "x": 1})"));
  EXPECT_TRUE(accepts(one, R"({"kind": "b"})"));
  EXPECT_FALSE(accepts(one, R"({"kind": "c"})"));
  EXPECT_NE(schema_error_of(R"({"oneOf": [{"type": "number"}, {"type": "integer"}]})")
                .find("'oneOf' branches 0 and 1 may both match"),
            std::string::npos);
  const std::string all = R"({"$defs": {"base": {"properties": {"id": {"type": "integer"}},
      "required": ["id"]}}, "allOf": [{"$ref": "#/$defs/base"},
      {"properties": {"name": {"type": "string"}}, "required": ["name"]}]})";
  EXPECT_TRUE(accepts(all, R"({"id": 1, "name": "n"})"));
  EXPECT_FALSE(accepts(all, R"({"id": 1})"));
  EXPECT_NE(schema_error_of(R"({"allOf": [{"type": "string"}, {"type": "integer"}]})")
                .find("'allOf' parts disagree on 'type'"),
            std::string::npos);
}

TEST(JsonSchema, Refs) {
  const std::string s = R"({"$defs": {"node": {"type": "object", "properties": {
      "v": {"type": "integer"}, "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}},
      "required": ["v", "next"]}}, "$ref": "#/$defs/node"})";
  EXPECT_TRUE(accepts(s, R"({"v": 1, "next": {"v": 2, "next": null}})"));
  EXPECT_FALSE(accepts(s, R"({"v": 1, "next": {"v": 2}})"));
  EXPECT_TRUE(accepts(R"({"definitions": {"x": {"type": "boolean"}}, "items": {"$ref": "#/definitions/x"}})",
                      "[true]"));
  EXPECT_EQ(schema_error_of(R"({"$ref": "#/$defs/missing"})"),
            "json_schema: /$ref: '$ref' '#/$defs/missing' does not resolve");
  EXPECT_EQ(schema_error_of(R"({"$ref": "http://example.com/s.json"})"),
            "json_schema: /$ref: '$ref' 'http://example.com/s.json' is not local (only #/...)");
  EXPECT_NE(schema_error_of(R"({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"})")
                .find("left-recursive"),
            std::string::npos);
}

TEST(JsonSchema, StringLengthsPatternFormats) {
  const std::string len = R"({"type": "string", "minLength": 2, "maxLength": 3})";
  EXPECT_TRUE(accepts(len, R"("ab")"));
  EXPECT_TRUE(accepts(len, R"("aé\n")"));  // three characters (an escape is one)
  EXPECT_FALSE(accepts(len, R"("a")"));
  EXPECT_FALSE(accepts(len, R"("abcd")"));
  const std::string pat = R"({"type": "string", "pattern": "^[A-Z]{2}-\\d{3}(x|yz)?$"})";
  EXPECT_TRUE(accepts(pat, R"("AB-123")"));
  EXPECT_TRUE(accepts(pat, R"("AB-123yz")"));
  EXPECT_FALSE(accepts(pat, R"("AB-12")"));
  EXPECT_FALSE(accepts(pat, R"("ab-123")"));
  // Unanchored: anything around a match.
  EXPECT_TRUE(accepts(R"({"pattern": "o+k"})", R"("xxookyy")"));
  EXPECT_FALSE(accepts(R"({"pattern": "o+k"})", R"("xxkyy")"));
  EXPECT_TRUE(accepts(R"({"pattern": "^a\\.b\"$"})", R"("a.b\"")"));
  EXPECT_NE(schema_error_of(R"j({"pattern": "^(?=a)"})j").find("lookarounds"), std::string::npos);
  EXPECT_NE(schema_error_of(R"j({"pattern": "(a)\\1"})j").find("back-references"), std::string::npos);
  EXPECT_TRUE(accepts(R"({"format": "date"})", R"("2024-02-28")"));
  EXPECT_FALSE(accepts(R"({"format": "date"})", R"("2024-02-30")"));
  EXPECT_FALSE(accepts(R"({"format": "date"})", R"("2024-13-01")"));
  EXPECT_TRUE(accepts(R"({"format": "time"})", R"("23:59:07Z")"));
  EXPECT_TRUE(accepts(R"({"format": "date-time"})", R"("2024-12-31T08:00:00.5+02:00")"));
  EXPECT_FALSE(accepts(R"({"format": "date-time"})", R"("2024-12-31 08:00:00Z")"));
  EXPECT_TRUE(accepts(R"({"format": "uuid"})", R"("123e4567-e89b-12d3-a456-426614174000")"));
  EXPECT_FALSE(accepts(R"({"format": "uuid"})", R"("123e4567e89b12d3a456426614174000")"));
  EXPECT_EQ(schema_error_of(R"({"format": "email"})"),
            "json_schema: /: format 'email' is not supported (date, time, date-time, uuid)");
}

TEST(JsonSchema, NumberBounds) {
  const std::string i = R"({"type": "integer", "minimum": -15, "maximum": 120})";
  for (const char* t : {"-15", "-9", "0", "7", "99", "100", "120"}) EXPECT_TRUE(accepts(i, t)) << t;
  for (const char* t : {"-16", "-20", "121", "200", "1000"}) EXPECT_FALSE(accepts(i, t)) << t;
  const std::string e = R"({"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10})";
  EXPECT_TRUE(accepts(e, "1"));
  EXPECT_TRUE(accepts(e, "9"));
  EXPECT_FALSE(accepts(e, "0"));
  EXPECT_FALSE(accepts(e, "10"));
  const std::string lo = R"({"type": "integer", "minimum": 37})";
  EXPECT_TRUE(accepts(lo, "37"));
  EXPECT_TRUE(accepts(lo, "123456"));
  EXPECT_FALSE(accepts(lo, "36"));
  EXPECT_FALSE(accepts(lo, "-40"));
  const std::string n = R"({"type": "number", "minimum": -2, "maximum": 3})";
  for (const char* t : {"-2", "-1.5", "-0.25", "0", "2.999", "3"}) EXPECT_TRUE(accepts(n, t)) << t;
  for (const char* t : {"-2.5", "3.5", "4", "-3"}) EXPECT_FALSE(accepts(n, t)) << t;
  EXPECT_NE(schema_error_of(R"({"type": "number", "minimum": 0.5})").find("'minimum' 0.5 on a number"),
            std::string::npos);
}

TEST(JsonSchema, UnsupportedKeywordsAreNamed) {
  EXPECT_EQ(schema_error_of(R"({"type": "integer", "multipleOf": 3})"),
            "json_schema: /: 'multipleOf' is not supported");
  EXPECT_EQ(schema_error_of(R"({"properties": {"a": {"type": "array", "uniqueItems": true}}})"),
            "json_schema: /properties/a: 'uniqueItems' is not supported");
  EXPECT_EQ(schema_error_of(R"({"type": "object", "patternProperties": {}})"),
            "json_schema: /: 'patternProperties' is not supported");
  EXPECT_EQ(schema_error_of(R"({"type": "objet"})"), "json_schema: /: unknown type 'objet'");
  EXPECT_EQ(schema_error_of("{"), "json_schema: the schema is not valid JSON");
  EXPECT_EQ(schema_error_of(R"({"minLength": 1, "pattern": "a"})"),
            "json_schema: /: only one of 'pattern', 'format' and 'minLength'/'maxLength' is "
            "supported on one string");
}

TEST(JsonSchema, JsonObject) {
  auto g = parse_gbnf(json_object_grammar());
  ASSERT_TRUE(g.ok()) << g.message();
  Matcher m(std::make_shared<const Grammar>(std::move(*g)));
  EXPECT_TRUE(m.accept(R"({"a": [1, {"b": null}], "c": "d"})"));
  EXPECT_TRUE(m.can_end());
  Matcher arr(std::make_shared<const Grammar>(m.grammar()));
  EXPECT_FALSE(arr.accept("[1]"));  // an object, not any value
}

}  // namespace
}  // namespace tova::grammar
