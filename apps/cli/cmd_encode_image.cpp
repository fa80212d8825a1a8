// tova encode-image: an image through an mmproj's vision encoder and projector: how many tokens
// it becomes and how long that takes (the embeddings optionally written as float32).
#include <fmt/format.h>

#include <cstdio>

#include "commands.h"
#include "common.h"
#include "tova/vision.h"

namespace tova::cli {

void add_encode_image_command(CLI::App& app) {
  struct Flags {
    std::string mmproj;
    std::string image;
    std::string model;
    std::string out;
    int threads = 0;
    int repeat = 1;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "encode-image", "encode an image with an mmproj (vision encoder + projector): tokens, time");
  cmd->add_option("--mmproj", flags->mmproj, "mmproj GGUF (" + projector_type_choices() + ")")
      ->required();
  cmd->add_option("--image", flags->image, "image file (PNG, JPEG)")->required();
  cmd->add_option("-m,--model", flags->model,
                  "text model the projector must fit (its embedding width)");
  cmd->add_option("-o,--out", flags->out, "write the embeddings, float32 [tokens][width]");
  cmd->add_option("-t,--threads", flags->threads, "threads to use (default: all cores)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--repeat", flags->repeat, "encode this many times, report the best time")
      ->check(CLI::Range(1, 1000));
  cmd->callback([flags] {
    const Flags& f = *flags;
    const ImageEncoding r = or_fail(encode_image({.mmproj = f.mmproj,
                                                  .image = f.image,
                                                  .text_model = f.model,
                                                  .n_threads = f.threads,
                                                  .repeat = f.repeat}));
    if (!f.out.empty()) {
      FILE* out = std::fopen(f.out.c_str(), "wb");
      if (out == nullptr ||
          std::fwrite(r.embeddings.data(), sizeof(float), r.embeddings.size(), out) !=
              r.embeddings.size()) {
        if (out != nullptr) std::fclose(out);
        throw CLI::RuntimeError(fail(fmt::format("{}: cannot write the embeddings", f.out)));
      }
      std::fclose(out);
    }
    fmt::print("{} image {} x {}: {} tokens ({} x {}) of width {}; load {:.1f} ms, decode {:.1f} "
               "ms, encode {:.1f} ms (best of {})\n",
               r.projector, r.width, r.height, r.n_tokens, r.grid_x, r.grid_y, r.n_embd,
               1e3 * r.load_seconds, 1e3 * r.decode_seconds, 1e3 * r.encode_seconds, f.repeat);
  });
}

}  // namespace tova::cli
