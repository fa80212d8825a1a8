// A hostile model through the server's answer path (issue 49): the pieces of
// --debug-hostile-output (hostile_output.h: broken UTF-8, half and nested markers, unclosed
// tags, JSON fragments, calls of every format with broken bytes, huge arguments) go through what
// the handlers do with a choice's text (http_server.cpp: answer_whole and StreamedAnswer):
// reasoning split (every reasoning format, the answer starting where each kind of prompt leaves
// it), tool calls taken apart (every tool-call format, and none), whole and streamed, two
// choices; each response object and each stream event is serialised as the server sends it
// and must be one JSON value (no exception, no 500); every call's arguments a JSON object, every
// string UTF-8. tests/server/client/hostile_test.mjs runs the same model through `tova serve`.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "access_log.h"
#include "codec.h"
#include "hostile_output.h"
#include "tools.h"
#include "tova/utf8.h"
#include "turn.h"

namespace tova::server {
namespace {

using nlohmann::json;

constexpr int kChoices = 2;
constexpr int kPieces = 16;

ToolsRequest tools_offered() {
  ToolsRequest t;
  t.tools = nlohmann::ordered_json::array();
  t.definitions = {
      {.name = "f", .parameters = R"({"type": "object", "properties": {"s": {"type": "string"}}})"},
      {.name = "g", .parameters = ""}};
  return t;
}

// One serialised answer or event, read back as a client would: one JSON value whose strings
// are UTF-8; the calls' arguments JSON objects.
json read_back(const std::string& text) {
  EXPECT_TRUE(is_valid_utf8(text));
  json j = json::parse(text, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << text.substr(0, 200);
  return j;
}

void check_calls(const json& calls, int& n_calls) {
  for (const json& c : calls) {
    ++n_calls;
    const json& fn = c["function"];
    // A stream sends a call's name in its first delta, its arguments in the next.
    if (fn.contains("name")) {
      ASSERT_TRUE(fn["name"].is_string());
    }
    if (!fn.contains("arguments") || fn["arguments"] == "") continue;
    const json args = json::parse(fn["arguments"].get<std::string>(), nullptr, false);
    EXPECT_TRUE(args.is_object()) << fn["arguments"];
  }
}

struct Counts {
  int answers = 0;
  int events = 0;
  int calls = 0;
  int with_reasoning = 0;
  int64_t bytes = 0;
};

// The whole answer of `n` choices, as answer_whole builds it.
void whole(const GenerationRequest& r, const ToolsRequest* tools, ToolCallFormat format,
           uint64_t seed, Counts& n) {
  const ResponseHead head{.chat = true, .id = "chatcmpl-x", .created = 1, .model = "m"};
  std::vector<Choice> choices(kChoices);
  for (int i = 0; i < kChoices; ++i) {
    TurnSplitter turn(r);
    Choice& c = choices[i];
    c.index = i;
    for (int step = 0; step < kPieces; ++step) {
      const std::string piece = hostile_piece(seed, seed + static_cast<uint64_t>(i), step);
      n.bytes += static_cast<int64_t>(piece.size());
      TurnText t = turn.push(piece);
      c.reasoning += t.reasoning;
      c.text += t.content;
    }
    TurnText rest = turn.finish();
    c.reasoning += rest.reasoning;
    c.text += rest.content;
    c.finish_reason = "length";
    if (tools != nullptr) {
      AssistantTurn a = take_apart(format, *tools, c.text);
      c.text = std::move(a.content);
      c.tool_calls = std::move(a.calls);
    }
  }
  const json j = read_back(
      to_json_text(completion_json(head, choices, usage_json(5, 2 * kPieces, 0), KvReport{})));
  ASSERT_EQ(j["choices"].size(), static_cast<size_t>(kChoices));
  for (const json& c : j["choices"]) {
    if (c["message"].contains("tool_calls")) check_calls(c["message"]["tool_calls"], n.calls);
    if (c["message"].contains("reasoning_content")) ++n.with_reasoning;
  }
  ++n.answers;
}

// The streamed answer, as StreamedAnswer's turn_chunks and encode_calls build its events.
void streamed(const GenerationRequest& r, const ToolsRequest* tools, ToolCallFormat format,
              uint64_t seed, Counts& n) {
  const ResponseHead head{.chat = true, .id = "chatcmpl-x", .created = 1, .model = "m"};
  std::string out;
  for (int i = 0; i < kChoices; ++i) {
    out += sse_event(chunk_json(head, i, "", nullptr, "", /*role_only=*/true));
  }
  for (int i = 0; i < kChoices; ++i) {
    TurnSplitter turn(r);
    ToolStream calls(format, tools);
    for (int step = 0; step <= kPieces; ++step) {
      const bool final = step == kPieces;
      const std::string piece =
          final ? std::string() : hostile_piece(seed, seed + static_cast<uint64_t>(i), step);
      TurnText t = turn.push(piece);
      if (final) {
        TurnText rest = turn.finish();
        t.reasoning += rest.reasoning;
        t.content += rest.content;
      }
      if (tools != nullptr) t.content = calls.feed(t.content);
      if (!t.reasoning.empty()) out += sse_event(reasoning_chunk_json(head, i, t.reasoning));
      if (!t.content.empty()) out += sse_event(chunk_json(head, i, t.content, nullptr, ""));
    }
    if (tools != nullptr) {
      AssistantTurn a = calls.finish();
      if (!a.content.empty()) out += sse_event(chunk_json(head, i, a.content, nullptr, ""));
      out += tool_call_events(a.calls, [&](const json& delta) {
        json c = chunk_json(head, i, "", nullptr, "");
        c["choices"][0]["delta"] = delta;
        return sse_event(c);
      });
    }
    json last = chunk_json(head, i, "", nullptr, "length");
    last["tova"] = kv_json(KvReport{});
    out += sse_event(last);
  }
  out += "data: [DONE]\n\n";
  // Every event one JSON value.
  size_t pos = 0;
  while (pos < out.size()) {
    ASSERT_TRUE(out.compare(pos, 6, "data: ") == 0);
    const size_t end = out.find("\n\n", pos);
    ASSERT_NE(end, std::string::npos);
    const std::string data = out.substr(pos + 6, end - pos - 6);
    pos = end + 2;
    if (data == "[DONE]") break;
    const json e = read_back(data);
    ASSERT_EQ(e["choices"].size(), 1u);
    const json& d = e["choices"][0]["delta"];
    if (d.contains("tool_calls")) check_calls(d["tool_calls"], n.calls);
    ++n.events;
  }
  EXPECT_EQ(pos, out.size());
  ++n.answers;
}

TEST(HostileModel, EveryFormatWholeAndStreamedAnswersJson) {
  Counts n;
  int formats = 0;
  uint64_t combos = 0;
  const ToolsRequest offered = tools_offered();
  // Where each kind of prompt leaves the answer: after a plain generation prompt, inside a
  // think block the template opened, in a harmony header, after Gemma 4's empty channel.
  const char* prompts[] = {"<|im_start|>assistant\n", "<|im_start|>assistant\n<think>\n",
                           "<|start|>assistant", "<start_of_turn>model\n<|channel>thought\n"};
  for (ReasoningFormat rf : {ReasoningFormat::kNone, ReasoningFormat::kThink,
                             ReasoningFormat::kHarmony, ReasoningFormat::kGemma4}) {
    for (ToolCallFormat tf : tool_call_formats()) {
      ++formats;
      // The forced-call grammar of the format compiles for these tools (the "with grammar"
      // requests of the HTTP test use it).
      if (tf != ToolCallFormat::kNone) {
        ToolsRequest forced = offered;
        forced.choice = "required";
        EXPECT_TRUE(std::holds_alternative<std::string>(forced_grammar(forced, tf)));
      }
      for (const char* prompt : prompts) {
        GenerationRequest r;
        r.reasoning = rf;
        r.prompt_text = prompt;
        const ToolsRequest* tools = tf == ToolCallFormat::kNone ? nullptr : &offered;
        // Two seeds per combination, in turn over all: piece 0 of choice i is whole turn
        // (seed + i) mod 9 of the generator (the reproducer among them), so every combination
        // meets 3-4 of them and every turn meets every format; later pieces differ by seed.
        for (int k = 0; k < 2; ++k) {
          const uint64_t seed = combos * 2 + static_cast<uint64_t>(k);
          whole(r, tools, tf, seed, n);
          streamed(r, tools, tf, seed, n);
        }
        ++combos;
      }
    }
  }
  // A record of every request: the access log's JSON line (a user field or an error message
  // holding broken bytes).
  AccessRecord rec{.id = "r\xFF",
                   .method = "POST",
                   .path = "/v1/chat/completions\xC3",
                   .status = 200,
                   .n = 1,
                   .user = "u\xE2\x82",
                   .error = hostile_piece(1, 1, 1)};
  read_back(format_access_json(rec));
  std::printf(
      "hostile model: %d answers (%d events), %d tool/reasoning format pairs x 4 "
      "prompts, %d calls, %d choices with reasoning, %lld hostile bytes, 0 exceptions\n",
      n.answers, n.events, formats, n.calls, n.with_reasoning, static_cast<long long>(n.bytes));
  EXPECT_EQ(n.answers, formats * 4 * 2 * 2);
  EXPECT_GT(n.calls, 0);
  EXPECT_GT(n.with_reasoning, 0);
}

// The reproducer of issue 49 through the server's whole answer: a 200's body with the call, its
// bytes replaced (before the fix, the parser threw and the handler answered 500).
TEST(HostileModel, TheReproducerIsACallWithItsBytesReplaced) {
  const ToolsRequest offered = tools_offered();
  AssistantTurn a = take_apart(ToolCallFormat::kQwen3Coder, offered, hostile_piece(0, 0, 0));
  ASSERT_EQ(a.calls.size(), 1u);
  Choice c{.text = a.content, .finish_reason = "tool_calls", .tool_calls = a.calls};
  const json j = read_back(to_json_text(completion_json(
      ResponseHead{.chat = true, .id = "x", .model = "m"}, {c}, usage_json(1, 1, 0), KvReport{})));
  const json& call = j["choices"][0]["message"]["tool_calls"][0]["function"];
  EXPECT_EQ(call["name"], "f");
  EXPECT_EQ(json::parse(call["arguments"].get<std::string>()),
            json({{"s", "1\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"}}));
}

}  // namespace
}  // namespace tova::server
