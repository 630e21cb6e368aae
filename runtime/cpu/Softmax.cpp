//===- Softmax.cpp - ONNX Softmax and LogSoftmax --------------------------===//
//
// weft_rt_cpu_softmax: numerically stable (log-)softmax along one axis, with
// a vectorized exp for f32.
//
//===----------------------------------------------------------------------===//

#include "KernelSupport.h"
#include "MathSupport.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace weft::rt::cpu;

#define WEFT_RT_INLINE inline __attribute__((always_inline))

namespace {
/// A validated softmax parameter block.
struct SoftmaxShape {
  int64_t dtype, outer, axis, inner;
  bool log;
};
} // namespace

/// Columns of a strided softmax handled together: wide enough to vectorize,
/// small enough for the per-column state to stay on the stack.
constexpr int64_t kBlock = 256;

/// Softmax of one contiguous row of n elements.
template <typename T>
static WEFT_RT_INLINE void softmaxRow(const T *src, T *dst, int64_t n,
                                      bool log) {
  T peak = -std::numeric_limits<T>::infinity();
#pragma omp simd reduction(max : peak)
  for (int64_t j = 0; j < n; ++j)
    peak = std::max(peak, src[j]);
  // Log-softmax must not store the exponentials: out may be the input.
  T sum = 0;
  if (log) {
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < n; ++j)
      sum += expOf(src[j] - peak);
    // x - max is exact where it matters (x near max); subtracting log(sum)
    // afterwards keeps the digits that (max + log(sum)) would round off.
    T logSum = std::log(sum);
#pragma omp simd
    for (int64_t j = 0; j < n; ++j)
      dst[j] = (src[j] - peak) - logSum;
    return;
  }
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < n; ++j) {
    T e = expOf(src[j] - peak);
    dst[j] = e;
    sum += e;
  }
  T inverse = T(1) / sum;
#pragma omp simd
  for (int64_t j = 0; j < n; ++j)
    dst[j] *= inverse;
}

/// Softmax along a strided axis for `width` (<= kBlock) neighbouring
/// columns: src and dst point at the first column, rows are `inner` apart.
template <typename T>
static WEFT_RT_INLINE void softmaxBlock(const T *src, T *dst, int64_t axis,
                                        int64_t inner, int64_t width,
                                        bool log) {
  T max[kBlock], sum[kBlock];
  for (int64_t i = 0; i < width; ++i)
    max[i] = -std::numeric_limits<T>::infinity(), sum[i] = 0;
  for (int64_t a = 0; a < axis; ++a) {
    const T *line = src + a * inner;
#pragma omp simd
    for (int64_t i = 0; i < width; ++i)
      max[i] = std::max(max[i], line[i]);
  }
  for (int64_t a = 0; a < axis; ++a) {
    const T *line = src + a * inner;
    T *out = dst + a * inner;
    if (log) {
#pragma omp simd
      for (int64_t i = 0; i < width; ++i)
        sum[i] += expOf(line[i] - max[i]);
    } else {
#pragma omp simd
      for (int64_t i = 0; i < width; ++i) {
        T e = expOf(line[i] - max[i]);
        out[i] = e;
        sum[i] += e;
      }
    }
  }
  for (int64_t i = 0; i < width; ++i)
    sum[i] = log ? std::log(sum[i]) : T(1) / sum[i];
  for (int64_t a = 0; a < axis; ++a) {
    const T *line = src + a * inner;
    T *out = dst + a * inner;
    if (log) {
#pragma omp simd
      for (int64_t i = 0; i < width; ++i)
        out[i] = (line[i] - max[i]) - sum[i];
    } else {
#pragma omp simd
      for (int64_t i = 0; i < width; ++i)
        out[i] *= sum[i];
    }
  }
}

// The f32 bodies compiled for AVX-512 and AVX2 too. They are leaf functions
// called per row or block: OpenMP outlines a parallel loop into a function
// of its own, which would not inherit the clones' targets.
WEFT_RT_VECTOR_CLONES
static void softmaxRowF32(const float *src, float *dst, int64_t n, bool log) {
  softmaxRow(src, dst, n, log);
}

WEFT_RT_VECTOR_CLONES
static void softmaxBlockF32(const float *src, float *dst, int64_t axis,
                            int64_t inner, int64_t width, bool log) {
  softmaxBlock(src, dst, axis, inner, width, log);
}

static void softmaxRowAny(const float *src, float *dst, int64_t n, bool log) {
  softmaxRowF32(src, dst, n, log);
}
static void softmaxRowAny(const double *src, double *dst, int64_t n, bool log) {
  softmaxRow(src, dst, n, log);
}
static void softmaxBlockAny(const float *src, float *dst, int64_t axis,
                            int64_t inner, int64_t width, bool log) {
  softmaxBlockF32(src, dst, axis, inner, width, log);
}
static void softmaxBlockAny(const double *src, double *dst, int64_t axis,
                            int64_t inner, int64_t width, bool log) {
  softmaxBlock(src, dst, axis, inner, width, log);
}

template <typename T>
static void softmax(const SoftmaxShape &s, const T *x, T *y, int nt) {
  if (s.inner == 1) {
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
    for (int64_t row = 0; row < s.outer; ++row)
      softmaxRowAny(x + row * s.axis, y + row * s.axis, s.axis, s.log);
    return;
  }
  const int64_t blocks = (s.inner + kBlock - 1) / kBlock;
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
  for (int64_t unit = 0; unit < s.outer * blocks; ++unit) {
    int64_t o = unit / blocks, begin = (unit % blocks) * kBlock;
    int64_t offset = o * s.axis * s.inner + begin;
    softmaxBlockAny(x + offset, y + offset, s.axis, s.inner,
                    std::min(kBlock, s.inner - begin), s.log);
  }
}

weft_rt_status weft_rt_cpu_softmax(weft_rt_context *ctx, const int64_t *params,
                                   const void *input, void *out) {
  static const char *const kernel = "softmax";
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  WEFT_RT_REQUIRE(ctx, params, "softmax: parameter block is NULL");
  ParamReader r(params);
  SoftmaxShape s;
  s.dtype = r.next();
  WEFT_RT_TRY(checkDtype(ctx, kernel, s.dtype, kFloatDtypes));
  s.outer = r.next();
  s.axis = r.next();
  s.inner = r.next();
  int64_t log = r.next();
  WEFT_RT_REQUIRE(ctx, log == 0 || log == 1,
                  "softmax: log flag %lld is not 0 or 1", (long long)log);
  s.log = log == 1;
  const int64_t factors[] = {s.outer, s.axis, s.inner};
  int64_t count;
  WEFT_RT_REQUIRE(ctx, checkedProduct(factors, 3, count),
                  "softmax: outer=%lld, axis=%lld, inner=%lld are negative "
                  "or overflow",
                  (long long)s.outer, (long long)s.axis, (long long)s.inner);
  if (count == 0)
    return WEFT_RT_OK;
  WEFT_RT_TRY(requireBuffer(ctx, kernel, input, "input"));
  WEFT_RT_TRY(requireBuffer(ctx, kernel, out, "out"));
  // exp costs some ten plain operations.
  int nt = threadsFor(ctx, 8 * count);
  return visitDtype(s.dtype, [&](auto zero) -> weft_rt_status {
    using T = decltype(zero);
    if constexpr (std::is_floating_point_v<T>) {
      softmax(s, static_cast<const T *>(input), static_cast<T *>(out), nt);
      return WEFT_RT_OK;
    }
    return WEFT_RT_INTERNAL;
  });
}
