// Harness: image_url parts of `tova serve --mmproj` requests (apps/server/codec: data: URLs,
// base64, the image's header against the limits) on arbitrary bytes, the request body as it
// arrives. Checks: every rejection is a 4xx with a one-line message; an accepted request holds
// at most max_count images, each of at most max_bytes bytes whose header gives at most
// max_pixels pixels, and a media marker per image in its messages.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <variant>

#include "codec.h"
#include "tova/vision.h"

namespace {

using namespace tova;

server::ApiDefaults defaults() {
  server::ApiDefaults d;
  d.images = {.enabled = true, .max_bytes = 4096, .max_pixels = 10000, .max_count = 3};
  return d;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const server::ApiDefaults d = defaults();
  const std::string body(reinterpret_cast<const char*>(data), size);
  auto decoded = server::decode_completion_request(body, /*chat=*/true, d);
  if (const auto* e = std::get_if<server::ApiError>(&decoded)) {
    if (e->status < 400 || e->status > 499) __builtin_trap();
    if (e->message.empty() || e->message.find('\n') != std::string::npos) __builtin_trap();
    (void)server::to_json_text(server::error_json(*e));  // must not throw
    return 0;
  }
  const server::CompletionRequest& r = std::get<server::CompletionRequest>(decoded);
  if (r.images.size() > static_cast<size_t>(d.images.max_count)) __builtin_trap();
  size_t markers = 0;
  for (const ChatMessage& m : r.messages) {
    for (size_t at = m.content.find(kMediaMarker); at != std::string::npos;
         at = m.content.find(kMediaMarker, at + 1)) {
      ++markers;
    }
  }
  if (markers < r.images.size()) __builtin_trap();  // a text part may spell the marker too
  for (const auto& b : r.images) {
    if (b.empty() || b.size() > d.images.max_bytes) __builtin_trap();
    auto h = read_image_header(std::span<const uint8_t>(b), "fuzz");
    if (!h.ok() || int64_t{h->width} * h->height > d.images.max_pixels) __builtin_trap();
  }
  return 0;
}
