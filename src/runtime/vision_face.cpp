// The public face of images in (tova/vision.h) over vision/: random-weight mmproj fixtures and
// encoding one image.
#include <algorithm>
#include <thread>

#include "core/thread_pool.h"
#include "io/gguf.h"
#include "model/fixture/fixture.h"
#include "tova/timer.h"
#include "tova/vision.h"
#include "vision/gemma4v_fixture.h"
#include "vision/image_decode.h"
#include "vision/mmproj.h"
#include "vision/mmproj_config.h"

namespace tova {

std::string projector_type_choices() { return vision::projector_type_choices(); }

Result<RandomMmprojReport> make_random_mmproj(const RandomMmprojOptions& o, const std::string& path) {
  if (o.projector != "gemma4v") {
    return make_error("unknown projector type '{}' (supported: {})", o.projector,
                      vision::projector_type_choices());
  }
  TOVA_ASSIGN_OR_RETURN(const GgmlType type, parse_type_name(o.type));
  int width = o.projection_dim;
  if (width <= 0) {  // the width of the text fixture the projector pairs with
    TOVA_ASSIGN_OR_RETURN(const model::RandomShape text, model::find_random_arch("gemma4"));
    width = text.n_embd;
  }
  TOVA_ASSIGN_OR_RETURN(
      const vision::Gemma4vFixtureStats st,
      vision::write_gemma4v_fixture({.type = type, .projection_dim = width, .seed = o.seed}, path));
  return RandomMmprojReport{.n_tensors = st.n_tensors, .n_bytes = st.n_bytes, .projection_dim = width};
}

namespace {

// The text model's embedding width, from its keys alone (the file is mapped, not loaded).
Result<int> text_embedding_width(const std::string& path) {
  TOVA_ASSIGN_OR_RETURN(std::unique_ptr<io::GgufFile> f, io::GgufFile::open(path));
  TOVA_ASSIGN_OR_RETURN(const std::string arch, f->get_string("general.architecture"));
  TOVA_ASSIGN_OR_RETURN(const uint32_t n, f->get_u32(arch + ".embedding_length"));
  return static_cast<int>(n);
}

}  // namespace

Result<ImageHeader> read_image_header(std::span<const uint8_t> bytes, const std::string& name) {
  TOVA_ASSIGN_OR_RETURN(const vision::ImageDims d, vision::read_image_dims(bytes, name));
  return ImageHeader{.width = d.width, .height = d.height};
}

Result<ImageEncoding> encode_image(const ImageEncodeOptions& o) {
  ImageEncoding r;
  Timer t;
  TOVA_ASSIGN_OR_RETURN(std::unique_ptr<vision::Mmproj> mm, vision::Mmproj::open(o.mmproj));
  r.load_seconds = t.seconds();
  if (!o.text_model.empty()) {
    TOVA_ASSIGN_OR_RETURN(const int width, text_embedding_width(o.text_model));
    TOVA_RETURN_IF_ERROR(mm->check_text_model(width, o.text_model));
  }
  r.projector = mm->config().projector_name;
  t.reset();
  TOVA_ASSIGN_OR_RETURN(const vision::RgbImage img, vision::read_image_file(o.image));
  r.decode_seconds = t.seconds();
  r.width = img.width;
  r.height = img.height;
  const int n_threads =
      o.n_threads > 0 ? o.n_threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  ThreadPool pool(n_threads);
  for (int i = 0; i < std::max(1, o.repeat); ++i) {
    t.reset();
    TOVA_ASSIGN_OR_RETURN(vision::ImageEmbeddings e, mm->encode(img, pool));
    const double s = t.seconds();
    if (i == 0 || s < r.encode_seconds) r.encode_seconds = s;
    r.n_tokens = e.n_tokens;
    r.n_embd = e.n_embd;
    r.grid_x = e.grid_x;
    r.grid_y = e.grid_y;
    r.embeddings = std::move(e.data);
  }
  return r;
}

}  // namespace tova
