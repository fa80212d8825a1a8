// tova template: the prompt a conversation becomes under a chat template (a .jinja file, a
// family's name, or a model's own), printed exactly: for checking what the model sees.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <cstdio>

#include "commands.h"
#include "common.h"
#include "tova/chat.h"
#include "tova/engine.h"

namespace tova::cli {
namespace {

using json = nlohmann::ordered_json;

Result<json> read_json(const std::string& path) {
  TOVA_ASSIGN_OR_RETURN(std::string text, read_text_file(path));
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return make_error("{}: not valid JSON", path);
  return j;
}

// --var NAME=VALUE: VALUE as JSON when it is (true, 3, "x", [..]), else as a string.
Result<std::pair<std::string, std::string>> parse_var(const std::string& s) {
  const size_t eq = s.find('=');
  if (eq == std::string::npos || eq == 0) {
    return make_error("--var '{}': expected NAME=VALUE", s);
  }
  const std::string value = s.substr(eq + 1);
  json j = json::parse(value, nullptr, /*allow_exceptions=*/false);
  return std::pair{s.substr(0, eq), j.is_discarded() ? json(value).dump() : value};
}

}  // namespace

void add_template_command(CLI::App& app) {
  struct Flags {
    ModelFlags model;
    std::string tmpl;
    std::string messages;
    std::string tools;
    std::vector<std::string> vars;
    bool no_generation_prompt = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "template", "print the prompt a conversation becomes under a chat template (what the model "
                  "sees)");
  flags->model.add(*cmd);
  cmd->add_option("--template", flags->tmpl,
                  "a .jinja file or a family's name (" + chat_template_names() +
                      "); default: the model's own (-m)");
  cmd->add_option("--messages", flags->messages,
                  "JSON file: a list of messages (role, content, tool_calls, tool_call_id, name, "
                  "reasoning_content), or an object with \"messages\" (and \"tools\")")
      ->required();
  cmd->add_option("--tools", flags->tools, "JSON file: the OpenAI list of tools");
  cmd->add_option("--var", flags->vars,
                  "NAME=VALUE: a template variable (enable_thinking=false, reasoning_effort=high, "
                  "bos_token=...); VALUE is read as JSON when it is JSON, else as a string");
  cmd->add_flag("--no-generation-prompt", flags->no_generation_prompt,
                "add_generation_prompt=false (the prompt does not open the assistant's turn)");
  cmd->callback([flags] {
    const Flags& f = *flags;
    const json doc = or_fail(read_json(f.messages));
    const json& list = doc.is_object() && doc.contains("messages") ? doc["messages"] : doc;
    auto parsed = chat_messages_from_json(list.dump());
    if (!parsed.ok()) throw CLI::RuntimeError(fail(f.messages + ": " + parsed.message()));
    const std::vector<ChatMessage>& messages = *parsed;
    ChatOptions o{.chat_template = f.tmpl, .add_generation_prompt = !f.no_generation_prompt};
    if (!f.tools.empty()) {
      const json tools = or_fail(read_json(f.tools));
      if (!tools.is_array()) throw CLI::RuntimeError(fail(f.tools + ": expected a list of tools"));
      o.tools = tools.dump();
    } else if (doc.is_object() && doc.contains("tools")) {
      o.tools = doc["tools"].dump();
    }
    for (const std::string& v : f.vars) o.vars.push_back(or_fail(parse_var(v)));
    // A model only when one is named or no --template is given (its tokenizer's BOS/EOS texts
    // and its own template).
    const std::string text = [&] {
      if (!f.model.model.empty() || f.tmpl.empty()) {
        const auto engine = or_fail(f.model.load());
        if (f.tmpl.empty() && engine->chat_template_text().empty()) {
          // What the model sees is asked for: no fallback to ChatML here.
          throw CLI::RuntimeError(fail("the model has no chat template "
                                       "(tokenizer.chat_template); give --template NAME or a "
                                       ".jinja file"));
        }
        return or_fail(engine->chat_text(messages, o));
      }
      return or_fail(render_chat(messages, o));
    }();
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  });
}

}  // namespace tova::cli
