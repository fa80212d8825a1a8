// The turn boundary (tova/turn_checkpoint.h) with the real Qwen3.5 template on the qwen35
// fixture's tokenizer: this turn's prompt ends in "<think>\n\n</think>\n\n" (or "<think>\n"), the
// next turn renders this turn's answer without it, so the two prompts part right after
// "<|im_start|>assistant\n"; the boundary is exactly there, and the next turn's real prompt
// (any answer, any question) begins with the prompt's tokens up to it and no further. A
// template that renders the answer where the prompt left off (chatml) parts at the prompt's end.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "test_data.h"
#include "tova/engine.h"
#include "tova/turn_checkpoint.h"

namespace tova {
namespace {

const Engine& turn_checkpoint_qwen35() {
  static const std::unique_ptr<Engine> e = [] {
    auto r = Engine::load(
        {.model_path = std::string(TOVA_TEST_DATA_DIR) + "/arch/qwen35-f32.gguf", .n_threads = 1});
    EXPECT_TRUE(r.ok()) << r.message();
    return std::move(*r);
  }();
  return *e;
}

// The conversation's prompt tokens under template `name` with its thinking switch (if any).
std::vector<int32_t> turn_checkpoint_tokens(const std::string& name,
                                            const std::vector<ChatMessage>& m, int thinking) {
  ChatOptions o{.chat_template = name, .add_generation_prompt = true};
  if (thinking >= 0) o.vars.emplace_back("enable_thinking", thinking ? "true" : "false");
  auto tokens = turn_checkpoint_qwen35().chat_prompt(m, o);
  EXPECT_TRUE(tokens.ok()) << tokens.message();
  return tokens.ok() ? *tokens : std::vector<int32_t>{};
}

bool turn_checkpoint_starts_with(const std::vector<int32_t>& a, std::span<const int32_t> p) {
  return a.size() >= p.size() && std::equal(p.begin(), p.end(), a.begin());
}

TEST(TurnCheckpoint, Qwen35PartsRightAfterTheAssistantHeader) {
  TOVA_REQUIRE_SHARED();
  const Engine& e = turn_checkpoint_qwen35();
  const std::string t = testing::shared_path("templates/Qwen3.5-4B.jinja");
  for (int thinking : {0, 1}) {
    SCOPED_TRACE(thinking ? "thinking" : "not thinking");
    std::vector<ChatMessage> m = {{.role = "system", .content = "Be brief."},
                                       {.role = "user", .content = "What is 2 + 2?"}};
    for (int turn = 0; turn < 3; ++turn) {
      const auto prompt = turn_checkpoint_tokens(t, m, thinking);
      const auto probe = turn_checkpoint_tokens(t, next_turn_probe(m), thinking);
      const int64_t b = turn_boundary(prompt, probe);
      ASSERT_GT(b, 0);
      ASSERT_LT(b, static_cast<int64_t>(prompt.size()));
      const std::span<const int32_t> kept(prompt.data(), static_cast<size_t>(b));
      auto text = e.detokenize(kept);
      ASSERT_TRUE(text.ok());
      EXPECT_TRUE(text->ends_with("<|im_end|>\n<|im_start|>assistant\n")) << *text;
      // The next turn, whatever the answer (with or without its thinking) and the question.
      m.push_back({.role = "assistant",
                   .content = turn == 1 ? "<think>\nadding\n</think>\n\nFour." : "It is 4."});
      m.push_back({.role = "user", .content = "And " + std::to_string(turn) + " more?"});
      const auto next = turn_checkpoint_tokens(t, m, thinking);
      EXPECT_TRUE(turn_checkpoint_starts_with(next, kept));
      EXPECT_FALSE(turn_checkpoint_starts_with(next, std::span<const int32_t>(prompt).first(b + 1)));
    }
  }
}

TEST(TurnCheckpoint, ATemplateThatRendersTheAnswerInPlacePartsAtThePromptsEnd) {
  const std::vector<ChatMessage> m = {{.role = "user", .content = "Hello"}};
  const auto prompt = turn_checkpoint_tokens("chatml", m, -1);
  const auto probe = turn_checkpoint_tokens("chatml", next_turn_probe(m), -1);
  EXPECT_EQ(turn_boundary(prompt, probe), static_cast<int64_t>(prompt.size()));
}

// lfm2 (gated short convolutions: recurrent states, as qwen35's) with the real LFM2 template,
// which renders an answer where the prompt left off (after "<|im_start|>assistant\n"): the
// boundary is the prompt's end, so the answer's own state serves the next turn, whose prompt
// begins with this one's tokens.
TEST(TurnCheckpoint, Lfm2PartsAtThePromptsEnd) {
  TOVA_REQUIRE_SHARED();
  auto e = Engine::load(
      {.model_path = std::string(TOVA_TEST_DATA_DIR) + "/arch/lfm2-f32.gguf", .n_threads = 1});
  ASSERT_TRUE(e.ok()) << e.message();
  const ChatOptions o{.chat_template = testing::shared_path("templates/LFM2-8B-A1B.jinja"),
                      .add_generation_prompt = true};
  std::vector<ChatMessage> m = {{.role = "system", .content = "Be brief."},
                                {.role = "user", .content = "What is 2 + 2?"}};
  const auto prompt = (*e)->chat_prompt(m, o);
  const auto probe = (*e)->chat_prompt(next_turn_probe(m), o);
  ASSERT_TRUE(prompt.ok() && probe.ok());
  EXPECT_EQ(turn_boundary(*prompt, *probe), static_cast<int64_t>(prompt->size()));
  m.push_back({.role = "assistant", .content = "It is 4."});
  m.push_back({.role = "user", .content = "And 2 more?"});
  const auto next = (*e)->chat_prompt(m, o);
  ASSERT_TRUE(next.ok());
  EXPECT_TRUE(turn_checkpoint_starts_with(*next, *prompt));
}

}  // namespace
}  // namespace tova
