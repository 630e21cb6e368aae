//===- Normalization.cpp - BatchNormalization and layer/instance norms ----===//
//
// weft_rt_cpu_batch_norm (inference: a per-channel affine map) and
// weft_rt_cpu_normalize (each row by its own mean and variance).
//
//===----------------------------------------------------------------------===//

#include "KernelParams.h"
#include "MathSupport.h"

#include <cmath>

using namespace weft::rt::cpu;

#define WEFT_RT_INLINE inline __attribute__((always_inline))

//===----------------------------------------------------------------------===//
// BatchNormalization
//===----------------------------------------------------------------------===//

/// dst = src * scale + shift over one plane.
template <typename T>
static WEFT_RT_INLINE void affinePlane(const T *src, T *dst, int64_t inner,
                                       T scale, T shift) {
#pragma omp simd
  for (int64_t i = 0; i < inner; ++i)
    dst[i] = src[i] * scale + shift;
}

// Compiled for AVX-512 and AVX2 too; called per plane because OpenMP's
// outlined loop body would not inherit the clones' targets.
WEFT_RT_VECTOR_CLONES
static void affinePlaneF32(const float *src, float *dst, int64_t inner,
                           float scale, float shift) {
  affinePlane(src, dst, inner, scale, shift);
}

template <typename T>
static void affinePlanes(const T *x, T *y, const T *a, const T *b,
                         int64_t planes, int64_t channels, int64_t inner,
                         int nt) {
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
  for (int64_t p = 0; p < planes; ++p) {
    T scale = a[p % channels], shift = b[p % channels];
    if constexpr (std::is_same_v<T, float>)
      affinePlaneF32(x + p * inner, y + p * inner, inner, scale, shift);
    else
      affinePlane(x + p * inner, y + p * inner, inner, scale, shift);
  }
}

weft_rt_status weft_rt_cpu_batch_norm(weft_rt_context *ctx,
                                      const int64_t *params, const void *x,
                                      const void *scale, const void *bias,
                                      const void *mean, const void *var,
                                      void *out) {
  static const char *const kernel = "batch_norm";
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  BatchNormShape shape;
  WEFT_RT_TRY(parseBatchNorm(ctx, params, kFloatDtypes, shape));
  const int64_t dtype = shape.dtype, c = shape.c, inner = shape.inner,
                planes = shape.planes, count = shape.count;
  const double epsilon = shape.epsilon;
  if (count == 0)
    return WEFT_RT_OK;
  const void *buffers[] = {x, scale, bias, mean, var, out};
  const char *names[] = {"x", "scale", "bias", "mean", "var", "out"};
  for (int i = 0; i < 6; ++i)
    WEFT_RT_TRY(requireBuffer(ctx, kernel, buffers[i], names[i]));
  return visitDtype(dtype, [&](auto zero) -> weft_rt_status {
    using T = decltype(zero);
    if constexpr (std::is_floating_point_v<T>) {
      // y = x * a + b with a = scale / sqrt(var + eps), b = bias - mean * a.
      ScratchBuffer coefficients;
      WEFT_RT_TRY(coefficients.allocate(ctx, kernel, 2 * c * sizeof(T),
                                        "the coefficients"));
      T *a = coefficients.as<T>(), *b = a + c;
      auto *s = static_cast<const T *>(scale);
      auto *sh = static_cast<const T *>(bias);
      auto *m = static_cast<const T *>(mean);
      auto *v = static_cast<const T *>(var);
      for (int64_t i = 0; i < c; ++i) {
        double factor = static_cast<double>(s[i]) /
                        std::sqrt(static_cast<double>(v[i]) + epsilon);
        a[i] = static_cast<T>(factor);
        b[i] = static_cast<T>(static_cast<double>(sh[i]) -
                              static_cast<double>(m[i]) * factor);
      }
      affinePlanes(static_cast<const T *>(x), static_cast<T *>(out), a, b,
                   planes, c, inner, threadsFor(ctx, count));
      return WEFT_RT_OK;
    }
    return WEFT_RT_INTERNAL;
  });
}

//===----------------------------------------------------------------------===//
// Layer and instance normalization
//===----------------------------------------------------------------------===//

/// Writes row `row` normalized with its mean and 1/sqrt(var + eps). Layer
/// rows take scale[j] and bias[j] per element; instance rows one
/// scale[r % channels] and bias[r % channels].
template <typename T>
static WEFT_RT_INLINE void
applyNormalization(const NormalizeShape &s, int64_t row, const T *src,
                   const T *scale, const T *bias, T *dst, T center, T inverse) {
  const int64_t size = s.size;
  if (s.instance) {
    int64_t channel = row % s.channels;
    T a = scale[channel] * inverse;
    T b = bias ? bias[channel] : T(0);
#pragma omp simd
    for (int64_t j = 0; j < size; ++j)
      dst[j] = (src[j] - center) * a + b;
  } else if (bias) {
#pragma omp simd
    for (int64_t j = 0; j < size; ++j)
      dst[j] = (src[j] - center) * inverse * scale[j] + bias[j];
  } else {
#pragma omp simd
    for (int64_t j = 0; j < size; ++j)
      dst[j] = (src[j] - center) * inverse * scale[j];
  }
}

/// One f64 row: two passes in double, the mean and then the variance
/// around it, which stays accurate for rows far from zero.
static void normalizeRow(const NormalizeShape &s, int64_t row,
                         const double *src, const double *scale,
                         const double *bias, double *dst, double *means,
                         double *inverses) {
  double sum = 0.0;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < s.size; ++j)
    sum += src[j];
  double mean = sum / static_cast<double>(s.size);
  double squares = 0.0;
#pragma omp simd reduction(+ : squares)
  for (int64_t j = 0; j < s.size; ++j)
    squares += (src[j] - mean) * (src[j] - mean);
  double inverse =
      1.0 / std::sqrt(squares / static_cast<double>(s.size) + s.epsilon);
  if (means)
    means[row] = mean;
  if (inverses)
    inverses[row] = inverse;
  applyNormalization(s, row, src, scale, bias, dst, mean, inverse);
}

/// One f32 row, the same two passes on 16-lane float vectors (GCC leaves
/// float reductions scalar otherwise); the lanes are summed in double.
WEFT_RT_VECTOR_CLONES
static void normalizeRowF32(const NormalizeShape &s, int64_t row,
                            const float *src, const float *scale,
                            const float *bias, float *dst, float *means,
                            float *inverses) {
  const int64_t size = s.size;
  Float16 lanes = {};
  int64_t j = 0;
  for (; j + 16 <= size; j += 16)
    lanes += loadFloat16(src + j);
  double sum = 0.0;
  for (int l = 0; l < 16; ++l)
    sum += lanes[l];
  for (; j < size; ++j)
    sum += src[j];
  double mean = sum / static_cast<double>(size);
  float center = static_cast<float>(mean);
  Float16 squares = {};
  for (j = 0; j + 16 <= size; j += 16) {
    Float16 d = loadFloat16(src + j) - center;
    squares += d * d;
  }
  double squareSum = 0.0;
  for (int l = 0; l < 16; ++l)
    squareSum += squares[l];
  for (; j < size; ++j)
    squareSum += (src[j] - center) * (src[j] - center);
  float inverse = static_cast<float>(
      1.0 / std::sqrt(squareSum / static_cast<double>(size) + s.epsilon));
  if (means)
    means[row] = center;
  if (inverses)
    inverses[row] = inverse;
  applyNormalization(s, row, src, scale, bias, dst, center, inverse);
}

template <typename T>
static void normalizeRows(const NormalizeShape &s, const T *x, const T *scale,
                          const T *bias, T *y, T *means, T *inverses, int nt) {
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
  for (int64_t row = 0; row < s.outer; ++row) {
    if constexpr (std::is_same_v<T, float>)
      normalizeRowF32(s, row, x + row * s.size, scale, bias, y + row * s.size,
                      means, inverses);
    else
      normalizeRow(s, row, x + row * s.size, scale, bias, y + row * s.size,
                   means, inverses);
  }
}

weft_rt_status weft_rt_cpu_normalize(weft_rt_context *ctx,
                                     const int64_t *params, const void *x,
                                     const void *scale, const void *bias,
                                     void *out, void *out_mean,
                                     void *out_inv_std_dev) {
  static const char *const kernel = "normalize";
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  NormalizeShape s;
  WEFT_RT_TRY(parseNormalize(ctx, params, s));
  const int64_t count = s.count;
  if (count == 0)
    return WEFT_RT_OK;
  WEFT_RT_TRY(requireBuffer(ctx, kernel, x, "x"));
  WEFT_RT_TRY(requireBuffer(ctx, kernel, scale, "scale"));
  WEFT_RT_TRY(requireBuffer(ctx, kernel, out, "out"));
  int nt = threadsFor(ctx, 3 * count);
  return visitDtype(s.dtype, [&](auto zero) -> weft_rt_status {
    using T = decltype(zero);
    if constexpr (std::is_floating_point_v<T>) {
      normalizeRows(s, static_cast<const T *>(x), static_cast<const T *>(scale),
                    static_cast<const T *>(bias), static_cast<T *>(out),
                    static_cast<T *>(out_mean),
                    static_cast<T *>(out_inv_std_dev), nt);
      return WEFT_RT_OK;
    }
    return WEFT_RT_INTERNAL;
  });
}
