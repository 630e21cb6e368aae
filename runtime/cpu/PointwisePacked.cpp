//===- PointwisePacked.cpp - 1x1 convolutions on packed weights -----------===//
//
// A channels-last 1x1 convolution is the product Y[rows x OC] = X[rows x C]
// W[C x OC] (rows: the batch's pixels), then bias, addend and clamp. One
// sgemm per thread (ConvChannelsLast.cpp) packs W again at every call and
// on every thread. Here the weight comes packed, OC/32 x C x 32 (layout bit
// 64: weft-pack-conv-weights writes it so into the weights file), and each
// thread computes tiles of pixels x 32 (16 on AVX2) output channels from
// X's rows, with the bias, the addend and the clamp applied to the
// accumulators before one store (PointwisePackedKernel.inc). CPUs with
// neither AVX-512 nor AVX2 run a plain loop over the same panels.
//
//===----------------------------------------------------------------------===//

#include "Conv.h"
#include "MathSupport.h"
#include "VectorIsa.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <utility>

using namespace weft::rt::cpu;

namespace {
/// One product on a packed weight: rows x columns = (rows x reduction)
/// times the panels, all row-major but the panels, then finished.
struct PackedProduct {
  const float *x, *weight;
  float *y;
  const float *bias, *addend;
  int64_t rows, columns, reduction;
  float low, high;
};

constexpr int64_t kPanel = kConvWeightPanel;
/// How far ahead (reduction steps, 128 bytes of a panel each) a tile
/// prefetches its panel: 8 KB, about the latency of memory at two FMAs a
/// cycle.
constexpr int64_t kPrefetchSteps = 64;

/// How many bands of pixels to cut each of `passes` passes into, so that
/// the (pass, band) units share out evenly among `team` threads: the
/// fewest bands (at most one per tile of pixels, `rowTiles`) for which the
/// busiest thread has at most 5% more units than the average, else the
/// evenest count.
int64_t bandsPerPass(int64_t passes, int64_t rowTiles, int team) {
  auto imbalance = [&](int64_t bands) {
    const int64_t units = passes * bands;
    return static_cast<double>((units + team - 1) / team) * team / units;
  };
  int64_t best = 1;
  for (int64_t bands = 1; bands <= std::max<int64_t>(rowTiles, 1); ++bands) {
    if (imbalance(bands) < imbalance(best))
      best = bands;
    if (imbalance(bands) <= 1.05)
      return bands;
  }
  return best;
}

/// Rows [r0, r1) of `p` on any CPU: each row's outputs panel by panel.
WEFT_RT_VECTOR_CLONES
void plainRows(const PackedProduct &p, int64_t r0, int64_t r1) {
  for (int64_t row = r0; row < r1; ++row)
    for (int64_t panel = 0; panel < p.columns / kPanel; ++panel) {
      float acc[kPanel] = {};
      const float *b = p.weight + panel * p.reduction * kPanel;
      const float *x = p.x + row * p.reduction;
      for (int64_t k = 0; k < p.reduction; ++k)
        for (int64_t j = 0; j < kPanel; ++j)
          acc[j] += x[k] * b[k * kPanel + j];
      const int64_t first = row * p.columns + panel * kPanel;
      for (int64_t j = 0; j < kPanel; ++j) {
        float value = acc[j];
        if (p.bias)
          value += p.bias[panel * kPanel + j];
        if (p.addend)
          value += p.addend[first + j];
        value = value < p.low ? p.low : value;
        p.y[first + j] = value > p.high ? p.high : value;
      }
    }
}
} // namespace

// GCC 12 reports the undefined vector that _mm512_max_ps and _mm512_min_ps
// pass to their masked builtins as used uninitialized here (not only maybe:
// the tiles are noinline); every lane of the result is defined.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#define WEFT_RT_ISA_KERNEL "PointwisePackedKernel.inc"
#include "VectorIsaKernels.inc"
#pragma GCC diagnostic pop

weft_rt_status weft::rt::cpu::convPointwisePacked(
    weft_rt_context *ctx, const ConvShape &s, const float *x, const float *w,
    const float *bias, float *y, const float *addend) {
  return convPointwisePackedOn(cpuVectors(), ctx, s, x, w, bias, y, addend);
}

weft_rt_status
weft::rt::cpu::convPointwisePackedOn(CpuVectors vectors, weft_rt_context *ctx,
                                     const ConvShape &s, const float *x,
                                     const float *w, const float *bias,
                                     float *y, const float *addend) {
  PackedProduct p;
  p.x = x, p.weight = w, p.y = y, p.bias = bias, p.addend = addend;
  p.rows = s.n * s.outPlane(), p.columns = s.oc, p.reduction = s.c;
  p.low = s.clampLow, p.high = s.clampHigh;
  const int team =
      threadsFor(ctx, p.rows * p.columns * std::max<int64_t>(p.reduction, 1));
  // A set the CPU lacks is never run (the tests ask for each in turn).
  vectors = std::min(vectors, cpuVectors());
#ifdef WEFT_RT_VECTOR_ISA
  if (vectors == CpuVectors::Avx512) {
    onAvx512::run(p, team);
    return WEFT_RT_OK;
  }
  if (vectors == CpuVectors::Avx2) {
    onAvx2::run(p, team);
    return WEFT_RT_OK;
  }
#endif
  const int rowTeam =
      static_cast<int>(std::min<int64_t>(team, std::max<int64_t>(p.rows, 1)));
#pragma omp parallel num_threads(rowTeam) if (rowTeam > 1)
  {
    const int64_t size = omp_get_num_threads(), rank = omp_get_thread_num();
    plainRows(p, p.rows * rank / size, p.rows * (rank + 1) / size);
  }
  return WEFT_RT_OK;
}
