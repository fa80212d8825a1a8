// What a front-end asks of the chat templates: an override by name or file, or the model's own
// template rendered as Jinja (ChatTemplate::resolve), a conversation rendered with the answer
// opened (render_prompt); unknown templates and roles are clear errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "jinja/json.h"
#include "test_data.h"
#include "tokenizer/chat_template.h"

namespace tova::tok {
namespace {

TEST(ChatResolve, ChatMlRendersThreeMessagesExactly) {
  auto r = ChatTemplate::resolve("chatml", "");
  ASSERT_TRUE(r.ok()) << r.message();
  auto text = r->render_prompt({{"system", "Be brief."}, {"user", "Hi!"}, {"assistant", "Hello."}});
  ASSERT_TRUE(text.ok()) << text.message();
  EXPECT_EQ(*text,
            "<|im_start|>system\nBe brief.<|im_end|>\n"
            "<|im_start|>user\nHi!<|im_end|>\n"
            "<|im_start|>assistant\nHello.<|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ChatResolve, RendersTheModelsOwnTemplate) {
  auto r = ChatTemplate::resolve(
      "", "{{ bos_token }}{% for m in messages %}<|im_start|>{{m.role}}\n{{m.content}}<|im_end|>\n"
          "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
      "<s>", "</s>");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_TRUE(r->is_jinja());
  EXPECT_EQ(r->name(), "model");
  EXPECT_EQ(r->spec(), "");
  auto text = r->render_prompt({{"user", "Hi!"}});
  ASSERT_TRUE(text.ok()) << text.message();
  EXPECT_EQ(*text, "<s><|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n");
  // The override wins over the model's template.
  auto o = ChatTemplate::resolve("llama3", "<|im_start|>");
  ASSERT_TRUE(o.ok()) << o.message();
  EXPECT_EQ(o->name(), "llama3");
  EXPECT_FALSE(o->is_jinja());
}

TEST(ChatResolve, ToolsAndSwitchesReachTheTemplate) {
  auto r = ChatTemplate::resolve(
      "",
      "{% if tools %}[{{ tools | map(attribute='function.name') | join(',') }}]{% endif %}"
      "{% for m in messages %}{{ m.role }}:{{ m.content if m.content is not none else '-' }}"
      "{% if m.tool_calls %}{{ m.tool_calls[0].function.arguments | tojson }}{% endif %}"
      "{% if m.reasoning_content %}<{{ m.reasoning_content }}>{% endif %}"
      "{% if m.tool_call_id %}#{{ m.tool_call_id }}/{{ m.name }}{% endif %};{% endfor %}"
      "{{ 'think' if enable_thinking is not defined or enable_thinking else 'nothink' }}");
  ASSERT_TRUE(r.ok()) << r.message();
  ChatMessage call{.role = "assistant", .null_content = true};
  call.tool_calls =
      R"([{"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"x": 1}}}])";
  std::vector<ChatMessage> ms = {
      {.role = "user", .content = "go"},
      {.role = "assistant", .content = "ok", .reasoning_content = "hmm"},
      call,
      {.role = "tool", .content = "42", .name = "f", .tool_call_id = "c1"},
  };
  ChatOptions o{.add_generation_prompt = false,
                .tools = jinja::from_json(nlohmann::ordered_json::parse(
                    R"([{"type": "function", "function": {"name": "f"}}])")),
                .vars = {{"enable_thinking", jinja::Value(false)}}};
  auto text = r->render(ms, o);
  ASSERT_TRUE(text.ok()) << text.message();
  EXPECT_EQ(*text, "[f]user:go;assistant:ok<hmm>;assistant:-{\"x\": 1};tool:42#c1/f;nothink");
  // A hand-written family cannot take tools or switches: an error, not a silent drop.
  auto chatml = ChatTemplate::by_name("chatml");
  EXPECT_FALSE(chatml->render(ms, o).ok());
}

TEST(ChatResolve, AJinjaFileOverridesTheModel) {
  const std::string dir = testing::make_temp_dir();
  const std::string path = dir + "/mine.jinja";
  std::ofstream(path) << "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}";
  auto r = ChatTemplate::resolve(path, "{{ 'the model template' }}");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->name(), path);
  EXPECT_EQ(r->spec(), path);
  EXPECT_EQ(*r->render({{"user", "x"}}, true), "[user] x\n");
  auto missing = ChatTemplate::resolve(dir + "/none.jinja", "");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("none.jinja"), std::string::npos);
  std::ofstream(dir + "/bad.jinja") << "\n{% if %}";
  auto bad = ChatTemplate::resolve(dir + "/bad.jinja", "");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("line 2"), std::string::npos) << bad.message();
  std::filesystem::remove_all(dir);
}

TEST(ChatResolve, UnknownTemplatesAndRolesAreClearErrors) {
  auto a = ChatTemplate::resolve("klingon", "");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.message().find("unknown chat template 'klingon'"), std::string::npos);
  // A model template the renderer cannot parse: the error names the field (each front-end
  // spells it), the line and the way out.
  auto b = ChatTemplate::resolve("", "{{ messages | tojson }}\n{% for %}");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.message().rfind("chat template: ", 0), 0u) << b.message();
  EXPECT_NE(b.message().find("line 2"), std::string::npos) << b.message();
  auto c = ChatTemplate::resolve("", "");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.message().find("no chat template"), std::string::npos);
  auto r = ChatTemplate::resolve("chatml", "");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->render_prompt({{"wizard", "x"}}).ok());
  EXPECT_FALSE(r->render_prompt({}).ok());
  // The model's template decides what it accepts: its raise_exception is the error.
  auto g = ChatTemplate::resolve(
      "", "{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}"
          "{% endif %}ok");
  ASSERT_TRUE(g.ok());
  auto e = g->render_prompt({{"system", "x"}, {"user", "y"}});
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.message(), "chat template model: line 1, column 56: System role not supported");
}

}  // namespace
}  // namespace tova::tok
