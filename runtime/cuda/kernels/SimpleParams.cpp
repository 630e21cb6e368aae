//===- SimpleParams.cpp - Plans of the row-wise and movement kernels ------===//
//
// The CPU kernels' parameter checks (runtime/cpu/KernelParams.h: the same
// code, so the same order and words) on the host, plus the alignment the
// device's typed loads need; then the index arithmetic that the device code
// only has to follow.
//
//===----------------------------------------------------------------------===//

#include "cuda/kernels/SimpleParams.h"
#include "cpu/ElementCopy.h"
#include "cpu/KernelParams.h"

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
  SoftmaxShape shape;
  WEFT_RT_TRY(parseSoftmax(ctx, params, shape));
  SoftmaxPlan s;
  s.dtype = shape.dtype;
  s.outer = shape.outer, s.axis = shape.axis, s.inner = shape.inner;
  s.count = shape.count;
  s.log = shape.log;
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
  NormalizeShape shape;
  WEFT_RT_TRY(parseNormalize(ctx, params, shape));
  NormalizePlan s;
  s.dtype = shape.dtype;
  s.outer = shape.outer, s.size = shape.size, s.channels = shape.channels;
  s.count = shape.count;
  s.epsilon = shape.epsilon;
  s.instance = shape.instance;
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

weft_rt_status weft::rt::cuda::planReduce(weft_rt_context *ctx,
                                          const int64_t *params,
                                          const void *input, const void *out,
                                          ReducePlan *plan) {
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  ReduceShape shape;
  ReduceLayout l;
  WEFT_RT_TRY(parseReduce(ctx, params, shape, l));
  const int64_t dtype = shape.dtype, kind = shape.kind;
  ReducePlan p;
  p.dtype = dtype;
  p.kind = kind;
  p.outCount = l.outCount;
  p.reducedCount = l.reducedCount;
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
      decltype(zero) value{};
      WEFT_RT_TRY(reduceEmptyValue(ctx, kind, value));
      std::memcpy(p.fillBytes, &value, sizeof(value));
      return WEFT_RT_OK;
    }));
    *plan = p;
    return WEFT_RT_OK;
  }
  WEFT_RT_TRY(requireBuffer(ctx, "reduce", input, "input"));
  WEFT_RT_TRY(requireAligned(ctx, "reduce", input, bytes, "input"));
  // The dimensions that matter, merged as the CPU kernel merges them.
  mergeReduceDims(shape, l);
  const int64_t mergedRank = l.rank;
  const int64_t *sizes = l.sizes, *mergedStrides = l.strides;
  const bool *reduced = l.reduced;
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
  ArgReduceShape shape;
  WEFT_RT_TRY(parseArgReduce(ctx, params, shape));
  ArgReducePlan p;
  p.dtype = shape.dtype, p.kind = shape.kind;
  p.outer = shape.outer, p.axis = shape.axis, p.inner = shape.inner;
  p.count = shape.outCount;
  p.selectLast = shape.selectLast;
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
  TransposeShape shape;
  WEFT_RT_TRY(parseTranspose(ctx, params, shape));
  TransposePlan p;
  p.elementBytes = shape.elementBytes, p.count = shape.count;
  const int64_t rank = shape.rank, *dims = shape.dims, *perm = shape.perm;
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
  SliceShape shape;
  WEFT_RT_TRY(parseSlice(ctx, params, shape));
  SlicePlan p;
  p.elementBytes = shape.elementBytes, p.count = shape.outCount;
  const int64_t rank = shape.rank, *inDims = shape.inDims;
  const int64_t *outDims = shape.outDims, *starts = shape.starts,
                *steps = shape.steps;
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

weft_rt_status weft::rt::cuda::planPad(weft_rt_context *ctx,
                                       const int64_t *params, const void *input,
                                       const void *value, const void *out,
                                       PadPlan *plan) {
  static const char *const kernel = "pad";
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  PadShape shape;
  WEFT_RT_TRY(parsePad(ctx, params, shape));
  PadPlan p;
  p.elementBytes = shape.elementBytes, p.mode = shape.mode;
  p.count = shape.outCount;
  const int64_t rank = shape.rank, *inDims = shape.inDims;
  const int64_t inCount = shape.inCount;
  p.rank = static_cast<int32_t>(rank);
  for (int64_t d = 0; d < rank; ++d) {
    p.outDims[d] = shape.outDims[d];
    p.inDims[d] = inDims[d];
    p.before[d] = shape.pads[d];
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
  TileShape shape;
  WEFT_RT_TRY(parseTile(ctx, params, shape));
  TilePlan p;
  p.elementBytes = shape.elementBytes, p.count = shape.outCount;
  const int64_t rank = shape.rank, *inDims = shape.inDims;
  p.rank = static_cast<int32_t>(rank);
  for (int64_t d = 0; d < rank; ++d)
    p.inDims[d] = inDims[d], p.outDims[d] = shape.outDims[d];
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
  TriluShape shape;
  WEFT_RT_TRY(parseTrilu(ctx, params, shape));
  TriluPlan p;
  p.elementBytes = shape.elementBytes, p.count = shape.count;
  p.batch = shape.dims[0], p.rows = shape.dims[1], p.cols = shape.dims[2];
  p.upper = shape.upper;
  // j - i spans [-(rows - 1), cols - 1]; clamping keeps i + k from
  // overflowing without changing which elements are kept.
  p.k = std::clamp<int64_t>(shape.k, -p.rows, p.cols);
  *plan = p;
  if (p.count == 0)
    return WEFT_RT_OK;
  return requireMovementBuffers(ctx, kernel, input, out, p.elementBytes);
}

weft_rt_status weft::rt::cuda::planGather(weft_rt_context *ctx,
                                          const int64_t *params,
                                          const void *input,
                                          const void *indices, const void *out,
                                          GatherPlan *plan) {
  static const char *const kernel = "gather";
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  GatherShape shape;
  WEFT_RT_TRY(parseGather(ctx, params, shape));
  GatherPlan p;
  p.elementBytes = shape.elementBytes;
  p.outer = shape.outer, p.axis = shape.axis, p.inner = shape.inner;
  p.indexCount = shape.count;
  p.wideIndices = shape.wideIndices;
  const int64_t outBytes = shape.outBytes;
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
  GatherElementsShape shape;
  WEFT_RT_TRY(parseGatherElements(ctx, params, shape));
  GatherElementsPlan p;
  p.elementBytes = shape.elementBytes, p.axis = shape.axis;
  p.count = shape.count;
  p.wideIndices = shape.wideIndices;
  const int64_t rank = shape.rank, *inDims = shape.inDims,
                *indexDims = shape.indexDims;
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
  Copy2dShape shape;
  WEFT_RT_TRY(parseCopy2d(ctx, params, shape));
  Copy2dPlan p;
  p.rows = shape.rows, p.rowBytes = shape.rowBytes;
  p.srcOffset = shape.srcOffset, p.srcStride = shape.srcStride;
  p.dstOffset = shape.dstOffset, p.dstStride = shape.dstStride;
  *plan = p;
  if (shape.empty())
    return WEFT_RT_OK;
  WEFT_RT_TRY(requireBuffer(ctx, "copy2d", src, "src"));
  WEFT_RT_TRY(requireBuffer(ctx, "copy2d", dst, "dst"));
  p.count = p.rows * p.rowBytes;
  *plan = p;
  return WEFT_RT_OK;
}
