// Every benchmark program runs on the SIMD target that TOVA_SIMD names, as `tova --simd` does
// (e.g. TOVA_SIMD=avx2 bench_matmul), so a target's kernels can be timed on any CPU that runs
// them. Included once per program; the choice is made before main.
#pragma once

#include <cstdio>
#include <cstdlib>

#include "tova/simd_target.h"

namespace tova::bench {

inline const bool kSimdFromEnv = [] {
  const char* name = std::getenv("TOVA_SIMD");
  if (name == nullptr) return false;
  const Status st = kernels::set_simd_target(name);
  if (!st.ok()) {
    std::fprintf(stderr, "TOVA_SIMD: %s\n", st.message().c_str());
    std::exit(2);
  }
  return true;
}();

}  // namespace tova::bench
