// The engine's images (tova/engine.h): the mmproj opened beside the model and checked against
// it, its markers as token ids, and encoding with a small memory of the last images encoded.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "core/hash.h"
#include "model/model.h"
#include "runtime/engine_access.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "tova/engine.h"
#include "tova/timer.h"
#include "vision/image_decode.h"
#include "vision/mmproj.h"

namespace tova {

namespace {

// Images kept encoded (Engine::encode_image): a conversation's recent images, each a few MB at
// most (280 tokens of a 5376-wide model: 6 MB).
constexpr size_t kRecentImages = 8;

}  // namespace

Status Engine::open_mmproj(const std::string& path) {
  TOVA_ASSIGN_OR_RETURN(mmproj_, vision::Mmproj::open(path));
  TOVA_RETURN_IF_ERROR(
      mmproj_->check_text_model(model_->config().n_embd, path_, model_->config().arch_name));
  if (model_->config().n_embd_per_layer > 0) {
    // llama.cpp gives image rows per-layer inputs of their own; not implemented (model/batch_prep).
    return make_error("mmproj {}: images into a model with per-layer embeddings (Gemma 4 "
                      "E2B/E4B, {}) are not implemented",
                      path, path_);
  }
  if (tokenizer_ == nullptr) {
    return make_error("mmproj {}: images need the text model's tokenizer (their markers)", path);
  }
  const vision::ImageTextLayout layout = vision::image_text_layout(mmproj_->config().projector);
  if (!layout.non_causal) {
    return make_error("mmproj {}: causal image attention is not implemented", path);
  }
  image_begin_ = tokenizer_->encode(layout.begin, /*add_special=*/false, /*parse_special=*/true);
  image_end_ = tokenizer_->encode(layout.end, /*add_special=*/false, /*parse_special=*/true);
  return ok_status();
}

const std::string& Engine::mmproj_path() const {
  static const std::string kNone;
  return mmproj_ ? mmproj_->path() : kNone;
}

int Engine::max_image_tokens() const { return mmproj_ ? mmproj_->config().max_tokens : 0; }

Result<Image> Engine::encode_image(std::span<const uint8_t> bytes, const std::string& name) const {
  if (!mmproj_) return make_error("image '{}': no mmproj was loaded (--mmproj) to encode it", name);
  const uint64_t id = fnv1a(bytes.data(), bytes.size()) ^ bytes.size();
  {
    const std::lock_guard<std::mutex> lock(images_mu_);
    for (const Image& im : recent_images_) {
      if (im.id != id) continue;
      Image again = im;
      again.name = name;
      again.encode_seconds = 0;
      return again;
    }
  }
  TOVA_ASSIGN_OR_RETURN(const vision::RgbImage img, vision::decode_image(bytes, name));
  Timer t;
  Result<vision::ImageEmbeddings> e = [&] {
    const auto lock = EngineAccess::exclusive(*this);
    return mmproj_->encode(img, *pool_);
  }();
  if (!e.ok()) return make_error("image '{}': {}", name, e.message());
  Image out{.name = name,
            .width = img.width,
            .height = img.height,
            .n_tokens = e->n_tokens,
            .n_embd = e->n_embd,
            .id = id,
            .rows = std::make_shared<const std::vector<float>>(std::move(e->data)),
            .encode_seconds = t.seconds()};
  const std::lock_guard<std::mutex> lock(images_mu_);
  if (recent_images_.size() >= kRecentImages) recent_images_.erase(recent_images_.begin());
  recent_images_.push_back(out);
  return out;
}

Result<std::vector<int32_t>> Engine::tokens_with_images(std::string_view text,
                                                        std::span<const Image> images,
                                                        const TextOptions& o) const {
  if (tokenizer_ == nullptr) return make_error("text needs the model's tokenizer, which was not loaded");
  std::vector<std::string_view> pieces;
  const std::string_view marker = kMediaMarker;
  size_t from = 0;
  for (size_t at; (at = text.find(marker, from)) != std::string_view::npos; from = at + marker.size()) {
    pieces.push_back(text.substr(from, at - from));
  }
  pieces.push_back(text.substr(from));
  if (pieces.size() - 1 != images.size()) {
    return make_error("the text has {} image marker{} ({}) for {} image{}", pieces.size() - 1,
                      pieces.size() == 2 ? "" : "s", kMediaMarker, images.size(),
                      images.size() == 1 ? "" : "s");
  }
  std::vector<int32_t> ids;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const std::string piece(pieces[i]);
    std::vector<int32_t> part;
    if (i == 0 && o.chat) {
      part = tok::encode_chat_prompt(*tokenizer_, piece);
    } else if (!piece.empty() || (i == 0 && o.add_bos)) {
      part = tokenizer_->encode(piece, i == 0 && o.add_bos, o.parse_special);
    }
    ids.insert(ids.end(), part.begin(), part.end());
    if (i == images.size()) break;
    const Image& im = images[i];
    ids.insert(ids.end(), image_begin_.begin(), image_begin_.end());
    for (int t = 0; t < im.n_tokens; ++t) ids.push_back(image_token_id(im.id, t));
    ids.insert(ids.end(), image_end_.begin(), image_end_.end());
  }
  return ids;
}

Result<Image> Engine::encode_image_file(const std::string& path) const {
  TOVA_ASSIGN_OR_RETURN(const std::vector<uint8_t> bytes, vision::read_file_bytes(path));
  return encode_image(bytes, path);
}

}  // namespace tova
