// Messages read from JSON (tova template --messages, tova chat's session note): a content part
// whose "type" is not a string is an error naming the message, not an exception (nlohmann-json's
// value("type", "") threw type_error 302 out of the library; issue 49).
#include "tokenizer/chat_messages.h"

#include <gtest/gtest.h>

namespace tova::tok {
namespace {

TEST(ChatMessages, APartWhoseTypeIsNotAStringIsAnError) {
  for (const char* text : {R"([{"role": "user", "content": [{"type": 1, "text": "x"}]}])",
                           R"([{"role": "user", "content": [{"type": null, "text": "x"}]}])",
                           R"([{"role": "user", "content": [{"text": "x"}]}])"}) {
    auto r = chat_messages_from_json(nlohmann::ordered_json::parse(text));
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.message().find("messages[0].content"), std::string::npos) << r.message();
  }
  auto ok = chat_messages_from_json(nlohmann::ordered_json::parse(
      R"([{"role": "user", "content": [{"type": "text", "text": "x"}]}])"));
  ASSERT_TRUE(ok.ok()) << ok.message();
  EXPECT_EQ((*ok)[0].content, "x");
}

}  // namespace
}  // namespace tova::tok
