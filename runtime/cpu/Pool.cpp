//===- Pool.cpp - ONNX MaxPool and AveragePool ----------------------------===//
//
// weft_rt_cpu_pool: max and average pooling over 1 to 3 spatial dimensions
// with strides, dilations, asymmetric pads and clipped ceil-mode windows, in
// NC[D]HW or (f32) channel-blocked by 16.
//
//===----------------------------------------------------------------------===//

#include "KernelParams.h"
#include "MathSupport.h"

#include <algorithm>
#include <limits>
#include <type_traits>

using namespace weft::rt::cpu;

static const char *const kPool = "pool";

namespace {
/// Which taps of one output position's window fall in the input and in the
/// padded input, along one dimension: taps [first, last) read the input at
/// start + tap * dilation; the first `padded` taps lie in the padded input.
struct Window {
  int64_t start, first, last, padded;
};
} // namespace

/// The windows of every output position along dimension d.
static std::vector<Window> windows(const PoolShape &s, int d) {
  std::vector<Window> result(static_cast<size_t>(s.out[d]));
  for (int64_t o = 0; o < s.out[d]; ++o) {
    Window &w = result[o];
    w.start = o * s.strides[d] - s.padsBegin[d];
    int64_t dilation = s.dilations[d], k = s.kernel[d];
    w.first = w.start >= 0 ? 0 : std::min(ceilDiv(-w.start, dilation), k);
    w.last = std::clamp<int64_t>(ceilDiv(s.in[d] - w.start, dilation), 0, k);
    w.last = std::max(w.last, w.first);
    w.padded = std::clamp<int64_t>(
        ceilDiv(s.in[d] + s.padsEnd[d] - w.start, dilation), 0, k);
  }
  return result;
}

#define WEFT_RT_INLINE inline __attribute__((always_inline))

/// Folds one tap into the accumulators of outputs [begin, end), which read
/// base[ow * stride]. kStride, when not 0, is the stride known at compile
/// time, which lets the loop vectorize without gathers.
template <typename T, typename Acc, bool isMax, int kStride>
static WEFT_RT_INLINE void foldTap(Acc *__restrict acc, const T *base,
                                   int64_t begin, int64_t end, int64_t stride) {
  const int64_t step = kStride ? kStride : stride;
  for (int64_t ow = begin; ow < end; ++ow) {
    Acc v = static_cast<Acc>(base[ow * step]);
    acc[ow] = isMax ? std::max(acc[ow], v) : acc[ow] + v;
  }
}

/// p[0], p[2], ..., p[30] from two loads, of p[0..15] and of p[15..30], so
/// that nothing past p[30] (the last input a stride-2 block reads) is read.
static WEFT_RT_INLINE Float16 loadEveryOther(const float *p) {
  const Int16 evens = {0,      2,       4,       6,      8,      10,
                       12,     14,      16 + 1,  16 + 3, 16 + 5, 16 + 7,
                       16 + 9, 16 + 11, 16 + 13, 16 + 15};
  return __builtin_shuffle(loadFloat16(p), loadFloat16(p + 15), evens);
}

/// The f32 interior outputs of one output row, 16 at a time in registers
/// over every tap (strides 1 and 2; others are left to the scalar loop).
/// Returns where the scalar loop takes over.
template <bool isMax>
static WEFT_RT_INLINE int64_t vectorInterior(const PoolShape &s,
                                             const Window &wd, const Window &wh,
                                             int64_t begin, int64_t end,
                                             const float *x, float *acc) {
  const int64_t stride = s.strides[2];
  if (stride != 1 && stride != 2)
    return begin;
  const int64_t dilation = s.dilations[2], pad = s.padsBegin[2];
  const float identity = isMax ? std::numeric_limits<float>::lowest() : 0.0f;
  // Blocks of 16 outputs; the last one may overlap the one before, which
  // only writes the same values again.
  auto block = [&](int64_t ow) {
    Float16 v = Float16{} + identity;
    for (int64_t td = wd.first; td < wd.last; ++td) {
      int64_t id = wd.start + td * s.dilations[0];
      for (int64_t th = wh.first; th < wh.last; ++th) {
        int64_t ih = wh.start + th * s.dilations[1];
        const float *row = x + (id * s.in[1] + ih) * s.in[2];
        for (int64_t tw = 0; tw < s.kernel[2]; ++tw) {
          const float *base = row + ow * stride + tw * dilation - pad;
          Float16 t = stride == 2 ? loadEveryOther(base) : loadFloat16(base);
          v = isMax ? (t > v ? t : v) : v + t;
        }
      }
    }
    storeFloat16(acc + ow, v);
  };
  if (end - begin < 16)
    return begin;
  int64_t ow = begin;
  for (; ow + 16 <= end; ow += 16)
    block(ow);
  if (ow < end)
    block(end - 16);
  return end;
}

/// Pools one N x C plane. Acc is T for max and a float type for averages.
template <typename T, typename Acc, bool isMax>
static WEFT_RT_INLINE void poolPlane(const PoolShape &s,
                                     const std::vector<Window> *wins,
                                     int64_t interiorBegin, int64_t interiorEnd,
                                     const T *x, T *y, Acc *acc) {
  const int64_t out2 = s.out[2], in1 = s.in[1], in2 = s.in[2];
  const int64_t stride2 = s.strides[2], dilation2 = s.dilations[2];
  // An empty max window yields the lowest value, as in ONNX Runtime.
  const Acc identity =
      isMax ? static_cast<Acc>(std::numeric_limits<T>::lowest()) : Acc(0);
  for (int64_t od = 0; od < s.out[0]; ++od) {
    const Window &wd = wins[0][od];
    for (int64_t oh = 0; oh < s.out[1]; ++oh, y += out2) {
      const Window &wh = wins[1][oh];
      std::fill(acc, acc + out2, identity);
      int64_t scalarBegin = interiorBegin;
      if constexpr (std::is_same_v<T, float> && std::is_same_v<Acc, float>)
        scalarBegin = vectorInterior<isMax>(s, wd, wh, interiorBegin,
                                            interiorEnd, x, acc);
      for (int64_t td = wd.first; td < wd.last; ++td) {
        int64_t id = wd.start + td * s.dilations[0];
        for (int64_t th = wh.first; th < wh.last; ++th) {
          int64_t ih = wh.start + th * s.dilations[1];
          const T *row = x + (id * in1 + ih) * in2;
          // Interior outputs read every tap: a loop over outputs per tap,
          // which vectorizes.
          for (int64_t tw = 0; tw < s.kernel[2]; ++tw) {
            const T *base = row + tw * dilation2 - s.padsBegin[2];
            if (stride2 == 1)
              foldTap<T, Acc, isMax, 1>(acc, base, scalarBegin, interiorEnd, 1);
            else if (stride2 == 2)
              foldTap<T, Acc, isMax, 2>(acc, base, scalarBegin, interiorEnd, 2);
            else
              foldTap<T, Acc, isMax, 0>(acc, base, scalarBegin, interiorEnd,
                                        stride2);
          }
          for (int64_t ow = 0; ow < out2; ++ow) {
            if (ow == interiorBegin)
              ow = interiorEnd;
            if (ow >= out2)
              break;
            const Window &ww = wins[2][ow];
            for (int64_t tw = ww.first; tw < ww.last; ++tw) {
              Acc v = static_cast<Acc>(row[ww.start + tw * dilation2]);
              acc[ow] = isMax ? std::max(acc[ow], v) : acc[ow] + v;
            }
          }
        }
      }
      if constexpr (isMax) {
        for (int64_t ow = 0; ow < out2; ++ow)
          y[ow] = static_cast<T>(acc[ow]);
      } else {
        for (int64_t ow = 0; ow < out2; ++ow) {
          const Window &ww = wins[2][ow];
          int64_t count = s.countIncludePad
                              ? wd.padded * wh.padded * ww.padded
                              : (wd.last - wd.first) * (wh.last - wh.first) *
                                    (ww.last - ww.first);
          // A window wholly outside the (padded) input averages nothing.
          y[ow] = count > 0 ? static_cast<T>(acc[ow] / static_cast<Acc>(count))
                            : T(0);
        }
      }
    }
  }
}

// The f32 planes compiled for AVX-512 and AVX2 too (called from the
// parallel loop: OpenMP's outlined loop body would not inherit the clones'
// targets).
WEFT_RT_VECTOR_CLONES
static void maxPlaneF32(const PoolShape &s, const std::vector<Window> *wins,
                        int64_t interiorBegin, int64_t interiorEnd,
                        const float *x, float *y, float *acc) {
  poolPlane<float, float, true>(s, wins, interiorBegin, interiorEnd, x, y, acc);
}

WEFT_RT_VECTOR_CLONES
static void averagePlaneF32(const PoolShape &s, const std::vector<Window> *wins,
                            int64_t interiorBegin, int64_t interiorEnd,
                            const float *x, float *y, float *acc) {
  poolPlane<float, float, false>(s, wins, interiorBegin, interiorEnd, x, y,
                                 acc);
}

template <typename T, typename Acc, bool isMax>
static void plane(const PoolShape &s, const std::vector<Window> *wins,
                  int64_t interiorBegin, int64_t interiorEnd, const T *x, T *y,
                  Acc *acc) {
  if constexpr (std::is_same_v<T, float> && std::is_same_v<Acc, float>) {
    if (isMax)
      maxPlaneF32(s, wins, interiorBegin, interiorEnd, x, y, acc);
    else
      averagePlaneF32(s, wins, interiorBegin, interiorEnd, x, y, acc);
  } else {
    poolPlane<T, Acc, isMax>(s, wins, interiorBegin, interiorEnd, x, y, acc);
  }
}

/// The most rows of a window separableMaxPlaneF32 takes beyond 4 (a fifth
/// instance of its row fold).
constexpr int64_t kMaxSeparableRows = 8;

/// y[o] = the max of vm[o * stride + tw] over tw < kw, for o < count (vm
/// holds no NaN: it is a fold from the lowest float, and holds the
/// (count - 1) * stride + kw columns the windows read). Strides 1 and 2 run
/// 16 outputs at a time, the last block overlapping the one before (it only
/// writes the same values again; stride 2 through loadEveryOther). GCC's own
/// vectorization of the loop left an 8-output
/// tail to scalar code on ResNet-18's 56-wide rows.
template <int kStride>
static WEFT_RT_INLINE void maxAcross(float *__restrict y, const float *vm,
                                     int64_t count, int64_t kw,
                                     int64_t stride) {
  const int64_t step = kStride ? kStride : stride;
  if ((kStride == 1 || kStride == 2) && count >= 16) {
    auto taps = [&](const float *p) {
      return kStride == 2 ? loadEveryOther(p) : loadFloat16(p);
    };
    for (int64_t o = 0; o < count; o += 16) {
      const int64_t first = std::min(o, count - 16);
      const float *p = vm + first * kStride;
      Float16 m = taps(p);
      for (int64_t tw = 1; tw < kw; ++tw) {
        Float16 t = taps(p + tw);
        m = t > m ? t : m;
      }
      storeFloat16(y + first, m);
    }
    return;
  }
  for (int64_t o = 0; o < count; ++o) {
    float m = vm[o * step];
    for (int64_t tw = 1; tw < kw; ++tw) {
      float v = vm[o * step + tw];
      m = v > m ? v : m;
    }
    y[o] = m;
  }
}

/// target[c] = the max of rows[k][c] over k < KH, folded from the lowest
/// float, for c < count: one pass with the rows in registers. (Folding into
/// target one row at a time stores and reloads it per row; its speed then
/// depended on where target lay against the rows: 76 to 163 us for
/// ResNet-18's pool.)
template <int KH>
static WEFT_RT_INLINE void maxDown(float *__restrict target,
                                   const float *const *rows, int64_t count) {
  const float lowest = std::numeric_limits<float>::lowest();
  const float *r[KH];
  for (int k = 0; k < KH; ++k)
    r[k] = rows[k];
  for (int64_t c = 0; c < count; ++c) {
    float m = lowest;
    for (int k = 0; k < KH; ++k) {
      float v = r[k][c];
      m = v > m ? v : m;
    }
    target[c] = m;
  }
}

/// A 2-D f32 max pool of one plane without dilation, separably: for each
/// output row, the maximum down its window's input rows, column by column
/// (`vm`, with the pads as the lowest float), then across each window's
/// columns. The fold is the same as poolPlane's (`x > acc ? x : acc` from
/// the lowest float, which skips NaN), so the results are identical; it
/// reads each input row once per output row instead of once per tap and
/// output block: ResNet-18's 3x3 stride-2 pool of 64 x 112 x 112 took 190
/// us the other way (bench/kernels/README.md). `lowestRow` holds at least
/// the input's width of lowest floats and stands for rows in the pads.
WEFT_RT_VECTOR_CLONES
static void separableMaxPlaneF32(const PoolShape &s, const float *x, float *y,
                                 float *vm, const float *lowestRow) {
  const int64_t h = s.in[1], w = s.in[2], oh = s.out[1], ow = s.out[2];
  const int64_t kh = s.kernel[1], kw = s.kernel[2];
  const int64_t padTop = s.padsBegin[1], padLeft = s.padsBegin[2];
  const int64_t columns = (ow - 1) * s.strides[2] + kw;
  const int64_t inputEnd = std::clamp<int64_t>(columns - padLeft, 0, w);
  const float lowest = std::numeric_limits<float>::lowest();
  for (int64_t t = 0; t < columns; ++t)
    vm[t] = lowest;
  for (int64_t r = 0; r < oh; ++r, y += ow) {
    const int64_t first = r * s.strides[1] - padTop;
    const float *rows[kMaxSeparableRows];
    for (int64_t ky = 0; ky < kh; ++ky) {
      const int64_t iy = first + ky;
      rows[ky] = iy < 0 || iy >= h ? lowestRow : x + iy * w;
    }
    float *target = vm + padLeft;
    switch (kh) {
    case 1:
      maxDown<1>(target, rows, inputEnd);
      break;
    case 2:
      maxDown<2>(target, rows, inputEnd);
      break;
    case 3:
      maxDown<3>(target, rows, inputEnd);
      break;
    case 4:
      maxDown<4>(target, rows, inputEnd);
      break;
    default:
      maxDown<kMaxSeparableRows>(target, rows, inputEnd);
    }
    if (s.strides[2] == 1)
      maxAcross<1>(y, vm, ow, kw, 1);
    else if (s.strides[2] == 2)
      maxAcross<2>(y, vm, ow, kw, 2);
    else
      maxAcross<0>(y, vm, ow, kw, s.strides[2]);
  }
}

/// Whether separableMaxPlaneF32 takes `s`: 2-D or 1-D, no dilation,
/// kernels of 1 to 4 rows or of kMaxSeparableRows.
static bool separableMax(const PoolShape &s) {
  return s.isMax && s.in[0] == 1 && s.kernel[0] == 1 && s.out[0] == 1 &&
         s.padsBegin[0] == 0 && s.dilations[1] == 1 && s.dilations[2] == 1 &&
         (s.kernel[1] <= 4 || s.kernel[1] == kMaxSeparableRows);
}

/// Pools whole planes into one value each (GlobalAveragePool and the like:
/// one window covering the unpadded input).
template <typename T, typename Acc, bool isMax>
static void globalPool(const PoolShape &s, int64_t inPlane, const T *x, T *y,
                       int nt) {
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
  for (int64_t p = 0; p < s.planes; ++p) {
    const T *src = x + p * inPlane;
    if constexpr (isMax) {
      T best = src[0];
      for (int64_t i = 1; i < inPlane; ++i)
        best = std::max(best, src[i]);
      y[p] = best;
    } else {
      Acc sum = 0;
#pragma omp simd reduction(+ : sum)
      for (int64_t i = 0; i < inPlane; ++i)
        sum += src[i];
      y[p] = static_cast<T>(sum / static_cast<Acc>(inPlane));
    }
  }
}

/// Whether one window covers each whole plane, unpadded and undilated.
static bool isGlobalPool(const PoolShape &s) {
  bool global = s.out[0] * s.out[1] * s.out[2] == 1 &&
                s.in[0] * s.in[1] * s.in[2] > 0;
  for (int d = 0; d < 3; ++d)
    global = global && s.kernel[d] == s.in[d] && s.dilations[d] == 1 &&
             s.padsBegin[d] == 0 && s.padsEnd[d] == 0;
  return global;
}

template <typename T, typename Acc, bool isMax>
static weft_rt_status pool(weft_rt_context *ctx, const PoolShape &s, const T *x,
                           T *y) {
  const int64_t inPlane = s.in[0] * s.in[1] * s.in[2];
  const int64_t outPlane = s.out[0] * s.out[1] * s.out[2];
  const bool global = isGlobalPool(s);
  if (global) {
    globalPool<T, Acc, isMax>(s, inPlane, x, y,
                              threadsFor(ctx, s.planes * inPlane));
    return WEFT_RT_OK;
  }
  if constexpr (std::is_same_v<T, float> && isMax) {
    if (separableMax(s)) {
      const int64_t columns = (s.out[2] - 1) * s.strides[2] + s.kernel[2];
      const int nt = threadsFor(
          ctx, s.planes * (s.out[1] * (columns + s.out[2]) * s.kernel[1]));
#pragma omp parallel num_threads(nt) if (nt > 1)
      {
        // The input columns start 64-byte aligned in vm: one float off
        // (pads of 1), every vector store splits a cache line.
        std::vector<float> storage(static_cast<size_t>(columns + 32));
        float *vm = storage.data();
        while ((reinterpret_cast<uintptr_t>(vm + s.padsBegin[2]) & 63) != 0)
          ++vm;
        const std::vector<float> lowestRow(
            static_cast<size_t>(std::max<int64_t>(s.in[2], 1)),
            std::numeric_limits<float>::lowest());
#pragma omp for schedule(static)
        for (int64_t p = 0; p < s.planes; ++p)
          separableMaxPlaneF32(s, x + p * inPlane, y + p * outPlane, vm,
                               lowestRow.data());
      }
      return WEFT_RT_OK;
    }
  }
  std::vector<Window> wins[3] = {windows(s, 0), windows(s, 1), windows(s, 2)};
  // Outputs whose windows lie wholly inside the input along W.
  int64_t interiorBegin = 0, interiorEnd = 0;
  for (int64_t ow = 0; ow < s.out[2]; ++ow) {
    const Window &w = wins[2][ow];
    bool full = w.first == 0 && w.last == s.kernel[2];
    if (full && interiorEnd == interiorBegin) {
      interiorBegin = ow;
      interiorEnd = ow + 1;
    } else if (full && interiorEnd == ow) {
      interiorEnd = ow + 1;
    }
  }
  int64_t taps = s.kernel[0] * s.kernel[1] * s.kernel[2];
  int nt = threadsFor(ctx, s.planes * outPlane * std::min<int64_t>(taps, 64));
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    std::vector<Acc> acc(static_cast<size_t>(s.out[2]));
#pragma omp for schedule(static)
    for (int64_t p = 0; p < s.planes; ++p)
      plane<T, Acc, isMax>(s, wins, interiorBegin, interiorEnd, x + p * inPlane,
                           y + p * outPlane, acc.data());
  }
  return WEFT_RT_OK;
}

//===----------------------------------------------------------------------===//
// Channel-blocked layout
//===----------------------------------------------------------------------===//

/// The channels of a block in the channel-blocked layout (N x C/16 x
/// spatial... x 16).
constexpr int64_t kChannelBlock = 16;

/// Pools output rows [begin, end) of a channel-blocked f32 tensor: row r is
/// output row r % (out[0] * out[1]) (of depth and height) of channel block
/// r / (out[0] * out[1]), over the images too. Each output position folds
/// its window's 16-float vectors, one per input position, so that a
/// block's 16 channels share every instruction. The folds are poolPlane's
/// (max: `acc < v ? v : acc` from the lowest float, which skips NaN; a
/// global max from the first element, as globalPool), tap by tap in the
/// same order.
template <bool isMax>
static WEFT_RT_INLINE void
poolBlockedRows(const PoolShape &s, const std::vector<Window> *wins,
                bool global, const float *x, float *y, int64_t begin,
                int64_t end) {
  const int64_t rowsPerBlock = s.out[0] * s.out[1];
  const int64_t inPlane = s.in[0] * s.in[1] * s.in[2];
  const int64_t outPlane = rowsPerBlock * s.out[2];
  const Float16 identity =
      Float16{} + (isMax ? std::numeric_limits<float>::lowest() : 0.0f);
  for (int64_t r = begin; r < end; ++r) {
    const int64_t block = r / rowsPerBlock, row = r % rowsPerBlock;
    const Window &wd = wins[0][row / s.out[1]];
    const Window &wh = wins[1][row % s.out[1]];
    const float *source = x + block * inPlane * kChannelBlock;
    float *target = y + (block * outPlane + row * s.out[2]) * kChannelBlock;
    for (int64_t ow = 0; ow < s.out[2]; ++ow) {
      const Window &ww = wins[2][ow];
      Float16 acc = isMax && global ? loadFloat16(source) : identity;
      for (int64_t td = wd.first; td < wd.last; ++td) {
        const int64_t id = wd.start + td * s.dilations[0];
        for (int64_t th = wh.first; th < wh.last; ++th) {
          const int64_t ih = wh.start + th * s.dilations[1];
          const float *inputRow =
              source + (id * s.in[1] + ih) * s.in[2] * kChannelBlock;
          for (int64_t tw = ww.first; tw < ww.last; ++tw) {
            const int64_t iw = ww.start + tw * s.dilations[2];
            const Float16 v = loadFloat16(inputRow + iw * kChannelBlock);
            acc = isMax ? (acc < v ? v : acc) : acc + v;
          }
        }
      }
      if constexpr (!isMax) {
        const int64_t count =
            s.countIncludePad ? wd.padded * wh.padded * ww.padded
                              : (wd.last - wd.first) * (wh.last - wh.first) *
                                    (ww.last - ww.first);
        // A window wholly outside the (padded) input averages nothing.
        acc = count > 0 ? acc / static_cast<float>(count) : Float16{};
      }
      storeFloat16(target + ow * kChannelBlock, acc);
    }
  }
}

// Compiled for AVX-512 and AVX2 too (called from the parallel region, whose
// outlined body would not inherit the clones' targets).
WEFT_RT_VECTOR_CLONES
static void maxBlockedRows(const PoolShape &s, const std::vector<Window> *wins,
                           bool global, const float *x, float *y, int64_t begin,
                           int64_t end) {
  poolBlockedRows<true>(s, wins, global, x, y, begin, end);
}

WEFT_RT_VECTOR_CLONES
static void averageBlockedRows(const PoolShape &s,
                               const std::vector<Window> *wins, bool global,
                               const float *x, float *y, int64_t begin,
                               int64_t end) {
  poolBlockedRows<false>(s, wins, global, x, y, begin, end);
}

/// The channel-blocked pool (layout 1): output rows of every channel block
/// dealt out to the threads in contiguous runs.
static weft_rt_status poolChannelBlocked(weft_rt_context *ctx,
                                         const PoolShape &s, const float *x,
                                         float *y) {
  const int64_t outPlane = s.out[0] * s.out[1] * s.out[2];
  const bool global = isGlobalPool(s);
  const std::vector<Window> wins[3] = {windows(s, 0), windows(s, 1),
                                       windows(s, 2)};
  const int64_t rows = s.planes / kChannelBlock * s.out[0] * s.out[1];
  const int64_t taps = s.kernel[0] * s.kernel[1] * s.kernel[2];
  const int nt =
      threadsFor(ctx, s.planes * outPlane * std::min<int64_t>(taps, 64));
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    const int64_t size = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t begin = rows * t / size, end = rows * (t + 1) / size;
    if (s.isMax)
      maxBlockedRows(s, wins, global, x, y, begin, end);
    else
      averageBlockedRows(s, wins, global, x, y, begin, end);
  }
  return WEFT_RT_OK;
}

weft_rt_status weft_rt_cpu_pool(weft_rt_context *ctx, const int64_t *params,
                                const void *input, void *out) {
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  PoolShape s;
  WEFT_RT_TRY(parsePool(ctx, params, kFloatDtypes, s));
  if (s.planes * s.out[0] * s.out[1] * s.out[2] == 0)
    return WEFT_RT_OK;
  WEFT_RT_TRY(requireBuffer(ctx, kPool, out, "out"));
  if (s.in[0] * s.in[1] * s.in[2] > 0)
    WEFT_RT_TRY(requireBuffer(ctx, kPool, input, "input"));
  if (s.channelBlocked)
    return poolChannelBlocked(ctx, s, static_cast<const float *>(input),
                              static_cast<float *>(out));
  return visitDtype(s.dtype, [&](auto zero) -> weft_rt_status {
    using T = decltype(zero);
    const T *x = static_cast<const T *>(input);
    T *y = static_cast<T *>(out);
    if (s.isMax)
      return pool<T, T, true>(ctx, s, x, y);
    if constexpr (std::is_floating_point_v<T>)
      return pool<T, T, false>(ctx, s, x, y);
    return WEFT_RT_INTERNAL;
  });
}
