// tova template: a conversation rendered by a chat template (a .jinja file, a family, the model's
// own) printed exactly; equal to python3-jinja2 on a real template (when installed); one-line
// errors for bad files and for what a template raises. And tova chat on a .jinja file.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "cli_util.h"
#include "test_data.h"

namespace tova::testing {
namespace {

std::string write(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  return path;
}

const char* kMessages = R"([
  {"role": "system", "content": "Use tools."},
  {"role": "user", "content": "Weather in Zürich?"},
  {"role": "assistant", "content": "", "tool_calls": [{"id": "call12345", "type": "function",
    "function": {"name": "get_weather", "arguments": {"location": "Zürich"}}}]},
  {"role": "tool", "tool_call_id": "call12345", "name": "get_weather", "content": "12 C"}
])";
const char* kTools = R"([{"type": "function", "function": {"name": "get_weather",
  "description": "Current weather.", "parameters": {"type": "object",
  "properties": {"location": {"type": "string"}}, "required": ["location"]}}}])";

TEST(TemplateCli, RendersARealTemplateAsPythonJinja2Does) {
  TOVA_REQUIRE_SHARED();
  const std::string dir = make_temp_dir();
  const std::string tmpl = shared_path("templates/Qwen-Qwen3-0.6B.jinja");
  const std::string m = write(dir, "m.json", kMessages);
  const std::string t = write(dir, "t.json", kTools);
  const auto r = run_tova("template --template " + tmpl + " --messages " + m + " --tools " + t +
                          " --var enable_thinking=false");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\""),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("<tool_response>\n12 C\n</tool_response>"), std::string::npos) << r.out;
  EXPECT_TRUE(r.out.ends_with("<|im_start|>assistant\n<think>\n\n</think>\n\n")) << r.out;
  const auto no_gen = run_tova("template --template " + tmpl + " --messages " + m +
                               " --no-generation-prompt");
  ASSERT_EQ(no_gen.code, 0) << no_gen.err;
  EXPECT_TRUE(no_gen.out.ends_with("</tool_response><|im_end|>\n")) << no_gen.out;
  // The same conversation through python3-jinja2 (scripts/jinja_reference.py), when installed.
  if (std::system("/usr/bin/python3 -c 'import jinja2' >/dev/null 2>&1") == 0) {
    const std::string req = write(
        dir, "req.json",
        std::string(R"({"cases": [{"context": {"bos_token": "", "eos_token": "", "messages": )") +
            kMessages + R"(, "tools": )" + kTools +
            R"(, "add_generation_prompt": true, "enable_thinking": false}}]})");
    const std::string cmd = "/usr/bin/python3 " + std::string(TOVA_TEST_DATA_DIR) +
                            "/../../scripts/jinja_reference.py " + tmpl + " < " + req + " > " +
                            dir + "/ref.json";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    const std::string ref = slurp(dir + "/ref.json");
    // The reference's JSON string of the text, and ours written the same way.
    std::string ours = "[{\"ok\": true, \"text\": \"";
    for (char c : r.out) {
      if (c == '"' || c == '\\') ours += '\\';
      if (c == '\n') {
        ours += "\\n";
      } else {
        ours += c;
      }
    }
    ours += "\"}]";
    EXPECT_EQ(ref, ours);
  }
  std::system(("rm -rf " + dir).c_str());
}

TEST(TemplateCli, TheModelsTokensFamiliesAndErrors) {
  const std::string dir = make_temp_dir();
  const std::string m = write(dir, "m.json", R"([{"role": "user", "content": "hi"}])");
  // A .jinja file with -m: the model's BOS and EOS texts (the bundled model's are <s> and </s>).
  const std::string bos = write(dir, "bos.jinja", "{{ bos_token }}|{{ messages[0].content }}|{{ eos_token }}");
  const auto a = run_tova("template -m " + std::string(TOVA_BINARY_DIR) +
                          "/../assets/stories260K.gguf --template " + bos + " --messages " + m);
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(a.out, "<s>|hi|</s>");
  // A family by name.
  const auto b = run_tova("template --template chatml --messages " + m);
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(b.out, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  // --var as JSON, else as a string.
  const std::string v = write(dir, "v.jinja", "{{ a is number }} {{ b }} {{ c | tojson }}");
  const auto c = run_tova("template --template " + v + " --messages " + m +
                          " --var a=3 --var b=plain --var 'c={\"k\": [1, true]}'");
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_EQ(c.out, "True plain {\"k\": [1, true]}");
  // The bundled model has no template: a clear error.
  EXPECT_ONE_LINE_ERROR(run_tova("template --messages " + m), "no chat template");
  // What the template raises, with its line.
  const std::string raises =
      write(dir, "r.jinja", "\n{% if messages[0].role == 'user' %}{{ raise_exception('no users') }}{% endif %}");
  EXPECT_ONE_LINE_ERROR(run_tova("template --template " + raises + " --messages " + m),
                        "line 2, column 54: no users");
  // Bad input files.
  const std::string bad = write(dir, "bad.json", "[{\"role\": \"user\", \"contents\": \"x\"}]");
  EXPECT_ONE_LINE_ERROR(run_tova("template --template chatml --messages " + bad),
                        "'contents' is not supported");
  EXPECT_ONE_LINE_ERROR(run_tova("template --template chatml --messages " + dir + "/none.json"),
                        "none.json");
  EXPECT_ONE_LINE_ERROR(run_tova("template --template " + dir + "/none.jinja --messages " + m),
                        "none.jinja");
  std::system(("rm -rf " + dir).c_str());
}

TEST(TemplateCli, ChatRendersAJinjaFile) {
  const std::string dir = make_temp_dir();
  const std::string t = write(dir, "c.jinja",
                              "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
                              "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}"
                              "<|im_start|>assistant\n{% endif %}");
  const auto a = run_tova("chat -t 1 --temp 0 -n 8 --chat-template " + t, "hello\n/quit\n");
  const auto b = run_tova("chat -t 1 --temp 0 -n 8 --chat-template chatml", "hello\n/quit\n");
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(a.out, b.out);  // the same prompt as the chatml family, so the same greedy answer
  std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace tova::testing
