// Images in requests: OpenAI's image_url parts carry the image itself as a data: URL
// ("data:image/png;base64,...", RFC 2397). Remote http(s) URLs are never fetched (the server
// makes no connection of its own); the caller refuses them before this is asked.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace tova::server {

// The bytes of a base64 data: URL, at most max_bytes of them; else why not (one line: not a
// data: URL, not base64, a bad character, larger than the limit, empty).
std::variant<std::vector<uint8_t>, std::string> decode_data_url(std::string_view url,
                                                                uint64_t max_bytes);

}  // namespace tova::server
