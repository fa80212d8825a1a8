// The reasoning parsers (include/tova/reasoning.h) on the prompts the real templates render
// (../shared/templates: Qwen3, Qwen3.5, DeepSeek-R1, gpt-oss, Gemma 4) and answers written as those
// models write them, fed whole, byte by byte and in every pair of pieces: the split never
// changes the result.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "test_data.h"
#include "tokenizer/chat_template.h"
#include "tova/reasoning.h"

namespace tova {
namespace {

std::string read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The generation prompt of `file` for one user message, with template switches.
std::string prompt_of(const char* file, std::vector<std::pair<std::string, jinja::Value>> vars = {},
                      std::vector<ChatMessage> history = {}) {
  const std::string text = read(testing::shared_path(std::string("templates/") + file));
  EXPECT_FALSE(text.empty()) << file;
  auto t = tok::ChatTemplate::from_jinja(text, "<s>", "</s>", file);
  EXPECT_TRUE(t.ok()) << t.message();
  if (!t.ok()) return {};
  history.push_back({"user", "What is 2+2?"});
  auto r = t->render(history, tok::ChatOptions{.add_generation_prompt = true, .vars = vars});
  EXPECT_TRUE(r.ok()) << r.message();
  return r.ok() ? *r : std::string();
}

ReasoningFormat format_of(const char* file) {
  return reasoning_format_of_template(read(testing::shared_path(std::string("templates/") + file)));
}

// `answer` split at every byte and at every pair of cut points gives `want`.
void expect_split(ReasoningFormat f, const std::string& prompt, const std::string& answer,
                  const TurnText& want) {
  const TurnText whole = split_reasoning(f, prompt, answer);
  EXPECT_EQ(whole.reasoning, want.reasoning);
  EXPECT_EQ(whole.content, want.content);
  auto run = [&](const std::vector<size_t>& cuts) {
    ReasoningParser p(f, prompt);
    TurnText got;
    size_t at = 0;
    for (size_t c : cuts) {
      TurnText t = p.push(std::string_view(answer).substr(at, c - at));
      got.reasoning += t.reasoning;
      got.content += t.content;
      at = c;
    }
    TurnText t = p.push(std::string_view(answer).substr(at));
    got.reasoning += t.reasoning;
    got.content += t.content;
    t = p.finish();
    got.reasoning += t.reasoning;
    got.content += t.content;
    return got;
  };
  std::vector<size_t> bytes;
  for (size_t i = 1; i < answer.size(); ++i) bytes.push_back(i);
  const TurnText b = run(bytes);
  EXPECT_EQ(b.reasoning, want.reasoning) << "byte by byte";
  EXPECT_EQ(b.content, want.content) << "byte by byte";
  for (size_t i = 0; i <= answer.size(); ++i) {
    for (size_t j = i; j <= answer.size(); ++j) {
      const TurnText t = run({i, j});
      ASSERT_EQ(t.reasoning, want.reasoning) << "cut at " << i << ", " << j;
      ASSERT_EQ(t.content, want.content) << "cut at " << i << ", " << j;
    }
  }
}

TEST(Reasoning, FormatsOfTheRealTemplates) {
  TOVA_REQUIRE_SHARED();
  EXPECT_EQ(format_of("Qwen-Qwen3-0.6B.jinja"), ReasoningFormat::kThink);
  EXPECT_EQ(format_of("Qwen3.5-4B.jinja"), ReasoningFormat::kThink);
  EXPECT_EQ(format_of("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"), ReasoningFormat::kThink);
  EXPECT_EQ(format_of("HuggingFaceTB-SmolLM3-3B.jinja"), ReasoningFormat::kThink);
  EXPECT_EQ(format_of("openai-gpt-oss-120b.jinja"), ReasoningFormat::kHarmony);
  EXPECT_EQ(format_of("google-gemma-4-31B-it.jinja"), ReasoningFormat::kGemma4);
  EXPECT_EQ(format_of("google-gemma-2-2b-it.jinja"), ReasoningFormat::kNone);
  EXPECT_EQ(format_of("meta-llama-Llama-3.1-8B-Instruct.jinja"), ReasoningFormat::kNone);
  EXPECT_EQ(format_of("Qwen-Qwen2.5-7B-Instruct.jinja"), ReasoningFormat::kNone);
  ReasoningFormat f = ReasoningFormat::kNone;
  EXPECT_TRUE(parse_reasoning_format("harmony", f));
  EXPECT_EQ(f, ReasoningFormat::kHarmony);
  EXPECT_TRUE(parse_reasoning_format("gemma4", f));
  EXPECT_EQ(f, ReasoningFormat::kGemma4);
  EXPECT_EQ(reasoning_format_name(ReasoningFormat::kGemma4), "gemma4");
  EXPECT_FALSE(parse_reasoning_format("deepseek", f));
}

// Qwen3 writes the block itself: the prompt ends with "<|im_start|>assistant\n".
TEST(Reasoning, Qwen3WritesItsBlock) {
  TOVA_REQUIRE_SHARED();
  const std::string prompt = prompt_of("Qwen-Qwen3-0.6B.jinja");
  ASSERT_TRUE(prompt.ends_with("<|im_start|>assistant\n")) << prompt;
  EXPECT_FALSE(ReasoningParser(ReasoningFormat::kThink, prompt).in_reasoning());
  expect_split(ReasoningFormat::kThink, prompt,
               "<think>\nThe user asks 2+2. That is 4.\n</think>\n\nIt is **4**.",
               {.reasoning = "The user asks 2+2. That is 4.", .content = "It is **4**."});
  // An answer without a block is content as it is (leading whitespace included).
  expect_split(ReasoningFormat::kThink, prompt, "  4 <think> is a tag",
               {.reasoning = "", .content = "  4 <think> is a tag"});
  // Cut off inside the block (max_tokens): what came is reasoning.
  expect_split(ReasoningFormat::kThink, prompt, "<think>\nLet me see </thi",
               {.reasoning = "Let me see </thi", .content = ""});
  // A "<" that is not the tag.
  expect_split(ReasoningFormat::kThink, prompt, "<thinking>",
               {.reasoning = "", .content = "<thinking>"});
}

// enable_thinking=false: the template writes an empty block; the answer is content.
TEST(Reasoning, Qwen3WithThinkingOff) {
  TOVA_REQUIRE_SHARED();
  const std::string prompt = prompt_of("Qwen-Qwen3-0.6B.jinja", {{"enable_thinking", false}});
  ASSERT_TRUE(prompt.ends_with("<think>\n\n</think>\n\n")) << prompt;
  EXPECT_FALSE(ReasoningParser(ReasoningFormat::kThink, prompt).in_reasoning());
  expect_split(ReasoningFormat::kThink, prompt, "It is 4.",
               {.reasoning = "", .content = "It is 4."});
}

// Qwen3.5 and DeepSeek-R1 open the block in the prompt: the answer starts inside it.
TEST(Reasoning, TemplatesThatOpenTheBlock) {
  TOVA_REQUIRE_SHARED();
  for (const char* file : {"Qwen3.5-4B.jinja", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"}) {
    SCOPED_TRACE(file);
    const std::string prompt = prompt_of(file, {{"enable_thinking", true}});
    ASSERT_TRUE(prompt.ends_with("<think>\n")) << prompt;
    EXPECT_TRUE(ReasoningParser(ReasoningFormat::kThink, prompt).in_reasoning());
    expect_split(ReasoningFormat::kThink, prompt, "Two and two.\n\n</think>\n\nFour.",
                 {.reasoning = "Two and two.", .content = "Four."});
  }
  // Qwen3.5 with thinking off: an empty block in the prompt, content only.
  const std::string off = prompt_of("Qwen3.5-4B.jinja", {{"enable_thinking", false}});
  ASSERT_TRUE(off.ends_with("<think>\n\n</think>\n\n")) << off;
  expect_split(ReasoningFormat::kThink, off, "Four.", {.reasoning = "", .content = "Four."});
}

// gpt-oss: the prompt ends with "<|start|>assistant"; the answer is an analysis message, then
// the final one. Written with <|end|> (our stream renders it) and without (llama.cpp's).
TEST(Reasoning, HarmonyChannels) {
  TOVA_REQUIRE_SHARED();
  const std::string prompt = prompt_of("openai-gpt-oss-120b.jinja", {{"reasoning_effort", "high"}});
  ASSERT_TRUE(prompt.ends_with("<|start|>assistant")) << prompt;
  EXPECT_NE(prompt.find("Reasoning: high"), std::string::npos);
  const TurnText want{.reasoning = "User asks 2+2. Answer 4.", .content = "2 + 2 = 4."};
  expect_split(ReasoningFormat::kHarmony, prompt,
               "<|channel|>analysis<|message|>User asks 2+2. Answer 4.<|end|>"
               "<|start|>assistant<|channel|>final<|message|>2 + 2 = 4.<|return|>",
               want);
  expect_split(ReasoningFormat::kHarmony, prompt,
               "<|channel|>analysis<|message|>User asks 2+2. Answer 4."
               "<|start|>assistant<|channel|>final<|message|>2 + 2 = 4.",
               want);
  // A final answer only, and a preamble (commentary to no one) as content.
  expect_split(ReasoningFormat::kHarmony, prompt, "<|channel|>final<|message|>4",
               {.reasoning = "", .content = "4"});
  expect_split(ReasoningFormat::kHarmony, prompt,
               "<|channel|>commentary<|message|>Checking.<|end|><|start|>assistant<|channel|>"
               "final<|message|>4",
               {.reasoning = "", .content = "Checking.4"});
  // Cut off in the analysis: reasoning; cut off in a header: nothing of it is text.
  expect_split(ReasoningFormat::kHarmony, prompt, "<|channel|>analysis<|message|>Hmm <|en",
               {.reasoning = "Hmm <|en", .content = ""});
  expect_split(ReasoningFormat::kHarmony, prompt,
               "<|channel|>analysis<|message|>a<|end|><|start|>assistant<|chan",
               {.reasoning = "a", .content = ""});
  // A model that writes no header at all: its text is content.
  expect_split(ReasoningFormat::kHarmony, prompt, "just text",
               {.reasoning = "", .content = "just text"});
}

// A tool call (a message with a recipient) stays in the content as written, for a tool-call
// parser.
TEST(Reasoning, HarmonyToolCallKeptAsWritten) {
  TOVA_REQUIRE_SHARED();
  const std::string prompt = prompt_of("openai-gpt-oss-120b.jinja");
  const std::string call =
      "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
      "{\"city\":\"Paris\"}";
  expect_split(ReasoningFormat::kHarmony, prompt,
               "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant" + call,
               {.reasoning = "Need weather.", .content = "<|start|>assistant" + call});
}

// History: an earlier assistant turn's reasoning given back (reasoning_content) is rendered as
// each template does it: Qwen3 drops it from turns before the last user message.
TEST(Reasoning, HistoryAsTheTemplateExpects) {
  TOVA_REQUIRE_SHARED();
  ChatMessage a{"assistant", "Four."};
  a.reasoning_content = "Two and two.";
  const std::string qwen = prompt_of("Qwen-Qwen3-0.6B.jinja", {}, {{"user", "2+2?"}, a});
  EXPECT_EQ(qwen.find("Two and two."), std::string::npos) << qwen;
  EXPECT_NE(qwen.find("Four."), std::string::npos);
  // gpt-oss reads it as `thinking`, and keeps it only in the middle of a tool-calling turn: a
  // finished turn is its final message alone.
  const std::string oss = prompt_of("openai-gpt-oss-120b.jinja", {}, {{"user", "2+2?"}, a});
  EXPECT_EQ(oss.find("Two and two."), std::string::npos) << oss;
  EXPECT_NE(oss.find("<|channel|>final<|message|>Four.<|end|>"), std::string::npos) << oss;
}

// Gemma 4: with thinking on, the system turn starts with <|think|> and the model writes its
// thought channel, "<|channel>thought\n...<channel|>", then the answer; with thinking off the
// template writes an empty channel at the end of the prompt and the answer is content.
TEST(Reasoning, Gemma4ThoughtChannel) {
  TOVA_REQUIRE_SHARED();
  const char* file = "google-gemma-4-31B-it.jinja";
  const std::string on = prompt_of(file, {{"enable_thinking", true}});
  ASSERT_TRUE(on.ends_with("<|turn>model\n")) << on;
  EXPECT_NE(on.find("<|turn>system\n<|think|>"), std::string::npos) << on;
  EXPECT_FALSE(ReasoningParser(ReasoningFormat::kGemma4, on).in_reasoning());
  expect_split(ReasoningFormat::kGemma4, on,
               "<|channel>thought\nThe user asks 2+2. That is 4.\n<channel|>It is **4**.",
               {.reasoning = "The user asks 2+2. That is 4.", .content = "It is **4**."});
  // No channel: content as it is. A channel of another name, or the tag later: content.
  expect_split(ReasoningFormat::kGemma4, on, " 4 <|channel>thought x",
               {.reasoning = "", .content = " 4 <|channel>thought x"});
  expect_split(ReasoningFormat::kGemma4, on, "<|channel>though",
               {.reasoning = "", .content = "<|channel>though"});
  expect_split(ReasoningFormat::kGemma4, on, "<|channel>final\nx",
               {.reasoning = "", .content = "<|channel>final\nx"});
  // Cut off inside the channel (max_tokens): what came is reasoning.
  expect_split(ReasoningFormat::kGemma4, on, "<|channel>thought\nLet me see <chan",
               {.reasoning = "Let me see <chan", .content = ""});
  // Thinking off (the template's default): the empty channel closes in the prompt.
  for (const std::string& off : {prompt_of(file, {{"enable_thinking", false}}), prompt_of(file)}) {
    ASSERT_TRUE(off.ends_with("<|turn>model\n<|channel>thought\n<channel|>")) << off;
    EXPECT_EQ(off.find("<|think|>"), std::string::npos) << off;
    EXPECT_FALSE(ReasoningParser(ReasoningFormat::kGemma4, off).in_reasoning());
    expect_split(ReasoningFormat::kGemma4, off, "It is 4.",
                 {.reasoning = "", .content = "It is 4."});
  }
  // A prompt that ends inside the channel (an answer continued): the answer starts inside it.
  const std::string inside = on + "<|channel>thought\n";
  EXPECT_TRUE(ReasoningParser(ReasoningFormat::kGemma4, inside).in_reasoning());
  expect_split(ReasoningFormat::kGemma4, inside, "Two and two.\n<channel|>\nFour.",
               {.reasoning = "Two and two.", .content = "Four."});
  // History: a finished turn's reasoning is dropped (the template keeps it only beside the tool
  // calls of the turn in progress), and a thought channel left in its content is stripped.
  ChatMessage a{"assistant", "<|channel>thought\nAdd.<channel|>Four."};
  a.reasoning_content = "Two and two.";
  const std::string h = prompt_of(file, {{"enable_thinking", true}}, {{"user", "2+2?"}, a});
  EXPECT_EQ(h.find("Two and two."), std::string::npos) << h;
  EXPECT_EQ(h.find("Add."), std::string::npos) << h;
  EXPECT_NE(h.find("<|turn>model\nFour.<turn|>"), std::string::npos) << h;
}

TEST(Reasoning, NoneIsAllContent) {
  expect_split(ReasoningFormat::kNone, "", "<think>a</think>b",
               {.reasoning = "", .content = "<think>a</think>b"});
  EXPECT_TRUE(reasoning_special_texts(ReasoningFormat::kThink).empty());
  EXPECT_EQ(reasoning_special_texts(ReasoningFormat::kHarmony).size(), 5u);
  EXPECT_EQ(reasoning_special_texts(ReasoningFormat::kGemma4),
            (std::vector<std::string>{"<|channel>", "<channel|>"}));
}

}  // namespace
}  // namespace tova
