// tova logits: the logits after every position of a token list, for comparing engines.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

#include "commands.h"
#include "common.h"

namespace tova::cli {

void add_logits_command(CLI::App& app) {
  struct Flags {
    ModelFlags model;
    CacheFlags cache;
    std::string tokens;
    std::string out;
    int n_batch = 512;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "logits",
      "write the logits of every position as little-endian float32 [n_tokens][n_vocab]");
  flags->model.add(*cmd);
  cmd->add_option("--tokens", flags->tokens, "JSON list of token ids (used as given)")
      ->required();
  cmd->add_option("-o,--out", flags->out, "output file")->required();
  cmd->add_option("-b,--batch-size", flags->n_batch, "tokens per forward pass")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  flags->cache.add(*cmd);
  cmd->callback([flags] {
    const Flags& f = *flags;
    auto cache = f.cache.options();
    if (!cache.ok()) throw CLI::RuntimeError(fail(cache.message()));
    auto ids = read_token_file(f.tokens);
    if (!ids.ok()) throw CLI::RuntimeError(fail(ids.message()));
    if (ids->empty()) throw CLI::RuntimeError(fail(f.tokens + ": the token list is empty"));
    auto lm = load_model(f.model.model_path(), false, f.model.options());
    if (!lm.ok()) throw CLI::RuntimeError(fail(lm.message()));
    const model::Model& m = *lm->model;
    const int n_vocab = m.config().n_vocab;
    for (int32_t id : *ids) {
      if (id >= n_vocab) {
        throw CLI::RuntimeError(fail(fmt::format("{}: token id {} is outside the vocabulary "
                                                 "of {} ({} tokens)",
                                                 f.tokens, id, f.model.model_path(), n_vocab)));
      }
    }
    auto state = runtime::make_state(m, *cache, static_cast<int64_t>(ids->size()));
    if (!state.ok()) throw CLI::RuntimeError(fail(state.message()));
    ThreadPool pool(f.model.n_threads());
    model::ForwardScratch scratch;
    std::vector<float> logits(ids->size() * static_cast<size_t>(n_vocab));
    // Every position's logits: chunked sequences take chunks of their size, exact ones take
    // micro-batches.
    const int step = (*state)->max_new() > 1 ? (*state)->max_new() : f.n_batch;
    std::vector<model::BatchToken> batch;
    for (size_t i0 = 0; i0 < ids->size(); i0 += step) {
      const size_t i1 = std::min(ids->size(), i0 + step);
      batch.clear();
      for (size_t i = i0; i < i1; ++i) {
        batch.push_back({.token = (*ids)[i], .state = state->get(), .logits = true});
      }
      auto st = m.forward(batch, pool, scratch, &logits[i0 * n_vocab]);
      if (!st.ok()) throw CLI::RuntimeError(fail(st.message()));
    }
    const std::string tmp = f.out + ".tmp";
    std::FILE* fp = std::fopen(tmp.c_str(), "wb");
    if (fp == nullptr) throw CLI::RuntimeError(fail("cannot write '" + f.out + "'"));
    const size_t n = std::fwrite(logits.data(), sizeof(float), logits.size(), fp);
    const bool ok = n == logits.size() && std::fclose(fp) == 0;
    std::error_code ec;
    if (!ok || (std::filesystem::rename(tmp, f.out, ec), ec)) {
      std::filesystem::remove(tmp, ec);
      throw CLI::RuntimeError(fail("cannot write '" + f.out + "'"));
    }
    fmt::print(stderr, "wrote {} x {} logits to {}\n", ids->size(), n_vocab, f.out);
  });
}

}  // namespace tova::cli
