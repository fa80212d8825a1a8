// tova run: generate text from a prompt, streaming it, then report speed and the multi-state.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

#include "commands.h"
#include "common.h"
#include "tova/grammar.h"
#include "tova/text_stream.h"
#include "tova/timer.h"

namespace tova::cli {

namespace {

constexpr int64_t kDefaultCtx = 4096;  // llama.cpp's default -c

void print_piece(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

// run's flags, as given.
struct RunFlags {
  ModelFlags model;
  CacheFlags cache;
  SamplingFlags sampling;
  SpecFlags spec;
  MmprojFlags mmproj;
  std::vector<std::string> images;
  std::string prompt = "Once upon a time";
  std::string prompt_file;
  int n_predict = 256;
  int n_batch = 512;
  int64_t ctx = 0;
  bool ignore_eos = false;
  bool no_display_prompt = false;
  bool chat_prompt = false;
  std::vector<std::string> stop;
  std::string session;
  std::string grammar_file;
  std::string json_schema_file;
};

// The options whose presence matters, not only their values.
struct RunOptions {
  CLI::Option* prompt = nullptr;
  CLI::Option* ctx = nullptr;
};

RunOptions declare_run_flags(CLI::App* cmd, RunFlags& f) {
  RunOptions opts;
  f.model.add(*cmd);
  opts.prompt =
      cmd->add_option("-p,--prompt", f.prompt, "prompt text")->capture_default_str();
  cmd->add_option("-f,--file", f.prompt_file, "read the prompt from a file (-: stdin)")
      ->excludes(opts.prompt);
  cmd->add_option("-n,--n-predict,--predict", f.n_predict,
                  "tokens to generate (-1: until the end of generation or -c)")
      ->capture_default_str()
      ->check(CLI::Range(-1, 1 << 30));
  opts.ctx = cmd->add_option(
      "-c,--ctx-size", f.ctx,
      "most tokens the sequence may hold under `full`, prompt included, allocated up front as "
      "llama.cpp does (default: the prompt + -n, or 4096 with -n -1); a bounded policy holds k "
      "states whatever the length");
  opts.ctx->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  cmd->add_option("-b,--batch-size", f.n_batch, "prompt tokens per forward pass")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--session", f.session,
                  "session file: resume from it if it exists (the prompt continues it), save "
                  "the sequence into it at the end");
  cmd->add_flag("--ignore-eos", f.ignore_eos, "keep generating after end of sequence");
  cmd->add_flag("--chat-prompt", f.chat_prompt,
                "the prompt is a rendered conversation (`tova template`'s output): its control "
                "tokens are read as such and BOS is added unless the template wrote it, as a "
                "chat turn of `tova serve` reads it");
  cmd->add_flag("--no-display-prompt", f.no_display_prompt,
                "print only the generated text, not the prompt before it");
  cmd->add_option("--stop", f.stop,
                  "end the text where this string begins (not printed); may be repeated");
  CLI::Option* grammar_opt = cmd->add_option(
      "--grammar", f.grammar_file,
      "constrain the text to a GBNF grammar (llama.cpp's notation) read from this file");
  cmd->add_option("--json-schema", f.json_schema_file,
                  "constrain the text to JSON that validates against the JSON Schema in this "
                  "file (docs/GRAMMAR.md lists the keywords supported)")
      ->excludes(grammar_opt);
  f.mmproj.add(*cmd);
  cmd->add_option("--image", f.images,
                  "an image (PNG, JPEG) in the prompt, at its next " + std::string(kMediaMarker) +
                      " marker, or before the text when it has none; may be repeated (needs "
                      "--mmproj)");
  f.sampling.add(*cmd);
  f.cache.add(*cmd);
  f.spec.add(*cmd);
  return opts;
}

// The sampler's parameters, with the grammar of --grammar or --json-schema.
SamplerParams run_sampling(const RunFlags& f) {
  SamplerParams sampling = f.sampling.params();
  if (!f.grammar_file.empty()) {
    sampling.grammar = or_fail(read_text_file(f.grammar_file));
    if (auto st = check_grammar(sampling.grammar); !st.ok()) {
      throw CLI::RuntimeError(fail(fmt::format("--grammar {}: {}", f.grammar_file, st.message())));
    }
  } else if (!f.json_schema_file.empty()) {
    const std::string schema = or_fail(read_text_file(f.json_schema_file));
    auto g = json_schema_grammar(schema);
    if (!g.ok()) {
      throw CLI::RuntimeError(fail(fmt::format("--json-schema {}: {}", f.json_schema_file, g.message())));
    }
    sampling.grammar = std::move(*g);
  }
  return sampling;
}

// A session read back from --session: its file's bytes and the seconds it took.
struct Resumed {
  std::unique_ptr<Session> session;
  double load_seconds = 0;
  uint64_t loaded_bytes = 0;
};

Resumed resume_session(const Engine& e, const RunFlags& f, const SessionOptions& so,
                       bool have_prompt) {
  std::string given = f.cache.given();
  if (const std::string keep = f.mmproj.keep_given(); !keep.empty()) {
    given += (given.empty() ? "" : ", ") + keep;
  }
  if (!given.empty()) {
    warn(fmt::format("{} {} no effect: '{}' holds a session, whose own cache options are used",
                     given, given.find(',') == std::string::npos ? "has" : "have", f.session));
  }
  Timer t;
  LoadedSession loaded = or_fail(e.load_session(f.session, so));
  Resumed r{.session = std::move(loaded.session),
            .load_seconds = t.seconds(),
            .loaded_bytes = loaded.file_bytes};
  if (!have_prompt && !r.session->has_logits() && r.session->n_pending() == 0) {
    throw CLI::RuntimeError(fail(
        fmt::format("session '{}' has no logits to continue from; give a prompt", f.session)));
  }
  return r;
}

// The state's limit: under `full`, -c (or llama.cpp's default context, 4096, when -n -1 asks
// for everything); a bounded multi-state never fills (0).
int64_t run_max_context(const RunFlags& f, const CacheOptions& cache, bool ctx_given) {
  const bool bounded = cache.policy.bounded();
  if (bounded && ctx_given) {
    warn(
        fmt::format("-c {} has no effect under --kv-policy {} (it holds {} states whatever "
                    "the length); -n limits the text",
                    f.ctx, cache.policy.label(), cache.policy.budget));
  }
  if (bounded) return 0;
  return f.ctx > 0 ? f.ctx : (f.n_predict < 0 ? kDefaultCtx : 0);
}

// The prompt with its images (--image): the text, with a marker per image where it has none
// (before the text, as llama.cpp's mtmd-cli puts them), and the images encoded.
struct ImagePrompt {
  std::string text;
  std::vector<Image> images;
};

ImagePrompt image_prompt(const Engine& e, const RunFlags& f, std::string prompt) {
  ImagePrompt p;
  size_t n_markers = 0;
  for (size_t at = prompt.find(kMediaMarker); at != std::string::npos;
       at = prompt.find(kMediaMarker, at + 1)) {
    ++n_markers;
  }
  if (n_markers == 0 && !f.images.empty()) {
    std::string markers;
    for (size_t i = 0; i < f.images.size(); ++i) markers += kMediaMarker;
    prompt = markers + prompt;
    n_markers = f.images.size();
  }
  if (n_markers != f.images.size()) {
    throw CLI::RuntimeError(fail(fmt::format(
        "too many images: {} --image for {} {} marker{} in the prompt", f.images.size(), n_markers,
        kMediaMarker, n_markers == 1 ? "" : "s")));
  }
  for (const std::string& path : f.images) p.images.push_back(or_fail(e.encode_image_file(path)));
  p.text = std::move(prompt);
  return p;
}

// The engine, with --mmproj's encoder when --image asks for one.
std::unique_ptr<Engine> load_run_engine(const RunFlags& f) {
  if (!f.images.empty() && f.mmproj.path.empty()) {
    throw CLI::RuntimeError(
        fail("--image needs --mmproj (the vision encoder + projector GGUF beside the model)"));
  }
  EngineOptions eo = f.model.engine_options();
  f.spec.apply(eo);
  f.mmproj.apply(eo);
  f.model.gpu.note();
  return or_fail(Engine::load(eo));
}

// The prompt's tokens: with images, each image's ids at its marker (Engine::tokens_with_images;
// the session queues them with the images).
std::vector<int32_t> prompt_ids(const Engine& e, const RunFlags& f, const ImagePrompt& images,
                                const std::string& prompt, bool resume) {
  if (!images.images.empty()) {
    return or_fail(e.tokens_with_images(images.text, images.images,
                                        {.add_bos = !resume,
                                         .parse_special = f.chat_prompt,
                                         .chat = f.chat_prompt && !resume}));
  }
  return f.chat_prompt && !resume ? e.chat_tokens(prompt) : e.tokenize(prompt, !resume);
}

// Echoes the prompt, then streams the continuation; the stream's statistics and what it
// left unfed.
TextStream stream_run(Session& session, const Engine& e, const std::vector<int32_t>& ids,
                      const ImagePrompt& images, const RunFlags& f, int64_t max_context) {
  if (!f.no_display_prompt) {
    if (!images.images.empty()) {
      print_piece(images.text);
    } else {
      int32_t prev = session.history().empty() ? -1 : session.history().back();
      std::string echo;
      for (int32_t id : ids) {
        echo += e.token_piece(id, prev);
        prev = id;
      }
      print_piece(echo);
    }
  }
  or_fail(session.queue(ids, images.images));
  TextStream stream(session, {.max_tokens = f.n_predict,
                              .stop = f.stop,
                              .ignore_eos = f.ignore_eos,
                              .max_context = max_context});
  Status failed = ok_status();
  while (!stream.done()) {
    auto piece = stream.next();
    if (!piece.ok()) {
      failed = make_error("{}", piece.message());
      break;
    }
    print_piece(piece->text);
  }
  print_piece("\n");
  or_fail(failed);
  return stream;
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* cmd = app.add_subcommand("run", "generate text from a prompt, streaming it");
  const RunOptions opts = declare_run_flags(cmd, *flags);
  cmd->callback([flags, opts] {
    const RunFlags& f = *flags;
    CacheOptions cache = or_fail(f.cache.options());
    f.mmproj.apply(cache);
    const SamplerParams sampling = run_sampling(f);
    // A resumed session continues its text: no default prompt, and no BOS.
    const bool resume = !f.session.empty() && std::filesystem::exists(f.session);
    std::string prompt = resume && opts.prompt->count() == 0 ? std::string() : f.prompt;
    if (!f.prompt_file.empty()) prompt = or_fail(read_text_file(f.prompt_file));
    const SpeculativeOptions spec = or_fail(f.spec.options());
    const auto engine = load_run_engine(f);
    const Engine& e = *engine;
    const ImagePrompt images = f.images.empty() ? ImagePrompt{} : image_prompt(e, f, prompt);
    const std::vector<int32_t> ids = prompt_ids(e, f, images, prompt, resume);
    if (ids.empty() && !resume) throw CLI::RuntimeError(fail("the prompt gives no tokens"));
    const int64_t n_prompt = static_cast<int64_t>(ids.size());
    const SessionOptions so{.cache = cache,
                            .sampling = sampling,
                            .n_prompt_hint = n_prompt,
                            .n_batch = f.n_batch,
                            // A resumed state is converted to the K/V types given.
                            .kv_override = f.cache.kv_type.override_of_saved(),
                            .speculative = spec};
    Resumed resumed;
    if (resume) {
      resumed = resume_session(e, f, so, !ids.empty());
      cache = resumed.session->cache();
    }
    std::unique_ptr<Session>& session = resumed.session;
    const int64_t max_context = run_max_context(f, cache, opts.ctx->count() > 0);
    const int64_t n_history = session ? static_cast<int64_t>(session->history().size()) : 0;
    if (max_context > 0 && n_history + n_prompt >= max_context) {
      throw CLI::RuntimeError(fail(fmt::format(
          "the prompt ({} tokens{}) does not fit the context of {} tokens (-c)", n_prompt,
          n_history > 0 ? fmt::format(" after {} in the session", n_history) : "", max_context)));
    }
    // A `full` cache holds the whole run from the start: no step pays for growing it.
    const int64_t n_hold =
        max_context > 0 ? max_context : n_history + n_prompt + std::max(f.n_predict, 0);
    if (session) {
      or_fail(session->reserve(n_hold));
    } else {
      SessionOptions fresh = so;
      fresh.cache.reserve = std::max(fresh.cache.reserve, n_hold);
      session = or_fail(e.new_session(fresh));
    }
    TextStream stream = stream_run(*session, e, ids, images, f, max_context);
    RunReport report{.load_seconds = e.load_seconds(),
                     .weight_bytes = e.weight_bytes(),
                     .mtp_bytes = e.mtp_bytes(),
                     .n_mtp_blocks = e.n_mtp_blocks(),
                     .stream = stream.stats(),
                     .finish = std::string(finish_name(stream.finish())),
                     .session_load_seconds = resumed.load_seconds,
                     .session_loaded_bytes = resumed.loaded_bytes};
    if (!f.session.empty()) {
      Timer t;
      report.session_saved_bytes = or_fail(session->save(f.session, {.unfed = stream.unfed()}));
      report.session_save_seconds = t.seconds();
    }
    report.kv = session->stats();
    print_run_report(report);
  });
}

void print_run_report(const RunReport& r) {
  auto rate = [](int64_t n, double s) {
    return n > 0 && s > 0 ? fmt::format("{:.2f} tok/s", n / s) : std::string("-");
  };
  const StreamStats& st = r.stream;
  fmt::print(stderr, "\nload time    : {:8.2f} ms\n", r.load_seconds * 1e3);
  fmt::print(stderr, "weights      : {} read per forward pass{}\n", format_bytes(r.weight_bytes),
             r.n_mtp_blocks > 0
                 ? fmt::format("; + {} in {} multi-token prediction block{} (loaded, not run)",
                               format_bytes(r.mtp_bytes), r.n_mtp_blocks,
                               r.n_mtp_blocks == 1 ? "" : "s")
                 : std::string());
  fmt::print(stderr, "prompt       : {:8d} tokens in {:8.2f} ms ({})\n", st.n_prompt,
             st.prompt_seconds * 1e3, rate(st.n_prompt, st.prompt_seconds));
  // With speculation a forward pass feeds several tokens and accepted drafts need none: the
  // rate a user compares is the generated tokens over the decode time, printed beside it.
  const bool speculated = !r.kv.speculation.type.empty();
  fmt::print(stderr, "decode       : {:8d} tokens in {:8.2f} ms ({}); {} generated{}, {}\n",
             st.n_decoded, st.decode_seconds * 1e3, rate(st.n_decoded, st.decode_seconds),
             st.n_generated,
             speculated ? fmt::format(" ({})", rate(st.n_generated, st.decode_seconds))
                        : std::string(),
             r.finish == "stop" ? "stopped" : "length");
  if (r.session_loaded_bytes > 0) {
    fmt::print(stderr, "session load : {} in {:8.2f} ms\n", format_bytes(r.session_loaded_bytes),
               r.session_load_seconds * 1e3);
  }
  if (r.session_saved_bytes > 0) {
    fmt::print(stderr, "session save : {} in {:8.2f} ms\n", format_bytes(r.session_saved_bytes),
               r.session_save_seconds * 1e3);
  }
  print_kv_stats(r.kv);
}

void print_kv_stats(const SessionStats& kv) {
  const SpeculationStats& sp = kv.speculation;
  if (!sp.type.empty()) {
    fmt::print(stderr,
               "speculation  : {}, {} verify steps, {} drafted, {} accepted ({:.1f} % "
               "acceptance)\n",
               sp.type, sp.n_steps, sp.n_drafted, sp.n_accepted, 100.0 * sp.acceptance());
  }
  if (kv.n_images > 0) {
    int64_t image_rows = 0;
    for (const StateKindStats& k : kv.kinds) image_rows += k.image_rows;
    fmt::print(stderr, "images       : {:8d} fed, {} tokens, {} held ({} K/V rows{})\n",
               kv.n_images, kv.n_image_tokens, kv.n_images_held, image_rows,
               kv.keep_images ? ", kept: --kv-keep-images" : "");
  }
  fmt::print(stderr,
             "multi-state  : policy {}, budget {}, K/V held {} of {} allocated ({}), {} tokens "
             "seen\n",
             kv.policy, kv.budget < 0 ? std::string("unbounded") : std::to_string(kv.budget),
             format_bytes(kv.kv_held), format_bytes(kv.kv_capacity), kv.kv_type, kv.n_seen);
  // Memory by kind of layer state: bounded K/V (the policy's budget), window K/V (the model's
  // window), recurrent states (hybrid models), shared-K/V layers (none of their own).
  for (const StateKindStats& k : kv.kinds) {
    if (k.kind == "recurrent") {  // a fixed-size state per layer: no K/V rows, no limit
      fmt::print(stderr, "  recurrent   : {:3d} layers, fixed-size states, {}\n", k.n_layer,
                 format_bytes(k.bytes));
      continue;
    }
    if (k.kind == "shared") {  // reads an earlier layer's K/V: nothing of its own
      fmt::print(stderr, "  shared  K/V : {:3d} layers, read an earlier layer's K/V, 0 B\n",
                 k.n_layer);
      continue;
    }
    // Kept images are held beside the limit (--kv-keep-images): say how many rows they are.
    const std::string images =
        k.image_rows > 0 ? fmt::format(" ({} of images{})", k.image_rows,
                                       kv.keep_images ? ", kept" : "")
                         : std::string();
    fmt::print(stderr,
               "  {:<7} K/V : {:3d} layers, at most {} per KV head{}, {} held now; {} rows{}, {} "
               "held of {}\n",
               k.kind, k.n_layer, k.limit < 0 ? std::string("unbounded") : std::to_string(k.limit),
               kv.keep_images && k.kind == "bounded" ? " + kept images" : "", k.max_held, k.rows,
               images, format_bytes(k.held_bytes), format_bytes(k.bytes));
  }
  const bool several = kv.kinds.size() > 1;
  for (size_t il = 0; il < kv.layers.size(); ++il) {
    if (kv.layers[il].kind == "recurrent") {
      fmt::print(stderr, "  layer {:3d}  : recurrent, a fixed-size state\n", il);
      continue;
    }
    if (kv.layers[il].kind == "shared") {
      fmt::print(stderr, "  layer {:3d}  : shared K/V, reads an earlier layer's\n", il);
      continue;
    }
    if (kv.layers[il].kind == "none") {
      fmt::print(stderr, "  layer {:3d}  : feed-forward only, no state\n", il);
      continue;
    }
    fmt::print(stderr, "  layer {:3d}  : {:6d} states held, {:8d} evicted{}\n", il,
               kv.layers[il].n_held, kv.layers[il].n_evicted,
               several ? fmt::format(" ({})", kv.layers[il].kind) : std::string());
  }
}

}  // namespace tova::cli
