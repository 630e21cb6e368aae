//===- SimpleParams.cpp - Plans of the row-wise and movement kernels ------===//
//
// The checks of the CPU kernels (runtime/cpu/{Softmax,Normalization,Reduce,
// DataMovement,Gather}.cpp), in the same order and words, on the host, plus
// the alignment the device's typed loads need; then the index arithmetic
// that the device code only has to follow.
//
//===----------------------------------------------------------------------===//

#include "cuda/kernels/SimpleParams.h"
#include "cpu/ElementCopy.h"
#include "cpu/KernelSupport.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

using namespace weft::rt::cpu;
using namespace weft::rt::cuda;

static_assert(kMaxDims == kMaxRank, "the CUDA kernels take the CPU's ranks");

/// Fails unless a device buffer suits loads of `bytes`-byte elements: a
/// misaligned typed access would kill the whole stream, not just this op.
static weft_rt_status requireAligned(weft_rt_context *ctx, const char *kernel,
                                     const void *buffer, int64_t bytes,
                                     const char *name) {
  if (!buffer || bytes <= 1 || reinterpret_cast<uintptr_t>(buffer) % bytes == 0)
    return WEFT_RT_OK;
  return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                      "%s: %s (%p) is not aligned to its %lld-byte elements",
                      kernel, name, buffer, static_cast<long long>(bytes));
}

/// Row-major strides of `dims`, in elements.
static void rowMajorStrides(const int64_t *dims, int64_t rank,
                            int64_t *strides) {
  int64_t stride = 1;
  for (int64_t d = rank - 1; d >= 0; --d)
    strides[d] = stride, stride *= dims[d];
}

//===----------------------------------------------------------------------===//
// Softmax and normalization
//===----------------------------------------------------------------------===//

weft_rt_status weft::rt::cuda::planSoftmax(weft_rt_context *ctx,
                                           const int64_t *params,
                                           const void *input, const void *out,
                                           SoftmaxPlan *plan) {
  static const char *const kernel = "softmax";
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  WEFT_RT_REQUIRE(ctx, params, "softmax: parameter block is NULL");
  ParamReader r(params);
  SoftmaxPlan s;
  s.dtype = r.next();
  WEFT_RT_TRY(checkDtype(ctx, kernel, s.dtype, kFloatDtypes));
  s.outer = r.next();
  s.axis = r.next();
  s.inner = r.next();
  int64_t log = r.next();
  WEFT_RT_REQUIRE(ctx, log == 0 || log == 1,
                  "softmax: log flag %lld is not 0 or 1", (long long)log);
  s.log = log == 1;
  const int64_t factors[] = {s.outer, s.axis, s.inner};
  WEFT_RT_REQUIRE(ctx, checkedProduct(factors, 3, s.count),
                  "softmax: outer=%lld, axis=%lld, inner=%lld are negative "
                  "or overflow",
                  (long long)s.outer, (long long)s.axis, (long long)s.inner);
  *plan = s;
  if (s.count == 0)
    return WEFT_RT_OK;
  WEFT_RT_TRY(requireBuffer(ctx, kernel, input, "input"));
  WEFT_RT_TRY(requireBuffer(ctx, kernel, out, "out"));
  int64_t bytes = weft_rt_dtype_size(s.dtype);
  WEFT_RT_TRY(requireAligned(ctx, kernel, input, bytes, "input"));
  return requireAligned(ctx, kernel, out, bytes, "out");
}

weft_rt_status weft::rt::cuda::planNormalize(weft_rt_context *ctx,
                                             const int64_t *params,
                                             const void *x, const void *scale,
                                             const void *bias, const void *out,
                                             NormalizePlan *plan) {
  static const char *const kernel = "normalize";
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  WEFT_RT_REQUIRE(ctx, params, "normalize: parameter block is NULL");
  ParamReader r(params);
  NormalizePlan s;
  s.dtype = r.next();
  WEFT_RT_TRY(checkDtype(ctx, kernel, s.dtype, kFloatDtypes));
  int64_t kind = r.next();
  s.outer = r.next();
  s.size = r.next();
  s.channels = r.next();
  s.epsilon = r.nextDouble();
  WEFT_RT_REQUIRE(ctx, kind == 0 || kind == 1,
                  "normalize: kind %lld is neither 0 (layer) nor 1 "
                  "(instance)",
                  (long long)kind);
  s.instance = kind == 1;
  WEFT_RT_REQUIRE(ctx, checkedMul(s.outer, s.size, s.count),
                  "normalize: outer=%lld and size=%lld are negative or "
                  "overflow",
                  (long long)s.outer, (long long)s.size);
  WEFT_RT_REQUIRE(ctx, s.epsilon >= 0.0,
                  "normalize: epsilon %g is negative or NaN", s.epsilon);
  if (s.instance) {
    WEFT_RT_REQUIRE(ctx, s.channels >= 1 && s.outer % s.channels == 0,
                    "normalize: %lld instance rows are not a multiple of "
                    "%lld channels",
                    (long long)s.outer, (long long)s.channels);
  }
  *plan = s;
  if (s.count == 0)
    return WEFT_RT_OK;
  WEFT_RT_TRY(requireBuffer(ctx, kernel, x, "x"));
  WEFT_RT_TRY(requireBuffer(ctx, kernel, scale, "scale"));
  WEFT_RT_TRY(requireBuffer(ctx, kernel, out, "out"));
  int64_t bytes = weft_rt_dtype_size(s.dtype);
  const void *buffers[] = {x, scale, bias, out};
  const char *names[] = {"x", "scale", "bias", "out"};
  for (int i = 0; i < 4; ++i)
    WEFT_RT_TRY(requireAligned(ctx, kernel, buffers[i], bytes, names[i]));
  return WEFT_RT_OK;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

namespace {
enum ReduceKind : int64_t { kMean = 0, kMax = 2, kMin = 3, kProd = 4 };
enum { kLogSumExp = 7, kLogSum = 9 };
const char *const kReduceNames[] = {
    "mean", "sum", "max",         "min",        "prod",
    "l1",   "l2",  "log_sum_exp", "sum_square", "log_sum"};
} // namespace

/// A double converted to an integer type without undefined behaviour:
/// saturated, NaN to 0 (as the CPU kernel's toInteger).
template <typename T> static T toInteger(double value) {
  if (value != value)
    return T(0);
  if (value <= static_cast<double>(std::numeric_limits<T>::lowest()))
    return std::numeric_limits<T>::lowest();
  if (value >= static_cast<double>(std::numeric_limits<T>::max()))
    return std::numeric_limits<T>::max();
  return static_cast<T>(value);
}

/// The value of reducing nothing, per ONNX (opset 18): the CPU kernel's
/// reduceEmpty, as the bytes of one T.
template <typename T>
static weft_rt_status emptyValue(weft_rt_context *ctx, int64_t kind,
                                 unsigned char *bytes) {
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
  std::memcpy(bytes, &result, sizeof(T));
  return WEFT_RT_OK;
}

weft_rt_status weft::rt::cuda::planReduce(weft_rt_context *ctx,
                                          const int64_t *params,
                                          const void *input, const void *out,
                                          ReducePlan *plan) {
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
  ReducePlan p;
  p.dtype = dtype;
  p.kind = kind;
  int64_t inCount;
  WEFT_RT_REQUIRE(ctx, checkedProduct(dims, rank, inCount),
                  "reduce: dimensions are negative or overflow");
  p.outCount = 1;
  p.reducedCount = 1;
  for (int64_t d = 0; d < rank; ++d) {
    WEFT_RT_REQUIRE(ctx, mask[d] == 0 || mask[d] == 1,
                    "reduce: mask entry %lld is %lld, not 0 or 1", (long long)d,
                    (long long)mask[d]);
    if (mask[d])
      p.reducedCount *= dims[d];
    else
      p.outCount *= dims[d];
  }
  if (p.outCount == 0) {
    *plan = p;
    return WEFT_RT_OK;
  }
  WEFT_RT_TRY(requireBuffer(ctx, "reduce", out, "out"));
  const int64_t bytes = weft_rt_dtype_size(dtype);
  WEFT_RT_TRY(requireAligned(ctx, "reduce", out, bytes, "out"));
  if (p.reducedCount == 0) {
    p.fill = true;
    WEFT_RT_TRY(visitDtype(dtype, [&](auto zero) -> weft_rt_status {
      return emptyValue<decltype(zero)>(ctx, kind, p.fillBytes);
    }));
    *plan = p;
    return WEFT_RT_OK;
  }
  WEFT_RT_TRY(requireBuffer(ctx, "reduce", input, "input"));
  WEFT_RT_TRY(requireAligned(ctx, "reduce", input, bytes, "input"));
  // Row-major strides, then the dimensions that matter, merged (as the CPU
  // kernel's ReduceLayout).
  int64_t strides[kMaxRank];
  rowMajorStrides(dims, rank, strides);
  int64_t mergedRank = 0, sizes[kMaxRank], mergedStrides[kMaxRank];
  bool reduced[kMaxRank];
  for (int64_t d = 0; d < rank; ++d) {
    if (dims[d] == 1)
      continue;
    bool isReduced = mask[d] == 1;
    if (mergedRank > 0 && reduced[mergedRank - 1] == isReduced) {
      sizes[mergedRank - 1] *= dims[d];
      mergedStrides[mergedRank - 1] = strides[d];
      continue;
    }
    sizes[mergedRank] = dims[d];
    mergedStrides[mergedRank] = strides[d];
    reduced[mergedRank++] = isReduced;
  }
  if (mergedRank == 0) {
    // One element: reduce over a size-1 dimension.
    mergedRank = 1, sizes[0] = 1, mergedStrides[0] = 1, reduced[0] = true;
  }
  for (int64_t d = 0; d < mergedRank; ++d) {
    if (reduced[d]) {
      p.reducedSizes[p.reducedRank] = sizes[d];
      p.reducedStrides[p.reducedRank++] = mergedStrides[d];
    } else {
      p.keptSizes[p.keptRank] = sizes[d];
      p.keptStrides[p.keptRank++] = mergedStrides[d];
    }
  }
  p.tailKept = !reduced[mergedRank - 1];
  p.tail = sizes[mergedRank - 1];
  *plan = p;
  return WEFT_RT_OK;
}

weft_rt_status weft::rt::cuda::planArgReduce(weft_rt_context *ctx,
                                             const int64_t *params,
                                             const void *input, const void *out,
                                             ArgReducePlan *plan) {
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  WEFT_RT_REQUIRE(ctx, params, "arg_reduce: parameter block is NULL");
  ParamReader r(params);
  ArgReducePlan p;
  p.dtype = r.next(), p.kind = r.next();
  p.outer = r.next(), p.axis = r.next(), p.inner = r.next();
  int64_t selectLast = r.next();
  WEFT_RT_TRY(
      checkDtype(ctx, "arg_reduce", p.dtype, kNumericDtypes | kByteDtypes));
  WEFT_RT_REQUIRE(ctx, p.kind == 0 || p.kind == 1,
                  "arg_reduce: kind %lld is neither 0 (argmax) nor 1 "
                  "(argmin)",
                  (long long)p.kind);
  WEFT_RT_REQUIRE(ctx, selectLast == 0 || selectLast == 1,
                  "arg_reduce: select_last_index is %lld, not 0 or 1",
                  (long long)selectLast);
  p.selectLast = selectLast == 1;
  const int64_t factors[] = {p.outer, p.axis, p.inner};
  int64_t count;
  WEFT_RT_REQUIRE(ctx,
                  checkedProduct(factors, 3, count) &&
                      checkedMul(p.outer, p.inner, p.count),
                  "arg_reduce: outer=%lld, axis=%lld, inner=%lld are "
                  "negative or overflow",
                  (long long)p.outer, (long long)p.axis, (long long)p.inner);
  *plan = p;
  if (p.count == 0)
    return WEFT_RT_OK;
  WEFT_RT_REQUIRE(ctx, p.axis > 0,
                  "arg_reduce: the reduced axis is empty, so there is no "
                  "index to return");
  WEFT_RT_TRY(requireBuffer(ctx, "arg_reduce", input, "input"));
  WEFT_RT_TRY(requireBuffer(ctx, "arg_reduce", out, "out"));
  WEFT_RT_TRY(requireAligned(ctx, "arg_reduce", input,
                             weft_rt_dtype_size(p.dtype), "input"));
  return requireAligned(ctx, "arg_reduce", out, 8, "out");
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

/// Checks the buffers of a movement kernel that reads `input` and writes
/// `out`, both of `bytes`-byte elements.
static weft_rt_status requireMovementBuffers(weft_rt_context *ctx,
                                             const char *kernel,
                                             const void *input, const void *out,
                                             int64_t bytes) {
  WEFT_RT_TRY(requireBuffer(ctx, kernel, input, "input"));
  WEFT_RT_TRY(requireBuffer(ctx, kernel, out, "out"));
  WEFT_RT_TRY(requireAligned(ctx, kernel, input, bytes, "input"));
  return requireAligned(ctx, kernel, out, bytes, "out");
}

weft_rt_status weft::rt::cuda::planTranspose(weft_rt_context *ctx,
                                             const int64_t *params,
                                             const void *input, const void *out,
                                             TransposePlan *plan) {
  static const char *const kernel = "transpose";
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  WEFT_RT_REQUIRE(ctx, params, "transpose: parameter block is NULL");
  ParamReader r(params);
  TransposePlan p;
  int64_t rank;
  p.elementBytes = r.next(), rank = r.next();
  WEFT_RT_TRY(checkElementSize(ctx, kernel, p.elementBytes));
  const int64_t *dims = nullptr;
  WEFT_RT_TRY(readDims(ctx, kernel, r, rank, dims, &p.count, "input dims"));
  const int64_t *perm = r.array(rank);
  bool seen[kMaxRank] = {};
  for (int64_t i = 0; i < rank; ++i) {
    WEFT_RT_REQUIRE(ctx, perm[i] >= 0 && perm[i] < rank && !seen[perm[i]],
                    "transpose: perm[%lld] = %lld does not make a "
                    "permutation of %lld dimensions",
                    (long long)i, (long long)perm[i], (long long)rank);
    seen[perm[i]] = true;
  }
  *plan = p;
  if (p.count == 0)
    return WEFT_RT_OK;
  WEFT_RT_TRY(requireMovementBuffers(ctx, kernel, input, out, p.elementBytes));
  // Output dimensions without size-1 ones, merged where they stay
  // neighbours in the input (the CPU kernel's simplification, which also
  // sees through moved size-1 dimensions here).
  int64_t strides[kMaxRank];
  rowMajorStrides(dims, rank, strides);
  for (int64_t i = 0; i < rank; ++i) {
    int64_t d = perm[i];
    if (dims[d] == 1)
      continue;
    if (p.rank > 0 && p.inStrides[p.rank - 1] == dims[d] * strides[d]) {
      p.sizes[p.rank - 1] *= dims[d];
      p.inStrides[p.rank - 1] = strides[d];
    } else {
      p.sizes[p.rank] = dims[d];
      p.inStrides[p.rank++] = strides[d];
    }
  }
  int64_t stride = 1;
  for (int64_t i = p.rank - 1; i >= 0; --i)
    p.outStrides[i] = stride, stride *= p.sizes[i];
  if (p.rank <= 1) {
    p.path = TransposePlan::kCopy;
  } else if (p.inStrides[p.rank - 1] == 1) {
    p.path = TransposePlan::kStrided;
    p.layout.rank = p.rank;
    for (int32_t i = 0; i < p.rank; ++i)
      p.layout.sizes[i] = p.sizes[i], p.layout.strides[i] = p.inStrides[i];
  } else {
    p.path = TransposePlan::kTiled;
    p.tiledDim = 0;
    while (p.inStrides[p.tiledDim] != 1)
      ++p.tiledDim;
  }
  *plan = p;
  return WEFT_RT_OK;
}

weft_rt_status weft::rt::cuda::planSlice(weft_rt_context *ctx,
                                         const int64_t *params,
                                         const void *input, const void *out,
                                         SlicePlan *plan) {
  static const char *const kernel = "slice";
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  WEFT_RT_REQUIRE(ctx, params, "slice: parameter block is NULL");
  ParamReader r(params);
  SlicePlan p;
  int64_t rank;
  p.elementBytes = r.next(), rank = r.next();
  WEFT_RT_TRY(checkElementSize(ctx, kernel, p.elementBytes));
  const int64_t *inDims = nullptr, *outDims = nullptr;
  WEFT_RT_TRY(readDims(ctx, kernel, r, rank, inDims, nullptr, "input dims"));
  WEFT_RT_TRY(readDims(ctx, kernel, r, rank, outDims, &p.count, "output dims"));
  const int64_t *starts = r.array(rank), *steps = r.array(rank);
  for (int64_t d = 0; d < rank; ++d) {
    WEFT_RT_REQUIRE(ctx, steps[d] != 0, "slice: step of dimension %lld is 0",
                    (long long)d);
    if (outDims[d] == 0)
      continue;
    int64_t span, last;
    bool inRange = starts[d] >= 0 && starts[d] < inDims[d] &&
                   !__builtin_mul_overflow(outDims[d] - 1, steps[d], &span) &&
                   !__builtin_add_overflow(starts[d], span, &last) &&
                   last >= 0 && last < inDims[d];
    WEFT_RT_REQUIRE(ctx, inRange,
                    "slice: dimension %lld reads %lld elements from %lld with "
                    "step %lld, outside its size %lld",
                    (long long)d, (long long)outDims[d], (long long)starts[d],
                    (long long)steps[d], (long long)inDims[d]);
  }
  *plan = p;
  if (p.count == 0)
    return WEFT_RT_OK;
  WEFT_RT_TRY(requireMovementBuffers(ctx, kernel, input, out, p.elementBytes));
  // Every read lies inside the input (checked above), so the offsets below
  // stay within int64.
  int64_t inStrides[kMaxRank];
  rowMajorStrides(inDims, rank, inStrides);
  p.layout.rank = static_cast<int32_t>(rank);
  for (int64_t d = 0; d < rank; ++d) {
    p.layout.base += starts[d] * inStrides[d];
    p.layout.sizes[d] = outDims[d];
    p.layout.strides[d] = steps[d] * inStrides[d];
  }
  *plan = p;
  return WEFT_RT_OK;
}

namespace {
enum PadMode : int64_t { kConstant = 0, kReflect, kEdge, kWrap };
const char *const kPadModes[] = {"constant", "reflect", "edge", "wrap"};
} // namespace

weft_rt_status weft::rt::cuda::planPad(weft_rt_context *ctx,
                                       const int64_t *params, const void *input,
                                       const void *value, const void *out,
                                       PadPlan *plan) {
  static const char *const kernel = "pad";
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  WEFT_RT_REQUIRE(ctx, params, "pad: parameter block is NULL");
  ParamReader r(params);
  PadPlan p;
  int64_t rank;
  p.elementBytes = r.next(), p.mode = r.next(), rank = r.next();
  WEFT_RT_TRY(checkElementSize(ctx, kernel, p.elementBytes));
  WEFT_RT_REQUIRE(ctx, p.mode >= kConstant && p.mode <= kWrap,
                  "pad: mode %lld is not 0 (constant), 1 (reflect), 2 (edge) "
                  "or 3 (wrap)",
                  (long long)p.mode);
  const int64_t *inDims = nullptr;
  int64_t inCount = 0;
  WEFT_RT_TRY(readDims(ctx, kernel, r, rank, inDims, &inCount, "input dims"));
  const int64_t *pads = r.array(2 * rank);
  p.rank = static_cast<int32_t>(rank);
  p.count = 1;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size;
    bool fits = !__builtin_add_overflow(inDims[d], pads[d], &size) &&
                !__builtin_add_overflow(size, pads[rank + d], &size) &&
                size >= 0;
    WEFT_RT_REQUIRE(ctx, fits,
                    "pad: dimension %lld of size %lld padded by %lld and %lld "
                    "has a negative or overflowing size",
                    (long long)d, (long long)inDims[d], (long long)pads[d],
                    (long long)pads[rank + d]);
    p.outDims[d] = size;
    p.inDims[d] = inDims[d];
    p.before[d] = pads[d];
    WEFT_RT_REQUIRE(ctx, checkedMul(p.count, size, p.count),
                    "pad: the output size overflows");
    WEFT_RT_REQUIRE(ctx, p.mode == kConstant || inDims[d] > 0 || size == 0,
                    "pad: %s mode cannot pad dimension %lld, which is empty",
                    kPadModes[p.mode], (long long)d);
  }
  rowMajorStrides(inDims, rank, p.inStrides);
  *plan = p;
  if (p.count == 0)
    return WEFT_RT_OK;
  WEFT_RT_TRY(requireBuffer(ctx, kernel, out, "out"));
  if (inCount > 0)
    WEFT_RT_TRY(requireBuffer(ctx, kernel, input, "input"));
  WEFT_RT_TRY(requireAligned(ctx, kernel, input, p.elementBytes, "input"));
  WEFT_RT_TRY(requireAligned(ctx, kernel, value, p.elementBytes, "value"));
  return requireAligned(ctx, kernel, out, p.elementBytes, "out");
}

weft_rt_status weft::rt::cuda::planTile(weft_rt_context *ctx,
                                        const int64_t *params,
                                        const void *input, const void *out,
                                        TilePlan *plan) {
  static const char *const kernel = "tile";
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  WEFT_RT_REQUIRE(ctx, params, "tile: parameter block is NULL");
  ParamReader r(params);
  TilePlan p;
  int64_t rank;
  p.elementBytes = r.next(), rank = r.next();
  WEFT_RT_TRY(checkElementSize(ctx, kernel, p.elementBytes));
  const int64_t *inDims = nullptr;
  WEFT_RT_TRY(readDims(ctx, kernel, r, rank, inDims, nullptr, "input dims"));
  const int64_t *repeats = r.array(rank);
  p.rank = static_cast<int32_t>(rank);
  p.count = 1;
  for (int64_t d = 0; d < rank; ++d) {
    WEFT_RT_REQUIRE(ctx,
                    checkedMul(inDims[d], repeats[d], p.outDims[d]) &&
                        checkedMul(p.count, p.outDims[d], p.count),
                    "tile: repeats[%lld] = %lld is negative or the output "
                    "size overflows",
                    (long long)d, (long long)repeats[d]);
    p.inDims[d] = inDims[d];
  }
  rowMajorStrides(inDims, rank, p.inStrides);
  *plan = p;
  if (p.count == 0)
    return WEFT_RT_OK;
  return requireMovementBuffers(ctx, kernel, input, out, p.elementBytes);
}

weft_rt_status weft::rt::cuda::planTrilu(weft_rt_context *ctx,
                                         const int64_t *params,
                                         const void *input, const void *out,
                                         TriluPlan *plan) {
  static const char *const kernel = "trilu";
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  WEFT_RT_REQUIRE(ctx, params, "trilu: parameter block is NULL");
  ParamReader r(params);
  TriluPlan p;
  p.elementBytes = r.next();
  WEFT_RT_TRY(checkElementSize(ctx, kernel, p.elementBytes));
  const int64_t *dims = nullptr;
  WEFT_RT_TRY(
      readDims(ctx, kernel, r, 3, dims, &p.count, "batch, rows and cols"));
  int64_t k = r.next(), upper = r.next();
  WEFT_RT_REQUIRE(ctx, upper == 0 || upper == 1,
                  "trilu: upper is %lld, not 0 or 1", (long long)upper);
  p.batch = dims[0], p.rows = dims[1], p.cols = dims[2];
  p.upper = upper == 1;
  // j - i spans [-(rows - 1), cols - 1]; clamping keeps i + k from
  // overflowing without changing which elements are kept.
  p.k = std::clamp<int64_t>(k, -p.rows, p.cols);
  *plan = p;
  if (p.count == 0)
    return WEFT_RT_OK;
  return requireMovementBuffers(ctx, kernel, input, out, p.elementBytes);
}

/// Fails unless `dtype` is i32 or i64 (the CPU kernels' words).
static weft_rt_status checkIndexDtype(weft_rt_context *ctx, const char *kernel,
                                      int64_t dtype) {
  if (dtype == WEFT_RT_I32 || dtype == WEFT_RT_I64)
    return WEFT_RT_OK;
  return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                      "%s: index dtype %s (code %lld) is not i32 or i64",
                      kernel,
                      weft_rt_dtype_name(static_cast<weft_rt_dtype>(dtype)),
                      static_cast<long long>(dtype));
}

weft_rt_status weft::rt::cuda::planGather(weft_rt_context *ctx,
                                          const int64_t *params,
                                          const void *input,
                                          const void *indices, const void *out,
                                          GatherPlan *plan) {
  static const char *const kernel = "gather";
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  WEFT_RT_REQUIRE(ctx, params, "gather: parameter block is NULL");
  ParamReader r(params);
  GatherPlan p;
  int64_t indexDtype;
  p.elementBytes = r.next(), indexDtype = r.next();
  p.outer = r.next(), p.axis = r.next(), p.inner = r.next();
  p.indexCount = r.next();
  WEFT_RT_TRY(checkElementSize(ctx, kernel, p.elementBytes));
  WEFT_RT_TRY(checkIndexDtype(ctx, kernel, indexDtype));
  p.wideIndices = indexDtype == WEFT_RT_I64;
  const int64_t inFactors[] = {p.outer, p.axis, p.inner};
  const int64_t outFactors[] = {p.outer, p.indexCount, p.inner, p.elementBytes};
  int64_t inCount, outBytes;
  WEFT_RT_REQUIRE(ctx,
                  checkedProduct(inFactors, 3, inCount) &&
                      checkedProduct(outFactors, 4, outBytes),
                  "gather: outer=%lld, axis=%lld, inner=%lld, count=%lld "
                  "are negative or overflow",
                  (long long)p.outer, (long long)p.axis, (long long)p.inner,
                  (long long)p.indexCount);
  if (p.indexCount > 0)
    WEFT_RT_TRY(requireBuffer(ctx, kernel, indices, "indices"));
  WEFT_RT_TRY(
      requireAligned(ctx, kernel, indices, p.wideIndices ? 8 : 4, "indices"));
  p.count = outBytes / p.elementBytes;
  *plan = p;
  if (p.count == 0)
    return WEFT_RT_OK;
  return requireMovementBuffers(ctx, kernel, input, out, p.elementBytes);
}

weft_rt_status
weft::rt::cuda::planGatherElements(weft_rt_context *ctx, const int64_t *params,
                                   const void *input, const void *indices,
                                   const void *out, GatherElementsPlan *plan) {
  static const char *const kernel = "gather_elements";
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  WEFT_RT_REQUIRE(ctx, params, "gather_elements: parameter block is NULL");
  ParamReader r(params);
  GatherElementsPlan p;
  int64_t indexDtype, rank;
  p.elementBytes = r.next(), indexDtype = r.next();
  rank = r.next(), p.axis = r.next();
  WEFT_RT_TRY(checkElementSize(ctx, kernel, p.elementBytes));
  WEFT_RT_TRY(checkIndexDtype(ctx, kernel, indexDtype));
  p.wideIndices = indexDtype == WEFT_RT_I64;
  const int64_t *inDims = nullptr, *indexDims = nullptr;
  WEFT_RT_TRY(readDims(ctx, kernel, r, rank, inDims, nullptr, "input dims"));
  WEFT_RT_TRY(
      readDims(ctx, kernel, r, rank, indexDims, &p.count, "index dims"));
  WEFT_RT_REQUIRE(ctx, p.axis >= 0 && p.axis < rank,
                  "gather_elements: axis %lld is not in [0, %lld)",
                  (long long)p.axis, (long long)rank);
  for (int64_t d = 0; d < rank; ++d)
    WEFT_RT_REQUIRE(ctx, d == p.axis || indexDims[d] <= inDims[d],
                    "gather_elements: indices have %lld entries along "
                    "dimension %lld, the input only %lld",
                    (long long)indexDims[d], (long long)d,
                    (long long)inDims[d]);
  p.rank = static_cast<int32_t>(rank);
  for (int64_t d = 0; d < rank; ++d)
    p.inDims[d] = inDims[d], p.indexDims[d] = indexDims[d];
  rowMajorStrides(inDims, rank, p.inStrides);
  *plan = p;
  if (p.count == 0)
    return WEFT_RT_OK;
  WEFT_RT_TRY(requireBuffer(ctx, kernel, indices, "indices"));
  WEFT_RT_TRY(
      requireAligned(ctx, kernel, indices, p.wideIndices ? 8 : 4, "indices"));
  return requireMovementBuffers(ctx, kernel, input, out, p.elementBytes);
}

weft_rt_status weft::rt::cuda::planCopy2d(weft_rt_context *ctx,
                                          const int64_t *params,
                                          const void *src, const void *dst,
                                          Copy2dPlan *plan) {
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  WEFT_RT_REQUIRE(ctx, params, "copy2d: parameter block is NULL");
  ParamReader r(params);
  Copy2dPlan p;
  p.rows = r.next(), p.rowBytes = r.next();
  p.srcOffset = r.next(), p.srcStride = r.next();
  p.dstOffset = r.next(), p.dstStride = r.next();
  WEFT_RT_REQUIRE(ctx,
                  p.rows >= 0 && p.rowBytes >= 0 && p.srcOffset >= 0 &&
                      p.srcStride >= 0 && p.dstOffset >= 0 && p.dstStride >= 0,
                  "copy2d: negative rows, row bytes, offsets or strides");
  *plan = p;
  if (p.rows == 0 || p.rowBytes == 0)
    return WEFT_RT_OK;
  int64_t srcEnd, dstEnd;
  WEFT_RT_REQUIRE(
      ctx,
      checkedMul(p.rows - 1, p.srcStride, srcEnd) &&
          !__builtin_add_overflow(srcEnd, p.srcOffset + p.rowBytes, &srcEnd) &&
          checkedMul(p.rows - 1, p.dstStride, dstEnd) &&
          !__builtin_add_overflow(dstEnd, p.dstOffset + p.rowBytes, &dstEnd),
      "copy2d: offsets overflow");
  WEFT_RT_REQUIRE(
      ctx,
      p.rows == 1 || (p.srcStride >= p.rowBytes && p.dstStride >= p.rowBytes),
      "copy2d: strides %lld and %lld are shorter than the rows "
      "(%lld bytes)",
      (long long)p.srcStride, (long long)p.dstStride, (long long)p.rowBytes);
  WEFT_RT_TRY(requireBuffer(ctx, "copy2d", src, "src"));
  WEFT_RT_TRY(requireBuffer(ctx, "copy2d", dst, "dst"));
  p.count = p.rows * p.rowBytes;
  *plan = p;
  return WEFT_RT_OK;
}
