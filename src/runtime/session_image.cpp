// Images in a session's input (Session::queue_image): the projector's markers and one history
// entry per image token, and how the feeding loop cuts a session's pending tokens at images
// (runtime::next_run: an image is fed whole, in a step of its own).
#include <algorithm>

#include "core/hash.h"
#include "runtime/engine_access.h"
#include "runtime/session_impl.h"

namespace tova {

int32_t image_token_id(uint64_t image_id, int t) {
  const uint64_t pair[2] = {image_id, static_cast<uint64_t>(t)};
  const uint64_t h = fnv1a(pair, sizeof pair);
  // In [-2^30 - 1, -2]: never a text id, never -1 ("no token").
  return -2 - static_cast<int32_t>((h ^ (h >> 32)) & 0x3fffffff);
}

namespace {

// Why `image` cannot join session s (ok: it can); n_before: images of the same call checked
// before it (they are not queued yet, and count among the images kept).
Status check_image(const Session::Impl& s, const Image& image, int n_before = 0) {
  if (s.engine == nullptr || !s.engine->has_mmproj()) {
    return make_error("image '{}': the engine has no mmproj (--mmproj) to encode images", image.name);
  }
  if (image.rows == nullptr || image.n_tokens < 1 ||
      image.rows->size() != static_cast<size_t>(image.n_tokens) * image.n_embd) {
    return make_error("image '{}' has no encoded rows (Engine::encode_image makes them)", image.name);
  }
  const int n_embd = EngineAccess::model(*s.engine).config().n_embd;
  if (image.n_embd != n_embd) {
    return make_error("image '{}' has rows of width {}, the model's embedding width is {}",
                      image.name, image.n_embd, n_embd);
  }
  if (image.n_tokens > s.state->max_image()) {
    return make_error("image '{}' takes {} tokens, more than the {} this session takes", image.name,
                      image.n_tokens, s.state->max_image());
  }
  if (s.spec) {
    return make_error("image '{}': speculative decoding ({}) does not take images", image.name,
                      s.spec->options().type);
  }
  if (s.state->keep_images()) {
    // Kept images are held (never evicted), so their room is fixed when the session is made.
    int64_t n_kept = s.state->n_images_held() + n_before;
    for (const runtime::QueuedImage& q : s.images) n_kept += q.start >= s.n_fed;
    if (n_kept + 1 > s.state->max_kept_images()) {
      return make_error("image '{}': this session keeps {} images already, the most it keeps "
                        "(--kv-keep-images-max {})",
                        image.name, n_kept, s.state->max_kept_images());
    }
  }
  return ok_status();
}

}  // namespace

Status Session::queue_image(const Image& image) {
  Impl& s = *impl_;
  TOVA_RETURN_IF_ERROR(check_image(s, image));
  const auto [begin, end] = EngineAccess::image_markers(*s.engine);
  queue(begin);
  // The image's tokens join the history after what is queued (drafts undone by queue()).
  s.images.push_back({.start = static_cast<int64_t>(s.history.size()), .image = image});
  for (int t = 0; t < image.n_tokens; ++t) s.history.push_back(image_token_id(image.id, t));
  s.has_logits = false;
  queue(end);
  return ok_status();
}

Status Session::queue(std::span<const int32_t> tokens, std::span<const Image> images) {
  Impl& s = *impl_;
  // First where each image's run starts, checking every run (nothing is queued on error).
  std::vector<std::pair<size_t, const Image*>> runs;
  for (size_t i = 0; i < tokens.size();) {
    if (!is_image_token(tokens[i])) {
      ++i;
      continue;
    }
    const Image* im = nullptr;
    for (const Image& c : images) {
      if (image_token_id(c.id, 0) == tokens[i]) im = &c;
    }
    if (im == nullptr) {
      return make_error("token {} at {} is no image's first token (images given: {})", tokens[i],
                        i, images.size());
    }
    for (int t = 0; t < im->n_tokens; ++t) {
      if (i + t >= tokens.size() || tokens[i + t] != image_token_id(im->id, t)) {
        return make_error("image '{}' is cut at its token {} of {}", im->name, t, im->n_tokens);
      }
    }
    TOVA_RETURN_IF_ERROR(check_image(s, *im, static_cast<int>(runs.size())));
    runs.emplace_back(i, im);
    i += static_cast<size_t>(im->n_tokens);
  }
  size_t from = 0;
  for (const auto& [at, im] : runs) {
    queue(tokens.subspan(from, at - from));
    s.images.push_back({.start = static_cast<int64_t>(s.history.size()), .image = *im});
    s.history.insert(s.history.end(), tokens.begin() + static_cast<long>(at),
                     tokens.begin() + static_cast<long>(at) + im->n_tokens);
    s.has_logits = false;
    from = at + static_cast<size_t>(im->n_tokens);
  }
  queue(tokens.subspan(from));
  return ok_status();
}

Status Session::queue_text(std::string_view text, std::span<const Image> images,
                           const TextOptions& o) {
  if (impl_->engine == nullptr) return make_error("this session has no engine to read text");
  TOVA_ASSIGN_OR_RETURN(const std::vector<int32_t> ids,
                        impl_->engine->tokens_with_images(text, images, o));
  return queue(ids, images);
}

namespace runtime {

NextRun next_run(Session::Impl& s) {
  const int64_t first = s.n_fed;
  const int64_t n_pending = static_cast<int64_t>(s.history.size()) - first;
  // Images are in history order: the first one not fed yet starts at or after n_fed.
  const auto it = std::lower_bound(
      s.images.begin(), s.images.end(), first,
      [](const QueuedImage& q, int64_t i) { return q.start < i; });
  if (it == s.images.end()) return {.n = n_pending};
  if (it->start == first) return {.n = it->image.n_tokens, .image = &*it};
  return {.n = it->start - first};
}

}  // namespace runtime
}  // namespace tova
