//===- ConvBlocked.cpp - Convolutions on channel-blocked tensors ----------===//
//
// weft_rt_cpu_conv for blocks with channel-blocked layout bits (8 input, 16
// output, 32 addend): tensors that the compiler keeps as N x C/16 x
// spatial... x 16 (oneDNN's nChw16c) between oneDNN convolutions, which then
// skip the reorders from and to NC[D]HW around each call (ConvOneDnn.cpp
// describes the caller's buffers in the blocked layout). A residual Add
// whose addend is laid out otherwise than the output goes through tiles of
// 16 channels x 16 positions transposed in registers.
//
//===----------------------------------------------------------------------===//

#include "Conv.h"
#include "KernelParams.h"
#include "MathSupport.h"

#include <omp.h>

#include <algorithm>
#include <limits>

using namespace weft::rt::cpu;

static const char *const kConv = "conv";

#define WEFT_RT_INLINE inline __attribute__((always_inline))

/// One step of a 16 x 16 transpose in registers: in each pair of rows (i,
/// i + b) with i & b == 0, the b x b blocks off the diagonal of their
/// 2b x 2b block trade places (row i takes `lowMask` of the pair, row i + b
/// `highMask`). The steps for b = 1, 2, 4 and 8 together swap each bit of
/// the row index with the column index's: a transpose.
static WEFT_RT_INLINE void swapOffDiagonal(Float16 *rows, int b, Int16 lowMask,
                                           Int16 highMask) {
  for (int i = 0; i < 16; ++i) {
    if (i & b)
      continue;
    const Float16 low = __builtin_shuffle(rows[i], rows[i + b], lowMask);
    const Float16 high = __builtin_shuffle(rows[i], rows[i + b], highMask);
    rows[i] = low;
    rows[i + b] = high;
  }
}

/// Transposes the 16 x 16 floats in `rows` (AVX-512: 64 two-source
/// permutes).
static WEFT_RT_INLINE void transpose16(Float16 *rows) {
  // Column j of the low row takes j where j & b == 0, else the high row's
  // j ^ b (16 + j ^ b in the shuffle's numbering); the high row the low
  // row's j ^ b, else its own j.
  swapOffDiagonal(
      rows, 1, Int16{0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30},
      Int16{1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31});
  swapOffDiagonal(
      rows, 2, Int16{0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29},
      Int16{2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31});
  swapOffDiagonal(
      rows, 4, Int16{0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27},
      Int16{4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31});
  swapOffDiagonal(
      rows, 8, Int16{0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23},
      Int16{8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31});
}

/// min(max(v, low), high) with NaN kept, as finishConvRow clamps.
static WEFT_RT_INLINE Float16 clamp16(Float16 v, Float16 low, Float16 high) {
  v = v < low ? low : v;
  return v > high ? high : v;
}

/// y = clamp(y + addend) over tiles [begin, end) of 16 channels x 16
/// positions, when one of y and the addend is NC[D]HW and the other
/// channel-blocked (y the blocked one when `outputBlocked`). Tile t is
/// positions [t % tilesPerPlane * 16, + 16) of channel block t /
/// tilesPerPlane (over the images too); a plane's last tile may be short
/// and runs scalar. A full tile loads 16 vectors of the addend (16
/// positions of a channel on the plain side, 16 channels of a position on
/// the blocked one), transposes them to y's layout and adds them to y's 16.
WEFT_RT_VECTOR_CLONES
static void addTilesAcrossLayouts(float *y, const float *addend,
                                  bool outputBlocked, int64_t plane,
                                  int64_t tilesPerPlane, int64_t begin,
                                  int64_t end, float low, float high) {
  constexpr int64_t kBlock = kConvChannelBlock;
  const Float16 lowVector = Float16{} + low, highVector = Float16{} + high;
  for (int64_t tile = begin; tile < end; ++tile) {
    const int64_t block = tile / tilesPerPlane;
    const int64_t first = tile % tilesPerPlane * kBlock;
    const int64_t count = std::min(kBlock, plane - first);
    // Channel j of the block at position first + p is plain[j * plane + p]
    // and blocked[p * 16 + j].
    const int64_t plainBase = block * kBlock * plane + first;
    const int64_t blockedBase = (block * plane + first) * kBlock;
    if (count < kBlock) {
      for (int64_t j = 0; j < kBlock; ++j)
        for (int64_t p = 0; p < count; ++p) {
          const int64_t plainAt = plainBase + j * plane + p;
          const int64_t blockedAt = blockedBase + p * kBlock + j;
          float &target = y[outputBlocked ? blockedAt : plainAt];
          float value = target + addend[outputBlocked ? plainAt : blockedAt];
          value = value < low ? low : value;
          target = value > high ? high : value;
        }
      continue;
    }
    // Vector i of the addend's tile (a channel's 16 positions on the plain
    // side, a position's 16 channels on the blocked one) becomes, once
    // transposed, vector i of y's tile in y's layout.
    const float *from = addend + (outputBlocked ? plainBase : blockedBase);
    float *to = y + (outputBlocked ? blockedBase : plainBase);
    const int64_t fromStride = outputBlocked ? plane : kBlock;
    const int64_t toStride = outputBlocked ? kBlock : plane;
    Float16 rows[kBlock];
    for (int64_t i = 0; i < kBlock; ++i)
      rows[i] = loadFloat16(from + i * fromStride);
    transpose16(rows);
    for (int64_t i = 0; i < kBlock; ++i) {
      float *target = to + i * toStride;
      storeFloat16(target, clamp16(loadFloat16(target) + rows[i], lowVector,
                                   highVector));
    }
  }
}

/// y = clamp(y + addend) over the `count` outputs, whichever layouts the
/// output and the addend have: one flat pass where they agree, tiles
/// transposed on the way where they do not.
static void addAddend(weft_rt_context *ctx, const ConvShape &s, float *y,
                      const float *addend, int64_t count) {
  const int nt = threadsFor(ctx, count);
  if (s.outputBlocked == s.addendBlocked) {
    addAndClamp(s, y, addend, count, nt);
    return;
  }
  const int64_t plane = s.outPlane();
  const int64_t tilesPerPlane = ceilDiv(plane, kConvChannelBlock);
  const int64_t tiles = s.n * (s.oc / kConvChannelBlock) * tilesPerPlane;
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    const int64_t size = omp_get_num_threads(), t = omp_get_thread_num();
    addTilesAcrossLayouts(y, addend, s.outputBlocked, plane, tilesPerPlane,
                          tiles * t / size, tiles * (t + 1) / size, s.clampLow,
                          s.clampHigh);
  }
}

/// The output of a convolution without input channels (which oneDNN
/// refuses): the bias (or 0), clamped when `clamp`, in the output's layout.
static void fillBias(const ConvShape &s, const float *bias, bool clamp,
                     float *y) {
  const int64_t plane = s.outPlane();
  for (int64_t image = 0; image < s.n; ++image)
    for (int64_t channel = 0; channel < s.oc; ++channel) {
      float value = bias ? bias[channel] : 0.0f;
      if (clamp) {
        value = value < s.clampLow ? s.clampLow : value;
        value = value > s.clampHigh ? s.clampHigh : value;
      }
      if (!s.outputBlocked) {
        std::fill_n(y + (image * s.oc + channel) * plane, plane, value);
        continue;
      }
      const int64_t block =
          image * (s.oc / kConvChannelBlock) + channel / kConvChannelBlock;
      float *target =
          y + block * plane * kConvChannelBlock + channel % kConvChannelBlock;
      for (int64_t p = 0; p < plane; ++p)
        target[p * kConvChannelBlock] = value;
    }
}

weft_rt_status weft::rt::cpu::convBlocked(weft_rt_context *ctx,
                                          ConvAlgorithm algorithm,
                                          const int64_t *params,
                                          const ConvShape &s, const void *input,
                                          const void *weight, const void *bias,
                                          void *out, const void *addend) {
  // A blocked addend on a convolution without one is a caller's mistake
  // that would otherwise go unnoticed.
  if (s.addendBlocked && !addend)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "conv: layout %lld has bit 32 (channel-blocked "
                        "addend) but there is no addend (conv_add takes one)",
                        (long long)s.layout);
  if (algorithm == ConvAlgorithm::Auto)
    algorithm = !winogradTakes(s)     ? ConvAlgorithm::OneDnnBlocked
                : winogradBandsTake(s) ? ConvAlgorithm::OneDnnWinogradBands
                                       : ConvAlgorithm::OneDnnWinograd;
  if (algorithm != ConvAlgorithm::OneDnnPlain &&
      algorithm != ConvAlgorithm::OneDnnBlocked &&
      algorithm != ConvAlgorithm::OneDnnWinograd &&
      algorithm != ConvAlgorithm::OneDnnWinogradBands)
    return weft_rt_fail(ctx, WEFT_RT_UNSUPPORTED,
                        "conv: with the channel-blocked layout %lld a "
                        "convolution runs on oneDNN (Auto, OneDnnPlain, "
                        "OneDnnBlocked, OneDnnWinograd or "
                        "OneDnnWinogradBands); algorithm %d was asked for",
                        (long long)s.layout, static_cast<int>(algorithm));
  const int64_t outCount = s.n * s.oc * s.outPlane();
  if (outCount == 0)
    return WEFT_RT_OK;
  WEFT_RT_TRY(requireBuffer(ctx, kConv, out, "out"));
  auto *y = static_cast<float *>(out);
  const auto *b = static_cast<const float *>(bias);
  const auto *a = static_cast<const float *>(addend);
  if (s.c == 0) {
    fillBias(s, b, !a, y);
  } else {
    WEFT_RT_TRY(requireBuffer(ctx, kConv, input, "input"));
    WEFT_RT_TRY(requireBuffer(ctx, kConv, weight, "weight"));
    // convOneDnn clamps its output, before an Add could come in: with an
    // addend it runs without the clamp, and addAddend clamps.
    const ConvShape unclamped = a ? withoutClamp(s) : s;
    const auto *x = static_cast<const float *>(input);
    const auto *w = static_cast<const float *>(weight);
    if (algorithm == ConvAlgorithm::OneDnnWinogradBands)
      WEFT_RT_TRY(convWinogradBands(ctx, params, unclamped, x, w, b, y));
    else
      WEFT_RT_TRY(convOneDnn(ctx, algorithm, params, unclamped, x, w, b, y));
  }
  if (a)
    addAddend(ctx, s, y, a, outCount);
  return WEFT_RT_OK;
}
