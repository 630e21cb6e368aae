//===- DepthwiseConv.cpp - Direct depthwise convolution on NC[D]HW --------===//
//
// ConvAlgorithm::Depthwise: each output channel convolves its own input
// plane (group == C == OC), on the plain layout, with the bias and the fused
// clamp applied as each output is stored. Threads split the N*C planes.
//
// 3x3 and 5x5 kernels of stride 1 or 2, undilated, with the output as wide
// as the input divided by the stride (MobileNet's and EfficientNet's layers)
// take the fast path: a band of the plane is copied into a stack buffer,
// split by the stride into phase planes (even and odd columns and rows for
// stride 2) as wide as the output, so that every tap of a run of consecutive
// outputs, across row ends, reads consecutive floats of one phase plane.
// Zero rows above and below stand for the vertical pads; lanes whose tap
// falls into the horizontal pads skip it. On AVX-512, 3x3 layers with pads
// of 1 whose rows hold whole vectors (stride 1) or at least one (stride 2)
// skip the copy: each output row is computed from its input rows in place
// (the wide-row path, DepthwiseWideRows.cpp). Small planes take the
// channel-blocked path (DepthwiseBlocked.cpp). Everything else runs the
// general path: rows of
// outputs accumulated tap by tap, any kernel, stride, dilation and pads,
// 1-D to 3-D.
//
// The fast path is compiled three times, picked at run time: 16 lanes for
// AVX-512, 8 for AVX2 with FMA, 4 for the baseline (SSE2). (target_clones
// would compile one source for all three, and GCC 12 splits vectors wider
// than the target's into 128-bit pieces and scalarizes their compares and
// selects.) The general path's plain loops use WEFT_RT_VECTOR_CLONES.
// bench/kernels/README.md has the figures behind these choices.
//
//===----------------------------------------------------------------------===//

#include "Conv.h"
#include "KernelParams.h"
#include "MathSupport.h"
#include "VectorIsa.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <type_traits>

using namespace weft::rt::cpu;

#define WEFT_RT_INLINE inline __attribute__((always_inline))
#define WEFT_RT_INLINE_LAMBDA __attribute__((always_inline))

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define WEFT_RT_X86_TARGETS 1
#define WEFT_RT_TARGET_AVX512 __attribute__((target("avx512f")))
#define WEFT_RT_TARGET_AVX2 __attribute__((target("avx2,fma")))
#else
#define WEFT_RT_TARGET_AVX512
#define WEFT_RT_TARGET_AVX2
#endif

namespace {

/// Eight floats and ints: the fast path's vectors on AVX2; the halves of a
/// row's columns are split in them on AVX2 and AVX-512 (which have their
/// two-input shuffles).
typedef float Float8 __attribute__((vector_size(32)));
typedef int32_t Int8 __attribute__((vector_size(32)));
/// Four floats: the fast path's vectors on the baseline (SSE2), where GCC
/// scalarizes the compares and selects of wider ones.
typedef float Float4 __attribute__((vector_size(16)));

template <typename V> constexpr int64_t lanesOf() {
  return static_cast<int64_t>(sizeof(V) / sizeof(float));
}
template <typename V> WEFT_RT_INLINE V loadVector(const float *p) {
  V v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
template <typename V> WEFT_RT_INLINE void storeVector(float *p, V v) {
  std::memcpy(p, &v, sizeof(v));
}

constexpr int64_t kMaxLanes = 16;
/// Floats of the buffer a band of phase planes lives in: 32 KiB, so that a
/// band stays in L1 while its outputs are computed.
constexpr int64_t kBandFloats = 8192;
/// Floats before the first phase plane and after each: taps reach at most
/// four columns left of a plane's start and, for the last, partial vector,
/// 15 + 4 columns past its end.
constexpr int64_t kFrontSlack = kMaxLanes;
constexpr int64_t kBackSlack = 2 * kMaxLanes;
/// Flat mode's column table holds at most this many vectors.
constexpr int64_t kMaxPeriod = 32;

int64_t floorDiv(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/// The fast path's geometry, shared by every plane of a call.
struct BandGeometry {
  int64_t kernel, stride;
  int64_t h, w, oh;
  /// Width of every phase plane, = the output's.
  int64_t wq;
  int64_t minRowShift;
  /// Output rows per band, rows per phase plane in a band, floats between
  /// phase planes.
  int64_t bandRows, phaseRows, phaseStride;
  /// Where tap (kh, kw) of a band's first output reads, from the start of
  /// the phase planes.
  int64_t tapOffset[25];
  /// Lanes whose tap column kw lands in the horizontal pads read a
  /// neighbouring row's value and skip it: a tap shifted left keeps columns
  /// >= -shift, one shifted right columns < wq - shift, that is -column >=
  /// shift - wq + 1. One compare per tap column: GCC 12 scalarizes the AND
  /// of two masks under plain AVX-512F.
  bool masked[5];
  float sign[5], bound[5];
  /// Flat mode (period > 0): the vectors of `lanes` consecutive outputs of
  /// a band cross rows; vector v's lane columns are columns[v % period], the
  /// columns of a band's last `lanes` outputs tailColumns. Row mode (period
  /// 0): rows are done one by one.
  int64_t lanes, period;
  float columns[kMaxPeriod][kMaxLanes];
  float tailColumns[kMaxLanes];
};

/// Whether the fast path takes `s` with vectors of `lanes`, and its
/// geometry.
bool bandGeometry(const ConvShape &s, int64_t lanes, BandGeometry &g) {
  const int64_t k = s.kernel[2];
  const int64_t stride = s.strides[2];
  if (s.in[0] != 1 || s.kernel[0] != 1 || s.strides[0] != 1 ||
      !(k == 3 || k == 5) || s.kernel[1] != k ||
      !(stride == 1 || stride == 2) || s.strides[1] != stride ||
      s.dilations[1] != 1 || s.dilations[2] != 1)
    return false;
  // Phase planes as wide as the output: the width splits evenly and the
  // pads give back the input's width.
  if (s.in[2] % stride != 0 || s.out[2] != s.in[2] / stride)
    return false;
  // Taps at most K - 1 phase columns off (the slack's width).
  if (s.padsBegin[1] > k - 1 || s.padsBegin[2] > k - 1)
    return false;
  g.kernel = k, g.stride = stride;
  g.h = s.in[1], g.w = s.in[2], g.oh = s.out[1];
  g.wq = s.out[2];
  int64_t rowShift[5], rowPhase[5], colPhase[5], colShift[5];
  g.minRowShift = std::numeric_limits<int64_t>::max();
  int64_t maxRowShift = std::numeric_limits<int64_t>::min();
  for (int64_t t = 0; t < k; ++t) {
    int64_t offset = t - s.padsBegin[1];
    rowShift[t] = floorDiv(offset, stride);
    rowPhase[t] = offset - rowShift[t] * stride;
    g.minRowShift = std::min(g.minRowShift, rowShift[t]);
    maxRowShift = std::max(maxRowShift, rowShift[t]);
    offset = t - s.padsBegin[2];
    colShift[t] = floorDiv(offset, stride);
    colPhase[t] = offset - colShift[t] * stride;
  }
  // As many output rows per band as fit the buffer, spread evenly over the
  // bands; none when even one does not (a very wide 1-D input).
  const int64_t halo = maxRowShift - g.minRowShift;
  const int64_t phases = stride * stride;
  int64_t perPhase =
      (kBandFloats - kFrontSlack) / phases / kMaxLanes * kMaxLanes - kBackSlack;
  if (g.wq == 0)
    return false;
  int64_t rows = perPhase / g.wq - halo;
  if (rows < 1)
    return false;
  rows = std::min(rows, g.oh);
  int64_t bands = (g.oh + rows - 1) / rows;
  g.bandRows = (g.oh + bands - 1) / bands;
  g.phaseRows = g.bandRows + halo;
  g.phaseStride =
      (g.phaseRows * g.wq + kBackSlack + kMaxLanes - 1) / kMaxLanes * kMaxLanes;
  for (int64_t kh = 0; kh < k; ++kh)
    for (int64_t kw = 0; kw < k; ++kw)
      g.tapOffset[kh * k + kw] =
          (rowPhase[kh] * stride + colPhase[kw]) * g.phaseStride +
          (rowShift[kh] - g.minRowShift) * g.wq + colShift[kw];
  for (int64_t kw = 0; kw < k; ++kw) {
    const int64_t shift = colShift[kw];
    g.masked[kw] = shift != 0;
    g.sign[kw] = shift > 0 ? -1.0f : 1.0f;
    g.bound[kw] = shift < 0 ? static_cast<float>(-shift)
                            : static_cast<float>(shift - g.wq + 1);
  }
  // Lane columns repeat every wq / gcd(wq, lanes) vectors.
  int64_t gcd = g.wq, other = lanes;
  while (other) {
    int64_t rest = gcd % other;
    gcd = other, other = rest;
  }
  g.lanes = lanes;
  g.period = g.wq / gcd <= kMaxPeriod ? g.wq / gcd : 0;
  for (int64_t v = 0; v < g.period; ++v)
    for (int64_t l = 0; l < lanes; ++l)
      g.columns[v][l] = static_cast<float>((v * lanes + l) % g.wq);
  for (int64_t l = 0; l < lanes; ++l)
    g.tailColumns[l] = static_cast<float>(((l - lanes) % g.wq + g.wq) % g.wq);
  return true;
}

/// Splits the even and odd columns of a `2 * wq`-wide row, with 8-lane
/// shuffles when kShuffle (AVX2 and AVX-512 have them; the baseline's plain
/// loop is vectorized by GCC). With `mayOverread`, a row narrower than 8
/// pairs is read as 8 (the 16 floats from src are readable) and 8 floats
/// are written to each half (the rest of the phase rows are written after).
template <bool kShuffle>
WEFT_RT_INLINE void splitRow(const float *__restrict src,
                             float *__restrict even, float *__restrict odd,
                             int64_t wq, bool mayOverread) {
  if constexpr (!kShuffle) {
    for (int64_t b = 0; b < wq; ++b) {
      even[b] = src[2 * b];
      odd[b] = src[2 * b + 1];
    }
    return;
  }
  auto chunk = [&](int64_t b) WEFT_RT_INLINE_LAMBDA {
    Float8 first = loadVector<Float8>(src + 2 * b);
    Float8 second = loadVector<Float8>(src + 2 * b + 8);
    storeVector(even + b, __builtin_shuffle(first, second,
                                            Int8{0, 2, 4, 6, 8, 10, 12, 14}));
    storeVector(odd + b, __builtin_shuffle(first, second,
                                           Int8{1, 3, 5, 7, 9, 11, 13, 15}));
  };
  if (wq >= 8) {
    int64_t b = 0;
    for (; b + 8 <= wq; b += 8)
      chunk(b);
    if (b < wq)
      chunk(wq - 8);
  } else if (mayOverread) {
    chunk(0);
  } else {
    for (int64_t b = 0; b < wq; ++b) {
      even[b] = src[2 * b];
      odd[b] = src[2 * b + 1];
    }
  }
}

/// Fills the phase planes of the band whose first output row is `oh0`:
/// phase plane (ph, pw) row r holds input row (oh0 + minRowShift + r) *
/// stride + ph, columns pw, pw + stride, ..., or zeros where that row is a
/// pad.
template <int S, bool kShuffle>
WEFT_RT_INLINE void fillBand(const BandGeometry &g, const float *x, int64_t oh0,
                             float *phases) {
  const int64_t wq = g.wq, first = oh0 + g.minRowShift;
  if constexpr (S == 1) {
    // Rows are contiguous in the input and in the phase plane alike.
    int64_t begin = std::clamp<int64_t>(-first, 0, g.phaseRows);
    int64_t end = std::clamp<int64_t>(g.h - first, begin, g.phaseRows);
    std::fill(phases, phases + begin * wq, 0.0f);
    std::copy(x + (first + begin) * wq, x + (first + end) * wq,
              phases + begin * wq);
    std::fill(phases + end * wq, phases + g.phaseRows * wq, 0.0f);
  } else {
    // Input rows in order; each phase's in increasing order, as a row may
    // spill into the next one.
    for (int64_t r = 0; r < g.phaseRows; ++r) {
      for (int64_t ph = 0; ph < 2; ++ph) {
        float *even = phases + 2 * ph * g.phaseStride;
        float *odd = even + g.phaseStride;
        const int64_t row = (first + r) * 2 + ph;
        if (row < 0 || row >= g.h) {
          std::fill(even + r * wq, even + (r + 1) * wq, 0.0f);
          std::fill(odd + r * wq, odd + (r + 1) * wq, 0.0f);
          continue;
        }
        splitRow<kShuffle>(x + row * g.w, even + r * wq, odd + r * wq, wq,
                           (row * g.w + 2 * 8) <= g.h * g.w);
      }
    }
  }
}

constexpr int floorDivConst(int a, int b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/// Where the taps of a band read, for pads known at compile time (kPad,
/// both axes): tap (kh, kw) reads one of K * S row pointers at a constant
/// offset, and only taps shifted off the output's column are masked, with
/// one compare. GCC keeps the pointers in registers; with nine offsets read
/// from the geometry it reloads them at each vector.
template <int K, int S, int kPad, typename V> struct StaticTaps {
  static constexpr int shift(int k) { return floorDivConst(k - kPad, S); }
  static constexpr int phase(int k) { return k - kPad - shift(k) * S; }
  const float *rows[K][S];
  V rightBound[K];

  StaticTaps(const BandGeometry &g, const float *phases) {
    for (int kh = 0; kh < K; ++kh)
      for (int pw = 0; pw < S; ++pw)
        rows[kh][pw] = phases + (phase(kh) * S + pw) * g.phaseStride +
                       (shift(kh) - shift(0)) * g.wq;
    for (int kw = 0; kw < K; ++kw)
      rightBound[kw] = V{} + static_cast<float>(g.wq - shift(kw));
  }
  WEFT_RT_INLINE V load(int kh, int kw, int64_t i) const {
    return loadVector<V>(rows[kh][phase(kw)] + shift(kw) + i);
  }
  /// sum + acc, in the lanes where tap column kw is inside the row: a
  /// merge-masked add, one operation.
  WEFT_RT_INLINE V add(int kw, V sum, V acc, V column) const {
    if (shift(kw) < 0)
      return column >= static_cast<float>(-shift(kw)) ? sum + acc : sum;
    if (shift(kw) > 0)
      return column < rightBound[kw] ? sum + acc : sum;
    return sum + acc;
  }
};

/// The same for any pads, from the geometry's offsets.
template <int K, int S, typename V> struct RuntimeTaps {
  const float *phases;
  const BandGeometry &g;

  RuntimeTaps(const BandGeometry &g, const float *phases)
      : phases(phases), g(g) {}
  WEFT_RT_INLINE V load(int kh, int kw, int64_t i) const {
    return loadVector<V>(phases + g.tapOffset[kh * K + kw] + i);
  }
  WEFT_RT_INLINE V add(int kw, V sum, V acc, V column) const {
    if (!g.masked[kw])
      return sum + acc;
    return column * g.sign[kw] >= g.bound[kw] ? sum + acc : sum;
  }
};

/// The outputs i, i + 1, ... of a band (bias, taps, clamp); lanes whose tap
/// column lands in the pads (at `column`) skip that tap.
template <int K, typename V, typename Taps>
WEFT_RT_INLINE V outputs(const Taps &taps, const V *w, V bias, V low, V high,
                         int64_t i, V column) {
  V sum = bias;
  for (int kw = 0; kw < K; ++kw) {
    V acc = taps.load(0, kw, i) * w[kw];
    for (int kh = 1; kh < K; ++kh)
      acc += taps.load(kh, kw, i) * w[kh * K + kw];
    sum = taps.add(kw, sum, acc, column);
  }
  sum = sum < low ? low : sum;
  return sum > high ? high : sum;
}

/// The `rows` output rows of a filled band: K x K taps, stride S, pads
/// kPad (-1: any), vectors V.
template <int K, int S, int kPad, typename V>
WEFT_RT_INLINE void
computeBand(const BandGeometry &g, const float *phases, const float *weight,
            float biasValue, float lowValue, float highValue, int64_t rows,
            float *out, const float *next, int64_t nextFloats) {
  using Taps = std::conditional_t<(kPad >= 0), StaticTaps<K, S, kPad, V>,
                                  RuntimeTaps<K, S, V>>;
  constexpr int64_t L = lanesOf<V>();
  const Taps taps(g, phases);
  const int64_t wq = g.wq;
  V w[K * K];
  for (int t = 0; t < K * K; ++t)
    w[t] = V{} + weight[t];
  const V bias = V{} + biasValue, low = V{} + lowValue, high = V{} + highValue;
  // Inlined: a call would pass vectors between the target's ISA and the
  // baseline's, whose conventions differ.
  auto at = [&](int64_t i, V column) WEFT_RT_INLINE_LAMBDA {
    return outputs<K>(taps, w, bias, low, high, i, column);
  };
  if (g.period > 0) {
    // Flat: runs of L outputs across row ends. With stride 1, the input
    // the next band copies is fetched meanwhile, a line per vector (about
    // what a band of as many outputs reads), so that the copy finds it in
    // the cache (with stride 2, four times as much, the copy's own reads
    // do better).
    const int64_t n = rows * wq;
    const char *fetch = reinterpret_cast<const char *>(next);
    const char *fetchEnd = S == 1 ? fetch + nextFloats * sizeof(float) : fetch;
    int64_t i = 0, v = 0;
    for (; i + L <= n; i += L) {
      storeVector(out + i, at(i, loadVector<V>(g.columns[v])));
      v = v + 1 == g.period ? 0 : v + 1;
      if (fetch < fetchEnd) {
        __builtin_prefetch(fetch, 0, 2);
        fetch += 64;
      }
    }
    if (i < n && n >= L) {
      // The last L, again in part.
      storeVector(out + n - L, at(n - L, loadVector<V>(g.tailColumns)));
    } else if (i < n) {
      float tail[L];
      storeVector(tail, at(i, loadVector<V>(g.columns[0])));
      std::copy(tail, tail + n, out);
    }
    return;
  }
  // Rows of more than 32 vectors' period one by one: the last L of each row
  // again in part.
  V lanes = V{};
  for (int l = 0; l < L; ++l)
    lanes[l] = static_cast<float>(l);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t row = r * wq;
    int64_t ow = 0;
    for (; ow + L <= wq; ow += L)
      storeVector(out + row + ow, at(row + ow, lanes + static_cast<float>(ow)));
    if (ow < wq)
      storeVector(out + row + wq - L,
                  at(row + wq - L, lanes + static_cast<float>(wq - L)));
  }
}

/// The planes [begin, end) of the fast path, called once per thread.
template <int K, int S, int kPad, typename V>
WEFT_RT_INLINE void bandPlanes(const ConvShape &s, const BandGeometry &g,
                               const float *x, const float *w,
                               const float *bias, float *y, int64_t begin,
                               int64_t end) {
  constexpr bool kShuffle = lanesOf<V>() >= 8;
  alignas(64) float buffer[kBandFloats];
  // The slack holds zeros; only masked or discarded lanes read it.
  std::fill(buffer, buffer + kBandFloats, 0.0f);
  const int64_t inPlane = s.inPlane(), outPlane = s.outPlane();
  auto compute = [&](const float *phases, int64_t p, int64_t oh0, int64_t rows,
                     const float *next,
                     int64_t nextFloats) WEFT_RT_INLINE_LAMBDA {
    const int64_t channel = p % s.c;
    computeBand<K, S, kPad, V>(
        g, phases, w + channel * K * K, bias ? bias[channel] : 0.0f, s.clampLow,
        s.clampHigh, rows, y + p * outPlane + oh0 * g.wq, next, nextFloats);
  };
  // The input rows of the band whose first output row is oh0.
  auto bandInput = [&](int64_t p, int64_t oh0, const float *&start,
                       int64_t &floats) WEFT_RT_INLINE_LAMBDA {
    const int64_t first =
        std::clamp<int64_t>((oh0 + g.minRowShift) * S, 0, g.h);
    const int64_t last = std::clamp<int64_t>(
        (oh0 + g.minRowShift + g.phaseRows) * S, first, g.h);
    start = x + p * inPlane + first * g.w;
    floats = (last - first) * g.w;
  };
  const int64_t half = kBandFloats / 2;
  if (g.bandRows == g.oh && kFrontSlack + S * S * g.phaseStride <= half) {
    // Whole planes in half the buffer: the next plane is copied before
    // this one is computed, so that its loads never wait for the copy's
    // stores to reach the cache (small planes).
    float *phases[2] = {buffer + kFrontSlack, buffer + half + kFrontSlack};
    if (begin < end)
      fillBand<S, kShuffle>(g, x + begin * inPlane, 0, phases[0]);
    for (int64_t p = begin; p < end; ++p) {
      if (p + 1 < end)
        fillBand<S, kShuffle>(g, x + (p + 1) * inPlane, 0,
                              phases[(p + 1 - begin) & 1]);
      compute(phases[(p - begin) & 1], p, 0, g.oh, nullptr, 0);
    }
    return;
  }
  float *phases = buffer + kFrontSlack;
  for (int64_t p = begin; p < end; ++p) {
    for (int64_t oh0 = 0; oh0 < g.oh; oh0 += g.bandRows) {
      fillBand<S, kShuffle>(g, x + p * inPlane, oh0, phases);
      const float *next = nullptr;
      int64_t nextFloats = 0;
      if (oh0 + g.bandRows < g.oh)
        bandInput(p, oh0 + g.bandRows, next, nextFloats);
      else if (p + 1 < end)
        bandInput(p + 1, 0, next, nextFloats);
      compute(phases, p, oh0, std::min(g.bandRows, g.oh - oh0), next,
              nextFloats);
    }
  }
}

using BandPlanesFn = void (*)(const ConvShape &, const BandGeometry &,
                              const float *, const float *, const float *,
                              float *, int64_t, int64_t);

/// The fast path's entry points of one kernel size, stride and pads (-1:
/// any), per instruction set.
struct BandEntry {
  BandPlanesFn avx512, avx2, baseline;
};

#define WEFT_RT_BAND_PLANES(K, S, PAD, NAME)                                   \
  WEFT_RT_TARGET_AVX512 void NAME##Avx512(                                     \
      const ConvShape &s, const BandGeometry &g, const float *x,               \
      const float *w, const float *bias, float *y, int64_t begin,              \
      int64_t end) {                                                           \
    bandPlanes<K, S, PAD, Float16>(s, g, x, w, bias, y, begin, end);           \
  }                                                                            \
  WEFT_RT_TARGET_AVX2 void NAME##Avx2(const ConvShape &s,                      \
                                      const BandGeometry &g, const float *x,   \
                                      const float *w, const float *bias,       \
                                      float *y, int64_t begin, int64_t end) {  \
    bandPlanes<K, S, PAD, Float8>(s, g, x, w, bias, y, begin, end);            \
  }                                                                            \
  void NAME##Baseline(const ConvShape &s, const BandGeometry &g,               \
                      const float *x, const float *w, const float *bias,       \
                      float *y, int64_t begin, int64_t end) {                  \
    bandPlanes<K, S, PAD, Float4>(s, g, x, w, bias, y, begin, end);            \
  }                                                                            \
  constexpr BandEntry NAME = {NAME##Avx512, NAME##Avx2, NAME##Baseline};
// PyTorch's pads (K / 2) and TensorFlow's SAME ones for stride 2 (one less
// before) have their own entry points.
WEFT_RT_BAND_PLANES(3, 1, 1, band3s1p1)
WEFT_RT_BAND_PLANES(3, 2, 1, band3s2p1)
WEFT_RT_BAND_PLANES(3, 2, 0, band3s2p0)
WEFT_RT_BAND_PLANES(3, 1, -1, band3s1)
WEFT_RT_BAND_PLANES(3, 2, -1, band3s2)
WEFT_RT_BAND_PLANES(5, 1, 2, band5s1p2)
WEFT_RT_BAND_PLANES(5, 2, 2, band5s2p2)
WEFT_RT_BAND_PLANES(5, 2, 1, band5s2p1)
WEFT_RT_BAND_PLANES(5, 1, -1, band5s1)
WEFT_RT_BAND_PLANES(5, 2, -1, band5s2)
#undef WEFT_RT_BAND_PLANES

/// The fast path's entry points for `s` (3x3 or 5x5, stride 1 or 2).
const BandEntry &bandEntryFor(const ConvShape &s) {
  const int64_t pad = s.padsBegin[1] == s.padsBegin[2] ? s.padsBegin[1] : -1;
  const int64_t k = s.kernel[2], stride = s.strides[2];
  if (k == 3 && stride == 1)
    return pad == 1 ? band3s1p1 : band3s1;
  if (k == 3)
    return pad == 1 ? band3s2p1 : pad == 0 ? band3s2p0 : band3s2;
  if (stride == 1)
    return pad == 2 ? band5s1p2 : band5s1;
  return pad == 2 ? band5s2p2 : pad == 1 ? band5s2p1 : band5s2;
}

/// The best instruction set the CPU has for the fast path.
DepthwiseIsa detectIsa() {
  switch (cpuVectors()) {
  case CpuVectors::Avx512:
    return DepthwiseIsa::Avx512;
  case CpuVectors::Avx2:
    return DepthwiseIsa::Avx2;
  default:
    return DepthwiseIsa::Baseline;
  }
}

const DepthwiseIsa kCpuIsa = detectIsa();
std::atomic<DepthwiseIsa> isaCap{DepthwiseIsa::Avx512};

//===----------------------------------------------------------------------===//
// General path
//===----------------------------------------------------------------------===//

/// Adds weight * x[ow * stride] to row[ow] for ow in [begin, end). kStride,
/// when not 0, is the stride known at compile time, which lets the loop
/// vectorize without gathers.
template <int kStride>
WEFT_RT_INLINE void foldTap(float *__restrict row, const float *__restrict x,
                            int64_t begin, int64_t end, int64_t stride,
                            float weight) {
  const int64_t step = kStride ? kStride : stride;
  for (int64_t ow = begin; ow < end; ++ow)
    row[ow] += weight * x[ow * step];
}

template <int kStride>
WEFT_RT_INLINE void generalPlanes(const ConvShape &s, const float *x,
                                  const float *w, const float *bias, float *y,
                                  int64_t begin, int64_t end) {
  const int64_t inPlane = s.inPlane(), outPlane = s.outPlane();
  const int64_t taps = s.kernelVolume();
  const float low = s.clampLow, high = s.clampHigh;
  for (int64_t p = begin; p < end; ++p) {
    const int64_t channel = p % s.c;
    const float *xp = x + p * inPlane;
    const float *wc = w + channel * taps;
    const float b = bias ? bias[channel] : 0.0f;
    for (int64_t od = 0; od < s.out[0]; ++od) {
      for (int64_t oh = 0; oh < s.out[1]; ++oh) {
        float *row = y + p * outPlane + (od * s.out[1] + oh) * s.out[2];
        std::fill(row, row + s.out[2], b);
        for (int64_t kd = 0; kd < s.kernel[0]; ++kd) {
          int64_t id = od * s.strides[0] - s.padsBegin[0] + kd * s.dilations[0];
          if (id < 0 || id >= s.in[0])
            continue;
          for (int64_t kh = 0; kh < s.kernel[1]; ++kh) {
            int64_t ih =
                oh * s.strides[1] - s.padsBegin[1] + kh * s.dilations[1];
            if (ih < 0 || ih >= s.in[1])
              continue;
            const float *xrow = xp + (id * s.in[1] + ih) * s.in[2];
            const float *wrow = wc + (kd * s.kernel[1] + kh) * s.kernel[2];
            for (int64_t kw = 0; kw < s.kernel[2]; ++kw) {
              // Outputs whose tap lands inside the row: 0 <= ow * stride +
              // shift < in.
              const int64_t shift = kw * s.dilations[2] - s.padsBegin[2];
              int64_t owBegin = std::clamp<int64_t>(
                  ceilDiv(-shift, s.strides[2]), 0, s.out[2]);
              int64_t owEnd = std::clamp<int64_t>(
                  ceilDiv(s.in[2] - shift, s.strides[2]), owBegin, s.out[2]);
              if (owBegin < owEnd)
                foldTap<kStride>(row, xrow + shift, owBegin, owEnd,
                                 s.strides[2], wrow[kw]);
            }
          }
        }
        for (int64_t ow = 0; ow < s.out[2]; ++ow) {
          float value = row[ow] < low ? low : row[ow];
          row[ow] = value > high ? high : value;
        }
      }
    }
  }
}

WEFT_RT_VECTOR_CLONES
void generalPlanesStride1(const ConvShape &s, const float *x, const float *w,
                          const float *bias, float *y, int64_t begin,
                          int64_t end) {
  generalPlanes<1>(s, x, w, bias, y, begin, end);
}

WEFT_RT_VECTOR_CLONES
void generalPlanesStride2(const ConvShape &s, const float *x, const float *w,
                          const float *bias, float *y, int64_t begin,
                          int64_t end) {
  generalPlanes<2>(s, x, w, bias, y, begin, end);
}

WEFT_RT_VECTOR_CLONES
void generalPlanesAnyStride(const ConvShape &s, const float *x, const float *w,
                            const float *bias, float *y, int64_t begin,
                            int64_t end) {
  generalPlanes<0>(s, x, w, bias, y, begin, end);
}
} // namespace

DepthwiseIsa weft::rt::cpu::capDepthwiseIsa(DepthwiseIsa cap) {
  isaCap.store(cap, std::memory_order_relaxed);
  return std::min(cap, kCpuIsa);
}

DepthwiseIsa weft::rt::cpu::depthwiseIsa() {
  return std::min(kCpuIsa, isaCap.load(std::memory_order_relaxed));
}

weft_rt_status weft::rt::cpu::convDepthwise(weft_rt_context *ctx,
                                            const ConvShape &s,
                                            const float *input,
                                            const float *weight,
                                            const float *bias, float *out) {
  const int64_t planes = s.n * s.c;
  const int64_t work =
      planes * (s.outPlane() * (s.kernelVolume() + 1) + s.inPlane());
  const int nt = static_cast<int>(
      std::min<int64_t>(threadsFor(ctx, work), std::max<int64_t>(planes, 1)));
  const DepthwiseIsa isa = depthwiseIsa();
  if (runBlockedDepthwise(s, isa, nt, input, weight, bias, out))
    return WEFT_RT_OK;
  DepthwiseRowsFn wide =
      isa == DepthwiseIsa::Avx512 ? wideRowsEntryFor(s) : nullptr;
  BandGeometry g;
  BandPlanesFn band = nullptr;
  const int64_t lanes = isa == DepthwiseIsa::Avx512 ? 16
                        : isa == DepthwiseIsa::Avx2 ? 8
                                                    : 4;
  if (bandGeometry(s, lanes, g)) {
    const BandEntry &entry = bandEntryFor(s);
    band = isa == DepthwiseIsa::Avx512 ? entry.avx512
           : isa == DepthwiseIsa::Avx2 ? entry.avx2
                                       : entry.baseline;
  }
  auto general = s.strides[2] == 1   ? generalPlanesStride1
                 : s.strides[2] == 2 ? generalPlanesStride2
                                     : generalPlanesAnyStride;
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    const int64_t team = omp_get_num_threads(), rank = omp_get_thread_num();
    const int64_t begin = planes * rank / team,
                  end = planes * (rank + 1) / team;
    if (wide)
      wide(s, input, weight, bias, out, begin, end);
    else if (band)
      band(s, g, input, weight, bias, out, begin, end);
    else
      general(s, input, weight, bias, out, begin, end);
  }
  return WEFT_RT_OK;
}
