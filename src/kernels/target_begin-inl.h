// Opens a per-target region of a Highway "-inl.h" kernel file or unit (closed by
// target_end-inl.h): no include guard, it is meant to be included once per target pass.
//
// Highway's AVX3_DL target string omits avx512vnni although its CPU check requires it. clang
// ignores #pragma GCC target, and of two pushed target attributes the outer one wins, so push
// Highway's string with avx512vnni added in place of HWY_BEFORE_NAMESPACE (popped by
// HWY_AFTER_NAMESPACE as usual).
#if HWY_TARGET == HWY_AVX3_DL && defined(__clang__)
#pragma clang attribute push(__attribute__((target(HWY_TARGET_STR ",avx512vnni"))), \
                             apply_to = function)
#else
HWY_BEFORE_NAMESPACE();
#if HWY_TARGET == HWY_AVX3_DL
#pragma GCC target("avx512vnni")
#endif
#endif
