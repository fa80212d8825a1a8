// Helpers for crafting GGUF images in tests: locate fields in a written file and patch them.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "io/gguf.h"

namespace tova::io::testing {

using Bytes = std::vector<uint8_t>;

// Offset of the only occurrence of `s` (as a length-prefixed GGUF string) in `bytes`: the
// offset of its first character. Fails the test if it occurs 0 or 2+ times.
inline size_t find_gguf_string(const Bytes& bytes, std::string_view s) {
  size_t found = SIZE_MAX;
  int count = 0;
  for (size_t i = 8; i + s.size() <= bytes.size(); ++i) {
    if (std::memcmp(bytes.data() + i, s.data(), s.size()) != 0) continue;
    uint64_t len = 0;
    std::memcpy(&len, bytes.data() + i - 8, 8);
    if (len != s.size()) continue;
    found = i;
    ++count;
  }
  EXPECT_EQ(count, 1) << "string '" << s << "' should occur exactly once";
  return found;
}

// The offset just past the string `s` (where a key's type or a tensor's n_dims starts).
inline size_t after_gguf_string(const Bytes& bytes, std::string_view s) {
  return find_gguf_string(bytes, s) + s.size();
}

template <typename T>
void poke(Bytes& bytes, size_t at, T v) {
  ASSERT_LE(at + sizeof(T), bytes.size());
  std::memcpy(bytes.data() + at, &v, sizeof(T));
}

template <typename T>
T peek(const Bytes& bytes, size_t at) {
  T v{};
  EXPECT_LE(at + sizeof(T), bytes.size());
  if (at + sizeof(T) <= bytes.size()) std::memcpy(&v, bytes.data() + at, sizeof(T));
  return v;
}

inline Bytes pattern_bytes(size_t n, uint32_t seed) {
  Bytes out(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& b : out) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    b = static_cast<uint8_t>(x >> 24);
  }
  return out;
}

}  // namespace tova::io::testing
