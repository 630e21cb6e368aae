//===- DepthwiseWideRows.cpp - Depthwise 3x3 on whole rows (AVX-512) ------===//
//
// The depthwise kernel's wide-row path: on AVX-512, a 3x3 layer with pads
// of 1 whose rows hold at least a vector of outputs computes each output row
// from its three input rows in place, without copying the plane: valignd
// gives each tap's neighbouring columns, and for stride 2 vpermt2ps splits
// even and odd columns. Vectors whose loads lie inside a row that is not a
// pad load without masks. Called from convDepthwise (DepthwiseConv.cpp),
// which picks the path; bench/kernels/README.md has the figures.
//
//===----------------------------------------------------------------------===//

#include "Conv.h"
#include "KernelParams.h"

#include <algorithm>

using namespace weft::rt::cpu;

#define WEFT_RT_INLINE inline __attribute__((always_inline))
#define WEFT_RT_INLINE_LAMBDA __attribute__((always_inline))

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define WEFT_RT_X86_TARGETS 1
#define WEFT_RT_TARGET_AVX512 __attribute__((target("avx512f")))
#endif

namespace {
#ifdef WEFT_RT_X86_TARGETS
// GCC 12's AVX-512 intrinsics read an undefined vector for their unmasked
// forms, which -Wmaybe-uninitialized reports falsely.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
/// 3x3 kernels with pads of 1 on rows of at least 16 outputs, on AVX-512:
/// each output row is computed from its three input rows in place, with no
/// band copied. Stride 1 takes the left and right neighbours of 16 columns
/// from the vectors before and after (valignd), stride 2 splits 32 columns
/// into their even and odd halves (vpermt2ps); masked loads give the pads
/// (a row outside the input, the columns past its end) without reading
/// them, and masked stores the last, partial vector of a row.
template <int S>
WEFT_RT_TARGET_AVX512 WEFT_RT_INLINE void
wideRow(const float *const rows[3], const __mmask16 valid[3], const __m512 *w,
        __m512 bias, __m512 low, __m512 high, int64_t width, int64_t ow,
        float *out) {
  // Lanes from column `from` on that lie inside the input row.
  auto inside = [width](int64_t from) WEFT_RT_INLINE_LAMBDA {
    int64_t count = std::clamp<int64_t>(width - from, 0, 16);
    return static_cast<__mmask16>((1u << count) - 1);
  };
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20,
                                         22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21,
                                        23, 25, 27, 29, 31);
  __m512 previous[3], current[3];
  for (int k = 0; k < 3; ++k) {
    previous[k] = _mm512_setzero_ps();
    current[k] = S == 1 ? _mm512_maskz_loadu_ps(valid[k] & inside(0), rows[k])
                        : _mm512_setzero_ps();
  }
  // Vectors whose loads lie wholly inside the row, in rows that are not
  // pads, need no masks: computing them (a clamp and a shift per load) cost
  // more than the arithmetic (one thread: 32 112 s1 78 -> 50 us, 96 112 s2
  // 125 -> 87, 144 56 s2 50 -> 44).
  const int64_t whole = std::max<int64_t>(0, (width - 32) / (16 * S) + 1);
  const bool allValid = valid[0] == 0xffff && valid[1] == 0xffff &&
                        valid[2] == 0xffff;
  int64_t o = 0;
  if (allValid) {
    for (; o < std::min(ow, whole * 16); o += 16) {
      __m512 sums[3];
      for (int k = 0; k < 3; ++k) {
        __m512 left, centre, right;
        if constexpr (S == 1) {
          __m512 next = _mm512_loadu_ps(rows[k] + o + 16);
          centre = current[k];
          left = _mm512_castsi512_ps(
              _mm512_alignr_epi32(_mm512_castps_si512(centre),
                                  _mm512_castps_si512(previous[k]), 15));
          right = _mm512_castsi512_ps(_mm512_alignr_epi32(
              _mm512_castps_si512(next), _mm512_castps_si512(centre), 1));
          previous[k] = centre;
          current[k] = next;
        } else {
          __m512 a = _mm512_loadu_ps(rows[k] + 2 * o);
          __m512 b = _mm512_loadu_ps(rows[k] + 2 * o + 16);
          centre = _mm512_permutex2var_ps(a, even, b);
          right = _mm512_permutex2var_ps(a, odd, b);
          left = _mm512_castsi512_ps(
              _mm512_alignr_epi32(_mm512_castps_si512(right),
                                  _mm512_castps_si512(previous[k]), 15));
          previous[k] = right;
        }
        sums[k] = _mm512_fmadd_ps(
            right, w[3 * k + 2],
            _mm512_fmadd_ps(centre, w[3 * k + 1],
                            _mm512_mul_ps(left, w[3 * k])));
      }
      __m512 sum = _mm512_add_ps(_mm512_add_ps(bias, sums[0]),
                                 _mm512_add_ps(sums[1], sums[2]));
      sum = _mm512_min_ps(high, _mm512_max_ps(low, sum));
      _mm512_storeu_ps(out + o, sum);
    }
  }
  for (; o < ow; o += 16) {
    // A sum per input row: three short chains of FMAs rather than one of
    // nine.
    __m512 sums[3];
    for (int k = 0; k < 3; ++k) {
      __m512 left, centre, right;
      if constexpr (S == 1) {
        __m512 next =
            _mm512_maskz_loadu_ps(valid[k] & inside(o + 16), rows[k] + o + 16);
        centre = current[k];
        left = _mm512_castsi512_ps(_mm512_alignr_epi32(
            _mm512_castps_si512(centre), _mm512_castps_si512(previous[k]), 15));
        right = _mm512_castsi512_ps(_mm512_alignr_epi32(
            _mm512_castps_si512(next), _mm512_castps_si512(centre), 1));
        previous[k] = centre;
        current[k] = next;
      } else {
        __m512 a =
            _mm512_maskz_loadu_ps(valid[k] & inside(2 * o), rows[k] + 2 * o);
        __m512 b = _mm512_maskz_loadu_ps(valid[k] & inside(2 * o + 16),
                                         rows[k] + 2 * o + 16);
        centre = _mm512_permutex2var_ps(a, even, b);
        right = _mm512_permutex2var_ps(a, odd, b);
        left = _mm512_castsi512_ps(_mm512_alignr_epi32(
            _mm512_castps_si512(right), _mm512_castps_si512(previous[k]), 15));
        previous[k] = right;
      }
      sums[k] = _mm512_fmadd_ps(
          right, w[3 * k + 2],
          _mm512_fmadd_ps(centre, w[3 * k + 1], _mm512_mul_ps(left, w[3 * k])));
    }
    __m512 sum = _mm512_add_ps(_mm512_add_ps(bias, sums[0]),
                               _mm512_add_ps(sums[1], sums[2]));
    // The sum second: x86's min and max return their second operand when
    // either is NaN, and a NaN output must stay NaN (with the sum first, a
    // NaN became the lower bound, -inf without a clamp).
    sum = _mm512_min_ps(high, _mm512_max_ps(low, sum));
    const int64_t count = std::min<int64_t>(ow - o, 16);
    _mm512_mask_storeu_ps(out + o, static_cast<__mmask16>((1u << count) - 1),
                          sum);
  }
}

template <int S>
WEFT_RT_TARGET_AVX512 WEFT_RT_INLINE void
widePlanes(const ConvShape &s, const float *x, const float *weight,
           const float *bias, float *y, int64_t begin, int64_t end) {
  const int64_t h = s.in[1], width = s.in[2], oh = s.out[1], ow = s.out[2];
  const int64_t inPlane = s.inPlane(), outPlane = s.outPlane();
  const __m512 low = _mm512_set1_ps(s.clampLow),
               high = _mm512_set1_ps(s.clampHigh);
  for (int64_t p = begin; p < end; ++p) {
    const int64_t channel = p % s.c;
    __m512 w[9];
    for (int t = 0; t < 9; ++t)
      w[t] = _mm512_set1_ps(weight[channel * 9 + t]);
    const __m512 b = _mm512_set1_ps(bias ? bias[channel] : 0.0f);
    const float *plane = x + p * inPlane;
    for (int64_t r = 0; r < oh; ++r) {
      const float *rows[3];
      __mmask16 valid[3];
      for (int k = 0; k < 3; ++k) {
        const int64_t row = r * S - 1 + k;
        const bool in = row >= 0 && row < h;
        rows[k] = plane + (in ? row : 0) * width;
        valid[k] = in ? 0xffff : 0;
      }
      wideRow<S>(rows, valid, w, b, low, high, width, ow,
                 y + p * outPlane + r * ow);
    }
  }
}

WEFT_RT_TARGET_AVX512 void wide3s1Avx512(const ConvShape &s, const float *x,
                                         const float *w, const float *bias,
                                         float *y, int64_t begin, int64_t end) {
  widePlanes<1>(s, x, w, bias, y, begin, end);
}

WEFT_RT_TARGET_AVX512 void wide3s2Avx512(const ConvShape &s, const float *x,
                                         const float *w, const float *bias,
                                         float *y, int64_t begin, int64_t end) {
  widePlanes<2>(s, x, w, bias, y, begin, end);
}
#pragma GCC diagnostic pop
#endif

} // namespace

/// The wide-row entry point for `s` on AVX-512, or null: 2-D 3x3, stride 1
/// or 2, undilated, pads of 1 before, an even width for stride 2, and the
/// output as wide as the input over the stride. Where it beats the band
/// path (bench/kernels/README.md): stride 1 on rows of whole vectors or of
/// at least 48 outputs (144 56: 109 -> 89 us; on 28-wide rows the band
/// path, which wastes no lanes, stays faster: 38.7 against 42.3), stride 2
/// on rows of at least one vector.
DepthwiseRowsFn weft::rt::cpu::wideRowsEntryFor(const ConvShape &s) {
#ifdef WEFT_RT_X86_TARGETS
  const int64_t stride = s.strides[2];
  if (s.in[0] != 1 || s.kernel[0] != 1 || s.kernel[1] != 3 ||
      s.kernel[2] != 3 || !(stride == 1 || stride == 2) ||
      s.strides[1] != stride || s.dilations[1] != 1 || s.dilations[2] != 1 ||
      s.padsBegin[1] != 1 || s.padsBegin[2] != 1 || s.in[2] % stride != 0 ||
      s.out[2] != s.in[2] / stride || s.out[2] < 16 ||
      (stride == 1 && s.out[2] % 16 != 0 && s.out[2] < 48))
    return nullptr;
  return stride == 1 ? wide3s1Avx512 : wide3s2Avx512;
#else
  (void)s;
  return nullptr;
#endif
}

