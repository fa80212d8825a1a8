// tova make-random: a random-weight GGUF of a real model's shape with a real vocabulary, for
// benchmarks (ours and llama.cpp's on the same file).
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

#include "commands.h"
#include "common.h"
#include "model/random_model.h"
#include "tova/timer.h"

namespace tova::cli {

void add_make_random_command(CLI::App& app) {
  struct Flags {
    std::string shape;
    std::string arch;
    std::string type = "q4_0";
    std::string out;
    std::string vocab;
    uint64_t seed = 1;
    int threads = 0;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "make-random", "write a random-weight GGUF of a real model's shape (for benchmarks)");
  auto* shape_opt = cmd->add_option("--shape", flags->shape,
                                    "model shape (" + model::random_shape_choices() + ")");
  cmd->add_option("--arch", flags->arch,
                  "an architecture's test fixture: every tensor and key of a converted model of "
                  "the family, scaled down (" +
                      model::random_arch_choices() + "); same as --shape arch-NAME")
      ->excludes(shape_opt);
  cmd->add_option("--type", flags->type, "weight type (" + model::random_type_choices() + ")")
      ->capture_default_str();
  cmd->add_option("-o,--out", flags->out, "output GGUF file")->required();
  cmd->add_option("--vocab", flags->vocab,
                  "GGUF whose tokenizer.* keys to copy (default: the shape's vocabulary in "
                  "$TOVA_SHARED_DIR/vocab or ../shared/vocab)");
  cmd->add_option("-s,--seed", flags->seed, "random seed")->capture_default_str();
  cmd->add_option("-t,--threads", flags->threads, "threads to use (default: all cores)")
      ->check(CLI::Range(1, 1024));
  cmd->callback([flags] {
    const Flags& f = *flags;
    if (f.shape.empty() && f.arch.empty()) throw CLI::RuntimeError(fail("give --shape or --arch"));
    auto shape =
        f.arch.empty() ? model::find_random_shape(f.shape) : model::find_random_arch(f.arch);
    if (!shape.ok()) throw CLI::RuntimeError(fail(shape.message()));
    auto type = model::parse_random_type(f.type);
    if (!type.ok()) throw CLI::RuntimeError(fail(type.message()));
    std::string vocab = f.vocab;
    if (vocab.empty()) {
      const std::vector<std::string> dirs = model::default_vocab_dirs();
      auto found = model::find_vocab(*shape, dirs);
      if (!found.ok()) throw CLI::RuntimeError(fail(found.message()));
      vocab = *found;
    }
    ModelFlags threads{.threads = f.threads};
    ThreadPool pool(threads.n_threads());
    Timer t;
    auto st = model::write_random_model(
        {.shape = *shape, .type = *type, .vocab_path = vocab, .seed = f.seed}, f.out, pool);
    if (!st.ok()) throw CLI::RuntimeError(fail(st.message()));
    fmt::print(stderr,
               "wrote {}: {} shape, {} weights, {} tensors, {:.2f} M params, {} in {:.1f} s\n",
               f.out, shape->description, type_name(*type), st->n_tensors, st->n_params / 1e6,
               format_bytes(st->n_bytes), t.seconds());
  });
}

}  // namespace tova::cli
