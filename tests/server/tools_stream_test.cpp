// The server's tool-call stream: content goes out as soon as it cannot begin a call, byte by
// byte as a model writes it; the calls come at the end with ids, and no byte of content is sent
// twice or lost.
#include <gtest/gtest.h>

#include "tools.h"

namespace tova::server {
namespace {

ToolsRequest add_tool() {
  ToolsRequest t;
  t.definitions = {{.name = "add", .parameters = R"({"type": "object"})"}};
  return t;
}

TEST(ToolStream, ContentFirstThenCallsByteByByte) {
  const ToolsRequest tools = add_tool();
  const std::string text =
      "Let me add.\n<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 2}}\n</tool_call>";
  ToolStream s(ToolCallFormat::kHermes, &tools);
  std::string sent;
  for (const char c : text) {
    sent += s.feed(std::string_view(&c, 1));
    EXPECT_EQ(sent.find('<'), std::string::npos) << "a call's text was sent as content";
  }
  const AssistantTurn turn = s.finish();
  EXPECT_EQ(sent + turn.content, "Let me add.\n");
  ASSERT_EQ(turn.calls.size(), 2u);
  EXPECT_EQ(turn.calls[1].arguments, R"({"a":2})");
  EXPECT_TRUE(turn.calls[0].id.starts_with("call_"));
  EXPECT_NE(turn.calls[0].id, turn.calls[1].id);
}

TEST(ToolStream, TextThatOnlyLookedLikeACallIsSentAtTheEnd) {
  const ToolsRequest tools = add_tool();
  ToolStream s(ToolCallFormat::kHermes, &tools);
  std::string sent = s.feed("a <tool");
  EXPECT_EQ(sent, "a ");
  sent += s.feed("box> b");
  EXPECT_EQ(sent, "a <toolbox> b");
  sent += s.feed(" <tool_call>not json</tool_call>");
  const AssistantTurn turn = s.finish();
  EXPECT_TRUE(turn.calls.empty());
  EXPECT_EQ(sent + turn.content, "a <toolbox> b <tool_call>not json</tool_call>");
}

TEST(ToolStream, MistralIdsAreNineLettersOrDigits) {
  const std::string id = new_tool_call_id(ToolCallFormat::kMistral);
  EXPECT_EQ(id.size(), 9u);
  for (char c : id) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)));
}

}  // namespace
}  // namespace tova::server
