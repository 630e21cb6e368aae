//===- MathSupport.h - Vectorizable math for the CPU kernels ----*- C++ -*-===//
//
// An exp that vectorizes (libm's does not without -ffast-math) and the
// attribute that compiles hot loops for AVX-512 and AVX2 as well as the
// baseline, picked at load time; private to runtime/cpu.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_CPU_MATHSUPPORT_H
#define WEFT_RUNTIME_CPU_MATHSUPPORT_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

/// Compiles a function for AVX-512, AVX2 and the baseline; the dynamic
/// loader picks the best the CPU has. The runtime is built for the baseline
/// x86-64 so that programs run on any machine.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define WEFT_RT_VECTOR_CLONES                                                  \
  __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define WEFT_RT_VECTOR_CLONES
#endif

namespace weft::rt::cpu {

/// e^x for floats with a relative error below 2e-7 (Cephes' polynomial on
/// x - n ln 2), written so that loops over it vectorize. Exact for 0 and
/// the infinities, NaN for NaN, 0 below the normal range.
inline float expFloat(float x) {
  const float high = 88.3762626647949f, low = -87.3365447504f;
  float clamped = x > high ? high : x;
  clamped = clamped < low ? low : clamped;
  clamped = x != x ? 0.0f : clamped;
  // Round x / ln 2 to the nearest integer n by the 1.5 * 2^23 trick, which
  // leaves n in the low mantissa bits.
  float shifted = clamped * 1.44269504088896341f + 12582912.0f;
  int32_t shiftedBits;
  std::memcpy(&shiftedBits, &shifted, sizeof(shiftedBits));
  int32_t n = shiftedBits - 0x4B400000;
  float nf = shifted - 12582912.0f;
  float r = clamped - nf * 0.693359375f;
  r = r - nf * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  int32_t exponentBits = (n + 127) << 23;
  float scale;
  std::memcpy(&scale, &exponentBits, sizeof(scale));
  float result = p * scale;
  result = x < low ? 0.0f : result;
  result = x > high ? std::numeric_limits<float>::infinity() : result;
  return x != x ? x : result;
}

// The 16-lane helpers below pass vectors by value, which GCC notes
// (-Wpsabi) would change the ABI between ISAs; they are always inlined into
// their callers, so no call crosses that boundary, and the files using them
// build with -Wno-psabi.
/// Sixteen floats as one GCC vector: AVX-512 compiles it to one register,
/// AVX2 to two, the baseline to four. Loops written on it vectorize however
/// the auto-vectorizer judges them.
typedef float Float16 __attribute__((vector_size(64)));
typedef int32_t Int16 __attribute__((vector_size(64)));

/// Loads and stores 16 floats at any alignment.
inline __attribute__((always_inline)) Float16 loadFloat16(const float *p) {
  Float16 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline __attribute__((always_inline)) void storeFloat16(float *p, Float16 v) {
  std::memcpy(p, &v, sizeof(v));
}

/// expFloat on 16 lanes at once (the same polynomial and edge cases).
inline __attribute__((always_inline)) Float16 expFloat16(Float16 x) {
  const float high = 88.3762626647949f, low = -87.3365447504f;
  Float16 clamped = x > high ? Float16{} + high : x;
  clamped = clamped < low ? Float16{} + low : clamped;
  clamped = x != x ? Float16{} : clamped;
  Float16 shifted = clamped * 1.44269504088896341f + 12582912.0f;
  Int16 n = (Int16)shifted - 0x4B400000;
  Float16 nf = shifted - 12582912.0f;
  Float16 r = clamped - nf * 0.693359375f;
  r = r - nf * -2.12194440e-4f;
  Float16 p = Float16{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  Float16 scale = (Float16)((n + 127) << 23);
  Float16 result = p * scale;
  result = x < low ? Float16{} : result;
  result =
      x > high ? Float16{} + std::numeric_limits<float>::infinity() : result;
  return x != x ? x : result;
}

/// exp for either float type: the vectorizable one for f32, libm's for f64.
inline float expOf(float x) { return expFloat(x); }
inline double expOf(double x) { return std::exp(x); }

} // namespace weft::rt::cpu

#endif // WEFT_RUNTIME_CPU_MATHSUPPORT_H
