//===- DepthwiseBlocked.cpp - Depthwise convolution on interleaved tiles --===//
//
// The channel-blocked path of the depthwise kernel: for a group of 16
// channels (8 on AVX2), the input rows a band of output rows needs are
// transposed into a tile that interleaves the channels (pixel by pixel, 16
// channels each, zero pads around), every output pixel is then 16 channels'
// K*K fused multiply-adds on whole vectors, and each run of up to 16 output
// pixels is transposed back and stored in each channel's plane. No lane is
// wasted on short rows, and a stride of 2 reads every other pixel of the
// tile instead of splitting rows into phases; this is what onnxruntime's
// NCHWc kernels get from their layout, with the transposes as the price of
// keeping the program's plain NCHW buffers. It wins where the plane path
// (DepthwiseConv.cpp) spends its time on partial vectors, half-used lanes
// and per-plane set-up: strided layers on small inputs and rows of at most
// 8 outputs (MobileNetV2's 28- and 14-wide stride-2 layers, its 7-wide
// ones); bench/kernels/README.md has the figures.
//
// In channels-last layouts (ConvChannelsLast.cpp) the transposes go: an
// output pixel is one store to a channels-last output, a kernel-first
// weight's tap one load, and a channels-last input's pixel one load, into
// the tile for rows of at most 8 outputs and for a partial group of
// channels; other rows are read in place, every group of a run of outputs
// in turn (the input's pixels are then whole lines, the tile's copy only
// waited on memory: MobileNetV2's 96 112 s2 took 137 us through the tile,
// 64 in place). There, this path runs every shape it takes.
//
//===----------------------------------------------------------------------===//

#include "Conv.h"
#include "KernelParams.h"
#include "VectorIsa.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <utility>

using namespace weft::rt::cpu;

#define WEFT_RT_INLINE inline __attribute__((always_inline))
#define WEFT_RT_INLINE_LAMBDA __attribute__((always_inline))

namespace {
/// Kernels up to 7x7 (ConvNeXt's): the group's tap weights stay in a fixed
/// array of vectors.
constexpr int64_t kMaxBlockedTaps = 49;
/// The tile: 64 KiB, most of it in L1 while a band is computed, and on the
/// stack (the fast path's band buffer is 32 KiB).
constexpr int64_t kTileFloats = 16384;

struct BlockedGeometry {
  int64_t c, h, w, oh, ow;
  int64_t kh, kw, strideH, strideW, padTop, padLeft;
  float low, high;
  /// Tile pixels per row: the input columns the outputs read, pads included.
  int64_t tileWidth;
  /// Output rows per band, bands per plane, channel groups per image.
  int64_t bandRows, bands, groups;
  /// The layout: channels-last input (a tile pixel is one load) and output
  /// (each output pixel's channels one store), kernel-first weights (each
  /// tap's channels one load). With either buffer channels-last the groups
  /// are a unit's innermost index, so that consecutive units read and
  /// write the same pixels' cache lines.
  bool inputChannelsLast, outputChannelsLast, weightKernelFirst;
  bool groupsInnermost;
  /// Whether a channels-last input's full groups are read in place rather
  /// than through the tile. Then a unit is a band of every full group
  /// (slot 0) or of the partial group (slot 1, through the tile): `slots`
  /// replaces `groups` in the units' numbering.
  bool direct;
  int64_t fullGroups, slots;
};
} // namespace

#define WEFT_RT_ISA_KERNEL "DepthwiseBlockedKernel.inc"
#include "VectorIsaKernels.inc"

namespace {
std::atomic<DepthwisePath> forcedPath{DepthwisePath::Auto};

/// The geometry for vectors of `lanes` channels, or false when the shape is
/// not one this path takes: 2-D, undilated, a kernel of at most 7x7 whose
/// tile of one output row fits the buffer.
bool blockedGeometry(const ConvShape &s, int64_t lanes, BlockedGeometry &g) {
  if (s.in[0] != 1 || s.kernel[0] != 1 || s.dilations[1] != 1 ||
      s.dilations[2] != 1 || s.kernel[1] * s.kernel[2] > kMaxBlockedTaps ||
      s.outPlane() == 0)
    return false;
  g.c = s.c, g.h = s.in[1], g.w = s.in[2], g.oh = s.out[1], g.ow = s.out[2];
  g.kh = s.kernel[1], g.kw = s.kernel[2];
  g.strideH = s.strides[1], g.strideW = s.strides[2];
  g.padTop = s.padsBegin[1], g.padLeft = s.padsBegin[2];
  g.low = s.clampLow, g.high = s.clampHigh;
  g.tileWidth = (g.ow - 1) * g.strideW + g.kw;
  const int64_t rowFloats = g.tileWidth * lanes;
  const int64_t tileRows = kTileFloats / rowFloats;
  if (tileRows < g.kh)
    return false;
  g.bandRows = std::min(g.oh, (tileRows - g.kh) / g.strideH + 1);
  g.bands = (g.oh + g.bandRows - 1) / g.bandRows;
  g.groups = (g.c + lanes - 1) / lanes;
  g.inputChannelsLast = s.inputChannelsLast;
  g.outputChannelsLast = s.outputChannelsLast;
  g.weightKernelFirst = s.weightKernelFirst;
  g.groupsInnermost = s.inputChannelsLast || s.outputChannelsLast;
  // Rows of at most 8 outputs go through the tile: read in place, a third
  // or more of their outputs would be edge pixels, done one at a time
  // (MobileNetV2's 960 7: 11.3 us through the tile, 14.8 in place).
  // An OIHW weight is transposed into the tile for them.
  g.direct = s.inputChannelsLast && g.ow > 8 &&
             (s.weightKernelFirst || g.kh * g.kw * g.c <= kTileFloats);
  g.fullGroups = g.c / lanes;
  g.slots = (g.fullGroups > 0) + (g.c % lanes != 0);
  return true;
}

/// Whether Auto takes the blocked path for `s` (bench/kernels/README.md,
/// MobileNetV2's layers): strided layers on inputs at most 32 wide (576 14
/// s2: 30 -> 20 us; 192 28 s2: 26 -> 24) and rows of at most 8 outputs
/// (960 7: 23 -> 17). The plane path's kernels win on wider inputs (144 56
/// s2: 50 against 86 us) and tie on 14- and 28-wide stride-1 layers.
bool blockedIsFaster(const ConvShape &s) {
  const bool strided = s.strides[1] > 1 || s.strides[2] > 1;
  return (strided && s.in[2] <= 32) || s.out[2] <= 8;
}
} // namespace

/// The most output rows any of `team` threads computes when `images` images
/// of `rows` rows are cut into bands of `bandRows` and the bands are dealt
/// out in contiguous runs (units * rank / team, as runBlockedDepthwise does).
static int64_t rowsOfBusiestThread(int64_t images, int64_t rows,
                                   int64_t bandRows, int64_t team) {
  const int64_t bands = (rows + bandRows - 1) / bandRows;
  const int64_t units = images * bands;
  // Every band is bandRows tall but an image's last, units u with
  // u % bands == bands - 1, of which [0, x) holds x / bands.
  const int64_t shortBy = bands * bandRows - rows;
  int64_t busiest = 0;
  for (int64_t rank = 0; rank < team; ++rank) {
    const int64_t u0 = units * rank / team, u1 = units * (rank + 1) / team;
    const int64_t lastBands = u1 / bands - u0 / bands;
    busiest = std::max(busiest, (u1 - u0) * bandRows - lastBands * shortBy);
  }
  return busiest;
}

// On two threads MobileNetV2's 14x14 layers were cut into 7 bands of 2
// rows, 4 for one thread and 3 for the other, where 14 bands of one row
// split evenly (576 14 in the model: 14.0 -> 13.0 us, against 21.3 on one
// thread).
int64_t weft::rt::cpu::evenBandRows(int64_t images, int64_t rows, int64_t most,
                                    int64_t team) {
  int64_t best = std::max<int64_t>(most, 1);
  int64_t bestRows = rowsOfBusiestThread(images, rows, best, team);
  for (int64_t bandRows = best - 1; bandRows >= 1; --bandRows) {
    const int64_t busiest = rowsOfBusiestThread(images, rows, bandRows, team);
    if (busiest < bestRows)
      best = bandRows, bestRows = busiest;
  }
  return best;
}

DepthwisePath weft::rt::cpu::forceDepthwisePath(DepthwisePath path) {
  return forcedPath.exchange(path, std::memory_order_relaxed);
}

bool weft::rt::cpu::runBlockedDepthwise(const ConvShape &s, DepthwiseIsa isa,
                                        int nt, const float *input,
                                        const float *weight, const float *bias,
                                        float *out) {
#ifdef WEFT_RT_VECTOR_ISA
  // The plain layout picks the faster path by shape; the others have no
  // plane path, and take the tiles wherever they can (Planes forces their
  // plain loop instead).
  const DepthwisePath path = forcedPath.load(std::memory_order_relaxed);
  if (path == DepthwisePath::Planes || isa == DepthwiseIsa::Baseline ||
      (path == DepthwisePath::Auto && s.layout == 0 && !blockedIsFaster(s)))
    return false;
  const int64_t lanes = isa == DepthwiseIsa::Avx512 ? 16 : 8;
  BlockedGeometry g;
  if (!blockedGeometry(s, lanes, g))
    return false;
  if (g.direct) {
    // A unit holds every group of its band: bands are cut small enough to
    // give each thread several, and as even as the rows allow.
    const int64_t perImage = (4 * nt + s.n - 1) / s.n;
    g.bandRows = evenBandRows(
        s.n, g.oh, std::min(g.bandRows, (g.oh + perImage - 1) / perImage), nt);
    g.bands = (g.oh + g.bandRows - 1) / g.bandRows;
  }
  const int64_t units = s.n * g.bands * (g.direct ? g.slots : g.groups);
  const int team = static_cast<int>(std::min<int64_t>(nt, units));
  auto run = isa == DepthwiseIsa::Avx512 ? onAvx512::blockedUnits
                                         : onAvx2::blockedUnits;
#pragma omp parallel num_threads(team) if (team > 1)
  {
    alignas(64) float tile[kTileFloats];
    const int64_t size = omp_get_num_threads(), rank = omp_get_thread_num();
    // Every thread reads every group's weights, 16 channels of each tap
    // row at a time, an order the hardware prefetcher does not follow.
    // After a packed 1x1 expansion (PointwisePacked.cpp) they were no
    // longer in cache: MobileNetV2's 960-channel 7x7 layers took 15 to 20
    // us instead of 11, waiting on them line by line.
    prefetchForRead(weight, s.c * s.kernelVolume() * sizeof(float));
    prefetchForRead(bias, s.c * sizeof(float));
    run(g, input, weight, bias, out, units * rank / size,
        units * (rank + 1) / size, tile);
  }
  return true;
#else
  (void)s, (void)isa, (void)nt, (void)input, (void)weight, (void)bias,
      (void)out;
  return false;
#endif
}
