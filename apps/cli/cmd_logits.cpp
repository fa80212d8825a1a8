// tova logits: the logits after every position of a token list, for comparing engines.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

#include "commands.h"
#include "common.h"
#include "tova/eval/logits.h"

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
      "logits", "write the logits of every position as little-endian float32 [n_tokens][n_vocab]");
  flags->model.add(*cmd);
  cmd->add_option("--tokens", flags->tokens, "JSON list of token ids (used as given)")->required();
  cmd->add_option("-o,--out", flags->out, "output file")->required();
  cmd->add_option("-b,--batch-size", flags->n_batch, "tokens per forward pass")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  flags->cache.add(*cmd);
  cmd->callback([flags] {
    const Flags& f = *flags;
    const CacheOptions cache = or_fail(f.cache.options());
    const std::vector<int32_t> ids = or_fail(read_token_file(f.tokens));
    if (ids.empty()) throw CLI::RuntimeError(fail(f.tokens + ": the token list is empty"));
    const auto engine = or_fail(f.model.load(/*need_tokenizer=*/false));
    auto logits = eval::all_logits(*engine, ids, cache, f.n_batch);
    if (!logits.ok()) {
      throw CLI::RuntimeError(
          fail(fmt::format("{} on {}: {}", f.tokens, f.model.model_path(), logits.message())));
    }
    // Written beside, then renamed: a failure leaves no partial file.
    const std::string tmp = f.out + ".tmp";
    std::FILE* fp = std::fopen(tmp.c_str(), "wb");
    if (fp == nullptr) throw CLI::RuntimeError(fail("cannot write '" + f.out + "'"));
    const size_t n = std::fwrite(logits->data(), sizeof(float), logits->size(), fp);
    const bool ok = n == logits->size() && std::fclose(fp) == 0;
    std::error_code ec;
    if (!ok || (std::filesystem::rename(tmp, f.out, ec), ec)) {
      std::filesystem::remove(tmp, ec);
      throw CLI::RuntimeError(fail("cannot write '" + f.out + "'"));
    }
    fmt::print(stderr, "wrote {} x {} logits to {}\n", ids.size(), engine->n_vocab(), f.out);
  });
}

}  // namespace tova::cli
