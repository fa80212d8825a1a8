// FNV-1a, 64-bit: a fast, stable hash for fingerprints and names (not for security).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tova {

inline constexpr uint64_t kFnv1aSeed = 1469598103934665603ull;

// Continues hash `h` over n bytes at p.
inline uint64_t fnv1a(const void* p, size_t n, uint64_t h = kFnv1aSeed) {
  const auto* b = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

}  // namespace tova
