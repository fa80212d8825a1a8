// fnv1a: the eight-bytes-per-test loop gives the byte-at-a-time hash (session files written
// before it must keep their checksums), at lengths around the unrolled block.
#include "core/hash.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace tova {
namespace {

uint64_t fnv1a_bytewise(const uint8_t* b, size_t n, uint64_t h) {
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

TEST(Fnv1a, UnrolledEqualsByteAtATime) {
  std::vector<uint8_t> bytes(4099);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 131 + 7);
  for (size_t n : {0, 1, 7, 8, 9, 15, 16, 17, 33, 4099}) {
    EXPECT_EQ(fnv1a(bytes.data(), n), fnv1a_bytewise(bytes.data(), n, kFnv1aSeed)) << n;
    EXPECT_EQ(fnv1a(bytes.data() + 1, n - (n > 0), 42), fnv1a_bytewise(bytes.data() + 1, n - (n > 0), 42));
  }
  // Values computed by an independent implementation (Python, the same seed and prime).
  const uint8_t a = 'a';
  EXPECT_EQ(fnv1a(&a, 1), 0x44bd8ad473cd9906ull);
  std::vector<uint8_t> r(37);
  for (size_t i = 0; i < r.size(); ++i) r[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(fnv1a(r.data(), r.size()), 0xe684edc507171859ull);
}

}  // namespace
}  // namespace tova
