//===- DirectConv.cpp - Direct convolution for few input channels ---------===//
//
// ConvAlgorithm::Direct: the first convolution of an image network (3
// channels in, or 1 for a grey-scale text recognizer) has too few input
// channels for a GEMM or a blocked layout to fill their vectors: oneDNN's
// blocked convolution pads 3 channels to 16, and its Winograd kernel took
// 300 us in the model for a CRNN's 1 -> 64 3x3 layer of 2.4 M
// multiply-adds.
//
// Here each input row is first split by the stride into phase rows, with
// the pads written as zeros: tap (kx) of output column ox then reads column
// ox + (kx * dilation) / stride of phase (kx * dilation) % stride, so a run
// of outputs reads consecutive floats for every tap. Outputs are computed a
// block of output channels by a few vectors of a row at a time, each tap's
// vectors multiplied by broadcast weights (packed per block of channels),
// with the bias and the fused clamp applied before the store.
// bench/kernels/README.md has the figures.
//
//===----------------------------------------------------------------------===//

#include "Conv.h"
#include "KernelParams.h"
#include "MathSupport.h"
#include "VectorIsa.h"

#include <omp.h>

#include <algorithm>

using namespace weft::rt::cpu;

#define WEFT_RT_INLINE inline __attribute__((always_inline))

namespace {
/// Output channels computed together: each tap's loaded vectors feed this
/// many fused multiply-adds.
constexpr int kOcBlock = 4;
/// Taps (input channels x kernel height x width) of the layers this path
/// takes (Auto takes it for at most 4 input channels: directConvTakes).
constexpr int64_t kMaxDirectTaps = 256;

struct DirectGeometry {
  int64_t c, h, w, oc, oh, ow;
  int64_t kh, kw, strideH, strideW, dilationH, dilationW, padTop, padLeft;
  float low, high;
  /// Padded input rows per channel, floats per phase row and per padded
  /// row (all its phases).
  int64_t paddedRows, phaseWidth, rowStride;
  int64_t taps, ocBlocks;
  /// Where tap t (input channel, ky, kx) reads, from its output row's
  /// first padded row.
  int64_t tapOffsets[kMaxDirectTaps];
};

} // namespace

#define WEFT_RT_ISA_KERNEL "DirectConvKernel.inc"
#include "VectorIsaKernels.inc"

namespace {
/// The geometry for vectors of `lanes` floats, or false when this path
/// does not take the shape: 2-D, one group, at most kMaxDirectTaps taps.
bool directGeometry(const ConvShape &s, int64_t lanes, DirectGeometry &g) {
  if (s.spatialRank > 2 || s.in[0] != 1 || s.kernel[0] != 1 || s.group != 1 ||
      s.c * s.kernelVolume() > kMaxDirectTaps || s.outPlane() == 0)
    return false;
  g.c = s.c, g.h = s.in[1], g.w = s.in[2];
  g.oc = s.oc, g.oh = s.out[1], g.ow = s.out[2];
  g.kh = s.kernel[1], g.kw = s.kernel[2];
  g.strideH = s.strides[1], g.strideW = s.strides[2];
  g.dilationH = s.dilations[1], g.dilationW = s.dilations[2];
  g.padTop = s.padsBegin[1], g.padLeft = s.padsBegin[2];
  g.low = s.clampLow, g.high = s.clampHigh;
  g.paddedRows = (g.oh - 1) * g.strideH + (g.kh - 1) * g.dilationH + 1;
  // A vector may start at any column up to max(ow, lanes) - lanes and read
  // past it by the largest tap shift.
  const int64_t maxShift = (g.kw - 1) * g.dilationW / g.strideW;
  g.phaseWidth = std::max(g.ow, lanes) + maxShift;
  g.rowStride = g.strideW * g.phaseWidth;
  g.taps = g.c * g.kh * g.kw;
  g.ocBlocks = (g.oc + kOcBlock - 1) / kOcBlock;
  int64_t t = 0;
  for (int64_t c = 0; c < g.c; ++c)
    for (int64_t ky = 0; ky < g.kh; ++ky)
      for (int64_t kx = 0; kx < g.kw; ++kx) {
        const int64_t shift = kx * g.dilationW;
        g.tapOffsets[t++] = (c * g.paddedRows + ky * g.dilationH) * g.rowStride +
                            shift % g.strideW * g.phaseWidth +
                            shift / g.strideW;
      }
  return true;
}

/// phase[j] = in[j * stride + offset] for j in [begin, end); kStride, when
/// not 0, is the stride known at compile time, which lets the loop
/// vectorize (a stride-2 split of a 224-wide row into even and odd columns
/// took most of MobileNetV2's first layer written with a branch per
/// element).
template <int kStride>
WEFT_RT_INLINE void gatherColumns(float *__restrict phase,
                                  const float *__restrict in, int64_t begin,
                                  int64_t end, int64_t stride,
                                  int64_t offset) {
  const int64_t step = kStride ? kStride : stride;
  for (int64_t j = begin; j < end; ++j)
    phase[j] = in[j * step + offset];
}

/// Writes padded row r of channel c of one image as its phase rows: phase q
/// holds padded columns q, q + stride, ..., zero outside the input.
WEFT_RT_VECTOR_CLONES
void splitRow(const DirectGeometry &g, const float *image, int64_t c,
              int64_t r, float *rows) {
  float *out = rows + (c * g.paddedRows + r) * g.rowStride;
  const int64_t iy = r - g.padTop;
  if (iy < 0 || iy >= g.h) {
    std::fill(out, out + g.rowStride, 0.0f);
    return;
  }
  const float *in = image + (c * g.h + iy) * g.w;
  for (int64_t q = 0; q < g.strideW; ++q) {
    float *phase = out + q * g.phaseWidth;
    // Column j reads input column j * stride + q - padLeft: inside the
    // input for j in [begin, end).
    const int64_t offset = q - g.padLeft;
    const int64_t begin =
        std::clamp<int64_t>(ceilDiv(-offset, g.strideW), 0, g.phaseWidth);
    const int64_t end = std::clamp<int64_t>(ceilDiv(g.w - offset, g.strideW),
                                            begin, g.phaseWidth);
    std::fill(phase, phase + begin, 0.0f);
    if (g.strideW == 1)
      gatherColumns<1>(phase, in, begin, end, 1, offset);
    else if (g.strideW == 2)
      gatherColumns<2>(phase, in, begin, end, 2, offset);
    else
      gatherColumns<0>(phase, in, begin, end, g.strideW, offset);
    std::fill(phase + end, phase + g.phaseWidth, 0.0f);
  }
}

/// Packs the weights (OIHW) by blocks of kOcBlock output channels: tap t's
/// kOcBlock weights together, zero for channels past oc.
void packWeights(const DirectGeometry &g, const float *w, float *packed) {
  for (int64_t block = 0; block < g.ocBlocks; ++block)
    for (int64_t t = 0; t < g.taps; ++t)
      for (int64_t o = 0; o < kOcBlock; ++o) {
        const int64_t oc = block * kOcBlock + o;
        packed[(block * g.taps + t) * kOcBlock + o] =
            oc < g.oc ? w[oc * g.taps + t] : 0.0f;
      }
}
} // namespace

bool weft::rt::cpu::directConvTakes(const ConvShape &s) {
#ifdef WEFT_RT_VECTOR_ISA
  DirectGeometry g;
  return cpuVectors() != CpuVectors::None && s.c <= 4 &&
         directGeometry(s, 16, g);
#else
  (void)s;
  return false;
#endif
}

weft_rt_status weft::rt::cpu::convDirect(weft_rt_context *ctx,
                                         const int64_t *params,
                                         const ConvShape &s, const float *input,
                                         const float *weight,
                                         const float *bias, float *out) {
#ifdef WEFT_RT_VECTOR_ISA
  const CpuVectors vectors = cpuVectors();
  const bool avx512 = vectors == CpuVectors::Avx512;
  DirectGeometry g;
  if (vectors != CpuVectors::None && directGeometry(s, avx512 ? 16 : 8, g)) {
    // The phase rows (600 KB for a 224 x 224 image) and the packed weights,
    // kept between calls.
    const int64_t rowFloats = g.c * g.paddedRows * g.rowStride;
    float *rows =
        cachedScratch(ctx, params, s.words,
                      rowFloats + g.ocBlocks * g.taps * kOcBlock, "conv",
                      "the direct kernel's phase rows and weights");
    if (!rows)
      return WEFT_RT_OUT_OF_MEMORY;
    float *packed = rows + rowFloats;
    packWeights(g, weight, packed);
    auto run = avx512 ? onAvx512::directUnits : onAvx2::directUnits;
    const int64_t units = g.ocBlocks * g.oh;
    const int nt = static_cast<int>(std::min<int64_t>(
        threadsFor(ctx, s.oc * s.outPlane() * g.taps), units));
    for (int64_t image = 0; image < s.n; ++image) {
      const float *x = input + image * s.c * s.inPlane();
      float *y = out + image * s.oc * s.outPlane();
#pragma omp parallel num_threads(nt) if (nt > 1)
      {
#pragma omp for schedule(static)
        for (int64_t row = 0; row < g.c * g.paddedRows; ++row)
          splitRow(g, x, row / g.paddedRows, row % g.paddedRows, rows);
        const int64_t team = omp_get_num_threads(), rank = omp_get_thread_num();
        run(g, rows, packed, bias, y, units * rank / team,
            units * (rank + 1) / team);
      }
    }
    return WEFT_RT_OK;
  }
#endif
  (void)input, (void)weight, (void)bias, (void)out;
  return weft_rt_fail(ctx, WEFT_RT_UNSUPPORTED,
                      "conv: the direct algorithm needs AVX2 or AVX-512, a "
                      "2-D convolution with one group and at most %lld input "
                      "channels x kernel taps (got %lld x %lld)",
                      (long long)kMaxDirectTaps, (long long)s.c,
                      (long long)s.kernelVolume());
}
