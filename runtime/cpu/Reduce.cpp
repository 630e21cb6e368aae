//===- Reduce.cpp - ONNX Reduce* and ArgMax/ArgMin ------------------------===//
//
// weft_rt_cpu_reduce (ten reductions over any set of dimensions) and
// weft_rt_cpu_arg_reduce (index of the extreme along one axis).
//
//===----------------------------------------------------------------------===//

#include "KernelSupport.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace weft::rt::cpu;

namespace {
/// The reductions, numbered as weft.reduce's kinds.
enum ReduceKind : int64_t {
  kMean = 0,
  kSum,
  kMax,
  kMin,
  kProd,
  kL1,
  kL2,
  kLogSumExp,
  kSumSquare,
  kLogSum,
};

const char *const kReduceNames[] = {
    "mean", "sum", "max",         "min",        "prod",
    "l1",   "l2",  "log_sum_exp", "sum_square", "log_sum"};

/// The input after dropping size-1 dimensions and merging neighbours that
/// are both reduced or both kept. Strides are in elements.
struct ReduceLayout {
  int64_t rank = 0;
  int64_t sizes[kMaxRank], strides[kMaxRank];
  bool reduced[kMaxRank];
  int64_t inCount = 1, outCount = 1, reducedCount = 1;
};

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

/// A double converted to an integer type without undefined behaviour:
/// saturated, NaN to 0.
template <typename T> static T toInteger(double value) {
  if (value != value)
    return T(0);
  if (value <= static_cast<double>(std::numeric_limits<T>::lowest()))
    return std::numeric_limits<T>::lowest();
  if (value >= static_cast<double>(std::numeric_limits<T>::max()))
    return std::numeric_limits<T>::max();
  return static_cast<T>(value);
}

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
        for (int64_t i = 0; i < width; ++i)
          acc[i] = Op::step(acc[i], line[i], shift ? shift[i] : Acc(0));
      }
    }
    return;
  }
  // The tail is reduced: each output is a sum of contiguous runs.
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
  for (int64_t o = 0; o < l.outCount; ++o) {
    Acc acc = Op::init();
    Acc shift = shifts ? shifts[o] : Acc(0);
    const T *base = x + keptOffset(o);
    for (ReducedWalk walk(l, last); !walk.done; walk.next()) {
      const T *line = base + walk.offset;
      for (int64_t i = 0; i < tail; ++i)
        acc = Op::step(acc, line[i], shift);
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

/// The value of reducing nothing, per ONNX (opset 18 defines it): the
/// identity of the operation; max/min the lowest/highest value.
template <typename T>
static weft_rt_status reduceEmpty(weft_rt_context *ctx, int64_t kind, T *y,
                                  int64_t count) {
  double value = 0.0;
  switch (kind) {
  case kProd:
    value = 1.0;
    break;
  case kMax:
    value = -std::numeric_limits<double>::infinity();
    break;
  case kMin:
    value = std::numeric_limits<double>::infinity();
    break;
  case kMean:
    value = std::numeric_limits<double>::quiet_NaN();
    break;
  case kLogSum:
  case kLogSumExp:
    value = -std::numeric_limits<double>::infinity();
    break;
  default:
    break;
  }
  T result;
  if constexpr (std::is_integral_v<T>) {
    if (value != value ||
        ((kind == kLogSum || kind == kLogSumExp) && std::isinf(value)))
      return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                          "reduce: %s over an empty axis has no integer value",
                          kReduceNames[kind]);
    result = toInteger<T>(value);
  } else {
    result = static_cast<T>(value);
  }
  std::fill(y, y + count, result);
  return WEFT_RT_OK;
}

weft_rt_status weft_rt_cpu_reduce(weft_rt_context *ctx, const int64_t *params,
                                  const void *input, void *out) {
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  WEFT_RT_REQUIRE(ctx, params, "reduce: parameter block is NULL");
  ParamReader r(params);
  int64_t dtype = r.next(), kind = r.next(), rank = r.next();
  WEFT_RT_REQUIRE(ctx, kind >= kMean && kind <= kLogSum,
                  "reduce: unknown kind %lld", (long long)kind);
  WEFT_RT_TRY(checkDtype(ctx, "reduce", dtype,
                         kind == kMax || kind == kMin
                             ? kNumericDtypes | kByteDtypes
                             : kNumericDtypes));
  WEFT_RT_REQUIRE(ctx, rank >= 0 && rank <= kMaxRank,
                  "reduce: rank %lld is not between 0 and %lld",
                  (long long)rank, (long long)kMaxRank);
  const int64_t *dims = r.array(rank);
  const int64_t *mask = r.array(rank);
  ReduceLayout l;
  WEFT_RT_REQUIRE(ctx, checkedProduct(dims, rank, l.inCount),
                  "reduce: dimensions are negative or overflow");
  for (int64_t d = 0; d < rank; ++d) {
    WEFT_RT_REQUIRE(ctx, mask[d] == 0 || mask[d] == 1,
                    "reduce: mask entry %lld is %lld, not 0 or 1", (long long)d,
                    (long long)mask[d]);
    if (mask[d])
      l.reducedCount *= dims[d];
    else
      l.outCount *= dims[d];
  }
  if (l.outCount == 0)
    return WEFT_RT_OK;
  WEFT_RT_TRY(requireBuffer(ctx, "reduce", out, "out"));
  return visitDtype(dtype, [&](auto zero) -> weft_rt_status {
    using T = decltype(zero);
    T *y = static_cast<T *>(out);
    if (l.reducedCount == 0)
      return reduceEmpty(ctx, kind, y, l.outCount);
    WEFT_RT_TRY(requireBuffer(ctx, "reduce", input, "input"));
    // Row-major strides, then the dimensions that matter, merged.
    int64_t stride = 1, strides[kMaxRank];
    for (int64_t d = rank - 1; d >= 0; --d)
      strides[d] = stride, stride *= dims[d];
    for (int64_t d = 0; d < rank; ++d) {
      if (dims[d] == 1)
        continue;
      bool reduced = mask[d] == 1;
      if (l.rank > 0 && l.reduced[l.rank - 1] == reduced) {
        l.sizes[l.rank - 1] *= dims[d];
        l.strides[l.rank - 1] = strides[d];
        continue;
      }
      l.sizes[l.rank] = dims[d];
      l.strides[l.rank] = strides[d];
      l.reduced[l.rank++] = reduced;
    }
    if (l.rank == 0) {
      // One element: reduce over a size-1 dimension.
      l.rank = 1, l.sizes[0] = 1, l.strides[0] = 1, l.reduced[0] = true;
    }
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
  WEFT_RT_REQUIRE(ctx, params, "arg_reduce: parameter block is NULL");
  ParamReader r(params);
  int64_t dtype = r.next(), kind = r.next();
  int64_t outer = r.next(), axis = r.next(), inner = r.next();
  int64_t selectLast = r.next();
  WEFT_RT_TRY(
      checkDtype(ctx, "arg_reduce", dtype, kNumericDtypes | kByteDtypes));
  WEFT_RT_REQUIRE(ctx, kind == 0 || kind == 1,
                  "arg_reduce: kind %lld is neither 0 (argmax) nor 1 "
                  "(argmin)",
                  (long long)kind);
  WEFT_RT_REQUIRE(ctx, selectLast == 0 || selectLast == 1,
                  "arg_reduce: select_last_index is %lld, not 0 or 1",
                  (long long)selectLast);
  const int64_t factors[] = {outer, axis, inner};
  int64_t count, outCount;
  WEFT_RT_REQUIRE(ctx,
                  checkedProduct(factors, 3, count) &&
                      checkedMul(outer, inner, outCount),
                  "arg_reduce: outer=%lld, axis=%lld, inner=%lld are "
                  "negative or overflow",
                  (long long)outer, (long long)axis, (long long)inner);
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
      argReduce<T, true>(x, y, outer, axis, inner, selectLast == 1, nt);
    else
      argReduce<T, false>(x, y, outer, axis, inner, selectLast == 1, nt);
    return WEFT_RT_OK;
  });
}
