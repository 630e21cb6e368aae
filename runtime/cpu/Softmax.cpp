//===- Softmax.cpp - ONNX Softmax and LogSoftmax --------------------------===//
//
// weft_rt_cpu_softmax: numerically stable (log-)softmax along one axis, with
// a vectorized exp for f32.
//
//===----------------------------------------------------------------------===//

#include "KernelParams.h"
#include "MathSupport.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace weft::rt::cpu;

#define WEFT_RT_INLINE inline __attribute__((always_inline))

/// Columns of a strided softmax handled together: wide enough to vectorize,
/// small enough for the per-column state to stay on the stack.
constexpr int64_t kBlock = 256;

/// Softmax of one contiguous row of n elements.
template <typename T>
static WEFT_RT_INLINE void softmaxRow(const T *src, T *dst, int64_t n,
                                      bool log) {
  // The maximum in 16 lanes: GCC does not vectorize a max reduction of
  // floats (NaN ordering) but does vectorize this element-wise one.
  constexpr int64_t kLanes = 16;
  T lanes[kLanes];
  for (int64_t l = 0; l < kLanes; ++l)
    lanes[l] = -std::numeric_limits<T>::infinity();
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int64_t l = 0; l < kLanes; ++l)
      lanes[l] = std::max(lanes[l], src[j + l]);
  for (; j < n; ++j)
    lanes[0] = std::max(lanes[0], src[j]);
  T peak = lanes[0];
  for (int64_t l = 1; l < kLanes; ++l)
    peak = std::max(peak, lanes[l]);
  // Sum the exponentials in lanes too, which vectorizes cleanly. Log-softmax
  // must not store them: out may be the input.
  T sums[kLanes] = {};
  j = 0;
  if (log) {
    for (; j + kLanes <= n; j += kLanes)
      for (int64_t l = 0; l < kLanes; ++l)
        sums[l] += expOf(src[j + l] - peak);
  } else {
    for (; j + kLanes <= n; j += kLanes)
      for (int64_t l = 0; l < kLanes; ++l) {
        T e = expOf(src[j + l] - peak);
        dst[j + l] = e;
        sums[l] += e;
      }
  }
  for (; j < n; ++j) {
    T e = expOf(src[j] - peak);
    if (!log)
      dst[j] = e;
    sums[0] += e;
  }
  T sum = sums[0];
  for (int64_t l = 1; l < kLanes; ++l)
    sum += sums[l];
  if (log) {
    // x - max is exact where it matters (x near max); subtracting log(sum)
    // afterwards keeps the digits that (max + log(sum)) would round off.
    T logSum = std::log(sum);
#pragma omp simd
    for (int64_t k = 0; k < n; ++k)
      dst[k] = (src[k] - peak) - logSum;
    return;
  }
  T inverse = T(1) / sum;
#pragma omp simd
  for (int64_t k = 0; k < n; ++k)
    dst[k] *= inverse;
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

/// softmaxRow for floats on explicit 16-lane vectors: GCC's vectorizer
/// turns the max and exp-sum reductions into scalar code otherwise.
WEFT_RT_VECTOR_CLONES
static void softmaxRowF32(const float *src, float *dst, int64_t n, bool log) {
  const float infinity = std::numeric_limits<float>::infinity();
  Float16 lanes = Float16{} - infinity;
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    Float16 v = loadFloat16(src + j);
    lanes = v > lanes ? v : lanes;
  }
  float peak = -infinity;
  for (int l = 0; l < 16; ++l)
    peak = std::max(peak, lanes[l]);
  for (; j < n; ++j)
    peak = std::max(peak, src[j]);
  // Two vectors per step: the exp polynomial is a chain of dependent
  // operations, and two chains keep the FMA units busy.
  Float16 sums = {}, moreSums = {};
  for (j = 0; j + 32 <= n; j += 32) {
    Float16 e = expFloat16(loadFloat16(src + j) - peak);
    Float16 f = expFloat16(loadFloat16(src + j + 16) - peak);
    if (!log) {
      storeFloat16(dst + j, e);
      storeFloat16(dst + j + 16, f);
    }
    sums += e;
    moreSums += f;
  }
  sums += moreSums;
  for (; j + 16 <= n; j += 16) {
    Float16 e = expFloat16(loadFloat16(src + j) - peak);
    // Log-softmax must not store them: out may be the input.
    if (!log)
      storeFloat16(dst + j, e);
    sums += e;
  }
  float sum = 0.0f;
  for (int l = 0; l < 16; ++l)
    sum += sums[l];
  for (; j < n; ++j) {
    float e = expFloat(src[j] - peak);
    if (!log)
      dst[j] = e;
    sum += e;
  }
  if (log) {
    // x - max is exact where it matters (x near max); subtracting log(sum)
    // afterwards keeps the digits that (max + log(sum)) would round off.
    float logSum = std::log(sum);
    for (j = 0; j < n; ++j)
      dst[j] = (src[j] - peak) - logSum;
    return;
  }
  float inverse = 1.0f / sum;
  for (j = 0; j < n; ++j)
    dst[j] *= inverse;
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
  SoftmaxShape s;
  WEFT_RT_TRY(parseSoftmax(ctx, params, s));
  const int64_t count = s.count;
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
