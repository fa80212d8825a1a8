#include "data_url.h"

#include <fmt/format.h>

#include <array>

namespace tova::server {

namespace {

// Base64's alphabet (RFC 4648, and its URL-safe variant's two letters): value, or -1.
constexpr std::array<int8_t, 256> make_table() {
  std::array<int8_t, 256> t{};
  for (auto& v : t) v = -1;
  const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (int i = 0; i < 64; ++i) t[static_cast<uint8_t>(a[i])] = static_cast<int8_t>(i);
  t['-'] = 62;
  t['_'] = 63;
  return t;
}
constexpr std::array<int8_t, 256> kBase64 = make_table();

}  // namespace

std::variant<std::vector<uint8_t>, std::string> decode_data_url(std::string_view url,
                                                                uint64_t max_bytes) {
  if (url.substr(0, 5) != "data:") return std::string("not a data: URL");
  const size_t comma = url.find(',');
  if (comma == std::string_view::npos) return std::string("a data: URL without a ','");
  const std::string_view head = url.substr(5, comma - 5);
  if (head.size() < 7 || head.substr(head.size() - 7) != ";base64") {
    return std::string("a data: URL must be base64 (data:image/png;base64,...)");
  }
  const std::string_view data = url.substr(comma + 1);
  // Four characters give three bytes: the limit is checked before anything is decoded.
  if (data.size() / 4 * 3 > max_bytes + 3) {
    return fmt::format("the image has about {} bytes, more than the limit of {}", data.size() / 4 * 3,
                       max_bytes);
  }
  std::vector<uint8_t> out;
  out.reserve(static_cast<size_t>(data.size() / 4 * 3 + 3));
  uint32_t acc = 0;
  int bits = 0;
  size_t pad = 0;
  for (size_t i = 0; i < data.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(data[i]);
    if (c == '=') {
      ++pad;
      continue;
    }
    if (c == '\r' || c == '\n' || c == ' ') continue;
    if (pad > 0) return fmt::format("base64 data continues after its padding (at {})", i);
    const int v = kBase64[c];
    if (v < 0) return fmt::format("a character that is not base64 at {}", i);
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>((acc >> bits) & 0xff));
    }
  }
  if (pad > 2) return std::string("base64 data with more than two '=' of padding");
  if (out.empty()) return std::string("an empty image");
  if (out.size() > max_bytes) {
    return fmt::format("the image has {} bytes, more than the limit of {}", out.size(), max_bytes);
  }
  return out;
}

}  // namespace tova::server
