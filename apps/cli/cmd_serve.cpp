// tova serve: an OpenAI-compatible HTTP server that batches many bounded conversations.
#include <fmt/format.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <thread>

#include "commands.h"
#include "common.h"
#include "http_server.h"
#include "tova/state_cache.h"

namespace tova::cli {

namespace {

// serve's flags, as given.
struct ServeFlags {
  ModelFlags model;
  CacheFlags cache;
  SpecFlags spec;
  MmprojFlags mmproj;
  server::ServerOptions server;
  std::string kv_memory = "1G";
  int64_t max_body = 1 << 20;
  std::string image_max_bytes = "8M";
  bool no_prefix_reuse = false;
  std::string session_dir;
  std::string session_dir_max = "4G";
  std::string log_format = "text";
};

// Where it listens, how much it admits, the chat and the engine's settings.
void declare_serve_flags(CLI::App* cmd, ServeFlags& f) {
  f.model.add(*cmd);
  f.cache.add(*cmd);
  f.spec.add(*cmd);
  f.mmproj.add(*cmd);
  server::ServerOptions& so = f.server;
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
  cmd->add_option("--kv-memory", f.kv_memory,
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
}

// What a request may ask, the access log, the held states and the tests-only switch.
void declare_serve_limits(CLI::App* cmd, ServeFlags& f) {
  server::ServerOptions& so = f.server;
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
  cmd->add_option("--log-format", f.log_format,
                  "access log on stderr, one line per request: text, json or none")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json", "none"}));
  cmd->add_option("--max-tokens", so.api.max_tokens_cap, "cap on a request's max_tokens")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--max-prompt-tokens", so.api.max_prompt_tokens, "cap on a prompt's tokens")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--max-body", f.max_body,
                  "largest request body in bytes (else 413); with --mmproj at least what one "
                  "image of --image-max-bytes takes as base64")
      ->capture_default_str()
      ->check(CLI::Range(64, 1 << 30));
  cmd->add_option("--image-max-bytes", f.image_max_bytes,
                  "with --mmproj: largest image of a request (its decoded bytes; else 400)")
      ->capture_default_str();
  cmd->add_option("--image-max-pixels", so.api.images.max_pixels,
                  "with --mmproj: most pixels (width x height) of an image (else 400)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  cmd->add_option("--image-max-count", so.api.images.max_count,
                  "with --mmproj: most images in one request (else 400)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  cmd->add_option("--cache-states", so.loop.max_cached_states,
                  "conversation states held for prefix reuse (LRU, inside --kv-memory)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 16));
  cmd->add_flag("--no-prefix-reuse", f.no_prefix_reuse,
                "never continue a held state (always process the whole prompt)");
  cmd->add_option("--session-dir", f.session_dir,
                  "keep conversation states that leave memory (and all at shutdown) as session "
                  "files here, continue them from there, across restarts");
  cmd->add_option("--session-dir-max", f.session_dir_max,
                  "most bytes of files in --session-dir (least recently used go first)")
      ->capture_default_str();
  cmd->add_option("--debug-hostile-output", so.loop.hostile_output_seed,
                  "tests only: replace every piece of generated text by hostile bytes (broken "
                  "UTF-8, half markers, huge arguments) drawn from this seed; 0: off")
      ->capture_default_str();
}

// The server's options from the flags; `dir_max` gets --session-dir-max in bytes.
server::ServerOptions serve_options(const ServeFlags& f, uint64_t& dir_max) {
  server::ServerOptions o = f.server;
  o.api.cache = or_fail(f.cache.options());
  f.mmproj.apply(o.api.cache);
  o.loop.kv_memory = or_fail(parse_bytes("--kv-memory", f.kv_memory));
  o.loop.prefix_reuse = !f.no_prefix_reuse;
  o.max_body_bytes = static_cast<size_t>(f.max_body);
  o.api.images.enabled = !f.mmproj.path.empty();
  o.api.images.max_bytes = or_fail(parse_bytes("--image-max-bytes", f.image_max_bytes));
  if (o.api.cache.keep_images && !o.api.images.enabled) {
    throw CLI::RuntimeError(fail("--kv-keep-images keeps image states, but no image can join a "
                                 "request: the server has no --mmproj"));
  }
  // A request holds at most --image-max-count images, and a sequence holds one request's.
  if (o.api.cache.keep_images && o.api.cache.max_kept_images < o.api.images.max_count) {
    throw CLI::RuntimeError(fail(fmt::format(
        "--kv-keep-images-max {} is below --image-max-count {}: a request could hold more images "
        "than its sequence keeps",
        o.api.cache.max_kept_images, o.api.images.max_count)));
  }
  if (o.api.images.enabled) {  // one image as base64 fits in a body, with room for the text
    o.max_body_bytes = std::max<size_t>(o.max_body_bytes, o.api.images.max_bytes / 3 * 4 + (64 << 10));
  }
  o.api.speculative = or_fail(f.spec.options());
  o.log_format = f.log_format == "json"   ? server::LogFormat::kJson
                 : f.log_format == "none" ? server::LogFormat::kNone
                                          : server::LogFormat::kText;
  dir_max = or_fail(parse_bytes("--session-dir-max", f.session_dir_max));
  return o;
}

// Memory returned to the system as conversations end, and SIGINT/SIGTERM blocked in every
// thread (the waiter takes them): the signals it waits for.
sigset_t prepare_process() {
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
  return sigs;
}

// The conversation states --session-dir holds from earlier runs, opened into o.loop.states.
void open_session_dir(const Engine& engine, const ServeFlags& f, uint64_t dir_max,
                      server::ServerOptions& o) {
  auto states = or_fail(StateCache::open(engine, {.max_bytes = o.loop.kv_memory,
                                                  .max_states = o.loop.max_cached_states,
                                                  .spill_dir = f.session_dir,
                                                  .spill_max_bytes = dir_max}));
  const StateCacheStats st = states->stats();
  fmt::print(stderr, "tova serve: --session-dir {}: {} conversation states ({}) from earlier runs\n",
             f.session_dir, st.n_stored, format_bytes(st.stored_bytes));
  if (st.n_skipped > 0) {
    fmt::print(stderr, "tova serve: --session-dir {}: {} files not used, first: {}\n",
               f.session_dir, st.n_skipped, st.first_skip_reason);
  }
  o.loop.states = std::move(states);
}

// Serves until a signal: the first drains (new requests 503, /health "draining", in-flight ones
// finish), a second stops at once (then the command fails).
void serve_until_signals(server::HttpServer& srv, const sigset_t& sigs) {
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
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "serve", "OpenAI-compatible HTTP server: continuous batching of bounded multi-states");
  declare_serve_flags(cmd, *flags);
  declare_serve_limits(cmd, *flags);
  cmd->callback([flags] {
    const ServeFlags& f = *flags;
    uint64_t dir_max = 0;
    server::ServerOptions o = serve_options(f, dir_max);
    const sigset_t sigs = prepare_process();
    EngineOptions eo = f.model.engine_options();
    f.spec.apply(eo);
    f.mmproj.apply(eo);
    f.model.gpu.note();
    const auto engine = or_fail(Engine::load(eo));
    if (o.api.speculative.on()) {  // --spec-* that no request could use: refused at start
      SessionOptions probe;
      probe.cache = o.api.cache;
      probe.speculative = o.api.speculative;
      or_fail(engine->new_session(probe));
    }
    if (!f.session_dir.empty()) open_session_dir(*engine, f, dir_max, o);
    const auto created = or_fail(server::HttpServer::create(*engine, o));
    server::HttpServer& srv = *created;
    const int port = or_fail(srv.bind());
    fmt::print(stderr, "tova serve: {} on http://{}:{} (policy {}, --kv-memory {})\n",
               engine->path(), o.host, port, o.api.cache.label(), format_bytes(o.loop.kv_memory));
    for (const std::string& note : srv.notes()) fmt::print(stderr, "tova serve: {}\n", note);
    // The listening line for scripts and tests, on stdout.
    fmt::print("listening on http://{}:{}\n", o.host, port);
    std::fflush(stdout);
    serve_until_signals(srv, sigs);
  });
}

}  // namespace tova::cli
