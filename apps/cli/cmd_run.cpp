// tova run: generate text from a prompt, streaming it, then report speed and the multi-state.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

#include "commands.h"
#include "common.h"

namespace tova::cli {

void add_run_command(CLI::App& app) {
  struct Flags {
    ModelFlags model;
    CacheFlags cache;
    SamplingFlags sampling;
    std::string prompt = "Once upon a time";
    std::string prompt_file;
    int n_predict = 256;
    int n_batch = 512;
    bool ignore_eos = false;
    std::string session;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand("run", "generate text from a prompt, streaming it");
  flags->model.add(*cmd);
  CLI::Option* prompt_opt =
      cmd->add_option("-p,--prompt", flags->prompt, "prompt text")->capture_default_str();
  cmd->add_option("-f,--file", flags->prompt_file, "read the prompt from a file");
  cmd->add_option("-n,--n-predict", flags->n_predict, "tokens to generate")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 30));
  cmd->add_option("-b,--batch-size", flags->n_batch, "prompt tokens per forward pass")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--session", flags->session,
                  "session file: resume from it if it exists (the prompt continues it), save "
                  "the sequence into it at the end");
  cmd->add_flag("--ignore-eos", flags->ignore_eos, "keep generating after end of sequence");
  flags->sampling.add(*cmd);
  flags->cache.add(*cmd);
  cmd->callback([flags, prompt_opt] {
    const Flags& f = *flags;
    auto cache = f.cache.options();
    if (!cache.ok()) throw CLI::RuntimeError(fail(cache.message()));
    // A resumed session continues its text: no default prompt, and no BOS.
    const bool resume = !f.session.empty() && std::filesystem::exists(f.session);
    std::string prompt = resume && prompt_opt->count() == 0 ? std::string() : f.prompt;
    if (!f.prompt_file.empty()) {
      auto text = read_text_file(f.prompt_file);
      if (!text.ok()) throw CLI::RuntimeError(fail(text.message()));
      prompt = *text;
    }
    auto lm = load_model(f.model.model_path(), true, f.model.options());
    if (!lm.ok()) throw CLI::RuntimeError(fail(lm.message()));
    const tok::Tokenizer& tk = *lm->tokenizer;
    const std::vector<int32_t> ids = tk.encode(prompt, !resume);
    if (ids.empty() && !resume) throw CLI::RuntimeError(fail("the prompt gives no tokens"));
    ThreadPool pool(f.model.n_threads());

    // Echo the prompt, then stream the continuation.
    int32_t prev = -1;
    for (int32_t id : ids) {
      const std::string piece = tk.token_to_piece(id, prev);
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      prev = id;
    }
    std::fflush(stdout);
    runtime::GenerateOptions o{.n_predict = f.n_predict,
                               .sampling = f.sampling.params(),
                               .cache = *cache,
                               .n_batch = f.n_batch,
                               .stop_at_eog = !f.ignore_eos,
                               .session = f.session};
    auto st = runtime::generate(
        *lm->model, pool, ids, o, [&](int32_t id) { return tk.is_eog(id); },
        [&](int32_t id) {
          const std::string piece = tk.token_to_piece(id, prev);
          prev = id;
          std::fwrite(piece.data(), 1, piece.size(), stdout);
          std::fflush(stdout);
          return true;
        });
    std::fputc('\n', stdout);
    std::fflush(stdout);
    if (!st.ok()) throw CLI::RuntimeError(fail(st.message()));
    print_run_stats(lm->load_seconds, *st);
  });
}

void print_run_stats(double load_seconds, const runtime::GenerateStats& st) {
  auto rate = [](int64_t n, double s) { return s > 0 ? n / s : 0.0; };
  fmt::print(stderr, "\nload time    : {:8.2f} ms\n", load_seconds * 1e3);
  fmt::print(stderr, "prompt       : {:8d} tokens in {:8.2f} ms ({:.2f} tok/s)\n", st.n_prompt,
             st.prompt_seconds * 1e3, rate(st.n_prompt, st.prompt_seconds));
  fmt::print(stderr, "decode       : {:8d} tokens in {:8.2f} ms ({:.2f} tok/s)\n",
             st.n_generated, st.decode_seconds * 1e3, rate(st.n_generated, st.decode_seconds));
  if (st.session_loaded_bytes > 0) {
    fmt::print(stderr, "session load : {} in {:8.2f} ms\n", format_bytes(st.session_loaded_bytes),
               st.session_load_seconds * 1e3);
  }
  if (st.session_saved_bytes > 0) {
    fmt::print(stderr, "session save : {} in {:8.2f} ms\n", format_bytes(st.session_saved_bytes),
               st.session_save_seconds * 1e3);
  }
  print_kv_stats(st.kv);
}

void print_kv_stats(const runtime::KvStats& kv) {
  fmt::print(stderr, "multi-state  : policy {}, budget {}, {} of K/V held, {} tokens seen\n",
             kv.policy, kv.budget < 0 ? std::string("unbounded") : std::to_string(kv.budget),
             format_bytes(kv.bytes), kv.n_seen);
  for (size_t il = 0; il < kv.layers.size(); ++il) {
    fmt::print(stderr, "  layer {:3d}  : {:6d} states held, {:8d} evicted\n", il,
               kv.layers[il].n_held, kv.layers[il].n_evicted);
  }
}

}  // namespace tova::cli
