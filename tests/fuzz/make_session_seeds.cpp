// Writes seeds of the session_file harness: real session files of a model of each state kind
// (session_models.h), a few tokens fed under two bounded multi-states, each file prefixed with the
// harness's byte 0 (the model, and the header fix-up bit on half of them). Usage:
// fuzz_make_session_seeds OUT_DIR (the output is committed under tests/fuzz/corpus/session_file/).
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "model/model.h"
#include "runtime/sequence.h"
#include "runtime/session_file.h"
#include "session_models.h"
#include "tova/options.h"

int main(int argc, char** argv) {
  using namespace tova;
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_session_seeds OUT_DIR\n");
    return 2;
  }
  const std::string out = argv[1];
  ThreadPool pool(1);
  const auto models = fuzz::session_models();
  int written = 0;
  for (size_t i = 0; i < models.size(); ++i) {
    auto m = model::Model::load(models[i].path);
    if (!m.ok()) {
      std::fprintf(stderr, "%s\n", m.message().c_str());
      return 1;
    }
    struct Run {
      const char* policy;
      int budget;
      int tokens;
    };
    // Bounded policies only: an unbounded state is sized by the context (300 KB and more).
    for (const Run& run : {Run{"tova", 4, 9}, Run{"window", 4, 7}}) {
      auto o = parse_cache_options(run.policy, run.budget);
      if (!o.ok()) {
        std::fprintf(stderr, "%s\n", o.message().c_str());
        return 1;
      }
      auto st = runtime::make_state(**m, *o, /*n_prompt=*/0);
      if (!st.ok()) {
        std::fprintf(stderr, "%s %s: %s\n", models[i].name, run.policy, st.message().c_str());
        return 1;
      }
      model::ForwardScratch scratch;
      std::vector<float> logits((*m)->config().n_vocab);
      for (int t = 0; t < run.tokens; ++t) {
        const model::BatchToken b{.token = 1 + (t * 7) % 50, .state = st->get(), .logits = true};
        const Status s = (*m)->forward({&b, 1}, pool, scratch, logits.data());
        if (!s.ok()) {
          std::fprintf(stderr, "%s: %s\n", models[i].name, s.message().c_str());
          return 1;
        }
      }
      runtime::SessionData d{.state = std::move(*st), .history = {1, 8, 15}, .pending = 22};
      d.logits = logits;
      d.rng_state = "seed";
      const std::vector<uint8_t> bytes = runtime::encode_session(**m, d);
      for (const bool fix : {false, true}) {
        const std::string path =
            out + "/" + models[i].name + "-" + run.policy + (fix ? "-fixheader" : "") + ".sess";
        std::ofstream f(path, std::ios::binary);
        const char lead = static_cast<char>(fuzz::lead_byte(i, fix));
        f.write(&lead, 1);
        f.write(reinterpret_cast<const char*>(bytes.data()),
                static_cast<std::streamsize>(bytes.size()));
        std::printf("%s: %zu bytes (%s)\n", path.c_str(), bytes.size() + 1, models[i].kind);
        ++written;
      }
    }
  }
  std::printf("%d seeds\n", written);
  return 0;
}
