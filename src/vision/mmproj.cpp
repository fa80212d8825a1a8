#include "vision/mmproj.h"

#include "vision/preprocess.h"

namespace tova::vision {

Result<std::unique_ptr<Mmproj>> Mmproj::open(const std::string& path) {
  TOVA_ASSIGN_OR_RETURN(std::unique_ptr<io::GgufFile> f, io::GgufFile::open(path));
  std::unique_ptr<Mmproj> m(new Mmproj());
  TOVA_ASSIGN_OR_RETURN(m->config_, read_mmproj_config(*f));
  switch (m->config_.projector) {
    case ProjectorType::kGemma4v: {
      TOVA_ASSIGN_OR_RETURN(m->gemma4v_, load_gemma4v(*f, m->config_));
      break;
    }
  }
  m->file_ = std::move(f);
  return m;
}

Status Mmproj::check_text_model(int n_embd_text, const std::string& text_model_path,
                                const std::string& arch) const {
  const ImageTextLayout layout = image_text_layout(config_.projector);
  if (!arch.empty() && arch != layout.text_arch) {
    return make_error("mmproj {} ({}) feeds {} text models, but the text model {} is {}: they "
                      "do not belong together",
                      path(), config_.projector_name, layout.text_arch, text_model_path, arch);
  }
  if (config_.projection_dim != n_embd_text) {
    return make_error(
        "mmproj {} projects images to width {} (clip.vision.projection_dim), but the text model "
        "{} has embedding width {}: they do not belong together",
        path(), config_.projection_dim, text_model_path, n_embd_text);
  }
  return ok_status();
}

Result<ImageEmbeddings> Mmproj::encode(const RgbImage& img, ThreadPool& pool) const {
  TOVA_ASSIGN_OR_RETURN(const PlanarImage planar, preprocess_image(img, config_));
  switch (config_.projector) {
    case ProjectorType::kGemma4v: return encode_gemma4v(gemma4v_, config_, planar, pool);
  }
  return make_error("{}: unknown projector", path());
}

}  // namespace tova::vision
