// tova chat: a conversation in the terminal on one bounded Session, fed through the same batch
// scheduler as `run` and `serve`. Each turn feeds only its new tokens: the multi-state carries
// the conversation, so a long chat under a bounded policy costs the same per turn.
#include <fmt/format.h>

#include <cstdio>
#include <iostream>
#include <string>

#include "chat_template.h"
#include "commands.h"
#include "common.h"
#include "runtime/batch_scheduler.h"
#include "runtime/utf8_stream.h"

namespace tova::cli {

void add_chat_command(CLI::App& app) {
  struct Flags {
    ModelFlags model;
    CacheFlags cache;
    SamplingFlags sampling;
    std::string chat_template;
    std::string system;
    int n_predict = 256;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "chat", "chat in the terminal on one bounded session (/reset, /stats, /quit)");
  flags->model.add(*cmd);
  cmd->add_option("--chat-template", flags->chat_template,
                  "chat template (chatml); default: detected from the model");
  cmd->add_option("--system", flags->system, "a system message to start with");
  cmd->add_option("-n,--n-predict", flags->n_predict, "most tokens per answer")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 24));
  flags->sampling.add(*cmd);
  flags->cache.add(*cmd);
  cmd->callback([flags] {
    const Flags& f = *flags;
    auto cache = f.cache.options();
    if (!cache.ok()) throw CLI::RuntimeError(fail(cache.message()));
    auto engine = Engine::load({.model_path = f.model.model_path(),
                                .n_threads = f.model.n_threads(),
                                .model = f.model.options()});
    if (!engine.ok()) throw CLI::RuntimeError(fail(engine.message()));
    const Engine& e = **engine;
    std::string model_template;
    if (auto t = e.model().file().get_string("tokenizer.chat_template"); t.ok()) {
      model_template = *t;
    }
    auto renderer = server::make_chat_renderer(f.chat_template, model_template);
    if (!renderer.ok()) throw CLI::RuntimeError(fail(renderer.message()));
    auto session = e.new_session({.cache = *cache, .sampling = f.sampling.params()});
    if (!session.ok()) throw CLI::RuntimeError(fail(session.message()));
    Session& s = **session;
    runtime::BatchScheduler sched(e.model(), e.pool());
    Session* const one[] = {&s};
    const tok::Tokenizer& tk = *e.tokenizer();

    std::vector<server::ChatMessage> messages;
    if (!f.system.empty()) messages.push_back({"system", f.system});
    std::string consumed;  // the conversation text the session has been given so far
    std::string line;
    fmt::print(stderr, "tova chat ({}): /reset, /stats, /quit\n", cache->label());
    while (true) {
      fmt::print("> ");
      std::fflush(stdout);
      if (!std::getline(std::cin, line) || line == "/quit") break;
      if (line.empty()) continue;
      if (line == "/reset") {
        if (auto st = s.reset(); !st.ok()) throw CLI::RuntimeError(fail(st.message()));
        messages.resize(f.system.empty() ? 0 : 1);
        consumed.clear();
        fmt::print("(conversation reset)\n");
        continue;
      }
      if (line == "/stats") {
        print_kv_stats(runtime::kv_stats(s.state()));
        continue;
      }
      messages.push_back({"user", line});
      auto text = (*renderer)->render(messages);
      if (!text.ok()) throw CLI::RuntimeError(fail(text.message()));
      // Feed only what the conversation added since the last turn.
      if (consumed.empty() || text->compare(0, consumed.size(), consumed) != 0) {
        if (!consumed.empty()) {
          if (auto st = s.reset(); !st.ok()) throw CLI::RuntimeError(fail(st.message()));
        }
        s.queue(server::encode_chat_prompt(tk, *text));
      } else {
        s.queue(tk.encode(std::string_view(*text).substr(consumed.size()), false, true));
      }
      consumed = *text;
      std::string answer;
      runtime::Utf8Stream utf8;
      int32_t prev = s.history().back();
      for (int i = 0; i < f.n_predict; ++i) {
        if (auto st = sched.drain(one); !st.ok()) throw CLI::RuntimeError(fail(st.message()));
        const int32_t id = s.sample();
        if (tk.is_eog(id)) break;
        const std::string piece = utf8.push(tk.token_to_piece(id, prev));
        prev = id;
        answer += piece;
        fmt::print("{}", piece);
        std::fflush(stdout);
        s.queue(id);
      }
      const std::string rest = utf8.flush();
      answer += rest;
      fmt::print("{}\n", rest);
      if (auto st = sched.drain(one); !st.ok()) throw CLI::RuntimeError(fail(st.message()));
      consumed += answer;
      messages.push_back({"assistant", answer});
    }
    fmt::print("\n");
  });
}

}  // namespace tova::cli
