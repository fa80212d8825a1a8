// What a front-end asks of the chat templates: an override by name or the model's own template
// recognised (ChatTemplate::resolve), a conversation rendered with the answer opened
// (render_prompt); unknown templates and roles are clear errors.
#include <gtest/gtest.h>

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

TEST(ChatResolve, DetectsChatMlFromTheModelTemplate) {
  auto r = ChatTemplate::resolve(
      "", "{% for m in messages %}<|im_start|>{{m.role}}\n{{m.content}}<|im_end|>{% endfor %}");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->name(), "chatml");
  // The override wins over the model's template.
  auto o = ChatTemplate::resolve("llama3", "<|im_start|>");
  ASSERT_TRUE(o.ok()) << o.message();
  EXPECT_EQ(o->name(), "llama3");
}

TEST(ChatResolve, UnknownTemplatesAndRolesAreClearErrors) {
  auto a = ChatTemplate::resolve("klingon", "");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.message().find("unknown chat template 'klingon'"), std::string::npos);
  auto b = ChatTemplate::resolve("", "{{ messages | tojson }} <|weird|>");
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.message().find("--chat-template"), std::string::npos);
  auto c = ChatTemplate::resolve("", "");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.message().find("no chat template"), std::string::npos);
  auto r = ChatTemplate::resolve("chatml", "");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->render_prompt({{"wizard", "x"}}).ok());
  EXPECT_FALSE(r->render_prompt({}).ok());
}

}  // namespace
}  // namespace tova::tok
