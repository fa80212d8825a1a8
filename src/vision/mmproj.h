// An mmproj file opened for encoding images: its config, its encoder's weights (pointing into
// the mapped file) and the one entry point from a decoded image to its embeddings. The file
// is immutable once open; encoding keeps everything per image on the stack of the call.
#pragma once

#include <memory>
#include <string>

#include "core/result.h"
#include "core/thread_pool.h"
#include "io/gguf.h"
#include "vision/gemma4v.h"
#include "vision/image_decode.h"
#include "vision/mmproj_config.h"

namespace tova::vision {

class Mmproj {
 public:
  // Opens and validates the file (config, every tensor); errors name the file and the key or
  // tensor at fault.
  static Result<std::unique_ptr<Mmproj>> open(const std::string& path);

  const MmprojConfig& config() const { return config_; }
  const std::string& path() const { return file_->path(); }

  // Refuses a projector whose output width is not the text model's embedding width, or whose
  // text family is not the model's architecture (when arch is given), in one line naming both
  // files.
  Status check_text_model(int n_embd_text, const std::string& text_model_path,
                          const std::string& arch = {}) const;

  // Preprocesses and encodes one image.
  Result<ImageEmbeddings> encode(const RgbImage& img, ThreadPool& pool) const;

 private:
  Mmproj() = default;
  std::unique_ptr<io::GgufFile> file_;
  MmprojConfig config_;
  Gemma4vWeights gemma4v_;
};

}  // namespace tova::vision
