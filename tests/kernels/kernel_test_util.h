// What the kernel tests share: every SIMD target this CPU runs, and every weight type.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <span>

#include "core/dtype.h"
#include "hwy/targets.h"

namespace tova::kernels {

// Runs fn once per SIMD target this CPU supports (AVX3_DL, AVX3, AVX2, ..., SCALAR), so every
// kernel variant is compared with the reference, not only the one dispatch picks here.
template <typename Fn>
void for_each_target(Fn&& fn) {
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    fn();
  }
  hwy::SetSupportedTargetsForTest(0);
}

// Every type the kernels implement: the registry (core/dtype), not a copy of it.
inline const std::span<const GgmlType> kWeightTypes = compute_types();

}  // namespace tova::kernels
