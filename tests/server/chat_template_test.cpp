// The chat endpoint's renderer: ChatML renders a 3-message conversation to the exact expected
// string; unknown templates and roles are clear errors.
#include <gtest/gtest.h>

#include "chat_template.h"

namespace tova::server {
namespace {

TEST(ChatTemplate, ChatMlRendersThreeMessagesExactly) {
  auto r = make_chat_renderer("chatml", "");
  ASSERT_TRUE(r.ok()) << r.message();
  auto text = (*r)->render({{"system", "Be brief."}, {"user", "Hi!"}, {"assistant", "Hello."}});
  ASSERT_TRUE(text.ok()) << text.message();
  EXPECT_EQ(*text,
            "<|im_start|>system\nBe brief.<|im_end|>\n"
            "<|im_start|>user\nHi!<|im_end|>\n"
            "<|im_start|>assistant\nHello.<|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ChatTemplate, DetectsChatMlFromTheModelTemplate) {
  auto r = make_chat_renderer(
      "", "{% for m in messages %}<|im_start|>{{m.role}}\n{{m.content}}<|im_end|>{% endfor %}");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ((*r)->name(), "chatml");
}

TEST(ChatTemplate, UnknownTemplatesAndRolesAreClearErrors) {
  auto a = make_chat_renderer("klingon", "");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.message().find("unknown chat template 'klingon'"), std::string::npos);
  auto b = make_chat_renderer("", "{{ messages | tojson }} <|weird|>");
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.message().find("--chat-template"), std::string::npos);
  auto c = make_chat_renderer("", "");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.message().find("no chat template"), std::string::npos);
  auto r = make_chat_renderer("chatml", "");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE((*r)->render({{"wizard", "x"}}).ok());
  EXPECT_FALSE((*r)->render({}).ok());
}

}  // namespace
}  // namespace tova::server
