//===- ConvChannelsLast.cpp - Convolutions in channels-last layouts -------===//
//
// weft_rt_cpu_conv for blocks whose layout word is not 0 (channels-last
// input or output, kernel-first weights): the shapes that MobileNetV2-style
// blocks run in NHWC without transposes. A 1x1 convolution is one GEMM per
// image (one for the whole batch when input and output are both
// channels-last) with the transposes the layouts ask for, finished (bias,
// residual Add, clamp) by the thread that computed each block while it is
// in cache. A depthwise one runs the channel-blocked tiles of
// DepthwiseBlocked.cpp, which load and store channels-last pixels without
// transposes, or, where those do not apply, a plain loop over channels.
//
//===----------------------------------------------------------------------===//

#include "Conv.h"
#include "KernelParams.h"
#include "MathSupport.h"

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <limits>

using namespace weft::rt::cpu;

static const char *const kConv = "conv";

//===----------------------------------------------------------------------===//
// 1x1 convolutions: one GEMM
//===----------------------------------------------------------------------===//

namespace {
/// One operand of a product C = op(A) op(B): row-major floats, stored
/// transposed when `transposed`, `ld` floats between its stored rows.
struct MatrixOperand {
  const float *data;
  bool transposed;
  int64_t ld;
  /// Where row `row` of op(A) starts, for a product of rows from `row` on.
  const float *fromRow(int64_t row) const {
    return transposed ? data + row : data + row * ld;
  }
  /// Where column `column` of op(B) starts.
  const float *fromColumn(int64_t column) const {
    return transposed ? data + column * ld : data + column;
  }
};

/// y (rows x columns, dense) = op(A) op(B), then each element finished:
/// y = clamp(y + bias + addend). The bias is one per row (an NC[D]HW
/// output's channels) or one per column (a channels-last output's).
struct PointwiseProduct {
  int64_t rows, columns, reduction;
  MatrixOperand a, b;
  float *y;
  /// NULL: none; the addend has y's shape.
  const float *bias, *addend;
  bool biasPerColumn;
};
} // namespace

/// y[i] = clamp(y[i] (+ bias[i]) (+ addend[i]), low, high) for i < count;
/// NaN stays NaN: a compare with NaN is false, so the ternaries keep it
/// (x86's min and max, which GCC makes of them, return their second
/// operand, the value).
template <bool kBias, bool kAddend>
static inline __attribute__((always_inline)) void
finishChannels(float *__restrict y, int64_t count,
               const float *__restrict bias, float low, float high,
               const float *__restrict addend) {
  for (int64_t i = 0; i < count; ++i) {
    float value = y[i];
    if constexpr (kBias)
      value += bias[i];
    if constexpr (kAddend)
      value += addend[i];
    value = value < low ? low : value;
    y[i] = value > high ? high : value;
  }
}

/// A channels-last output row's finish: bias[i] per column. Compiled for
/// AVX-512 and AVX2 as finishConvRow is.
WEFT_RT_VECTOR_CLONES
static void finishRowOfChannels(float *y, int64_t count, const float *bias,
                                float low, float high, const float *addend) {
  if (bias && addend)
    return finishChannels<true, true>(y, count, bias, low, high, addend);
  if (bias)
    return finishChannels<true, false>(y, count, bias, low, high, addend);
  if (addend)
    return finishChannels<false, true>(y, count, bias, low, high, addend);
  finishChannels<false, false>(y, count, bias, low, high, addend);
}

/// Computes and finishes rows [r0, r1) and columns [c0, c1) of `p` with
/// one sgemm (on the threads OpenMP allows: one inside a parallel region).
static weft_rt_status productBlock(weft_rt_context *ctx, GemmBackend backend,
                                   const ConvShape &s,
                                   const PointwiseProduct &p, bool finish,
                                   int64_t r0, int64_t r1, int64_t c0,
                                   int64_t c1) {
  if (r0 >= r1 || c0 >= c1)
    return WEFT_RT_OK;
  float *y = p.y + r0 * p.columns + c0;
  WEFT_RT_TRY(gemmF32(ctx, backend, p.a.transposed, p.b.transposed, r1 - r0,
                      c1 - c0, p.reduction, 1.0f, p.a.fromRow(r0), p.a.ld,
                      p.b.fromColumn(c0), p.b.ld, 0.0f, y, p.columns));
  if (!finish)
    return WEFT_RT_OK;
  for (int64_t r = r0; r < r1; ++r) {
    float *row = p.y + r * p.columns + c0;
    const float *addend = p.addend ? p.addend + r * p.columns + c0 : nullptr;
    if (p.biasPerColumn)
      finishRowOfChannels(row, c1 - c0, p.bias ? p.bias + c0 : nullptr,
                          s.clampLow, s.clampHigh, addend);
    else
      finishConvRow(row, c1 - c0, p.bias ? p.bias[r] : 0.0f, s.clampLow,
                    s.clampHigh, addend);
  }
  return WEFT_RT_OK;
}

/// `p` on `team` threads, each taking a block of rows (a channels-last
/// output's pixels, an NC[D]HW output's channels) or, with fewer than 32
/// rows per thread, of columns, 16 at a time, with a single-threaded sgemm
/// that it finishes at once, while the block is in its cache (as
/// gemmAndFinishSplit does for the plain layout, Conv.cpp).
static weft_rt_status productOnTeam(weft_rt_context *ctx, GemmBackend backend,
                                    const ConvShape &s,
                                    const PointwiseProduct &p, bool finish,
                                    int team) {
  if (team <= 1)
    return productBlock(ctx, backend, s, p, finish, 0, p.rows, 0, p.columns);
  weft_rt_status status = WEFT_RT_OK;
  const bool byRows = p.rows >= 32 * team;
#pragma omp parallel num_threads(team)
  {
    const int64_t size = omp_get_num_threads(), t = omp_get_thread_num();
    int64_t r0 = 0, r1 = p.rows, c0 = 0, c1 = p.columns;
    if (byRows) {
      r0 = p.rows * t / size, r1 = p.rows * (t + 1) / size;
    } else {
      const int64_t blocks = (p.columns + 15) / 16;
      c0 = std::min(p.columns, blocks * t / size * 16);
      c1 = std::min(p.columns, blocks * (t + 1) / size * 16);
    }
    weft_rt_status mine = productBlock(ctx, backend, s, p, finish, r0, r1, c0,
                                       c1);
    if (mine != WEFT_RT_OK) {
#pragma omp critical(weftConvChannelsLastStatus)
      status = mine;
    }
  }
  return status;
}

/// A 2-D 1x1 unstrided, unpadded convolution of group 1 in any layout: per
/// image, Y[P x OC] = X[P x C] Wt[C x OC] for a channels-last output (P
/// pixels; X^T when the input is NC[D]HW, W^T when the weight is OIHW), or
/// Y[OC x P] = W[OC x C] X[C x P] for an NC[D]HW one, transposed as the
/// input and weight ask. With C == 0 the product is zeros (nothing is
/// read), then finished.
static weft_rt_status convPointwiseAnyLayout(weft_rt_context *ctx,
                                             GemmBackend backend,
                                             const ConvShape &s,
                                             const float *x, const float *w,
                                             const float *bias, float *y,
                                             const float *addend) {
  const int64_t pixels = s.outPlane();
  PointwiseProduct p;
  p.reduction = s.c;
  p.bias = bias;
  p.biasPerColumn = s.outputChannelsLast;
  if (s.outputChannelsLast) {
    p.rows = pixels, p.columns = s.oc;
    p.a = s.inputChannelsLast ? MatrixOperand{x, false, s.c}
                              : MatrixOperand{x, true, pixels};
    p.b = s.weightKernelFirst ? MatrixOperand{w, false, s.oc}
                              : MatrixOperand{w, true, s.c};
  } else {
    p.rows = s.oc, p.columns = pixels;
    p.a = s.weightKernelFirst ? MatrixOperand{w, true, s.oc}
                              : MatrixOperand{w, false, s.c};
    p.b = s.inputChannelsLast ? MatrixOperand{x, true, s.c}
                              : MatrixOperand{x, false, pixels};
  }
  // Channels-last in and out: the batch's pixels are the rows of one
  // product.
  int64_t images = s.n;
  if (s.inputChannelsLast && s.outputChannelsLast)
    p.rows *= s.n, images = 1;
  const bool finish = bias || s.hasClamp || addend;
  const int team = threadsFor(ctx, p.rows * p.columns * std::max<int64_t>(
                                                            p.reduction, 1));
  applyLibraryThreads(ctx);
  for (int64_t image = 0; image < images; ++image) {
    const float *xi = x + image * s.c * pixels;
    (s.outputChannelsLast ? p.a : p.b).data = xi;
    p.y = y + image * s.oc * pixels;
    p.addend = addend ? addend + image * s.oc * pixels : nullptr;
    WEFT_RT_TRY(productOnTeam(ctx, backend, s, p, finish, team));
  }
  return WEFT_RT_OK;
}

//===----------------------------------------------------------------------===//
// Depthwise convolutions
//===----------------------------------------------------------------------===//

namespace {
/// Where a depthwise convolution's elements lie: floats between pixels and
/// between channels of the input and the output, between taps and between
/// channels of the weight.
struct DepthwiseStrides {
  int64_t inPixel, inChannel, tap, weightChannel, outPixel, outChannel;
};
} // namespace

/// Output row `row` (image * OH + oy) of a 2-D depthwise convolution in any
/// layout: each output pixel's channels accumulated in `acc` (C floats),
/// tap by tap, then clamped and stored. Correct for every shape; the
/// channel loops vectorize where the strides are 1 (channels-last).
WEFT_RT_VECTOR_CLONES
static void depthwiseRowAnyLayout(const ConvShape &s,
                                  const DepthwiseStrides &d,
                                  const float *__restrict x,
                                  const float *__restrict w,
                                  const float *__restrict bias,
                                  float *__restrict y, int64_t row,
                                  float *__restrict acc) {
  const int64_t c = s.c, image = row / s.out[1], oy = row % s.out[1];
  const int64_t h = s.in[1], width = s.in[2], ow = s.out[2];
  const float *xImage = x + image * c * s.inPlane();
  float *yImage = y + image * c * s.outPlane();
  for (int64_t ox = 0; ox < ow; ++ox) {
    for (int64_t ch = 0; ch < c; ++ch)
      acc[ch] = bias ? bias[ch] : 0.0f;
    for (int64_t ky = 0; ky < s.kernel[1]; ++ky) {
      const int64_t iy = oy * s.strides[1] - s.padsBegin[1] +
                         ky * s.dilations[1];
      if (iy < 0 || iy >= h)
        continue;
      for (int64_t kx = 0; kx < s.kernel[2]; ++kx) {
        const int64_t ix = ox * s.strides[2] - s.padsBegin[2] +
                           kx * s.dilations[2];
        if (ix < 0 || ix >= width)
          continue;
        const float *xp = xImage + (iy * width + ix) * d.inPixel;
        const float *wp = w + (ky * s.kernel[2] + kx) * d.tap;
        for (int64_t ch = 0; ch < c; ++ch)
          acc[ch] += xp[ch * d.inChannel] * wp[ch * d.weightChannel];
      }
    }
    float *yp = yImage + (oy * ow + ox) * d.outPixel;
    for (int64_t ch = 0; ch < c; ++ch) {
      float value = acc[ch] < s.clampLow ? s.clampLow : acc[ch];
      yp[ch * d.outChannel] = value > s.clampHigh ? s.clampHigh : value;
    }
  }
}

/// A 2-D depthwise convolution in any layout: the channel-blocked tiles
/// where they apply, else the plain loop, output rows split between the
/// threads.
static weft_rt_status convDepthwiseAnyLayout(weft_rt_context *ctx,
                                             const ConvShape &s,
                                             const float *x, const float *w,
                                             const float *bias, float *y) {
  const int64_t taps = s.kernelVolume();
  const int64_t work =
      s.n * s.c * (s.outPlane() * (taps + 1) + s.inPlane());
  const int64_t rows = s.n * s.out[1];
  const int nt = static_cast<int>(
      std::min<int64_t>(threadsFor(ctx, work), std::max<int64_t>(rows, 1)));
  if (runBlockedDepthwise(s, depthwiseIsa(), nt, x, w, bias, y))
    return WEFT_RT_OK;
  const DepthwiseStrides d = {
      s.inputChannelsLast ? s.c : 1,  s.inputChannelsLast ? 1 : s.inPlane(),
      s.weightKernelFirst ? s.c : 1,  s.weightKernelFirst ? 1 : taps,
      s.outputChannelsLast ? s.c : 1, s.outputChannelsLast ? 1 : s.outPlane()};
  ScratchBuffer sums;
  WEFT_RT_TRY(sums.allocate(ctx, kConv, nt * s.c * sizeof(float),
                            "the depthwise sums"));
  float *acc = sums.as<float>();
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
  for (int64_t row = 0; row < rows; ++row)
    depthwiseRowAnyLayout(s, d, x, w, bias, y, row,
                          acc + omp_get_thread_num() * s.c);
  return WEFT_RT_OK;
}

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

/// Whether `s` is a 2-D 1x1 convolution of group 1 with strides 1 and no
/// pads: a GEMM in any layout.
static bool isPlainPointwise(const ConvShape &s) {
  if (s.spatialRank != 2 || s.group != 1 || s.kernelVolume() != 1)
    return false;
  for (int d = 1; d < 3; ++d)
    if (s.strides[d] != 1 || s.padsBegin[d] != 0 || s.padsEnd[d] != 0)
      return false;
  return true;
}

/// "3x3" for the 2-D sizes of `values` ("3" for 1-D, "1x3x3" for 3-D).
static void formatSizes(const ConvShape &s, const int64_t values[3],
                        char (&text)[64]) {
  const int64_t first = 3 - s.spatialRank;
  int used = 0;
  for (int64_t d = first; d < 3 && used < 64; ++d)
    used += std::snprintf(text + used, sizeof(text) - used, "%s%lld",
                          d == first ? "" : "x", (long long)values[d]);
}

/// The failure for a shape that no channels-last code takes.
static weft_rt_status unsupportedShape(weft_rt_context *ctx,
                                       const ConvShape &s) {
  char kernel[64], strides[64], padsBegin[64], padsEnd[64];
  formatSizes(s, s.kernel, kernel);
  formatSizes(s, s.strides, strides);
  formatSizes(s, s.padsBegin, padsBegin);
  formatSizes(s, s.padsEnd, padsEnd);
  return weft_rt_fail(
      ctx, WEFT_RT_UNSUPPORTED,
      "conv: channels-last layouts (layout %lld) are supported for 2-D 1x1 "
      "unstrided unpadded convolutions of group 1 and 2-D depthwise ones; "
      "this one has kernel %s, strides %s, pads %s and %s, group %lld (C "
      "%lld, OC %lld)",
      (long long)s.layout, kernel, strides, padsBegin, padsEnd,
      (long long)s.group, (long long)s.c, (long long)s.oc);
}

weft_rt_status weft::rt::cpu::convChannelsLast(
    weft_rt_context *ctx, ConvAlgorithm algorithm, const ConvShape &s,
    const void *input, const void *weight, const void *bias, void *out,
    const void *addend) {
  const bool pointwise = isPlainPointwise(s);
  const bool depthwise = s.spatialRank == 2 && s.isDepthwise();
  if (!pointwise && !depthwise)
    return unsupportedShape(ctx, s);
  // The algorithms that have channels-last code: a 1x1 convolution is a
  // GEMM on either backend (Auto: oneDNN's), a depthwise one our kernel.
  const bool gemm = algorithm == ConvAlgorithm::Auto ||
                    algorithm == ConvAlgorithm::Im2colOneDnnGemm ||
                    algorithm == ConvAlgorithm::Im2colOpenBlas;
  const bool asPointwise = pointwise && gemm;
  const bool asDepthwise = !asPointwise && depthwise &&
                           (algorithm == ConvAlgorithm::Auto ||
                            algorithm == ConvAlgorithm::Depthwise);
  if (!asPointwise && !asDepthwise)
    return weft_rt_fail(ctx, WEFT_RT_UNSUPPORTED,
                        "conv: with layout %lld, a 1x1 convolution runs on "
                        "Auto or an im2col algorithm and a depthwise one on "
                        "Auto or Depthwise; algorithm %d was asked for",
                        (long long)s.layout, static_cast<int>(algorithm));
  const GemmBackend backend = algorithm == ConvAlgorithm::Im2colOpenBlas
                                  ? GemmBackend::OpenBlas
                                  : GemmBackend::OneDnn;
  const int64_t outCount = s.n * s.oc * s.outPlane();
  if (outCount == 0)
    return WEFT_RT_OK;
  WEFT_RT_TRY(requireBuffer(ctx, kConv, out, "out"));
  if (s.c > 0) {
    WEFT_RT_TRY(requireBuffer(ctx, kConv, input, "input"));
    WEFT_RT_TRY(requireBuffer(ctx, kConv, weight, "weight"));
  }
  const auto *x = static_cast<const float *>(input);
  const auto *w = static_cast<const float *>(weight);
  const auto *b = static_cast<const float *>(bias);
  const auto *a = static_cast<const float *>(addend);
  auto *y = static_cast<float *>(out);
  if (asPointwise && s.weightPacked) {
    if (algorithm != ConvAlgorithm::Auto)
      return weft_rt_fail(ctx, WEFT_RT_UNSUPPORTED,
                          "conv: a packed weight (layout bit 64) runs on "
                          "Auto only; algorithm %d was asked for",
                          static_cast<int>(algorithm));
    return convPointwisePacked(ctx, s, x, w, b, y, a);
  }
  if (asPointwise)
    return convPointwiseAnyLayout(ctx, backend, s, x, w, b, y, a);
  // The depthwise kernels clamp in their epilogue, before an Add could come
  // in: with an addend they run without the clamp, and one pass adds the
  // addend (laid out as the output) and clamps.
  ConvShape unclamped = s;
  if (a) {
    unclamped.hasClamp = false;
    unclamped.clampLow = -std::numeric_limits<float>::infinity();
    unclamped.clampHigh = std::numeric_limits<float>::infinity();
  }
  WEFT_RT_TRY(convDepthwiseAnyLayout(ctx, unclamped, x, w, b, y));
  if (a)
    addAndClamp(s, y, a, outCount, threadsFor(ctx, outCount));
  return WEFT_RT_OK;
}
