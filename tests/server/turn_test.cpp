// The chat API's reasoning fields (turn.h, codec.h): reasoning_effort and chat_template_kwargs
// decode into template variables (bad ones are a 400 naming them, completions refuse them), an
// assistant message's reasoning_content is kept, and responses carry reasoning_content only
// when there is some; a reasoning chunk's delta is {"reasoning_content"}; the multi-state's
// memory by layer kind is in every response's tova object.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "codec.h"
#include "turn.h"

namespace tova::server {
namespace {

using nlohmann::json;

std::variant<CompletionRequest, ApiError> decode(const json& body, bool chat = true) {
  ApiDefaults d;
  auto c = parse_cache_options("tova", 64);
  EXPECT_TRUE(c.ok()) << c.message();
  d.cache = *c;
  d.kv_memory = 1 << 30;
  return decode_completion_request(body.dump(), chat, d);
}

std::string param_of(const json& body, bool chat = true) {
  auto r = decode(body, chat);
  if (auto* e = std::get_if<ApiError>(&r)) {
    EXPECT_EQ(e->status, 400);
    return e->param;
  }
  ADD_FAILURE() << body.dump() << ": accepted";
  return {};
}

const json kUser = json::array({{{"role", "user"}, {"content", "hi"}}});

TEST(Turn, TemplateSwitchesDecodeIntoVariables) {
  auto r = decode({{"messages", kUser},
                   {"reasoning_effort", "high"},
                   {"chat_template_kwargs", {{"enable_thinking", false}, {"x", {1, 2}}}}});
  ASSERT_TRUE(std::holds_alternative<CompletionRequest>(r));
  const json& v = std::get<CompletionRequest>(r).template_vars;
  EXPECT_EQ(v, json({{"reasoning_effort", "high"}, {"enable_thinking", false}, {"x", {1, 2}}}));
  EXPECT_TRUE(std::get<CompletionRequest>(decode({{"messages", kUser}})).template_vars.empty());
  // null is absent.
  EXPECT_TRUE(std::holds_alternative<CompletionRequest>(
      decode({{"messages", kUser}, {"reasoning_effort", nullptr}})));
}

TEST(Turn, BadSwitchesAreA400NamingThem) {
  EXPECT_EQ(param_of({{"messages", kUser}, {"reasoning_effort", "extreme"}}), "reasoning_effort");
  EXPECT_EQ(param_of({{"messages", kUser}, {"reasoning_effort", 3}}), "reasoning_effort");
  EXPECT_EQ(param_of({{"messages", kUser}, {"chat_template_kwargs", "enable_thinking"}}),
            "chat_template_kwargs");
  EXPECT_EQ(param_of({{"messages", kUser},
                      {"reasoning_effort", "low"},
                      {"chat_template_kwargs", {{"reasoning_effort", "high"}}}}),
            "reasoning_effort");
  // Completions have no template.
  EXPECT_EQ(param_of({{"prompt", "hi"}, {"reasoning_effort", "low"}}, false), "reasoning_effort");
  EXPECT_EQ(param_of({{"prompt", "hi"}, {"chat_template_kwargs", json::object()}}, false),
            "chat_template_kwargs");
}

TEST(Turn, AnAssistantsReasoningContentIsKept) {
  const json ms =
      json::array({{{"role", "user"}, {"content", "a"}},
                   {{"role", "assistant"}, {"content", "b"}, {"reasoning_content", "r"}},
                   {{"role", "user"}, {"content", "c"}}});
  auto r = decode({{"messages", ms}});
  ASSERT_TRUE(std::holds_alternative<CompletionRequest>(r));
  EXPECT_EQ(std::get<CompletionRequest>(r).messages[1].reasoning_content, "r");
  // Only an assistant's, and only a string.
  EXPECT_EQ(
      param_of({{"messages",
                 json::array({{{"role", "user"}, {"content", "a"}, {"reasoning_content", "r"}}})}}),
      "messages");
  EXPECT_EQ(
      param_of(
          {{"messages",
            json::array({{{"role", "assistant"}, {"content", "a"}, {"reasoning_content", 1}}})}}),
      "messages");
}

TEST(Turn, ResponsesCarryReasoningContentWhenThereIsSome) {
  const ResponseHead h{.chat = true, .id = "chatcmpl-1", .created = 1, .model = "m"};
  KvReport kv{.policy = "tova", .budget = 8};
  kv.kinds = {StateKindStats{.kind = "bounded",
                             .n_layer = 1,
                             .limit = 8,
                             .max_held = 8,
                             .rows = 16,
                             .bytes = 100,
                             .held_bytes = 90},
              StateKindStats{.kind = "window",
                             .n_layer = 5,
                             .limit = 16,
                             .max_held = 8,
                             .rows = 80,
                             .bytes = 500,
                             .held_bytes = 400}};
  kv.layer_kinds = {"window", "bounded"};
  Choice with{.index = 0, .text = "Four.", .reasoning = "Two and two.", .finish_reason = "stop"};
  Choice without{.index = 1, .text = "Four.", .finish_reason = "stop"};
  const json j = completion_json(h, {with, without}, usage_json(3, 2, 0), kv);
  EXPECT_EQ(j["choices"][0]["message"]["reasoning_content"], "Two and two.");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "Four.");
  EXPECT_FALSE(j["choices"][1]["message"].contains("reasoning_content"));
  const json& kinds = j["tova"]["memory_by_kind"];
  ASSERT_EQ(kinds.size(), 2u);
  EXPECT_EQ(kinds[1], json({{"kind", "window"},
                            {"layers", 5},
                            {"limit", 16},
                            {"max_held", 8},
                            {"rows", 80},
                            {"image_rows", 0},
                            {"bytes", 500},
                            {"held_bytes", 400}}));
  EXPECT_EQ(j["tova"]["layer_kinds"], json({"window", "bounded"}));
  const json c = reasoning_chunk_json(h, 0, "Two");
  EXPECT_EQ(c["object"], "chat.completion.chunk");
  EXPECT_EQ(c["choices"][0]["delta"], json({{"reasoning_content", "Two"}}));
  EXPECT_TRUE(c["choices"][0]["finish_reason"].is_null());
}

}  // namespace
}  // namespace tova::server
