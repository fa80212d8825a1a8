// tova serve: an OpenAI-compatible HTTP server that batches many bounded conversations.
#include <fmt/format.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "commands.h"
#include "common.h"
#include "http_server.h"
#include "tova/state_cache.h"

namespace tova::cli {

void add_serve_command(CLI::App& app) {
  struct Flags {
    ModelFlags model;
    CacheFlags cache;
    SpecFlags spec;
    server::ServerOptions server;
    std::string kv_memory = "1G";
    int64_t max_body = 1 << 20;
    bool no_prefix_reuse = false;
    std::string session_dir;
    std::string session_dir_max = "4G";
    std::string log_format = "text";
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "serve", "OpenAI-compatible HTTP server: continuous batching of bounded multi-states");
  flags->model.add(*cmd);
  flags->cache.add(*cmd);
  flags->spec.add(*cmd);
  server::ServerOptions& so = flags->server;
  cmd->add_option("--host", so.host, "address to listen on")->capture_default_str();
  cmd->add_option("--port", so.port, "port to listen on (0: any free port, printed)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--parallel", so.loop.parallel, "most sequences processed at once (-np, as llama-server)")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--queue", so.loop.queue, "most requests waiting; beyond that: 503")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 16));
  cmd->add_option("--kv-memory", flags->kv_memory,
                  "total K/V memory for admission (bytes, or 768M, 1.5G, ...)")
      ->capture_default_str();
  cmd->add_option("-c,--ctx-size", so.loop.ctx,
                  "most tokens of an unbounded (full) sequence; what it reserves (per sequence, "
                  "unlike llama-server's -c, which all slots share)")
      ->capture_default_str()
      ->check(CLI::Range(2, 1 << 24));
  cmd->add_option("--ubatch-size", so.loop.step_tokens,
                  "most tokens in one batched forward pass (prompt chunks + decoding; -ub, as "
                  "llama-server)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--api-key", so.api_key, "require 'Authorization: Bearer KEY' (not /health)");
  cmd->add_option("--chat-template", so.chat_template,
                  "chat template: a name (chatml, llama3, ...) or a .jinja file; default: the "
                  "model's own, chatml when it has none");
  cmd->add_option("--reasoning-format", so.reasoning_format,
                  "how answers carry reasoning, returned as reasoning_content: auto (the chat "
                  "template's way: <think> blocks, gpt-oss's channels, Gemma 4's thought "
                  "channel), none (all content), think, harmony, gemma4")
      ->capture_default_str();
  cmd->add_option("--alias", so.api.model_id,
                  "the model name /v1/models lists and responses report (default: the file's "
                  "stem); requests may name any model");
  cmd->add_option("--cors", so.cors_origins,
                  "let browser pages from ORIGIN call the API (repeatable; '*': any origin)")
      ->delimiter(',');
  cmd->add_option("--log-format", flags->log_format,
                  "access log on stderr, one line per request: text, json or none")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json", "none"}));
  cmd->add_option("--max-tokens", so.api.max_tokens_cap, "cap on a request's max_tokens")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--max-prompt-tokens", so.api.max_prompt_tokens, "cap on a prompt's tokens")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--max-body", flags->max_body, "largest request body in bytes (else 413)")
      ->capture_default_str()
      ->check(CLI::Range(64, 1 << 30));
  cmd->add_option("--cache-states", so.loop.max_cached_states,
                  "conversation states held for prefix reuse (LRU, inside --kv-memory)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 16));
  cmd->add_flag("--no-prefix-reuse", flags->no_prefix_reuse,
                "never continue a held state (always process the whole prompt)");
  cmd->add_option("--session-dir", flags->session_dir,
                  "keep conversation states that leave memory (and all at shutdown) as session "
                  "files here, continue them from there, across restarts");
  cmd->add_option("--session-dir-max", flags->session_dir_max,
                  "most bytes of files in --session-dir (least recently used go first)")
      ->capture_default_str();
  cmd->add_option("--debug-hostile-output", so.loop.hostile_output_seed,
                  "tests only: replace every piece of generated text by hostile bytes (broken "
                  "UTF-8, half markers, huge arguments) drawn from this seed; 0: off")
      ->capture_default_str();
  cmd->callback([flags] {
    Flags& f = *flags;
    server::ServerOptions o = f.server;
    auto cache = f.cache.options();
    if (!cache.ok()) throw CLI::RuntimeError(fail(cache.message()));
    auto mem = parse_bytes("--kv-memory", f.kv_memory);
    if (!mem.ok()) throw CLI::RuntimeError(fail(mem.message()));
    o.loop.kv_memory = *mem;
    o.loop.prefix_reuse = !f.no_prefix_reuse;
    o.max_body_bytes = static_cast<size_t>(f.max_body);
    o.api.cache = *cache;
    auto spec = f.spec.options();
    if (!spec.ok()) throw CLI::RuntimeError(fail(spec.message()));
    o.api.speculative = *spec;
    o.log_format = f.log_format == "json"   ? server::LogFormat::kJson
                   : f.log_format == "none" ? server::LogFormat::kNone
                                            : server::LogFormat::kText;
    auto dir_max = parse_bytes("--session-dir-max", f.session_dir_max);
    if (!dir_max.ok()) throw CLI::RuntimeError(fail(dir_max.message()));

    // Buffers from 128 KiB up (multi-state pools, per-request scratch) are mapped and unmapped
    // whole, so memory goes back to the system when conversations end: glibc's adaptive
    // threshold would raise itself past freed pools and keep them in the heap, and a long-running
    // server's RSS would follow its largest moment rather than what it holds.
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    // Signals go to one thread that waits for them; every other thread (created below) inherits
    // the blocked mask.
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
    signal(SIGPIPE, SIG_IGN);

    EngineOptions eo = f.model.engine_options();
    f.spec.apply(eo);
    f.model.gpu.note();
    auto engine = Engine::load(eo);
    if (!engine.ok()) throw CLI::RuntimeError(fail(engine.message()));
    if (o.api.speculative.on()) {  // --spec-* that no request could use: refused at start
      auto probe = (*engine)->new_session({.cache = o.api.cache, .speculative = o.api.speculative});
      if (!probe.ok()) throw CLI::RuntimeError(fail(probe.message()));
    }
    if (!f.session_dir.empty()) {
      auto states = StateCache::open(**engine, {.max_bytes = o.loop.kv_memory,
                                                .max_states = o.loop.max_cached_states,
                                                .spill_dir = f.session_dir,
                                                .spill_max_bytes = *dir_max});
      if (!states.ok()) throw CLI::RuntimeError(fail(states.message()));
      const StateCacheStats st = (*states)->stats();
      fmt::print(stderr, "tova serve: --session-dir {}: {} conversation states ({}) from earlier runs\n",
                 f.session_dir, st.n_stored, format_bytes(st.stored_bytes));
      if (st.n_skipped > 0) {
        fmt::print(stderr, "tova serve: --session-dir {}: {} files not used, first: {}\n",
                   f.session_dir, st.n_skipped, st.first_skip_reason);
      }
      o.loop.states = std::move(*states);
    }
    auto created = server::HttpServer::create(**engine, o);
    if (!created.ok()) throw CLI::RuntimeError(fail(created.message()));
    server::HttpServer& srv = **created;
    auto port = srv.bind();
    if (!port.ok()) throw CLI::RuntimeError(fail(port.message()));
    fmt::print(stderr, "tova serve: {} on http://{}:{} (policy {}, --kv-memory {})\n",
               (*engine)->path(), o.host, *port, cache->label(), format_bytes(o.loop.kv_memory));
    for (const std::string& note : srv.notes()) fmt::print(stderr, "tova serve: {}\n", note);
    // The listening line for scripts and tests, on stdout.
    fmt::print("listening on http://{}:{}\n", o.host, *port);
    std::fflush(stdout);
    // The first SIGINT/SIGTERM drains (new requests 503, /health "draining", in-flight ones
    // finish); a second one stops at once.
    std::atomic<bool> served{false};
    int forced = 0;
    std::thread drainer;
    std::thread waiter([&] {
      const timespec tick{.tv_sec = 0, .tv_nsec = 100'000'000};
      int n_signals = 0;
      while (!served) {
        const int sig = sigtimedwait(&sigs, nullptr, &tick);
        if (sig < 0) continue;
        if (++n_signals == 1) {
          fmt::print(stderr,
                     "tova serve: signal {}: finishing in-flight requests (again to stop now)\n",
                     sig);
          drainer = std::thread([&] { srv.shutdown(); });
        } else {
          forced = sig;
          const int cut = srv.stop_now();
          fmt::print(stderr, "tova serve: signal {} again: stopping now ({} requests cut)\n", sig,
                     cut);
        }
      }
    });
    srv.serve();
    served = true;
    waiter.join();
    if (drainer.joinable()) drainer.join();
    fmt::print(stderr, "tova serve: stopped\n");
    if (forced != 0) throw CLI::RuntimeError(1);
  });
}

}  // namespace tova::cli
