// Arrays of SIMD vectors (register tiles such as `V acc[R][NV]`) on every Highway target
// (Highway's "-inl.h" pattern: compiled once per target into namespace HWY_NAMESPACE).
//
// SVE's vectors are sizeless types: C++ allows them as locals, references and pointers, never as
// array elements or class members. VecArray<V, N> and VecArray2<V, R, C> are plain arrays of
// vectors on every target with fixed-size vectors (x86, NEON, EMU128: the very same code as
// `V a[N]`), and on SVE targets a buffer of N slots of HWY_MAX_BYTES (the largest vector the
// target allows) whose elements are reached as `V&`, so code indexing them (`a[i] = ...`,
// `hn::Add(a[i], b)`) reads the same on all targets. The compiler keeps such a tile in registers
// where it can; otherwise its vectors live on the stack.

#if defined(TOVA_KERNELS_VEC_ARRAY_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TOVA_KERNELS_VEC_ARRAY_INL_H_
#undef TOVA_KERNELS_VEC_ARRAY_INL_H_
#else
#define TOVA_KERNELS_VEC_ARRAY_INL_H_
#endif

#include <cstddef>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace tova::kernels::HWY_NAMESPACE {

#if HWY_HAVE_SCALABLE
template <class V, size_t N>
class VecArray {
 public:
  VecArray() = default;
  // VecArray<V, 3> a = {v0, v1, v2}, as for an array.
  template <class... Vs>
  VecArray(V v0, Vs... rest) {  // NOLINT(google-explicit-constructor): reads as an array's
    static_assert(1 + sizeof...(rest) <= N, "more initialisers than vectors");
    (*this)[0] = v0;
    size_t i = 1;
    (((*this)[i++] = rest), ...);
  }
  V& operator[](size_t i) { return *reinterpret_cast<V*>(bytes_ + i * HWY_MAX_BYTES); }
  const V& operator[](size_t i) const {
    return *reinterpret_cast<const V*>(bytes_ + i * HWY_MAX_BYTES);
  }

 private:
  alignas(64) unsigned char bytes_[N * HWY_MAX_BYTES];
};

template <class V, size_t R, size_t C>
class VecArray2 {
 public:
  class Row {
   public:
    explicit Row(unsigned char* p) : p_(p) {}
    V& operator[](size_t j) const { return *reinterpret_cast<V*>(p_ + j * HWY_MAX_BYTES); }

   private:
    unsigned char* p_;
  };
  Row operator[](size_t i) { return Row(bytes_ + i * C * HWY_MAX_BYTES); }

 private:
  alignas(64) unsigned char bytes_[R * C * HWY_MAX_BYTES];
};
#else
template <class V, size_t N>
using VecArray = V[N];
template <class V, size_t R, size_t C>
using VecArray2 = V[R][C];
#endif

}  // namespace tova::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // TOVA_KERNELS_VEC_ARRAY_INL_H_
