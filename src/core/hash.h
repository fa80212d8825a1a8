// FNV-1a, 64-bit: a fast, stable hash for fingerprints and names (not for security).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tova {

inline constexpr uint64_t kFnv1aSeed = 1469598103934665603ull;

// Continues hash `h` over n bytes at p.
inline uint64_t fnv1a(const void* p, size_t n, uint64_t h = kFnv1aSeed) {
  constexpr uint64_t kPrime = 1099511628211ull;
  const auto* b = static_cast<const uint8_t*>(p);
  size_t i = 0;
  // Eight bytes per loop test (the same hash): session files and fingerprints hash tens of KB,
  // and under coverage instrumentation (fuzzing) every loop test is a traced comparison.
  for (; i + 8 <= n; i += 8) {
    h = (h ^ b[i]) * kPrime;
    h = (h ^ b[i + 1]) * kPrime;
    h = (h ^ b[i + 2]) * kPrime;
    h = (h ^ b[i + 3]) * kPrime;
    h = (h ^ b[i + 4]) * kPrime;
    h = (h ^ b[i + 5]) * kPrime;
    h = (h ^ b[i + 6]) * kPrime;
    h = (h ^ b[i + 7]) * kPrime;
  }
  for (; i < n; ++i) h = (h ^ b[i]) * kPrime;
  return h;
}

}  // namespace tova
