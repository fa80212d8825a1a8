// The OpenAI codec as pure functions: what each request field decodes to (content parts, the
// developer role, response_format, logprobs, n, user/metadata/store), which ones are a 400 that
// names them, and the exact JSON of responses and stream chunks (logprobs in both shapes).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "codec.h"
#include "request_body.h"
#include "tova/grammar.h"

namespace tova::server {
namespace {

using nlohmann::json;

ApiDefaults defaults() {
  ApiDefaults d;
  d.model_id = "stories260K";
  auto c = parse_cache_options("tova", 64);
  EXPECT_TRUE(c.ok()) << c.message();
  d.cache = *c;
  d.kv_memory = 1 << 30;
  return d;
}

CompletionRequest ok_request(const json& body, bool chat) {
  auto r = decode_completion_request(body.dump(), chat, defaults());
  if (auto* e = std::get_if<ApiError>(&r)) {
    ADD_FAILURE() << body.dump() << ": " << e->message;
    return {};
  }
  return std::get<CompletionRequest>(r);
}

ApiError error_of(const json& body, bool chat) {
  auto r = decode_completion_request(body.dump(), chat, defaults());
  if (auto* e = std::get_if<ApiError>(&r)) return *e;
  ADD_FAILURE() << body.dump() << ": accepted";
  return {};
}

json chat(json messages) { return {{"messages", std::move(messages)}}; }

TEST(Codec, ContentIsAStringOrTextPartsAndDeveloperIsSystem) {
  auto r = ok_request(chat({{{"role", "developer"}, {"content", "Be brief."}},
                            {{"role", "user"},
                             {"content", json::array({{{"type", "text"}, {"text", "Hello"}},
                                                      {{"type", "text"}, {"text", "there"}}})}},
                            {{"role", "assistant"}, {"content", "Hi."}}}),
                      true);
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[0].content, "Be brief.");
  EXPECT_EQ(r.messages[1].content, "Hello\nthere");
  EXPECT_EQ(r.messages[2].role, "assistant");
}

TEST(Codec, WhatIsNotImplementedIsA400NamingIt) {
  struct Case {
    json body;
    bool chat;
    std::string param;
    std::string says;
  };
  const json user = {{"role", "user"}, {"content", "x"}};
  const Case cases[] = {
      {chat({{{"role", "user"},
              {"content", json::array({{{"type", "image_url"}, {"image_url", {{"url", "x"}}}}})}}}),
       true, "messages[0].content[0].image_url", "--mmproj"},
      {chat({{{"role", "user"},
              {"content", json::array({{{"type", "input_audio"}, {"input_audio", "x"}}})}}}),
       true, "messages", "content parts of type 'input_audio' are not supported"},
      {chat({{{"role", "tool"}, {"content", "x"}}}), true, "messages", "'tool_call_id'"},
      {chat({{{"role", "function"}, {"content", "x"}}}), true, "messages", "role 'function'"},
      {chat({{{"role", "user"}, {"content", "x"}, {"audio", "bob"}}}), true, "messages", "'audio'"},
      {chat({{{"role", "user"}, {"content", "x"}, {"tool_calls", json::array()}}}), true,
       "messages", "'tool_calls' in a user message"},
      {chat({{{"role", "assistant"}, {"content", nullptr}}}), true, "messages", "'content'"},
      {{{"messages", {user}}, {"tools", {{{"type", "function"}, {"function", {{"name", "a b"}}}}}}},
       true, "tools", "tools[0].function.name"},
      {{{"messages", {user}},
        {"tools", {{{"type", "function"}, {"function", {{"name", "f"}, {"parameters", 3}}}}}}},
       true, "tools", "tools[0] ('f'): 'parameters' must be"},
      {{{"messages", {user}}, {"tool_choice", "required"}}, true, "tool_choice", "needs 'tools'"},
      {{{"prompt", "x"}, {"tools", json::array()}}, false, "tools", "unknown"},
      {{{"messages", {user}}, {"response_format", {{"type", "xml"}}}}, true,
       "response_format", "response_format 'xml' is not supported"},
      {{{"messages", {user}}, {"response_format", {{"type", "json_schema"}}}}, true,
       "response_format", "needs a 'json_schema' object"},
      {{{"messages", {user}},
        {"response_format",
         {{"type", "json_schema"},
          {"json_schema", {{"name", "x"}, {"schema", {{"type", "integer"}, {"multipleOf", 2}}}}}}}},
       true, "response_format", "json_schema: /: 'multipleOf' is not supported"},
      {{{"prompt", "x"}, {"grammar", "root ::= foo"}}, false, "grammar",
       "grammar: line 1, column 10: undefined rule 'foo' (in rule 'root')"},
      {{{"messages", {user}}, {"grammar", 5}}, true, "grammar", "must be a string"},
      {{{"messages", {user}}, {"grammar", "root ::= \"a\""},
        {"response_format", {{"type", "json_object"}}}},
       true, "response_format", "together"},
      {{{"messages", {user}}, {"top_logprobs", 2}}, true, "top_logprobs", "needs 'logprobs'"},
      {{{"messages", {user}}, {"logprobs", true}, {"top_logprobs", 21}}, true, "top_logprobs",
       "[0, 20]"},
      {{{"messages", {user}}, {"n", 0}}, true, "n", "[1, 16]"},
      {{{"messages", {user}}, {"n", 17}}, true, "n", "[1, 16]"},
      {{{"messages", {user}}, {"tools", json::array()}}, true, "tools", "'tools'"},
      {{{"messages", {user}}, {"metadata", {{"a", 1}}}}, true, "metadata", "strings"},
      {{{"messages", {user}}, {"store", "yes"}}, true, "store", "boolean"},
      {{{"messages", {user}}, {"model", 5}}, true, "model", "string"},
      {{{"prompt", "x"}, {"logprobs", true}}, false, "logprobs", "(0 to 5)"},
      {{{"prompt", "x"}, {"logprobs", 6}}, false, "logprobs", "[0, 5]"},
      {{{"prompt", "x"}, {"echo", true}}, false, "echo", "not supported"},
      {{{"prompt", "x"}, {"best_of", 2}}, false, "best_of", "[1, 1]"},
      {{{"prompt", json::array({"a", "b"})}}, false, "prompt", "one prompt per request"},
      {{{"prompt", "x"}, {"messages", json::array()}}, false, "messages", "unknown"},
  };
  for (const Case& c : cases) {
    const ApiError e = error_of(c.body, c.chat);
    EXPECT_EQ(e.status, 400) << c.body.dump();
    EXPECT_EQ(e.param, c.param) << c.body.dump();
    EXPECT_NE(e.message.find(c.says), std::string::npos) << c.body.dump() << ": " << e.message;
    EXPECT_EQ(e.message.find('\n'), std::string::npos);
  }
}

TEST(Codec, ToolsAndToolTurns) {
  const std::string tool = R"({"type": "function", "function": {"name": "add", "parameters":
    {"type": "object", "properties": {"b": {"type": "integer"}, "a": {"type": "integer"}}}}})";
  // Sent as text, so that the client's key order (b before a) is what the codec sees.
  const std::string body = R"({"messages": [{"role": "user", "content": "x"},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
     "function": {"name": "add", "arguments": "{\"b\": 1, \"a\": 2}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "name": "add", "content": "3"}],
    "tools": [)" + tool + R"(], "tool_choice": {"type": "function", "function": {"name":
    "add"}}, "parallel_tool_calls": false})";
  auto d = decode_completion_request(body, true, defaults());
  ASSERT_TRUE(std::holds_alternative<CompletionRequest>(d)) << std::get<ApiError>(d).message;
  const CompletionRequest& r = std::get<CompletionRequest>(d);
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[1].content, "");
  // The calls as JSON text (tova::ChatMessage), arguments the object they spell, in order.
  const auto calls = nlohmann::ordered_json::parse(r.messages[1].tool_calls);
  ASSERT_TRUE(calls.is_array());
  EXPECT_EQ(calls[0]["function"]["arguments"].dump(), R"({"b":1,"a":2})");
  EXPECT_EQ(r.messages[2].tool_call_id, "call_1");
  EXPECT_EQ(r.messages[2].name, "add");
  ASSERT_EQ(r.tools.definitions.size(), 1u);
  EXPECT_EQ(r.tools.definitions[0].name, "add");
  // The schema keeps the client's order of properties (the grammar writes them so).
  EXPECT_LT(r.tools.definitions[0].parameters.find("\"b\""),
            r.tools.definitions[0].parameters.find("\"a\""));
  EXPECT_EQ(r.tools.choice, "function");
  EXPECT_EQ(r.tools.function, "add");
  EXPECT_FALSE(r.tools.parallel);
  EXPECT_TRUE(r.tools.forced());
}

// A "type" that is not a string (tool_choice, a content part) is a 400, not an exception
// (nlohmann-json's value("type", "") threw type_error 302, a 500).
TEST(Codec, ATypeThatIsNotAStringIsA400) {
  const std::string tools = R"("tools": [{"type": "function", "function": {"name": "f"}}])";
  for (const std::string& body :
       {R"({"messages": [{"role": "user", "content": "x"}], )" + tools +
            R"(, "tool_choice": {"type": 1, "function": {"name": "f"}}})",
        std::string(
            R"({"messages": [{"role": "user", "content": [{"type": 1, "text": "x"}]}]})")}) {
    auto d = decode_completion_request(body, true, defaults());
    ASSERT_TRUE(std::holds_alternative<ApiError>(d)) << body;
    EXPECT_EQ(std::get<ApiError>(d).status, 400);
  }
}

TEST(Codec, ConstrainedOutputBecomesTheSamplersGrammar) {
  const json user = {{"role", "user"}, {"content", "x"}};
  auto r = ok_request({{"messages", {user}}, {"response_format", {{"type", "json_object"}}}}, true);
  EXPECT_EQ(r.sampling.grammar, json_object_grammar());
  const json schema = {{"type", "object"},
                       {"properties", {{"n", {{"type", "integer"}}}}},
                       {"required", {"n"}}};
  r = ok_request({{"messages", {user}},
                  {"response_format",
                   {{"type", "json_schema"},
                    {"json_schema", {{"name", "n"}, {"strict", true}, {"schema", schema}}}}}},
                 true);
  EXPECT_EQ(r.sampling.grammar, *json_schema_grammar(schema.dump()));
  r = ok_request({{"prompt", "x"}, {"grammar", "root ::= [0-9]+"}}, false);
  EXPECT_EQ(r.sampling.grammar, "root ::= [0-9]+");
  r = ok_request({{"prompt", "x"}, {"response_format", {{"type", "text"}}}}, false);
  EXPECT_EQ(r.sampling.grammar, "");
}

TEST(Codec, AcceptedFieldsDecode) {
  const json user = {{"role", "user"}, {"content", "x"}};
  auto r = ok_request({{"messages", {user}},
                       {"model", "gpt-4o"},
                       {"n", 3},
                       {"logprobs", true},
                       {"top_logprobs", 5},
                       {"user", "alice"},
                       {"metadata", {{"team", "a"}}},
                       {"store", false},
                       {"response_format", {{"type", "text"}}},
                       {"max_completion_tokens", 7},
                       {"seed", 42},
                       {"temperature", 0},
                       {"kv_policy", "sink:4"},
                       {"kv_budget", 12},
                       {"kv_positions", "gap"}},
                      true);
  EXPECT_EQ(r.n, 3);
  EXPECT_EQ(r.logprobs, 5);
  EXPECT_EQ(r.user, "alice");
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_EQ(r.sampling.seed, 42u);
  EXPECT_EQ(r.sampling.temp, 0.0f);
  EXPECT_EQ(r.cache.policy.label(), "sink:4");
  EXPECT_EQ(r.cache.policy.budget, 12);
  EXPECT_FALSE(r.cache.keep_images);
  EXPECT_TRUE(ok_request({{"messages", {user}}, {"kv_keep_images", true}}, true).cache.keep_images);
  auto plain = ok_request({{"messages", {user}}, {"logprobs", true}}, true);
  EXPECT_EQ(plain.logprobs, 0);  // the chosen token's log-probability, no alternatives
  EXPECT_EQ(ok_request({{"messages", {user}}}, true).logprobs, -1);
  auto c = ok_request({{"prompt", json::array({"Once"})}, {"logprobs", 2}}, false);
  EXPECT_EQ(c.prompt_text, "Once");
  EXPECT_EQ(c.logprobs, 2);
  EXPECT_EQ(c.max_tokens, 16);  // OpenAI's default for completions
  auto ids = ok_request({{"prompt", {1, 2, 3}}}, false);
  EXPECT_TRUE(ids.prompt_is_ids);
  EXPECT_EQ(ids.prompt_ids, (std::vector<int32_t>{1, 2, 3}));
}

TEST(Codec, ResponsesAndChunksHaveOpenAisShape) {
  const ResponseHead chat_head{.chat = true, .id = "chatcmpl-1", .created = 7, .model = "m"};
  const std::vector<TokenLogprob> lps = {
      {.token = "Hi", .logprob = -0.5f, .top = {{"Hi", -0.5f}, {"Yo", -1.25f}}}};
  const KvReport kv{.policy = "tova", .budget = 8, .prefill = "exact"};
  const json whole = completion_json(
      chat_head, {{.index = 0, .text = "Hi", .finish_reason = "stop", .with_logprobs = true,
                   .logprobs = lps},
                  {.index = 1, .text = "Yo", .finish_reason = "length"}},
      usage_json(5, 2, 3), kv);
  EXPECT_EQ(whole["object"], "chat.completion");
  EXPECT_EQ(whole["choices"].size(), 2u);
  EXPECT_EQ(whole["choices"][0]["message"]["content"], "Hi");
  const json& c0 = whole["choices"][0]["logprobs"]["content"][0];
  EXPECT_EQ(c0["token"], "Hi");
  EXPECT_EQ(c0["logprob"], -0.5);
  EXPECT_EQ(c0["bytes"], json({72, 105}));
  EXPECT_EQ(c0["top_logprobs"][1]["token"], "Yo");
  EXPECT_EQ(c0["top_logprobs"][1]["logprob"], -1.25);
  EXPECT_TRUE(whole["choices"][1]["logprobs"].is_null());
  EXPECT_EQ(whole["choices"][1]["index"], 1);
  EXPECT_EQ(whole["usage"]["prompt_tokens_details"]["cached_tokens"], 3);
  EXPECT_EQ(whole["usage"]["total_tokens"], 7);

  const json first = chunk_json(chat_head, 2, "", nullptr, "", /*role_only=*/true);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["index"], 2);
  EXPECT_EQ(first["choices"][0]["delta"], json({{"role", "assistant"}, {"content", ""}}));
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  const json last = chunk_json(chat_head, 0, "", nullptr, "stop");
  EXPECT_EQ(last["choices"][0]["delta"], json::object());
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
  const json usage = usage_chunk_json(chat_head, usage_json(5, 2, 0));
  EXPECT_EQ(usage["choices"], json::array());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 2);

  const ResponseHead text_head{.chat = false, .id = "cmpl-1", .created = 7, .model = "m"};
  const json piece = chunk_json(text_head, 0, "Hi", &lps, "", false, /*text_offset=*/10);
  EXPECT_EQ(piece["object"], "text_completion");
  EXPECT_EQ(piece["choices"][0]["text"], "Hi");
  const json& lp = piece["choices"][0]["logprobs"];
  EXPECT_EQ(lp["tokens"], json({"Hi"}));
  EXPECT_EQ(lp["token_logprobs"], json({-0.5}));
  EXPECT_EQ(lp["top_logprobs"][0]["Yo"], -1.25);
  EXPECT_EQ(lp["text_offset"], json({10}));
}

TEST(Codec, NotUtf8BecomesReplacementCharacters) {
  EXPECT_EQ(to_json_text(json{{"content", std::string("a\xff")}}), "{\"content\":\"a\xef\xbf\xbd\"}");
  EXPECT_EQ(sse_event(json{{"a", 1}}), "data: {\"a\":1}\n\n");
}

// A client's string that is not UTF-8 is refused (JSON is UTF-8; a prompt is not repaired
// behind the client's back), with a 400 that names the field holding it, on every endpoint that
// reads a body; llama-server answers such a body with a 500 (its parser's exception).
TEST(Codec, ClientTextThatIsNotUtf8IsA400NamingTheField) {
  const std::string body =
      "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}, "
      "{\"role\": \"user\", \"content\": \"a\xFF\"}], \"n\": 1}";
  EXPECT_EQ(field_with_invalid_utf8(body), "messages[1].content");
  auto r = decode_completion_request(body, true, defaults());
  ASSERT_TRUE(std::holds_alternative<ApiError>(r));
  const ApiError& e = std::get<ApiError>(r);
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.param, "messages");
  EXPECT_NE(e.message.find("'messages[1].content' is not valid UTF-8 (byte 0xFF at offset"),
            std::string::npos)
      << e.message;
  // The serialised error is JSON (the message quotes no raw byte).
  EXPECT_FALSE(json::parse(to_json_text(error_json(e)), nullptr, false).is_discarded());

  EXPECT_EQ(field_with_invalid_utf8("{\"prompt\": \"\xC3\"}"), "prompt");
  EXPECT_EQ(field_with_invalid_utf8("{\"stop\": [\"a\", \"b\xE2\x82\"]}"), "stop[1]");
  EXPECT_EQ(field_with_invalid_utf8("{\"a\": {\"b\": 1, \"c\": [{}, {\"d\": \"\xED\xA0\x80\"}]}}"),
            "a.c[1].d");
  EXPECT_EQ(field_with_invalid_utf8("{\"model\": \"m\", \"k\xFF\": 1}"), "a key of the body");
  EXPECT_EQ(field_with_invalid_utf8("{\"a\": {\"\\\"\xFF\": 1}}"), "a key of a");
  EXPECT_EQ(field_with_invalid_utf8("{\"a\": \"ok\"}"), std::nullopt);
  EXPECT_EQ(field_with_invalid_utf8("{\"a\": 1\xFF}"), std::nullopt);  // outside a string

  auto t = decode_tokenize_request("{\"content\": \"x\xFF\"}");
  ASSERT_TRUE(std::holds_alternative<ApiError>(t));
  EXPECT_EQ(std::get<ApiError>(t).param, "content");
  auto d = decode_detokenize_request("{\"tokens\": [1], \"\xFF\": 2}");
  ASSERT_TRUE(std::holds_alternative<ApiError>(d));
  EXPECT_NE(std::get<ApiError>(d).message.find("a key of the body"), std::string::npos);
  // Not JSON at all stays "not valid JSON".
  auto bad = decode_completion_request("{\"n\": ", true, defaults());
  EXPECT_EQ(std::get<ApiError>(bad).message, "the request body is not valid JSON");
}

}  // namespace
}  // namespace tova::server
