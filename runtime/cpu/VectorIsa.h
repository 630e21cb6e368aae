//===- VectorIsa.h - AVX-512 and AVX2 vectors for hand-written kernels -*-===//
//
// The operations the channel-blocked depthwise, the direct convolution and
// the matrix-vector kernels are written in, once per instruction set:
// `avx512::Isa` (16 floats) and `avx2::Isa` (8 floats, with FMA), each
// function compiled for its set, and cpuVectors(), which of them this CPU
// runs. A kernel's source (a .inc file) is compiled for both sets by
// VectorIsaKernels.inc and picked at run time (runtime/cpu is built for the
// baseline x86-64). Private to runtime/cpu.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_CPU_VECTORISA_H
#define WEFT_RUNTIME_CPU_VECTORISA_H

namespace weft::rt::cpu {
/// The widest vectors this CPU runs: AVX-512, AVX2 with FMA, or neither.
enum class CpuVectors { None, Avx2, Avx512 };

/// This CPU's vectors, checked once.
inline CpuVectors cpuVectors() {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  static const CpuVectors detected = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
      return CpuVectors::Avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
      return CpuVectors::Avx2;
    return CpuVectors::None;
  }();
  return detected;
#else
  return CpuVectors::None;
#endif
}
} // namespace weft::rt::cpu

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define WEFT_RT_VECTOR_ISA 1
#include <immintrin.h>

#include <cstdint>

#define WEFT_RT_ISA_FN(isa)                                                 \
  __attribute__((always_inline, target(isa))) static inline

namespace weft::rt::cpu {
namespace avx512 {
using V = __m512;
constexpr int kLanes = 16;
struct Isa {
  WEFT_RT_ISA_FN("avx512f") V zero() { return _mm512_setzero_ps(); }
  WEFT_RT_ISA_FN("avx512f") V broadcast(float v) { return _mm512_set1_ps(v); }
  WEFT_RT_ISA_FN("avx512f") V load(const float *p) { return _mm512_loadu_ps(p); }
  WEFT_RT_ISA_FN("avx512f") void store(float *p, V v) {
    _mm512_storeu_ps(p, v);
  }
  WEFT_RT_ISA_FN("avx512f") __mmask16 firstLanes(int64_t n) {
    return static_cast<__mmask16>((1u << n) - 1);
  }
  /// The first n (<= kLanes) floats at p, the other lanes zero; nothing
  /// past them is read.
  WEFT_RT_ISA_FN("avx512f") V loadFirst(const float *p, int64_t n) {
    return _mm512_maskz_loadu_ps(firstLanes(n), p);
  }
  /// Stores the first n (<= kLanes) lanes; nothing past them is written.
  WEFT_RT_ISA_FN("avx512f") void storeFirst(float *p, V v, int64_t n) {
    _mm512_mask_storeu_ps(p, firstLanes(n), v);
  }
  WEFT_RT_ISA_FN("avx512f") V fma(V a, V b, V c) {
    return _mm512_fmadd_ps(a, b, c);
  }
  WEFT_RT_ISA_FN("avx512f") V add(V a, V b) { return _mm512_add_ps(a, b); }
  /// min and max return their second operand when either is NaN: put the
  /// value that must keep its NaN second.
  WEFT_RT_ISA_FN("avx512f") V min(V a, V b) { return _mm512_min_ps(a, b); }
  WEFT_RT_ISA_FN("avx512f") V max(V a, V b) { return _mm512_max_ps(a, b); }
  /// The sum of the lanes.
  WEFT_RT_ISA_FN("avx512f") float sum(V v) { return _mm512_reduce_add_ps(v); }
  /// r[i] lane j becomes r[j] lane i: interleave pairs of floats, then of
  /// 64-bit pairs, then 128-bit quarters twice.
  WEFT_RT_ISA_FN("avx512f") void transpose(V (&r)[16]) {
    V t[16];
    for (int i = 0; i < 16; i += 2) {
      t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
      r[i] = unpackPairs<false>(t[i], t[i + 2]);
      r[i + 1] = unpackPairs<true>(t[i], t[i + 2]);
      r[i + 2] = unpackPairs<false>(t[i + 1], t[i + 3]);
      r[i + 3] = unpackPairs<true>(t[i + 1], t[i + 3]);
    }
    for (int i = 0; i < 16; i += 8)
      for (int k = 0; k < 4; ++k) {
        t[i + k] = _mm512_shuffle_f32x4(r[i + k], r[i + k + 4], 0x88);
        t[i + k + 4] = _mm512_shuffle_f32x4(r[i + k], r[i + k + 4], 0xdd);
      }
    for (int k = 0; k < 8; ++k) {
      r[k] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0x88);
      r[k + 8] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0xdd);
    }
  }

private:
  template <bool high> WEFT_RT_ISA_FN("avx512f") V unpackPairs(V a, V b) {
    __m512d x = _mm512_castps_pd(a), y = _mm512_castps_pd(b);
    return _mm512_castpd_ps(high ? _mm512_unpackhi_pd(x, y)
                                 : _mm512_unpacklo_pd(x, y));
  }
};
} // namespace avx512

namespace avx2 {
using V = __m256;
constexpr int kLanes = 8;
struct Isa {
  WEFT_RT_ISA_FN("avx2,fma") V zero() { return _mm256_setzero_ps(); }
  WEFT_RT_ISA_FN("avx2,fma") V broadcast(float v) { return _mm256_set1_ps(v); }
  WEFT_RT_ISA_FN("avx2,fma") V load(const float *p) {
    return _mm256_loadu_ps(p);
  }
  WEFT_RT_ISA_FN("avx2,fma") void store(float *p, V v) {
    _mm256_storeu_ps(p, v);
  }
  WEFT_RT_ISA_FN("avx2,fma") __m256i firstLanes(int64_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  WEFT_RT_ISA_FN("avx2,fma") V loadFirst(const float *p, int64_t n) {
    return _mm256_maskload_ps(p, firstLanes(n));
  }
  WEFT_RT_ISA_FN("avx2,fma") void storeFirst(float *p, V v, int64_t n) {
    _mm256_maskstore_ps(p, firstLanes(n), v);
  }
  WEFT_RT_ISA_FN("avx2,fma") V fma(V a, V b, V c) {
    return _mm256_fmadd_ps(a, b, c);
  }
  WEFT_RT_ISA_FN("avx2,fma") V add(V a, V b) { return _mm256_add_ps(a, b); }
  WEFT_RT_ISA_FN("avx2,fma") V min(V a, V b) { return _mm256_min_ps(a, b); }
  WEFT_RT_ISA_FN("avx2,fma") V max(V a, V b) { return _mm256_max_ps(a, b); }
  /// The sum of the lanes.
  WEFT_RT_ISA_FN("avx2,fma") float sum(V v) {
    __m128 half = _mm_add_ps(_mm256_castps256_ps128(v),
                             _mm256_extractf128_ps(v, 1));
    half = _mm_add_ps(half, _mm_movehl_ps(half, half));
    half = _mm_add_ss(half, _mm_movehdup_ps(half));
    return _mm_cvtss_f32(half);
  }
  WEFT_RT_ISA_FN("avx2,fma") void transpose(V (&r)[8]) {
    V t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
      t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
      u[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
      u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
      u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
      u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int k = 0; k < 4; ++k) {
      r[k] = _mm256_permute2f128_ps(u[k], u[k + 4], 0x20);
      r[k + 4] = _mm256_permute2f128_ps(u[k], u[k + 4], 0x31);
    }
  }
};
} // namespace avx2
} // namespace weft::rt::cpu

#undef WEFT_RT_ISA_FN
#endif

#endif // WEFT_RUNTIME_CPU_VECTORISA_H
