// tova chat: a conversation in the terminal on one bounded Session, fed through the same batch
// scheduler as `run` and `serve`. Each turn feeds only its new tokens: the multi-state carries
// the conversation, so a long chat under a bounded policy costs the same per turn. With
// --session FILE the conversation survives the process: resumed from FILE if it exists, saved
// after every answer (the multi-state, and the messages as the file's note).
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "chat_template.h"
#include "commands.h"
#include "common.h"
#include "runtime/batch_scheduler.h"
#include "runtime/session_file.h"
#include "runtime/utf8_stream.h"

namespace tova::cli {
namespace {

// What tova chat keeps in a session file's note besides the multi-state: the template, the
// messages, and the conversation text fed so far (each turn feeds what follows it).
struct ChatNote {
  std::string chat_template;
  std::vector<server::ChatMessage> messages;
  std::string consumed;
};

std::string encode_note(const ChatNote& n) {
  nlohmann::json j;
  j["tova_chat"] = 1;
  j["chat_template"] = n.chat_template;
  j["messages"] = nlohmann::json::array();
  for (const auto& m : n.messages) j["messages"].push_back({{"role", m.role}, {"content", m.content}});
  j["consumed"] = n.consumed;
  // Replacement characters instead of an exception for text that is not UTF-8.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<ChatNote> decode_note(const std::string& path, const std::string& note) {
  const auto j = nlohmann::json::parse(note, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("tova_chat")) {
    return make_error("session '{}' was not saved by tova chat", path);
  }
  // (`contains` first: operator[] of a const json on a missing key is undefined.)
  auto has = [](const nlohmann::json& o, const char* key, nlohmann::json::value_t type) {
    return o.is_object() && o.contains(key) && o[key].type() == type;
  };
  using T = nlohmann::json::value_t;
  if (j["tova_chat"] != 1 || !has(j, "chat_template", T::string) ||
      !has(j, "messages", T::array) || !has(j, "consumed", T::string)) {
    return make_error("session '{}' has an unreadable chat note", path);
  }
  ChatNote n{.chat_template = j["chat_template"], .consumed = j["consumed"]};
  for (const auto& m : j["messages"]) {
    if (!has(m, "role", T::string) || !has(m, "content", T::string)) {
      return make_error("session '{}' has an unreadable chat note", path);
    }
    n.messages.push_back({m["role"], m["content"]});
  }
  return n;
}

}  // namespace

void add_chat_command(CLI::App& app) {
  struct Flags {
    ModelFlags model;
    CacheFlags cache;
    SamplingFlags sampling;
    std::string chat_template;
    std::string system;
    std::string session;
    int n_predict = 256;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "chat", "chat in the terminal on one bounded session (/reset, /stats, /quit)");
  flags->model.add(*cmd);
  cmd->add_option("--chat-template", flags->chat_template,
                  "chat template (chatml); default: detected from the model");
  cmd->add_option("--system", flags->system, "a system message to start with");
  cmd->add_option("--session", flags->session,
                  "conversation file: resume it if it exists, save it after every answer");
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
    // A conversation to resume: its template, messages and state come from the file.
    const bool resume = !f.session.empty() && std::filesystem::exists(f.session);
    ChatNote chat{.chat_template = f.chat_template};
    std::unique_ptr<Session> session;
    if (resume) {
      if (!f.system.empty()) {
        throw CLI::RuntimeError(fail(fmt::format(
            "--system starts a conversation; '{}' already holds one", f.session)));
      }
      auto d = runtime::load_session(f.session, e.model());
      if (!d.ok()) throw CLI::RuntimeError(fail(d.message()));
      auto note = decode_note(f.session, d->note);
      if (!note.ok()) throw CLI::RuntimeError(fail(note.message()));
      if (!f.chat_template.empty() && f.chat_template != note->chat_template) {
        throw CLI::RuntimeError(fail(fmt::format("'{}' was saved with chat template {}, not {}",
                                                 f.session, note->chat_template,
                                                 f.chat_template)));
      }
      chat = std::move(*note);
      auto s = Session::resume(e.model(), {.cache = *cache, .sampling = f.sampling.params()},
                               std::move(*d));
      if (!s.ok()) throw CLI::RuntimeError(fail(s.message()));
      session = std::move(*s);
    } else {
      auto s = e.new_session({.cache = *cache, .sampling = f.sampling.params()});
      if (!s.ok()) throw CLI::RuntimeError(fail(s.message()));
      session = std::move(*s);
      if (!f.system.empty()) chat.messages.push_back({"system", f.system});
    }
    auto renderer = server::make_chat_renderer(chat.chat_template, model_template);
    if (!renderer.ok()) throw CLI::RuntimeError(fail(renderer.message()));
    chat.chat_template = (*renderer)->name();
    Session& s = *session;
    runtime::BatchScheduler sched(e.model(), e.pool());
    Session* const one[] = {&s};
    const tok::Tokenizer& tk = *e.tokenizer();
    std::vector<server::ChatMessage>& messages = chat.messages;
    std::string& consumed = chat.consumed;  // the conversation text the session has been given
    const size_t n_system = !messages.empty() && messages[0].role == "system" ? 1 : 0;
    // After every answer (and reset): a kill loses at most the turn in progress.
    auto save = [&] {
      if (f.session.empty()) return;
      runtime::SessionData d = s.save_data(-1);
      d.note = encode_note(chat);
      if (auto st = runtime::save_session(f.session, e.model(), d); !st.ok()) {
        throw CLI::RuntimeError(fail(st.message()));
      }
    };
    std::string line;
    fmt::print(stderr, "tova chat ({}): /reset, /stats, /quit\n", s.cache().label());
    if (resume) {
      fmt::print(stderr, "resumed {}: {} messages, {} tokens seen\n", f.session,
                 messages.size(), s.state().n_seen());
    }
    while (true) {
      fmt::print("> ");
      std::fflush(stdout);
      if (!std::getline(std::cin, line) || line == "/quit") break;
      if (line.empty()) continue;
      if (line == "/reset") {
        if (auto st = s.reset(); !st.ok()) throw CLI::RuntimeError(fail(st.message()));
        messages.resize(n_system);
        consumed.clear();
        save();
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
      // A `full` cache allocates this turn's tokens before it starts: the copy of a growing
      // cache happens here, not in the middle of the answer (bounded caches: no-op).
      if (auto st = s.state().reserve(static_cast<int64_t>(s.history().size()) + f.n_predict);
          !st.ok()) {
        throw CLI::RuntimeError(fail(st.message()));
      }
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
      save();
    }
    fmt::print("\n");
  });
}

}  // namespace tova::cli
