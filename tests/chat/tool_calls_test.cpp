// Tool-call parsers and forced-call grammars, with the strings the real templates in
// ../shared/templates render (through tova's Jinja renderer): a rendered assistant turn of
// calls parses back to the same calls, and the forced grammar of the format accepts it.
#include "tova/tool_calls.h"

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "jinja/json.h"
#include "test_data.h"
#include "tokenizer/chat_template.h"

namespace tova {
namespace {

using ojson = nlohmann::ordered_json;

constexpr const char* kTools = R"([{"type": "function", "function": {"name": "get_weather",
  "description": "Weather", "parameters": {"type": "object", "properties": {"city": {"type":
  "string"}, "days": {"type": "integer"}}, "required": ["city"]}}}])";

std::vector<ToolDefinition> definitions() {
  std::vector<ToolDefinition> out;
  for (const auto& t : ojson::parse(kTools)) {
    out.push_back(
        {.name = t["function"]["name"], .parameters = t["function"]["parameters"].dump()});
  }
  return out;
}

bool grammar_accepts(const std::string& gbnf, std::string_view text) {
  auto g = grammar::parse_gbnf(gbnf);
  EXPECT_TRUE(g.ok()) << g.message() << "\n" << gbnf;
  if (!g.ok()) return false;
  grammar::Matcher m(std::make_shared<const grammar::Grammar>(std::move(*g)));
  return m.accept(text) && m.can_end();
}

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

struct Family {
  const char* file;
  ToolCallFormat format;
  bool parallel;    // the template renders two calls in one turn
  const char* end;  // the end-of-turn text after the calls, cut before parsing
};

const Family kFamilies[] = {
    {"Qwen-Qwen2.5-7B-Instruct.jinja", ToolCallFormat::kHermes, true, "<|im_end|>\n"},
    {"Qwen-Qwen3-0.6B.jinja", ToolCallFormat::kHermes, true, "<|im_end|>\n"},
    {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", ToolCallFormat::kHermes, true,
     "<|im_end|>\n"},
    {"Qwen3-Coder.jinja", ToolCallFormat::kQwen3Coder, true, "<|im_end|>\n"},
    {"meta-llama-Llama-3.1-8B-Instruct.jinja", ToolCallFormat::kLlama3, false, "<|eot_id|>"},
    {"meta-llama-Llama-3.2-3B-Instruct.jinja", ToolCallFormat::kLlama3, false, "<|eot_id|>"},
    {"mistralai-Mistral-Nemo-Instruct-2407.jinja", ToolCallFormat::kMistral, true, "</s>"},
    {"Mistral-Small-3.2-24B-Instruct-2506.jinja", ToolCallFormat::kMistralArgs, true, "</s>"},
    {"openai-gpt-oss-120b.jinja", ToolCallFormat::kHarmony, false, ""},
    {"ibm-granite-granite-4.0.jinja", ToolCallFormat::kHermes, true, "<|end_of_text|>\n"},
};

// The assistant turn of calls as the template renders it: the conversation with the turn, less
// the conversation up to its generation prompt, less the end-of-turn text.
std::string rendered_turn(const Family& f, const ojson& calls) {
  auto t = tok::ChatTemplate::from_jinja(
      read_text(testing::shared_path(std::string("templates/") + f.file)), "<s>", "</s>", f.file);
  EXPECT_TRUE(t.ok()) << t.message();
  std::vector<ChatMessage> ms = {{.role = "user", .content = "Weather in Paris and Lyon?"}};
  tok::ChatOptions o{.add_generation_prompt = true,
                     .tools = jinja::from_json(ojson::parse(kTools))};
  auto prompt = t->render(ms, o);
  EXPECT_TRUE(prompt.ok()) << prompt.message();
  ms.push_back({.role = "assistant", .tool_calls = calls.dump()});
  o.add_generation_prompt = false;
  auto full = t->render(ms, o);
  EXPECT_TRUE(full.ok()) << full.message();
  if (!prompt.ok() || !full.ok()) return "";
  // gpt-oss' generation prompt ends in "<|start|>assistant", its turns begin so too.
  std::string p = *prompt;
  EXPECT_EQ(full->substr(0, p.size()), p) << f.file;
  std::string turn = full->substr(p.size());
  if (*f.end && turn.ends_with(f.end)) turn.resize(turn.size() - std::string(f.end).size());
  // Qwen3 writes an empty thinking block before the last turn's calls: the reasoning parser's
  // part, not a call's.
  constexpr std::string_view kThink = "<think>\n\n</think>\n\n";
  if (turn.starts_with(kThink)) turn.erase(0, kThink.size());
  return turn;
}

ojson test_calls(bool two) {
  auto calls = ojson::parse(R"([
    {"id": "abc123xyz", "type": "function", "function": {"name": "get_weather",
     "arguments": {"city": "Paris", "days": 2}}},
    {"id": "def456uvw", "type": "function", "function": {"name": "get_weather",
     "arguments": {"city": "Lyon"}}}])");
  if (!two) calls.erase(1);
  return calls;
}

TEST(ToolCalls, TemplatesRoundTrip) {
  TOVA_REQUIRE_SHARED();
  for (const Family& f : kFamilies) {
    SCOPED_TRACE(f.file);
    const std::string source = read_text(testing::shared_path(std::string("templates/") + f.file));
    EXPECT_EQ(detect_tool_call_format(source), f.format);
    const ojson calls = test_calls(f.parallel);
    const std::string turn = rendered_turn(f, calls);
    ASSERT_FALSE(turn.empty());
    const ParsedToolCalls p = parse_tool_calls(f.format, turn, definitions());
    EXPECT_EQ(p.content, "") << turn;
    ASSERT_EQ(p.calls.size(), calls.size()) << turn;
    for (size_t i = 0; i < calls.size(); ++i) {
      EXPECT_EQ(p.calls[i].name, "get_weather");
      EXPECT_EQ(ojson::parse(p.calls[i].arguments), calls[i]["function"]["arguments"]);
    }
    // What the forced grammar generates includes what the template renders.
    auto g = forced_tool_call_grammar(f.format, definitions(), f.parallel);
    ASSERT_TRUE(g.ok()) << g.message();
    EXPECT_TRUE(grammar_accepts(*g, turn)) << turn << "\n---\n" << *g;
    // Nothing of a call is streamed as content before the turn is complete.
    EXPECT_EQ(tool_call_safe_prefix(f.format, turn.substr(0, turn.size() / 2)), 0u) << turn;
  }
}

TEST(ToolCalls, ModelOutputs) {
  // What models write, around and between calls.
  auto p = parse_tool_calls(ToolCallFormat::kHermes,
                            "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                            "{\"city\": \"Paris\"}}\n</tool_call>");
  EXPECT_EQ(p.content, "Let me look.");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"Paris"})");
  // Arguments given as a JSON string are read as the object they hold.
  p = parse_tool_calls(
      ToolCallFormat::kHermes,
      "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": 1}\"}</tool_call>");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, R"({"a":1})");
  // An unclosed last call whose JSON is whole (the turn ended at <|im_end|>).
  p = parse_tool_calls(ToolCallFormat::kHermes,
                       "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}");
  ASSERT_EQ(p.calls.size(), 1u);
  p = parse_tool_calls(ToolCallFormat::kQwen3Coder,
                       "<tool_call>\n<function=get_weather>\n<parameter=city>\n42\n</parameter>\n"
                       "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
                       definitions());
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"42","days":3})");  // city is typed string
  p = parse_tool_calls(ToolCallFormat::kLlama3,
                       "<|python_tag|>{\"name\": \"f\", \"parameters\": {\"x\": 1}}; "
                       "{\"name\": \"g\", \"arguments\": {}}");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[1].name, "g");
  p = parse_tool_calls(ToolCallFormat::kMistral,
                       "Sure.[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"x\": 1}, \"id\": "
                       "\"abc123xyz\"}]");
  EXPECT_EQ(p.content, "Sure.");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].id, "abc123xyz");
  p = parse_tool_calls(ToolCallFormat::kMistralArgs,
                       "[TOOL_CALLS]f[ARGS]{\"x\": 1}[TOOL_CALLS]g[ARGS]{}");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[1].name, "g");
  // Harmony: analysis first, then the call with the recipient after the channel.
  p = parse_tool_calls(ToolCallFormat::kHarmony,
                       "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant"
                       "<|channel|>commentary to=functions.get_weather <|constrain|>json"
                       "<|message|>{\"city\": \"Paris\"}<|call|>");
  EXPECT_EQ(p.content, "<|channel|>analysis<|message|>Need weather.<|end|>");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"Paris"})");
}

TEST(ToolCalls, TextThatIsNotACallStaysContent) {
  for (const auto& [f, text] : std::vector<std::pair<ToolCallFormat, std::string>>{
           {ToolCallFormat::kHermes, "a <tool_call>not json</tool_call> b"},
           {ToolCallFormat::kHermes, "<tool_call>{\"arguments\": {}}</tool_call>"},  // no name
           {ToolCallFormat::kQwen3Coder, "<tool_call>\n<function=f>\n<parameter=x>\n1\n"},
           {ToolCallFormat::kLlama3, "{\"name\": \"f\", \"parameters\": {}} and more"},
           {ToolCallFormat::kLlama3, "The answer is {\"name\": \"f\"}"},
           {ToolCallFormat::kMistral, "[TOOL_CALLS] nothing"},
           {ToolCallFormat::kHarmony, "<|channel|>final<|message|>to=functions.x is a name"},
           {ToolCallFormat::kNone, "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>"},
       }) {
    const auto p = parse_tool_calls(f, text);
    EXPECT_TRUE(p.calls.empty()) << text;
    EXPECT_EQ(p.content, text);
  }
}

// Issue 49: a call whose text holds bytes that are not UTF-8 (a byte-fallback token cut a
// character; small models write ill-formed bytes outright) is a call, its bytes replaced by
// U+FFFD as llama-server replaces them; nothing throws (nlohmann-json's dump() did: type_error
// 316, a 500 in tova serve). tests/fuzz/regressions/tool_calls/ holds the fuzzer's input.
TEST(ToolCalls, BytesThatAreNotUtf8AreReplacedAndTheCallKept) {
  const std::string R = "\xEF\xBF\xBD";
  const std::vector<ToolDefinition> tools = {
      {.name = "f",
       .parameters = R"({"type": "object", "properties": {"s": {"type": "string"}}})"}};
  // The reproducer, exactly as the fuzzer found it.
  const std::string repro =
      "<tool_call>\n<function=f>\n<parameter=s>\n1\xFF\xFF\xFF\n</parameter>\n</function>\n"
      "</tool_call>";
  for (const auto& with_tools : {tools, std::vector<ToolDefinition>{}}) {
    const auto p = parse_tool_calls(ToolCallFormat::kQwen3Coder, repro, with_tools);
    ASSERT_EQ(p.calls.size(), 1u);
    EXPECT_EQ(p.calls[0].name, "f");
    EXPECT_EQ(ojson::parse(p.calls[0].arguments), ojson({{"s", "1" + R + R + R}}));
    EXPECT_EQ(p.content, "");
  }
  struct Case {
    ToolCallFormat f;
    std::string text;
    std::string name;
    ojson args;
    std::string id;
  };
  const Case cases[] = {
      {ToolCallFormat::kQwen3Coder,
       "<tool_call>\n<function=f\xC3>\n<parameter=\xFFk>\n\xE2\x82\n</parameter>\n</function>\n"
       "</tool_call>",
       "f" + R,
       {{R + "k", R}},
       ""},
      {ToolCallFormat::kHermes,
       "<tool_call>\n{\"name\": \"f\xC3\", \"arguments\": {\"s\": \"\xFF\"}}\n</tool_call>",
       "f" + R,
       {{"s", R}},
       ""},
      {ToolCallFormat::kHermes,  // arguments as JSON text
       "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"s\\\": "
       "\\\"\xED\xA0\x80\\\"}\"}</tool_call>",
       "f",
       {{"s", R + R + R}},
       ""},
      {ToolCallFormat::kLlama3,
       "{\"name\": \"f\", \"parameters\": {\"s\": \"\xE2\x82\"}}",
       "f",
       {{"s", R}},
       ""},
      {ToolCallFormat::kMistral,
       "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"s\": \"\x80\"}, \"id\": \"\xFF\"}]",
       "f",
       {{"s", R}},
       R},
      {ToolCallFormat::kMistralArgs,
       "[TOOL_CALLS]f[CALL_ID]a\xFF[ARGS]{\"s\": \"\xC0\xAF\"}",
       "f",
       {{"s", R + R}},
       "a" + R},
      {ToolCallFormat::kHarmony,
       "<|channel|>commentary to=functions.f\xFF<|message|>{\"s\": \"\xF0\x9F\x98\"}<|call|>",
       "f" + R,
       {{"s", R}},
       ""},
  };
  for (const Case& c : cases) {
    const auto p = parse_tool_calls(c.f, c.text, tools);
    ASSERT_EQ(p.calls.size(), 1u) << tool_call_format_name(c.f) << ": " << c.text;
    EXPECT_EQ(p.calls[0].name, c.name) << c.text;
    EXPECT_EQ(ojson::parse(p.calls[0].arguments), c.args) << c.text;
    EXPECT_EQ(p.calls[0].id, c.id) << c.text;
  }
}

// Content keeps the bytes the model wrote (the front-ends serialise it with the same
// replacement): text that is not a call comes back whole, broken bytes and all.
TEST(ToolCalls, ContentKeepsTheModelsBytes) {
  const std::string text = "a\xFF<tool_call>\xC3</tool_call>\xE2\x82";
  for (ToolCallFormat f :
       {ToolCallFormat::kHermes, ToolCallFormat::kQwen3Coder, ToolCallFormat::kLlama3,
        ToolCallFormat::kMistral, ToolCallFormat::kHarmony, ToolCallFormat::kNone}) {
    const auto p = parse_tool_calls(f, text);
    EXPECT_TRUE(p.calls.empty());
    EXPECT_EQ(p.content, text);
  }
}

TEST(ToolCalls, SafePrefix) {
  EXPECT_EQ(tool_call_safe_prefix(ToolCallFormat::kHermes, "Hello <tool_"), 6u);
  EXPECT_EQ(tool_call_safe_prefix(ToolCallFormat::kHermes, "Hello <tool_call>{"), 6u);
  EXPECT_EQ(tool_call_safe_prefix(ToolCallFormat::kHermes, "Hello"), 5u);
  EXPECT_EQ(tool_call_safe_prefix(ToolCallFormat::kLlama3, "  {\"na"), 0u);
  EXPECT_EQ(tool_call_safe_prefix(ToolCallFormat::kLlama3, "Paris is"), 8u);
  EXPECT_EQ(tool_call_safe_prefix(ToolCallFormat::kMistral, "ok [TOOL"), 3u);
  EXPECT_EQ(tool_call_safe_prefix(ToolCallFormat::kNone, "<tool_call>"), 11u);
  // Harmony: a final answer streams as it comes; a header may still name a recipient.
  const std::string final_msg = "<|channel|>final<|message|>Hello wor";
  EXPECT_EQ(tool_call_safe_prefix(ToolCallFormat::kHarmony, final_msg), final_msg.size());
  EXPECT_EQ(tool_call_safe_prefix(ToolCallFormat::kHarmony, final_msg + "<|en"), final_msg.size());
  EXPECT_EQ(tool_call_safe_prefix(ToolCallFormat::kHarmony, "<|channel|>comm"), 0u);
  const std::string analysis = "<|channel|>analysis<|message|>x<|end|>";
  EXPECT_EQ(tool_call_safe_prefix(ToolCallFormat::kHarmony,
                                  analysis + "<|start|>assistant to=functions.f<|channel|>"),
            analysis.size());
  EXPECT_EQ(tool_call_safe_prefix(ToolCallFormat::kHarmony, analysis + "<|start|>assistant"),
            analysis.size());
}

TEST(ToolCalls, ForcedGrammar) {
  auto g = forced_tool_call_grammar(ToolCallFormat::kHermes, definitions(), true);
  ASSERT_TRUE(g.ok()) << g.message();
  const std::string one =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lyon\"}}\n</tool_call>";
  EXPECT_TRUE(grammar_accepts(*g, one));
  EXPECT_TRUE(grammar_accepts(*g, one + "\n" + one));
  EXPECT_FALSE(grammar_accepts(*g, ""));  // a call is required
  EXPECT_FALSE(grammar_accepts(*g,
                               "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                               "{\"days\": 1}}\n</tool_call>"));  // city is required
  EXPECT_FALSE(grammar_accepts(*g,
                               "<tool_call>\n{\"name\": \"other\", \"arguments\": "
                               "{}}\n</tool_call>"));
  auto single = forced_tool_call_grammar(ToolCallFormat::kHermes, definitions(), false);
  ASSERT_TRUE(single.ok());
  EXPECT_FALSE(grammar_accepts(*single, one + "\n" + one));
  // Two tools whose schemas make rules of the same names share one grammar.
  std::vector<ToolDefinition> two = definitions();
  two.push_back({.name = "add", .parameters = R"({"type": "object", "properties": {"a":
                 {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]})"});
  g = forced_tool_call_grammar(ToolCallFormat::kHermes, two, true);
  ASSERT_TRUE(g.ok()) << g.message();
  EXPECT_TRUE(grammar_accepts(*g, one + "\n<tool_call>\n{\"name\": \"add\", \"arguments\": "
                                        "{\"a\": 1, \"b\": -2}}\n</tool_call>"));
  // A schema the grammar engine cannot take: the error names the tool.
  g = forced_tool_call_grammar(ToolCallFormat::kHermes,
                               {{.name = "mail", .parameters = R"({"type": "object", "properties":
                                 {"to": {"type": "string", "format": "email"}}})"}},
                               false);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.message().find("tools[0] ('mail')"), std::string::npos) << g.message();
  EXPECT_NE(g.message().find("format 'email'"), std::string::npos) << g.message();
  EXPECT_FALSE(forced_tool_call_grammar(ToolCallFormat::kNone, definitions(), false).ok());
}

// LFM2 / LFM2.5 (Liquid): the templates list the tools (between <|tool_list_start|> and
// <|tool_list_end|>, or after "List of tools: [") and the model answers with a Python-style list
// of keyword calls between <|tool_call_start|> and <|tool_call_end|>; the templates render a
// turn's content only, so these are the model's own outputs (the form of Liquid's model cards).
TEST(ToolCalls, Lfm2PythonStyleCalls) {
  TOVA_REQUIRE_SHARED();
  EXPECT_EQ(detect_tool_call_format(read_text(testing::shared_path("templates/LFM2-8B-A1B.jinja"))),
            ToolCallFormat::kLfm2);
  EXPECT_EQ(detect_tool_call_format("{{ 'List of tools: [' + tools | tojson + ']' }}"),
            ToolCallFormat::kLfm2);
  EXPECT_EQ(tool_call_format_name(ToolCallFormat::kLfm2), "lfm2");
  const ToolCallFormat F = ToolCallFormat::kLfm2;
  auto p = parse_tool_calls(
      F, "<|tool_call_start|>[get_candidate_status(candidate_id=\"12345\")]<|tool_call_end|>"
         "Checking the current status of candidate ID 12345.");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "get_candidate_status");
  EXPECT_EQ(p.calls[0].arguments, R"({"candidate_id":"12345"})");
  EXPECT_EQ(p.content, "Checking the current status of candidate ID 12345.");
  // Parallel calls, every Python literal, JSON's literals too, nesting, a trailing comma, a
  // tuple, single quotes with escapes, and an unclosed block whose list is whole.
  p = parse_tool_calls(
      F, "Sure. <|tool_call_start|>[get_weather(city='Paris', days=2), "
         "f(a=-1.5e3, b=True, c=None, d=false, e=null, g=[1, 'x', {'k': (1, 2,)}], "
         "h='it\\'s \\u00e9\\n', i=.5, j=3.)]");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.content, "Sure.");
  EXPECT_EQ(ojson::parse(p.calls[0].arguments), ojson::parse(R"({"city": "Paris", "days": 2})"));
  EXPECT_EQ(p.calls[1].name, "f");
  EXPECT_EQ(ojson::parse(p.calls[1].arguments),
            ojson::parse(R"({"a": -1500.0, "b": true, "c": null, "d": false, "e": null,
                             "g": [1, "x", {"k": [1, 2]}], "h": "it's \u00e9\n", "i": 0.5,
                             "j": 3.0})"));
  // No arguments; a dotted name.
  p = parse_tool_calls(F, "<|tool_call_start|>[tools.now()]<|tool_call_end|>");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "tools.now");
  EXPECT_EQ(p.calls[0].arguments, "{}");
  // Not calls: the text stays content, as the model wrote it.
  for (const std::string text :
       {"<|tool_call_start|>[f(1)]<|tool_call_end|>",         // positional
        "<|tool_call_start|>[f(a=)]<|tool_call_end|>",         // no value
        "<|tool_call_start|>f(a=1)<|tool_call_end|>",          // no list
        "<|tool_call_start|>[f(a=1)] and more<|tool_call_end|>",
        "<|tool_call_start|>[f(a='open)]",                     // unterminated string
        "<|tool_call_start|>[f(a=1)",                          // cut short
        "[f(a=1)]"}) {
    p = parse_tool_calls(F, text);
    EXPECT_TRUE(p.calls.empty()) << text;
    EXPECT_EQ(p.content, text);
  }
  // Bytes that are not UTF-8 are replaced, the call kept (issue 49's rule).
  p = parse_tool_calls(F, "<|tool_call_start|>[f\xC3(s='\xFF')]<|tool_call_end|>");
  ASSERT_EQ(p.calls.size(), 0u);  // \xC3 is not a name character: content
  p = parse_tool_calls(F, "<|tool_call_start|>[f(s='a\xFF', t=\"\xE2\x82\")]<|tool_call_end|>");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(ojson::parse(p.calls[0].arguments),
            ojson({{"s", "a\xEF\xBF\xBD"}, {"t", "\xEF\xBF\xBD"}}));
  // Deep nesting is refused (content), not a stack overflow.
  p = parse_tool_calls(F, "<|tool_call_start|>[f(a=" + std::string(5000, '[') + ")]");
  EXPECT_TRUE(p.calls.empty());
  // Nothing of a call streams before the turn is complete.
  EXPECT_EQ(tool_call_safe_prefix(F, "Hi <|tool_call_st"), 3u);
  EXPECT_EQ(tool_call_safe_prefix(F, "Hi <|tool_call_start|>[f("), 3u);
  EXPECT_EQ(tool_call_safe_prefix(F, "Hello"), 5u);
  // The forced grammar: the keyword form of each tool's schema (required first, in order).
  auto g = forced_tool_call_grammar(F, definitions(), true);
  ASSERT_TRUE(g.ok()) << g.message();
  const std::string one = "<|tool_call_start|>[get_weather(city=\"Lyon\")]<|tool_call_end|>";
  EXPECT_TRUE(grammar_accepts(*g, one)) << *g;
  EXPECT_TRUE(grammar_accepts(
      *g, "<|tool_call_start|>[get_weather(city=\"Lyon\", days=3), get_weather(city=\"Nice\")]"
          "<|tool_call_end|>"));
  EXPECT_FALSE(grammar_accepts(*g, "<|tool_call_start|>[get_weather(days=3)]<|tool_call_end|>"));
  EXPECT_FALSE(grammar_accepts(*g, "<|tool_call_start|>[other(city=\"x\")]<|tool_call_end|>"));
  // What the grammar lets the model write, the parser reads back.
  p = parse_tool_calls(F, one);
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"Lyon"})");
  // Only optional parameters: any of them in order, or none.
  auto opt = forced_tool_call_grammar(
      F, {{.name = "f", .parameters = R"({"type": "object", "properties": {"a": {"type":
           "integer"}, "b": {"type": "string"}}})"}},
      false);
  ASSERT_TRUE(opt.ok()) << opt.message();
  for (const char* ok : {"f()", "f(a=1)", "f(b=\"x\")", "f(a=1, b=\"x\")"}) {
    EXPECT_TRUE(grammar_accepts(
        *opt, std::string("<|tool_call_start|>[") + ok + "]<|tool_call_end|>")) << ok;
  }
  EXPECT_FALSE(grammar_accepts(*opt, "<|tool_call_start|>[f(b=\"x\", a=1)]<|tool_call_end|>"));
  // A parameter name Python cannot take as a keyword: one error naming it.
  auto bad = forced_tool_call_grammar(
      F, {{.name = "f", .parameters = R"({"type": "object", "properties": {"a-b": {}}})"}}, false);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("'a-b'"), std::string::npos) << bad.message();
}

TEST(ToolCalls, PrefixedRulesKeepLiterals) {
  auto r = grammar::prefix_gbnf_rules("root ::= \"root\" x [a-z]{1,3} # root\nx ::= \"x\"\n", "p-");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(*r, "p-root ::= \"root\" p-x [a-z]{1,3} # root\np-x ::= \"x\"\n");
}

}  // namespace
}  // namespace tova
