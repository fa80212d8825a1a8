// tova make-random: a random-weight GGUF of a real model's shape with a real vocabulary, for
// benchmarks (ours and llama.cpp's on the same file).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <filesystem>

#include "commands.h"
#include "common.h"
#include "tova/random_model.h"
#include "tova/timer.h"
#include "tova/vision.h"

namespace tova::cli {

namespace {

struct Flags {
  std::string shape;
  std::string arch;
  std::string type = "q4_0";
  std::string out;
  std::string vocab;
  uint64_t seed = 1;
  int threads = 0;
  std::vector<std::string> set;
  bool plan = false;
  std::string projector;
};

// --projector: a random-weight mmproj.
void write_projector(const Flags& f) {
  if (!f.arch.empty()) throw CLI::RuntimeError(fail("give --projector or --arch, not both"));
  if (f.out.empty()) throw CLI::RuntimeError(fail("give -o FILE"));
  Timer t;
  const RandomMmprojReport r = or_fail(make_random_mmproj(
      {.projector = f.projector, .type = f.type, .seed = f.seed}, f.out));
  fmt::print(stderr, "wrote {}: {} mmproj, {} weights, width {}, {} tensors, {} in {:.1f} s\n",
             f.out, f.projector, f.type, r.projection_dim, r.n_tensors,
             format_bytes(r.n_bytes), t.seconds());
}

// --shape / --arch: a random-weight model, or its plan.
void write_model(const Flags& f) {
  if (f.shape.empty() && f.arch.empty()) throw CLI::RuntimeError(fail("give --shape or --arch"));
  if (f.out.empty() && !f.plan) throw CLI::RuntimeError(fail("give -o FILE (or --plan)"));
  ModelFlags threads{.threads = f.threads};
  Timer t;
  const RandomModelReport r = or_fail(make_random_model({.shape = f.shape,
                                                         .arch = f.arch,
                                                         .type = f.type,
                                                         .vocab = f.vocab,
                                                         .seed = f.seed,
                                                         .n_threads = threads.n_threads(),
                                                         .set = f.set,
                                                         .plan_only = f.plan},
                                                        f.out));
  if (f.plan) {
    for (const RandomModelReport::Tensor& x : r.tensors) {
      fmt::print("{:<40} {:<6} [{}] {}\n", x.name, x.type, fmt::join(x.dims, ", "),
                 format_bytes(x.n_bytes));
    }
    fmt::print(stderr, "plan: {} shape, {} weights, {} tensors, {:.2f} M params, {}\n",
               r.description, r.type, r.n_tensors, r.n_params / 1e6, format_bytes(r.n_bytes));
    return;
  }
  fmt::print(stderr,
             "wrote {}: {} shape, {} weights, {} tensors, {:.2f} M params, {} in {:.1f} s\n",
             f.out, r.description, r.type, r.n_tensors, r.n_params / 1e6,
             format_bytes(r.n_bytes), t.seconds());
}

}  // namespace

void add_make_random_command(CLI::App& app) {
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "make-random", "write a random-weight GGUF of a real model's shape (for benchmarks)");
  auto* shape_opt = cmd->add_option("--shape", flags->shape,
                                    "model shape (" + random_shape_choices() + ")");
  cmd->add_option("--arch", flags->arch,
                  "an architecture's test fixture: every tensor and key of a converted model of "
                  "the family, scaled down (" +
                      random_arch_choices() + "); same as --shape arch-NAME")
      ->excludes(shape_opt);
  cmd->add_option("--projector", flags->projector,
                  "write a random-weight mmproj (vision encoder + projector) of this type (" +
                      projector_type_choices() +
                      ") instead of a model: --type f32, f16 or q8_0, its width the family's "
                      "--arch fixture's")
      ->excludes(shape_opt);
  cmd->add_option("--type", flags->type, "weight type (" + random_type_choices() + ")")
      ->capture_default_str();
  cmd->add_option("-o,--out", flags->out, "output GGUF file");
  cmd->add_flag("--plan", flags->plan,
                "print every tensor (name, type, shape, bytes) and write nothing");
  cmd->add_option("--vocab", flags->vocab,
                  "GGUF whose tokenizer.* keys to copy (default: the shape's vocabulary in "
                  "$TOVA_SHARED_DIR/vocab or ../shared/vocab)");
  cmd->add_option("--set", flags->set,
                  "change a field of the shape, NAME=VALUE, repeatable (other sizes of a fixture "
                  "for checks against llama.cpp; names: " +
                      random_shape_field_choices() + ")");
  cmd->add_option("-s,--seed", flags->seed, "random seed")->capture_default_str();
  cmd->add_option("-t,--threads", flags->threads, "threads to use (default: all cores)")
      ->check(CLI::Range(1, 1024));
  cmd->callback([flags] {
    if (!flags->projector.empty()) {
      write_projector(*flags);
    } else {
      write_model(*flags);
    }
  });
}

}  // namespace tova::cli
