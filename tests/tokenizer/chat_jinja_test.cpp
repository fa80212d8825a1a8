// The model's own template through the Jinja renderer against the hand-written families that
// stand for it (which remain for --chat-template NAME and files without a template): on the
// conversations those families handle, the same prompt string. Where they part, the Jinja
// rendering is the right one (tests/jinja checks it against python3-jinja2); the cases are named.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "jinja/json.h"
#include "test_data.h"
#include "tokenizer/chat_template.h"

namespace tova::tok {
namespace {

std::string read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

struct Pair {
  const char* family;
  const char* file;
  const char* bos;
  const char* eos;
};

const Pair kPairs[] = {
    {"qwen2.5", "Qwen-Qwen2.5-7B-Instruct.jinja", "", "<|im_end|>"},
    {"qwen3", "Qwen-Qwen3-0.6B.jinja", "", "<|im_end|>"},
    {"llama3.1", "meta-llama-Llama-3.1-8B-Instruct.jinja", "<|begin_of_text|>", "<|eot_id|>"},
    {"gemma", "google-gemma-2-2b-it.jinja", "<bos>", "<eos>"},
    {"phi3", "microsoft-Phi-3.5-mini-instruct.jinja", "<s>", "<|endoftext|>"},
};

const std::vector<std::vector<ChatMessage>> kConversations = {
    {{"user", "Hi!"}},
    {{"system", "Be brief."}, {"user", "Hi!"}, {"assistant", "Hello."}, {"user", "Bye?"}},
    {{"user", "a"}, {"assistant", "b"}, {"user", "c"}},
    {{"user", "  padded  "}, {"assistant", "\nx\n"}, {"user", "two\nlines"}},
    {{"user", "q"}, {"assistant", "<think>\nsome thought\n</think>\n\nanswer"}, {"user", "q2"}},
};

TEST(ChatJinja, TheModelsTemplateEqualsItsHandWrittenFamily) {
  TOVA_REQUIRE_SHARED();
  for (const Pair& p : kPairs) {
    SCOPED_TRACE(p.file);
    const std::string text = read(testing::shared_path(std::string("templates/") + p.file));
    ASSERT_FALSE(text.empty());
    auto jinja = ChatTemplate::resolve("", text, p.bos, p.eos);
    ASSERT_TRUE(jinja.ok()) << jinja.message();
    EXPECT_TRUE(jinja->is_jinja());
    EXPECT_EQ(jinja->name(), "model");
    auto family = ChatTemplate::by_name(p.family);
    ASSERT_TRUE(family.ok());
    for (size_t i = 0; i < kConversations.size(); ++i) {
      const auto& conv = kConversations[i];
      if (std::string(p.family) == "gemma" && conv[0].role == "system") continue;  // no system role
      for (bool gen : {true, false}) {
        SCOPED_TRACE("conversation " + std::to_string(i) + (gen ? " + prompt" : ""));
        auto a = family->render(conv, gen);
        auto b = jinja->render(conv, gen);
        ASSERT_TRUE(a.ok()) << a.message();
        ASSERT_TRUE(b.ok()) << b.message();
        EXPECT_EQ(*a, *b);
      }
    }
  }
}

}  // namespace
}  // namespace tova::tok
