// Harness: the Jinja renderer (src/jinja/) on arbitrary template text. The whole input is the
// template (so real chat templates are seeds as they are: scripts/fuzz.sh adds
// $TOVA_SHARED_DIR/templates to the seed corpus); a checksum of it picks the switches
// (add_generation_prompt, tools, enable_thinking). It is parsed and rendered with a conversation
// of every message kind under small limits: a hostile template must end in an error (non-empty)
// within the limits, never a crash, hang or blow-up; rendering is deterministic (twice the same).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "jinja/json.h"
#include "jinja/template.h"

namespace {

using tova::jinja::Value;

const Value& conversation() {
  static const Value v = tova::jinja::from_json(nlohmann::ordered_json::parse(R"({
    "bos_token": "<s>", "eos_token": "</s>",
    "messages": [
      {"role": "system", "content": "Be brief. /think"},
      {"role": "user", "content": "Weather in Zürich? 🙂"},
      {"role": "assistant", "content": null, "reasoning_content": "need a tool",
       "tool_calls": [{"id": "call12345", "type": "function",
                       "function": {"name": "get_weather", "arguments": {"location": "Zürich"}}}]},
      {"role": "tool", "tool_call_id": "call12345", "name": "get_weather", "content": "12 C"},
      {"role": "assistant", "content": "<think>\nok\n</think>\n\nIt is 12 C."},
      {"role": "user", "content": [{"type": "text", "text": "thanks"}]}
    ],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "d",
               "parameters": {"type": "object", "properties": {"location": {"type": "string"}},
                              "required": ["location"]}}}]
  })"));
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view src(reinterpret_cast<const char*>(data), size);
  auto t = tova::jinja::Template::parse(src);
  if (!t.ok()) {
    if (t.message().empty()) __builtin_trap();
    return 0;
  }
  uint32_t sum = 0;
  for (size_t i = 0; i < size; ++i) sum = sum * 31 + data[i];
  Value ctx = Value::dict(conversation().dict_data().items);
  ctx.mutable_dict().set("add_generation_prompt", Value((sum & 1) != 0));
  if (sum & 2) ctx.mutable_dict().set("tools", Value::undefined());
  if (sum & 4) ctx.mutable_dict().set("enable_thinking", Value((sum & 8) != 0));
  const tova::jinja::RenderOptions o{
      .limits = {.max_steps = 200000, .max_output_bytes = 1 << 20, .max_items = 1 << 16,
                 .max_depth = 400},
      .now = 1738411200};
  auto a = t->render(ctx, o);
  auto b = t->render(ctx, o);
  if (a.ok() != b.ok()) __builtin_trap();
  if (a.ok() && *a != *b) __builtin_trap();
  if (!a.ok() && (a.message().empty() || a.message() != b.message())) __builtin_trap();
  if (a.ok() && a->size() > (1u << 20)) __builtin_trap();
  return 0;
}
