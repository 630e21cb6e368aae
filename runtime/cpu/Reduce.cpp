//===- Reduce.cpp - ONNX Reduce* and ArgMax/ArgMin ------------------------===//
//
// weft_rt_cpu_reduce (ten reductions over any set of dimensions) and
// weft_rt_cpu_arg_reduce (index of the extreme along one axis).
//
//===----------------------------------------------------------------------===//

#include "KernelParams.h"
#include "MathSupport.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

using namespace weft::rt::cpu;

namespace {
/// Walks the reduced dimensions [0, rank) other than `skip`, yielding the
/// element offset of each combination.
struct ReducedWalk {
  const ReduceLayout &layout;
  int64_t skip;
  int64_t index[kMaxRank] = {};
  int64_t offset = 0;
  bool done = false;

  ReducedWalk(const ReduceLayout &layout, int64_t skip)
      : layout(layout), skip(skip) {}
  void next() {
    for (int64_t d = layout.rank - 1; d >= 0; --d) {
      if (!layout.reduced[d] || d == skip)
        continue;
      offset += layout.strides[d];
      if (++index[d] < layout.sizes[d])
        return;
      offset -= index[d] * layout.strides[d];
      index[d] = 0;
    }
    done = true;
  }
};

/// How elements are combined: Acc is the accumulator type.
template <typename T, typename Acc, int64_t kind> struct ReduceOp {
  static Acc init() {
    if constexpr (kind == kProd)
      return Acc(1);
    else if constexpr (kind == kMax)
      return std::numeric_limits<Acc>::has_infinity
                 ? -std::numeric_limits<Acc>::infinity()
                 : std::numeric_limits<Acc>::lowest();
    else if constexpr (kind == kMin)
      return std::numeric_limits<Acc>::has_infinity
                 ? std::numeric_limits<Acc>::infinity()
                 : std::numeric_limits<Acc>::max();
    else
      return Acc(0);
  }
  /// Combines acc with element x; shift is the row's maximum for
  /// log_sum_exp.
  static Acc step(Acc acc, T x, Acc shift) {
    Acc v = static_cast<Acc>(x);
    if constexpr (kind == kMax)
      return v > acc || v != v ? v : acc;
    else if constexpr (kind == kMin)
      return v < acc || v != v ? v : acc;
    else if constexpr (kind == kProd)
      return acc * v;
    else if constexpr (kind == kL1 && std::is_signed_v<T>)
      return acc + (x < T(0) ? Acc(0) - v : v);
    else if constexpr (kind == kL2 || kind == kSumSquare)
      return acc + v * v;
    else if constexpr (kind == kLogSumExp)
      return acc + std::exp(v - shift);
    else
      return acc + v;
  }
};
} // namespace

/// Converts a finished accumulator to the output type.
template <typename T, typename Acc> static T finish(Acc value) {
  if constexpr (std::is_integral_v<T> && std::is_floating_point_v<Acc>)
    return toInteger<T>(value);
  else
    return static_cast<T>(value);
}

/// The result of a reduction from its accumulator, count and shift.
template <typename T, typename Acc, int64_t kind>
static T finishReduction(Acc acc, int64_t count, Acc shift) {
  if constexpr (kind == kMean) {
    if constexpr (std::is_integral_v<T>)
      // Two's complement wrap of the sum, then division toward zero.
      return static_cast<T>(static_cast<int64_t>(static_cast<T>(acc)) / count);
    else
      return static_cast<T>(acc / static_cast<Acc>(count));
  } else if constexpr (kind == kL2) {
    return finish<T>(std::sqrt(acc));
  } else if constexpr (kind == kLogSum) {
    return finish<T>(std::log(acc));
  } else if constexpr (kind == kLogSumExp) {
    return finish<T>(shift + std::log(acc));
  } else {
    return finish<T>(acc);
  }
}

/// Sums (or sums of squares), in double, of `runs` contiguous runs of n
/// floats, the k-th starting at x + k * stride: eight double lanes per run
/// and a tree over them. One call for all the runs lets consecutive runs
/// overlap: MobileNetV2's global average pool (1280 runs of 49) took 29 us
/// with the generic step's one serial double add per element and 22 us
/// with a vectorized call per run, most of it each run's lane sum at the
/// end.
template <bool squares>
WEFT_RT_VECTOR_CLONES static void sumRunsF32(const float *x, int64_t runs,
                                             int64_t stride, int64_t n,
                                             double *out) {
  typedef float Floats __attribute__((vector_size(32), aligned(4)));
  typedef double Doubles __attribute__((vector_size(64)));
  for (int64_t k = 0; k < runs; ++k) {
    const float *line = x + k * stride;
    Doubles lanes = {};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      Floats f;
      std::memcpy(&f, line + i, sizeof f);
      Doubles v = __builtin_convertvector(f, Doubles);
      lanes += squares ? v * v : v;
    }
    double acc = ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) +
                 ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
    for (; i < n; ++i) {
      double v = line[i];
      acc += squares ? v * v : v;
    }
    out[k] = acc;
  }
}

/// acc[i] += line[i] for i < width: a float row added to double
/// accumulators, compiled for AVX-512 and AVX2 too (the templated loop
/// below runs the baseline's two doubles a vector). MobileNetV2's global
/// average pool on a channels-last 7x7x1280 tensor, 49 rows of 1280: 9.9
/// -> 5.3 us on one thread.
WEFT_RT_VECTOR_CLONES
static void addRowF32(double *__restrict acc, const float *__restrict line,
                      int64_t width) {
  for (int64_t i = 0; i < width; ++i)
    acc[i] += static_cast<double>(line[i]);
}

/// Reduces with accumulators of type Acc; `shifts` (log_sum_exp) holds each
/// output's maximum.
template <typename T, typename Acc, int64_t kind>
static void reduceInto(const ReduceLayout &l, const T *x, Acc *result,
                       const Acc *shifts, int nt) {
  using Op = ReduceOp<T, Acc, kind>;
  const int64_t last = l.rank - 1;
  const bool tailKept = !l.reduced[last];
  const int64_t tail = l.sizes[last];
  // Kept dimensions other than a kept tail, outermost first.
  int64_t keptDims[kMaxRank], keptCount = 0;
  for (int64_t d = 0; d < l.rank; ++d)
    if (!l.reduced[d] && !(tailKept && d == last))
      keptDims[keptCount++] = d;
  auto keptOffset = [&](int64_t index) {
    int64_t offset = 0;
    for (int64_t i = keptCount - 1; i >= 0; --i) {
      int64_t d = keptDims[i];
      offset += (index % l.sizes[d]) * l.strides[d];
      index /= l.sizes[d];
    }
    return offset;
  };
  if (tailKept) {
    // Rows of `tail` outputs accumulated a block of columns at a time.
    constexpr int64_t kBlock = 512;
    const int64_t rows = l.outCount / tail;
    const int64_t blocks = (tail + kBlock - 1) / kBlock;
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
    for (int64_t unit = 0; unit < rows * blocks; ++unit) {
      int64_t row = unit / blocks, begin = (unit % blocks) * kBlock;
      int64_t width = std::min(kBlock, tail - begin);
      Acc *acc = result + row * tail + begin;
      const Acc *shift = shifts ? shifts + row * tail + begin : nullptr;
      for (int64_t i = 0; i < width; ++i)
        acc[i] = Op::init();
      const T *base = x + keptOffset(row) + begin;
      for (ReducedWalk walk(l, -1); !walk.done; walk.next()) {
        const T *line = base + walk.offset;
        if constexpr (std::is_same_v<T, float> &&
                      std::is_same_v<Acc, double> &&
                      (kind == kSum || kind == kMean)) {
          addRowF32(acc, line, width);
        } else {
          for (int64_t i = 0; i < width; ++i)
            acc[i] = Op::step(acc[i], line[i], shift ? shift[i] : Acc(0));
        }
      }
    }
    return;
  }
  // The tail is reduced: each output is a sum of contiguous runs.
  constexpr bool kSumsRuns =
      std::is_same_v<T, float> && std::is_same_v<Acc, double> &&
      (kind == kSum || kind == kMean || kind == kSumSquare || kind == kL2);
  constexpr bool kSquares = kind == kSumSquare || kind == kL2;
  if constexpr (kSumsRuns) {
    if (l.rank == 2 && keptCount == 1) {
      // One run per output, a fixed stride apart (a reduced tail after
      // mergeReduceDims, e.g. a global average pool): blocks of runs per
      // call.
      constexpr int64_t kBlock = 64;
      const int64_t blocks = (l.outCount + kBlock - 1) / kBlock;
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
      for (int64_t block = 0; block < blocks; ++block) {
        const int64_t begin = block * kBlock;
        sumRunsF32<kSquares>(x + begin * l.strides[0],
                             std::min(kBlock, l.outCount - begin),
                             l.strides[0], tail, result + begin);
      }
      return;
    }
  }
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
  for (int64_t o = 0; o < l.outCount; ++o) {
    Acc acc = Op::init();
    Acc shift = shifts ? shifts[o] : Acc(0);
    const T *base = x + keptOffset(o);
    for (ReducedWalk walk(l, last); !walk.done; walk.next()) {
      const T *line = base + walk.offset;
      if constexpr (kSumsRuns) {
        double sum;
        sumRunsF32<kSquares>(line, 1, 0, tail, &sum);
        acc += sum;
      } else {
        for (int64_t i = 0; i < tail; ++i)
          acc = Op::step(acc, line[i], shift);
      }
    }
    result[o] = acc;
  }
}

template <typename T, typename Acc, int64_t kind>
static weft_rt_status reduceAs(weft_rt_context *ctx, const ReduceLayout &l,
                               const T *x, T *y) {
  ScratchBuffer accumulators, shifts;
  WEFT_RT_TRY(accumulators.allocate(ctx, "reduce", l.outCount * sizeof(Acc),
                                    "the accumulators"));
  int nt = threadsFor(ctx, l.inCount);
  Acc *acc = accumulators.as<Acc>();
  const Acc *shift = nullptr;
  if constexpr (kind == kLogSumExp) {
    WEFT_RT_TRY(
        shifts.allocate(ctx, "reduce", l.outCount * sizeof(Acc), "the maxima"));
    reduceInto<T, Acc, kMax>(l, x, shifts.as<Acc>(), nullptr, nt);
    // Rows of infinities keep their value rather than become NaN.
    Acc *maxima = shifts.as<Acc>();
    for (int64_t o = 0; o < l.outCount; ++o)
      if (std::isinf(maxima[o]))
        maxima[o] = 0;
    shift = maxima;
  }
  reduceInto<T, Acc, kind>(l, x, acc, shift, nt);
  for (int64_t o = 0; o < l.outCount; ++o)
    y[o] = finishReduction<T, Acc, kind>(acc[o], l.reducedCount,
                                         shift ? shift[o] : Acc(0));
  return WEFT_RT_OK;
}

/// The accumulator types: double for floats and for integer reductions
/// with a logarithm or root, the type itself for max/min, and uint64 for
/// integer sums and products (wrapping as ONNX Runtime's do).
template <typename T, int64_t kind>
static weft_rt_status reduceKind(weft_rt_context *ctx, const ReduceLayout &l,
                                 const T *x, T *y) {
  if constexpr (kind == kMax || kind == kMin)
    return reduceAs<T, T, kind>(ctx, l, x, y);
  else if constexpr (std::is_floating_point_v<T> || kind == kL2 ||
                     kind == kLogSum || kind == kLogSumExp)
    return reduceAs<T, double, kind>(ctx, l, x, y);
  else
    return reduceAs<T, uint64_t, kind>(ctx, l, x, y);
}

/// Fills y with the value of reducing nothing (reduceEmptyValue).
template <typename T>
static weft_rt_status reduceEmpty(weft_rt_context *ctx, int64_t kind, T *y,
                                  int64_t count) {
  T result{};
  WEFT_RT_TRY(reduceEmptyValue(ctx, kind, result));
  std::fill(y, y + count, result);
  return WEFT_RT_OK;
}

weft_rt_status weft_rt_cpu_reduce(weft_rt_context *ctx, const int64_t *params,
                                  const void *input, void *out) {
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  ReduceShape shape;
  ReduceLayout l;
  WEFT_RT_TRY(parseReduce(ctx, params, shape, l));
  const int64_t dtype = shape.dtype, kind = shape.kind;
  if (l.outCount == 0)
    return WEFT_RT_OK;
  WEFT_RT_TRY(requireBuffer(ctx, "reduce", out, "out"));
  return visitDtype(dtype, [&](auto zero) -> weft_rt_status {
    using T = decltype(zero);
    T *y = static_cast<T *>(out);
    if (l.reducedCount == 0)
      return reduceEmpty(ctx, kind, y, l.outCount);
    WEFT_RT_TRY(requireBuffer(ctx, "reduce", input, "input"));
    mergeReduceDims(shape, l);
    const T *x = static_cast<const T *>(input);
    switch (kind) {
    case kMean:
      return reduceKind<T, kMean>(ctx, l, x, y);
    case kSum:
      return reduceKind<T, kSum>(ctx, l, x, y);
    case kMax:
      return reduceKind<T, kMax>(ctx, l, x, y);
    case kMin:
      return reduceKind<T, kMin>(ctx, l, x, y);
    case kProd:
      return reduceKind<T, kProd>(ctx, l, x, y);
    case kL1:
      return reduceKind<T, kL1>(ctx, l, x, y);
    case kL2:
      return reduceKind<T, kL2>(ctx, l, x, y);
    case kLogSumExp:
      return reduceKind<T, kLogSumExp>(ctx, l, x, y);
    case kSumSquare:
      return reduceKind<T, kSumSquare>(ctx, l, x, y);
    default:
      return reduceKind<T, kLogSum>(ctx, l, x, y);
    }
  });
}

//===----------------------------------------------------------------------===//
// ArgMax / ArgMin
//===----------------------------------------------------------------------===//

/// Index of the extreme of each column of a [axis x inner] block. NaN
/// counts as the extreme (as numpy's argmax/argmin do); ties take the first
/// index unless selectLast.
template <typename T, bool isMax>
static void argReduce(const T *x, int64_t *y, int64_t outer, int64_t axis,
                      int64_t inner, bool selectLast, int nt) {
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
  for (int64_t unit = 0; unit < outer * inner; ++unit) {
    int64_t o = unit / inner, i = unit % inner;
    const T *column = x + o * axis * inner + i;
    T best = column[0];
    int64_t bestIndex = 0;
    bool bestNaN = best != best;
    for (int64_t a = 1; a < axis; ++a) {
      T v = column[a * inner];
      bool isNaN = v != v;
      bool better;
      if (bestNaN)
        better = isNaN && selectLast;
      else if (isNaN)
        better = true;
      else if (v == best)
        better = selectLast;
      else
        better = isMax ? v > best : v < best;
      if (better)
        best = v, bestIndex = a, bestNaN = isNaN;
    }
    y[unit] = bestIndex;
  }
}

weft_rt_status weft_rt_cpu_arg_reduce(weft_rt_context *ctx,
                                      const int64_t *params, const void *input,
                                      void *out) {
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  ArgReduceShape s;
  WEFT_RT_TRY(parseArgReduce(ctx, params, s));
  const int64_t dtype = s.dtype, kind = s.kind, outer = s.outer, axis = s.axis,
                inner = s.inner, count = s.count, outCount = s.outCount;
  if (outCount == 0)
    return WEFT_RT_OK;
  WEFT_RT_REQUIRE(ctx, axis > 0,
                  "arg_reduce: the reduced axis is empty, so there is no "
                  "index to return");
  WEFT_RT_TRY(requireBuffer(ctx, "arg_reduce", input, "input"));
  WEFT_RT_TRY(requireBuffer(ctx, "arg_reduce", out, "out"));
  int nt = threadsFor(ctx, count);
  return visitDtype(dtype, [&](auto zero) -> weft_rt_status {
    using T = decltype(zero);
    const T *x = static_cast<const T *>(input);
    int64_t *y = static_cast<int64_t *>(out);
    if (kind == 0)
      argReduce<T, true>(x, y, outer, axis, inner, s.selectLast, nt);
    else
      argReduce<T, false>(x, y, outer, axis, inner, s.selectLast, nt);
    return WEFT_RT_OK;
  });
}
