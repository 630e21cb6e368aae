//===- Conv.cpp - ONNX Conv: validation, dispatch and im2col --------------===//
//
// weft_rt_cpu_conv: checks the parameter block, picks an algorithm per shape
// and implements the im2col + GEMM one (oneDNN's are in ConvOneDnn.cpp).
//
//===----------------------------------------------------------------------===//

#include "Conv.h"

using namespace weft::rt::cpu;

static const char *const kConv = "conv";

weft_rt_status weft::rt::cpu::parseConv(weft_rt_context *ctx,
                                        const int64_t *params, ConvShape &s) {
  WEFT_RT_REQUIRE(ctx, params, "conv: parameter block is NULL");
  ParamReader r(params);
  int64_t dtype = r.next();
  WEFT_RT_TRY(checkDtype(ctx, kConv, dtype, dtypeBit(WEFT_RT_F32)));
  s.spatialRank = r.next();
  WEFT_RT_REQUIRE(ctx, s.spatialRank >= 1 && s.spatialRank <= 3,
                  "conv: %lld spatial dimensions (1 to 3 are supported)",
                  (long long)s.spatialRank);
  s.n = r.next();
  s.c = r.next();
  s.oc = r.next();
  s.group = r.next();
  WEFT_RT_REQUIRE(ctx, s.n >= 0 && s.c >= 0 && s.oc >= 0,
                  "conv: negative N=%lld, C=%lld or OC=%lld", (long long)s.n,
                  (long long)s.c, (long long)s.oc);
  WEFT_RT_REQUIRE(ctx,
                  s.group >= 1 && s.c % s.group == 0 && s.oc % s.group == 0,
                  "conv: group %lld does not divide C=%lld and OC=%lld",
                  (long long)s.group, (long long)s.c, (long long)s.oc);
  int64_t rank = s.spatialRank;
  int64_t *fields[] = {s.in,        s.kernel,  s.strides, s.dilations,
                       s.padsBegin, s.padsEnd, s.out};
  const int64_t leading[] = {1, 1, 1, 1, 0, 0, 1};
  for (int f = 0; f < 7; ++f) {
    const int64_t *values = r.array(rank);
    for (int64_t d = 0; d < 3 - rank; ++d)
      fields[f][d] = leading[f];
    for (int64_t d = 0; d < rank; ++d)
      fields[f][3 - rank + d] = values[d];
  }
  s.words = r.consumed();
  for (int64_t d = 3 - rank; d < 3; ++d) {
    long long axis = d - (3 - rank);
    WEFT_RT_REQUIRE(ctx,
                    s.in[d] >= 0 && s.kernel[d] >= 1 && s.strides[d] >= 1 &&
                        s.dilations[d] >= 1,
                    "conv: spatial axis %lld has input %lld, kernel %lld, "
                    "stride %lld, dilation %lld (sizes >= 0, the rest >= 1)",
                    axis, (long long)s.in[d], (long long)s.kernel[d],
                    (long long)s.strides[d], (long long)s.dilations[d]);
    WEFT_RT_REQUIRE(ctx, s.padsBegin[d] >= 0 && s.padsEnd[d] >= 0,
                    "conv: negative pads on spatial axis %lld", axis);
    int64_t span, padded;
    WEFT_RT_REQUIRE(
        ctx,
        checkedMul(s.kernel[d] - 1, s.dilations[d], span) &&
            !__builtin_add_overflow(s.in[d], s.padsBegin[d], &padded) &&
            !__builtin_add_overflow(padded, s.padsEnd[d], &padded),
        "conv: sizes of spatial axis %lld overflow", axis);
    WEFT_RT_REQUIRE(ctx, padded > span,
                    "conv: on spatial axis %lld the dilated kernel (%lld) is "
                    "larger than the padded input (%lld)",
                    axis, (long long)(span + 1), (long long)padded);
    int64_t expected = (padded - span - 1) / s.strides[d] + 1;
    WEFT_RT_REQUIRE(ctx, s.out[d] == expected,
                    "conv: output size %lld on spatial axis %lld, expected "
                    "%lld",
                    (long long)s.out[d], axis, (long long)expected);
  }
  // Input, weight, output and im2col element counts must fit in int64.
  const int64_t cg = s.c / s.group;
  const int64_t counts[][8] = {
      {s.n, s.c, s.in[0], s.in[1], s.in[2], 1, 1, 1},
      {s.oc, cg, s.kernel[0], s.kernel[1], s.kernel[2], 1, 1, 1},
      {s.n, s.oc, s.out[0], s.out[1], s.out[2], 1, 1, 1},
      {cg, s.kernel[0], s.kernel[1], s.kernel[2], s.out[0], s.out[1], s.out[2],
       1}};
  for (const auto &factors : counts) {
    int64_t count;
    WEFT_RT_REQUIRE(ctx, checkedProduct(factors, 8, count),
                    "conv: tensor sizes overflow int64");
  }
  return WEFT_RT_OK;
}

//===----------------------------------------------------------------------===//
// im2col + GEMM
//===----------------------------------------------------------------------===//

static int64_t ceilDiv(int64_t a, int64_t b) {
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
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
          for (int64_t ow = owBegin; ow < owEnd; ++ow)
            dst[ow] = srcRow[ow * s.strides[2]];
        }
        for (int64_t ow = owEnd; ow < s.out[2]; ++ow)
          dst[ow] = 0.0f;
      }
    }
  }
}

/// Fills each output channel with its bias (or zero) for the GEMM to
/// accumulate onto.
static void fillChannels(const ConvShape &s, const float *bias, float *out,
                         int nt) {
  int64_t planes = s.n * s.oc, plane = s.outPlane();
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
  for (int64_t p = 0; p < planes; ++p) {
    float value = bias ? bias[p % s.oc] : 0.0f;
    std::fill(out + p * plane, out + (p + 1) * plane, value);
  }
}

static weft_rt_status convIm2col(weft_rt_context *ctx, GemmBackend backend,
                                 const ConvShape &s, const float *input,
                                 const float *weight, const float *bias,
                                 float *out) {
  const int64_t cg = s.c / s.group, ocg = s.oc / s.group;
  const int64_t reduction = cg * s.kernelVolume();
  const int64_t outPlane = s.outPlane(), inPlane = s.inPlane();
  bool direct = s.kernelVolume() == 1;
  for (int d = 0; d < 3; ++d)
    direct =
        direct && s.strides[d] == 1 && s.padsBegin[d] == 0 && s.padsEnd[d] == 0;
  ScratchBuffer col;
  if (!direct)
    WEFT_RT_TRY(col.allocate(ctx, kConv, reduction * outPlane * 4,
                             "the im2col matrix"));
  fillChannels(s, bias, out, threadsFor(ctx, s.n * s.oc * outPlane));
  if (reduction == 0)
    return WEFT_RT_OK;
  int nt = threadsFor(ctx, reduction * outPlane);
  applyLibraryThreads(ctx);
  for (int64_t image = 0; image < s.n; ++image) {
    for (int64_t g = 0; g < s.group; ++g) {
      const float *x = input + (image * s.c + g * cg) * inPlane;
      float *y = out + (image * s.oc + g * ocg) * outPlane;
      const float *columns = x;
      if (!direct) {
        im2col(s, x, cg, col.as<float>(), nt);
        columns = col.as<float>();
      }
      WEFT_RT_TRY(gemmF32(ctx, backend, false, false, ocg, outPlane, reduction,
                          1.0f, weight + g * ocg * reduction, reduction,
                          columns, outPlane, 1.0f, y, outPlane));
    }
  }
  return WEFT_RT_OK;
}

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

/// The algorithm weft_rt_cpu_conv uses for a shape; the rules follow
/// weft-kernel-bench's figures on ResNet-18's layers (bench/kernels/README.md).
static ConvAlgorithm chooseAlgorithm(const ConvShape &s) {
  // Winograd halves the time of stride-1 3x3 layers at no loss of accuracy
  // worth noting (F(2,3): as direct; F(4,3): about 2e-6 of the largest
  // output); oneDNN falls back to direct where it has none.
  bool winograd = s.spatialRank == 2 && s.group == 1 && s.kernel[1] == 3 &&
                  s.kernel[2] == 3 && s.strides[1] == 1 && s.strides[2] == 1 &&
                  s.dilations[1] == 1 && s.dilations[2] == 1;
  if (winograd)
    return ConvAlgorithm::OneDnnWinograd;
  // 1x1 convolutions are GEMMs already (after subsampling when strided):
  // one sgemm on the plain layout is as fast as oneDNN's GEMM-based
  // convolution and beats a blocked one, which pays two reorders.
  if (s.kernelVolume() == 1 && s.group == 1)
    return ConvAlgorithm::Im2colOneDnnGemm;
  return ConvAlgorithm::OneDnnBlocked;
}

weft_rt_status weft::rt::cpu::convWith(weft_rt_context *ctx,
                                       ConvAlgorithm algorithm,
                                       const int64_t *params, const void *input,
                                       const void *weight, const void *bias,
                                       void *out) {
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  ConvShape s;
  WEFT_RT_TRY(parseConv(ctx, params, s));
  int64_t outCount = s.n * s.oc * s.outPlane();
  if (outCount == 0)
    return WEFT_RT_OK;
  WEFT_RT_TRY(requireBuffer(ctx, kConv, out, "out"));
  auto *y = static_cast<float *>(out);
  const auto *b = static_cast<const float *>(bias);
  if (s.c == 0) {
    // Nothing to convolve: oneDNN refuses empty channels.
    fillChannels(s, b, y, threadsFor(ctx, outCount));
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
    return convIm2col(ctx, GemmBackend::OneDnn, s, x, w, b, y);
  case ConvAlgorithm::Im2colOpenBlas:
    return convIm2col(ctx, GemmBackend::OpenBlas, s, x, w, b, y);
  default:
    return convOneDnn(ctx, algorithm, params, s, x, w, b, y);
  }
}

weft_rt_status weft_rt_cpu_conv(weft_rt_context *ctx, const int64_t *params,
                                const void *input, const void *weight,
                                const void *bias, void *out) {
  return convWith(ctx, ConvAlgorithm::Auto, params, input, weight, bias, out);
}
