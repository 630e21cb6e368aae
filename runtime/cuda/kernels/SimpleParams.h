//===- SimpleParams.h - Plans of the row and movement kernels --*- C++ -*-===//
//-*-===//
//
// Host-side checks of the CUDA row-wise and data-movement kernels' parameter
// blocks (the blocks of their CPU namesakes in weft_rt.h), turned into plans
// the device code launches from. Plain C++ without CUDA types, so that nvcc
// and the tests include it alike and a bad block fails without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_CUDA_KERNELS_SIMPLEPARAMS_H
#define WEFT_RUNTIME_CUDA_KERNELS_SIMPLEPARAMS_H

#include "weft_rt.h"

#include <cstdint>

namespace weft::rt::cuda {

/// The largest rank the kernels accept (the CPU kernels' kMaxRank).
constexpr int kMaxDims = 16;

/// Every plan says how many output elements there are: 0 means that the
/// kernel has nothing to do (and may not have been given buffers).

/// (Log)softmax of x viewed as outer x axis x inner.
struct SoftmaxPlan {
  int64_t dtype = 0, outer = 0, axis = 0, inner = 0, count = 0;
  bool log = false;
};
weft_rt_status planSoftmax(weft_rt_context *ctx, const int64_t *params,
                           const void *input, const void *out,
                           SoftmaxPlan *plan);

/// Layer or instance normalization of outer rows of `size` elements.
struct NormalizePlan {
  int64_t dtype = 0, outer = 0, size = 0, channels = 1, count = 0;
  double epsilon = 0;
  bool instance = false;
};
weft_rt_status planNormalize(weft_rt_context *ctx, const int64_t *params,
                             const void *x, const void *scale, const void *bias,
                             const void *out, NormalizePlan *plan);

/// A reduction over merged dimensions: output o starts at the offset of its
/// kept index (kept dims, row-major over the output) and adds the offsets of
/// every reduced index (reduced dims, row-major).
struct ReducePlan {
  int64_t dtype = 0, kind = 0, outCount = 0, reducedCount = 0;
  /// The last merged dimension is kept: neighbouring outputs are
  /// neighbouring input elements, so threads take one output each.
  bool tailKept = false;
  /// The size of that last merged dimension.
  int64_t tail = 1;
  int32_t keptRank = 0, reducedRank = 0;
  int64_t keptSizes[kMaxDims] = {}, keptStrides[kMaxDims] = {};
  int64_t reducedSizes[kMaxDims] = {}, reducedStrides[kMaxDims] = {};
  /// reducedCount == 0: every output is this value (its bytes, dtype-sized).
  bool fill = false;
  unsigned char fillBytes[8] = {};
};
weft_rt_status planReduce(weft_rt_context *ctx, const int64_t *params,
                          const void *input, const void *out, ReducePlan *plan);

/// ArgMax/ArgMin of x viewed as outer x axis x inner.
struct ArgReducePlan {
  int64_t dtype = 0, kind = 0, outer = 0, axis = 0, inner = 0, count = 0;
  bool selectLast = false;
};
weft_rt_status planArgReduce(weft_rt_context *ctx, const int64_t *params,
                             const void *input, const void *out,
                             ArgReducePlan *plan);

/// out[i] = in[base + sum_d index_d(i) * strides[d]] with i row-major over
/// sizes (strides may be negative).
struct StridedLayout {
  int32_t rank = 0;
  int64_t base = 0;
  int64_t sizes[kMaxDims] = {}, strides[kMaxDims] = {};
};

/// A transpose simplified as the CPU kernel does (size-1 dimensions
/// dropped, runs that stay adjacent merged).
struct TransposePlan {
  enum Path {
    /// The permutation moves nothing: one contiguous copy.
    kCopy,
    /// The input's innermost dimension stays innermost: `layout`.
    kStrided,
    /// Tiles of the plane of output dimensions `tiledDim` (the input's
    /// innermost) and rank - 1, through shared memory.
    kTiled,
  };
  int64_t elementBytes = 0, count = 0;
  Path path = kCopy;
  int32_t rank = 0, tiledDim = 0;
  int64_t sizes[kMaxDims] = {}, inStrides[kMaxDims] = {},
          outStrides[kMaxDims] = {};
  StridedLayout layout;
};
weft_rt_status planTranspose(weft_rt_context *ctx, const int64_t *params,
                             const void *input, const void *out,
                             TransposePlan *plan);

struct SlicePlan {
  int64_t elementBytes = 0, count = 0;
  StridedLayout layout;
};
weft_rt_status planSlice(weft_rt_context *ctx, const int64_t *params,
                         const void *input, const void *out, SlicePlan *plan);

struct PadPlan {
  int64_t elementBytes = 0, mode = 0, count = 0;
  int32_t rank = 0;
  int64_t inDims[kMaxDims] = {}, outDims[kMaxDims] = {}, before[kMaxDims] = {},
          inStrides[kMaxDims] = {};
};
weft_rt_status planPad(weft_rt_context *ctx, const int64_t *params,
                       const void *input, const void *value, const void *out,
                       PadPlan *plan);

struct TilePlan {
  int64_t elementBytes = 0, count = 0;
  int32_t rank = 0;
  int64_t inDims[kMaxDims] = {}, outDims[kMaxDims] = {},
          inStrides[kMaxDims] = {};
};
weft_rt_status planTile(weft_rt_context *ctx, const int64_t *params,
                        const void *input, const void *out, TilePlan *plan);

struct TriluPlan {
  int64_t elementBytes = 0, batch = 0, rows = 0, cols = 0, k = 0, count = 0;
  bool upper = false;
};
weft_rt_status planTrilu(weft_rt_context *ctx, const int64_t *params,
                         const void *input, const void *out, TriluPlan *plan);

/// Gather: the indices live on the device, so they are not checked here;
/// the kernel writes zeros where an index is out of range.
struct GatherPlan {
  int64_t elementBytes = 0, outer = 0, axis = 0, inner = 0, indexCount = 0,
          count = 0;
  bool wideIndices = false;
};
weft_rt_status planGather(weft_rt_context *ctx, const int64_t *params,
                          const void *input, const void *indices,
                          const void *out, GatherPlan *plan);

struct GatherElementsPlan {
  int64_t elementBytes = 0, axis = 0, count = 0;
  int32_t rank = 0;
  bool wideIndices = false;
  int64_t inDims[kMaxDims] = {}, indexDims[kMaxDims] = {},
          inStrides[kMaxDims] = {};
};
weft_rt_status planGatherElements(weft_rt_context *ctx, const int64_t *params,
                                  const void *input, const void *indices,
                                  const void *out, GatherElementsPlan *plan);

struct Copy2dPlan {
  int64_t rows = 0, rowBytes = 0, srcOffset = 0, srcStride = 0, dstOffset = 0,
          dstStride = 0;
  /// rows * rowBytes: 0 when there is nothing to copy.
  int64_t count = 0;
};
weft_rt_status planCopy2d(weft_rt_context *ctx, const int64_t *params,
                          const void *src, const void *dst, Copy2dPlan *plan);

} // namespace weft::rt::cuda

#endif // WEFT_RUNTIME_CUDA_KERNELS_SIMPLEPARAMS_H
