//===- Conv.cpp - ONNX Conv: validation, dispatch and im2col --------------===//
//
// weft_rt_cpu_conv: reads the parameter block (parseConv, ConvShape.cpp),
// picks an algorithm per shape and implements the im2col + GEMM one
// (oneDNN's are in ConvOneDnn.cpp, the depthwise one in DepthwiseConv.cpp
// and DepthwiseBlocked.cpp, the direct one for first layers in
// DirectConv.cpp).
//
//===----------------------------------------------------------------------===//

#include "Conv.h"
#include "KernelParams.h"
#include "MathSupport.h"

#include <omp.h>

#include <limits>

using namespace weft::rt::cpu;

static const char *const kConv = "conv";

//===----------------------------------------------------------------------===//
// im2col + GEMM
//===----------------------------------------------------------------------===//

/// dst[ow] = src[ow * stride] for ow in [begin, end); stride 2 (strided
/// 1x1 projections, strided 3x3 layers) known at compile time vectorizes.
WEFT_RT_VECTOR_CLONES
static void gatherStrided(float *__restrict dst, const float *__restrict src,
                          int64_t begin, int64_t end, int64_t stride) {
  if (stride == 2) {
    for (int64_t ow = begin; ow < end; ++ow)
      dst[ow] = src[ow * 2];
    return;
  }
  for (int64_t ow = begin; ow < end; ++ow)
    dst[ow] = src[ow * stride];
}

/// Unfolds the `cg` channels at x into col: one row per (channel, kernel
/// tap), one column per output position, zeros where a tap reads padding.
static void im2col(const ConvShape &s, const float *x, int64_t cg, float *col,
                   int nt) {
  const int64_t k1 = s.kernel[1], k2 = s.kernel[2];
  const int64_t kernelVolume = s.kernelVolume();
  const int64_t outPlane = s.outPlane(), inPlane = s.inPlane();
  const int64_t rows = cg * kernelVolume;
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
  for (int64_t row = 0; row < rows; ++row) {
    int64_t kw = row % k2, kh = (row / k2) % k1,
            kd = (row / (k1 * k2)) % s.kernel[0];
    int64_t channel = row / kernelVolume;
    float *dst = col + row * outPlane;
    const float *src = x + channel * inPlane;
    int64_t shiftW = kw * s.dilations[2] - s.padsBegin[2];
    int64_t owBegin = std::min(
        std::max<int64_t>(ceilDiv(-shiftW, s.strides[2]), 0), s.out[2]);
    int64_t owEnd =
        std::min(std::max<int64_t>(ceilDiv(s.in[2] - shiftW, s.strides[2]), 0),
                 s.out[2]);
    owEnd = std::max(owEnd, owBegin);
    for (int64_t od = 0; od < s.out[0]; ++od) {
      int64_t id = od * s.strides[0] - s.padsBegin[0] + kd * s.dilations[0];
      for (int64_t oh = 0; oh < s.out[1]; ++oh, dst += s.out[2]) {
        int64_t ih = oh * s.strides[1] - s.padsBegin[1] + kh * s.dilations[1];
        if (id < 0 || id >= s.in[0] || ih < 0 || ih >= s.in[1]) {
          std::memset(dst, 0, sizeof(float) * s.out[2]);
          continue;
        }
        const float *srcRow = src + (id * s.in[1] + ih) * s.in[2] + shiftW;
        for (int64_t ow = 0; ow < owBegin; ++ow)
          dst[ow] = 0.0f;
        if (s.strides[2] == 1) {
          std::memcpy(dst + owBegin, srcRow + owBegin,
                      sizeof(float) * (owEnd - owBegin));
        } else {
          gatherStrided(dst, srcRow, owBegin, owEnd, s.strides[2]);
        }
        for (int64_t ow = owEnd; ow < s.out[2]; ++ow)
          dst[ow] = 0.0f;
      }
    }
  }
}

/// y[i] = clamp(y[i] + bias (+ addend[i]), low, high) for i < count
/// (Conv.h). Compiled for AVX-512 and AVX2 as well (the runtime's baseline is SSE2):
/// on MobileNetV2's 96x16 pointwise layer at 112x112, whose sgemm takes
/// about 152 us, the SSE2 loop added about 100 us and the AVX-512 one adds
/// about 40 (bench/kernels/README.md). `addend` (NULL: none) is a fused
/// residual Add (weft_rt_cpu_conv_add).
WEFT_RT_VECTOR_CLONES
void weft::rt::cpu::finishConvRow(float *y, int64_t count, float bias,
                                  float low, float high,
                                  const float *addend) {
  if (addend) {
    for (int64_t i = 0; i < count; ++i) {
      float value = y[i] + bias + addend[i];
      value = value < low ? low : value;
      y[i] = value > high ? high : value;
    }
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    float value = y[i] + bias;
    value = value < low ? low : value;
    y[i] = value > high ? high : value;
  }
}

/// Finishes `planes` output planes of `plane` elements each, whose channel
/// biases are bias[0..planes) (bias NULL: none): adds the bias (and the
/// addend's planes, when not NULL) to what the GEMM wrote (or, with `fill`,
/// writes them alone) and applies the fused clamp, in one pass.
static void finishPlanes(const ConvShape &s, const float *bias, bool fill,
                         float *out, int64_t planes, int64_t plane, int nt,
                         const float *addend = nullptr) {
  const float low = s.clampLow, high = s.clampHigh;
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
  for (int64_t p = 0; p < planes; ++p) {
    float *y = out + p * plane;
    const float b = bias ? bias[p] : 0.0f;
    const float *a = addend ? addend + p * plane : nullptr;
    if (fill)
      std::fill(y, y + plane, 0.0f);
    finishConvRow(y, plane, b, low, high, a);
  }
}

void weft::rt::cpu::addAndClamp(const ConvShape &s, float *y,
                                const float *addend, int64_t count, int nt) {
  constexpr int64_t kChunk = 1 << 14;
  const int64_t chunks = (count + kChunk - 1) / kChunk;
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    const int64_t begin = chunk * kChunk;
    finishConvRow(y + begin, std::min(kChunk, count - begin), 0.0f,
                  s.clampLow, s.clampHigh, addend ? addend + begin : nullptr);
  }
}

/// One group's product and finish on `team` threads that each take a block
/// of output channels (or, with fewer than 32 per thread, of columns, 16 at
/// a time) with a single-threaded sgemm and finish it at once, while it is
/// in their cache: one parallel region instead of the library's and
/// finishPlanes', and no thread finishes what another wrote. MobileNetV2's
/// 34 pointwise layers on two threads: 1265-1421 us -> 1207-1339 in three
/// alternating runs (every layer faster; 96x576 14: 50.7 -> 45.0 us);
/// bench/kernels/README.md.
static weft_rt_status gemmAndFinishSplit(weft_rt_context *ctx,
                                         GemmBackend backend,
                                         const ConvShape &s, int64_t rows,
                                         int64_t columns, int64_t reduction,
                                         const float *w, const float *x,
                                         const float *bias, bool finish,
                                         float *y, int team,
                                         const float *addend) {
  weft_rt_status status = WEFT_RT_OK;
  const bool byRows = rows >= 32 * team;
#pragma omp parallel num_threads(team)
  {
    const int64_t size = omp_get_num_threads(), t = omp_get_thread_num();
    int64_t r0 = 0, r1 = rows, c0 = 0, c1 = columns;
    if (byRows) {
      r0 = rows * t / size, r1 = rows * (t + 1) / size;
    } else {
      const int64_t blocks = (columns + 15) / 16;
      c0 = std::min(columns, blocks * t / size * 16);
      c1 = std::min(columns, blocks * (t + 1) / size * 16);
    }
    weft_rt_status mine = WEFT_RT_OK;
    if (r0 < r1 && c0 < c1) {
      mine = gemmF32(ctx, backend, false, false, r1 - r0, c1 - c0, reduction,
                     1.0f, w + r0 * reduction, reduction, x + c0, columns,
                     0.0f, y + r0 * columns + c0, columns);
      if (mine == WEFT_RT_OK && finish)
        for (int64_t p = r0; p < r1; ++p)
          finishConvRow(y + p * columns + c0, c1 - c0,
                        bias ? bias[p] : 0.0f, s.clampLow, s.clampHigh,
                        addend ? addend + p * columns + c0 : nullptr);
    }
    if (mine != WEFT_RT_OK) {
#pragma omp critical(weftConvSplitStatus)
      status = mine;
    }
  }
  return status;
}

static weft_rt_status convIm2col(weft_rt_context *ctx, GemmBackend backend,
                                 const int64_t *params, const ConvShape &s,
                                 const float *input,
                                 const float *weight, const float *bias,
                                 float *out, const float *addend) {
  const int64_t cg = s.c / s.group, ocg = s.oc / s.group;
  const int64_t reduction = cg * s.kernelVolume();
  const int64_t outPlane = s.outPlane(), inPlane = s.inPlane();
  bool direct = s.kernelVolume() == 1;
  for (int d = 0; d < 3; ++d)
    direct =
        direct && s.strides[d] == 1 && s.padsBegin[d] == 0 && s.padsEnd[d] == 0;
  // The im2col matrix is kept between calls: allocated at every call, one
  // of ResNet-18's strided 1x1 projections (200 KB) was mapped and faulted
  // in each time.
  float *columnsBuffer = nullptr;
  if (!direct) {
    columnsBuffer = cachedScratch(ctx, params, s.words, reduction * outPlane,
                                  kConv, "the im2col matrix");
    if (!columnsBuffer)
      return WEFT_RT_OUT_OF_MEMORY;
  }
  // The GEMM writes each group's output (beta 0); the bias and the clamp
  // follow in one pass over it while it is still in cache, or not at all.
  const bool finish = bias || s.hasClamp || addend;
  const int finishThreads = threadsFor(ctx, ocg * outPlane);
  int nt = threadsFor(ctx, reduction * outPlane);
  applyLibraryThreads(ctx);
  for (int64_t image = 0; image < s.n; ++image) {
    for (int64_t g = 0; g < s.group; ++g) {
      const float *x = input + (image * s.c + g * cg) * inPlane;
      float *y = out + (image * s.oc + g * ocg) * outPlane;
      const float *groupAddend =
          addend ? addend + (image * s.oc + g * ocg) * outPlane : nullptr;
      const float *columns = x;
      if (!direct) {
        im2col(s, x, cg, columnsBuffer, nt);
        columns = columnsBuffer;
      }
      const float *w = weight + g * ocg * reduction;
      const float *b = bias ? bias + g * ocg : nullptr;
      const int team = threadsFor(ctx, ocg * outPlane * reduction);
      if (team > 1) {
        WEFT_RT_TRY(gemmAndFinishSplit(ctx, backend, s, ocg, outPlane,
                                       reduction, w, columns, b, finish, y,
                                       team, groupAddend));
        continue;
      }
      WEFT_RT_TRY(gemmF32(ctx, backend, false, false, ocg, outPlane, reduction,
                          1.0f, w, reduction,
                          columns, outPlane, 0.0f, y, outPlane));
      if (finish)
        finishPlanes(s, bias ? bias + g * ocg : nullptr, false, y, ocg,
                     outPlane, finishThreads, groupAddend);
    }
  }
  return WEFT_RT_OK;
}

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

bool weft::rt::cpu::winogradTakes(const ConvShape &s) {
  return s.spatialRank == 2 && s.group == 1 && s.kernel[1] == 3 &&
         s.kernel[2] == 3 && s.strides[1] == 1 && s.strides[2] == 1 &&
         s.dilations[1] == 1 && s.dilations[2] == 1;
}

/// The algorithm weft_rt_cpu_conv uses for a shape; the rules follow
/// weft-kernel-bench's figures on ResNet-18's layers (bench/kernels/README.md).
static ConvAlgorithm chooseAlgorithm(const ConvShape &s) {
  // A network's first layer (3 channels in, or 1): our direct kernel fills
  // its vectors along the output rows, where oneDNN's pads the channels to
  // a vector (ResNet-18's 7x7 stem, MobileNetV2's 3x3 one) or runs
  // Winograd on a single channel (a CRNN's 1 -> 64 3x3 layer: 300 us).
  if (directConvTakes(s))
    return ConvAlgorithm::Direct;
  // Winograd halves the time of stride-1 3x3 layers at no loss of accuracy
  // worth noting (F(2,3): as direct; F(4,3): about 2e-6 of the largest
  // output); oneDNN falls back to direct where it has none.
  if (winogradTakes(s))
    return ConvAlgorithm::OneDnnWinograd;
  // Depthwise (channel multiplier 1): our direct kernel on the plain layout
  // is several times faster than oneDNN's blocked one with its two
  // reorders (MobileNetV2's layers in bench/kernels/README.md).
  if (s.isDepthwise() && s.spatialRank == 2)
    return ConvAlgorithm::Depthwise;
  // 1x1 convolutions are GEMMs already (after subsampling when strided):
  // one sgemm on the plain layout is as fast as oneDNN's GEMM-based
  // convolution and beats a blocked one, which pays two reorders. On
  // MobileNetV2's pointwise layers with a fused Relu6, oneDNN's plain
  // convolution is 3x to 15x slower (its clip post-op), and neither a oneDNN
  // matmul with the bias in its epilogue (oneDNN 2.6 runs a per-row bias on
  // its reference matmul, a per-row binary add on brgemm at half the sgemm's
  // speed) nor sgemm on L2-sized column tiles finished in cache beat the
  // sgemm + vectorized finishPlanes: 2420 us vs 2765 us before it was
  // vectorized, 34 layers at 1 thread (bench/kernels/README.md).
  if (s.kernelVolume() == 1 && s.group == 1)
    return ConvAlgorithm::Im2colOneDnnGemm;
  return ConvAlgorithm::OneDnnBlocked;
}

weft_rt_status weft::rt::cpu::convWith(weft_rt_context *ctx,
                                       ConvAlgorithm algorithm,
                                       const int64_t *params, const void *input,
                                       const void *weight, const void *bias,
                                       void *out, const void *addend) {
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  ConvShape s;
  WEFT_RT_TRY(parseConv(ctx, params, s));
  if (s.anyBlocked())
    return convBlocked(ctx, algorithm, params, s, input, weight, bias, out,
                       addend);
  if (s.layout != 0)
    return convChannelsLast(ctx, algorithm, s, input, weight, bias, out,
                            addend);
  int64_t outCount = s.n * s.oc * s.outPlane();
  if (outCount == 0)
    return WEFT_RT_OK;
  WEFT_RT_TRY(requireBuffer(ctx, kConv, out, "out"));
  auto *y = static_cast<float *>(out);
  const auto *b = static_cast<const float *>(bias);
  const auto *a = static_cast<const float *>(addend);
  if (s.c == 0) {
    // Nothing to convolve (oneDNN refuses empty channels): the clamped
    // bias (plus the addend).
    for (int64_t image = 0; image < s.n; ++image)
      finishPlanes(s, b, true, y + image * s.oc * s.outPlane(), s.oc,
                   s.outPlane(), threadsFor(ctx, s.oc * s.outPlane()),
                   a ? a + image * s.oc * s.outPlane() : nullptr);
    return WEFT_RT_OK;
  }
  WEFT_RT_TRY(requireBuffer(ctx, kConv, input, "input"));
  WEFT_RT_TRY(requireBuffer(ctx, kConv, weight, "weight"));
  const auto *x = static_cast<const float *>(input);
  const auto *w = static_cast<const float *>(weight);
  if (algorithm == ConvAlgorithm::Auto)
    algorithm = chooseAlgorithm(s);
  switch (algorithm) {
  case ConvAlgorithm::Im2colOneDnnGemm:
    return convIm2col(ctx, GemmBackend::OneDnn, params, s, x, w, b, y, a);
  case ConvAlgorithm::Im2colOpenBlas:
    return convIm2col(ctx, GemmBackend::OpenBlas, params, s, x, w, b, y, a);
  default:
    break;
  }
  // The other algorithms clamp in their own epilogues (oneDNN's in a pass
  // after it, ConvOneDnn.cpp), before an Add could come in: with an addend
  // they run without the clamp, and one pass adds the addend and clamps.
  const ConvShape unclamped = a ? withoutClamp(s) : s;
  switch (algorithm) {
  case ConvAlgorithm::Depthwise:
    if (!s.isDepthwise())
      return weft_rt_fail(ctx, WEFT_RT_UNSUPPORTED,
                          "conv: the depthwise algorithm needs group == C == "
                          "OC (group %lld, C %lld, OC %lld)",
                          (long long)s.group, (long long)s.c, (long long)s.oc);
    WEFT_RT_TRY(convDepthwise(ctx, unclamped, x, w, b, y));
    break;
  case ConvAlgorithm::Direct:
    WEFT_RT_TRY(convDirect(ctx, params, unclamped, x, w, b, y));
    break;
  case ConvAlgorithm::OneDnnWinogradBands:
    // Refused: the bands are for channel-blocked buffers.
    return convWinogradBands(ctx, params, unclamped, x, w, b, y);
  default:
    WEFT_RT_TRY(convOneDnn(ctx, algorithm, params, unclamped, x, w, b, y));
  }
  if (a)
    addAndClamp(s, y, a, outCount, threadsFor(ctx, outCount));
  return WEFT_RT_OK;
}

weft_rt_status weft_rt_cpu_conv(weft_rt_context *ctx, const int64_t *params,
                                const void *input, const void *weight,
                                const void *bias, void *out) {
  return convWith(ctx, ConvAlgorithm::Auto, params, input, weight, bias, out);
}

weft_rt_status weft_rt_cpu_conv_add(weft_rt_context *ctx,
                                    const int64_t *params, const void *input,
                                    const void *weight, const void *bias,
                                    const void *addend, void *out) {
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  WEFT_RT_TRY(requireBuffer(ctx, "conv_add", addend, "addend"));
  return convWith(ctx, ConvAlgorithm::Auto, params, input, weight, bias, out,
                  addend);
}
