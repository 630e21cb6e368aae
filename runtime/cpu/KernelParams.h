//===- KernelParams.h - Parameter blocks shared with the GPU ----*- C++ -*-===//
//
// How the CPU kernels read and check their parameter blocks (pool, matmul,
// einsum, reductions, normalization, data movement), apart from the kernels
// themselves so that the CUDA backend checks blocks the same way, in the same
// words, without linking OpenMP, OpenBLAS or oneDNN (as parseConv in
// ConvShape.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_CPU_KERNELPARAMS_H
#define WEFT_RUNTIME_CPU_KERNELPARAMS_H

#include "KernelSupport.h"

#include <cmath>
#include <limits>

namespace weft::rt::cpu {

//===----------------------------------------------------------------------===//
// Pool (and what conv shares with it)
//===----------------------------------------------------------------------===//

/// Reads the seven per-axis arrays of a conv or pool block (input, kernel,
/// strides, dilations, pads begin, pads end, output) of `rank` (1 to 3)
/// entries each into `fields`, 3-entry arrays whose leading axes get 1
/// (pads 0): 1-D and 2-D windows seen as 3-D ones.
void readSpatialArrays(ParamReader &reader, int64_t rank,
                       int64_t *const fields[7]);

/// The extent minus 1 of a dilated window, (kernel - 1) * dilation, and the
/// padded input size; false when either overflows.
inline bool dilatedSpan(int64_t in, int64_t kernel, int64_t dilation,
                        int64_t padsBegin, int64_t padsEnd, int64_t &span,
                        int64_t &padded) {
  return checkedMul(kernel - 1, dilation, span) &&
         !__builtin_add_overflow(in, padsBegin, &padded) &&
         !__builtin_add_overflow(padded, padsEnd, &padded);
}

/// A validated pool parameter block, 1-D and 2-D pools seen as 3-D ones
/// with leading spatial dimensions of size 1.
struct PoolShape {
  int64_t dtype;
  bool isMax, countIncludePad;
  /// Layout word 1: input and output are N x C/16 x spatial... x 16
  /// (C a multiple of 16, f32 only); 0: NC[D]HW.
  bool channelBlocked;
  /// N * C.
  int64_t planes;
  int64_t in[3], kernel[3], strides[3], dilations[3], padsBegin[3], padsEnd[3],
      out[3];
};

/// Reads and checks a pool block. Both kinds take `floatDtypes`, max pools
/// also i8 and u8; the channel-blocked layout f32 only.
weft_rt_status parsePool(weft_rt_context *ctx, const int64_t *params,
                         uint32_t floatDtypes, PoolShape &shape);

/// ceil(a / b) for b > 0, rounding toward +infinity for negative a too.
inline int64_t ceilDiv(int64_t a, int64_t b) {
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

/// A validated matmul parameter block; the batch arrays point into it.
struct MatmulShape {
  int64_t dtype, m, n, k;
  bool transA, transB;
  double alpha, beta;
  int64_t biasRowStride, biasColStride;
  int64_t rank;
  const int64_t *batchDims, *aStrides, *bStrides;
  /// The product of batchDims.
  int64_t batch;
};

/// Reads and checks a matmul block whose dtype is one of `dtypes`.
weft_rt_status parseMatmul(weft_rt_context *ctx, const int64_t *params,
                           uint32_t dtypes, MatmulShape &shape);

//===----------------------------------------------------------------------===//
// Einsum
//===----------------------------------------------------------------------===//

/// The most distinct indices an equation may use (ONNX letters: 52).
constexpr int64_t kMaxEinsumIndices = 64;

/// An einsum operand's index list.
struct EinsumOperand {
  int64_t rank = 0;
  const int64_t *indices = nullptr;
  /// Element stride of each distinct index (summed where an index repeats,
  /// which walks a diagonal), 0 for indices the operand lacks.
  int64_t strides[kMaxEinsumIndices] = {};
  bool has[kMaxEinsumIndices] = {};
  int64_t count = 1;
};

/// A validated einsum parameter block; the arrays point into it.
struct EinsumShape {
  int64_t dtype = 0;
  int64_t numIndices = 0;
  const int64_t *sizes = nullptr;
  int64_t outRank = 0;
  const int64_t *outIndices = nullptr;
  /// Whether each distinct index is one of the output's.
  bool inOut[kMaxEinsumIndices] = {};
  int64_t numInputs = 0;
  /// The second is empty (count 1, no index) when there is one input.
  EinsumOperand operands[2];
};

/// Reads and checks an einsum block whose dtype is one of `dtypes`.
weft_rt_status parseEinsum(weft_rt_context *ctx, const int64_t *params,
                           uint32_t dtypes, EinsumShape &shape);

//===----------------------------------------------------------------------===//
// Reduce
//===----------------------------------------------------------------------===//

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

/// The names of ReduceKind, for messages.
extern const char *const kReduceNames[kLogSum + 1];

/// The input of a reduction after dropping size-1 dimensions and merging
/// neighbours that are both reduced or both kept. Strides are in elements.
struct ReduceLayout {
  int64_t rank = 0;
  int64_t sizes[kMaxRank], strides[kMaxRank];
  bool reduced[kMaxRank];
  int64_t inCount = 1, outCount = 1, reducedCount = 1;
};

/// A validated reduce parameter block; dims and mask point into it.
struct ReduceShape {
  int64_t dtype = 0, kind = 0, rank = 0;
  const int64_t *dims = nullptr, *mask = nullptr;
};

/// Reads and checks a reduce block, and sets the element counts of
/// `layout` (not its dimensions: see mergeReduceDims).
weft_rt_status parseReduce(weft_rt_context *ctx, const int64_t *params,
                           ReduceShape &shape, ReduceLayout &layout);

/// Fills the dimensions of `layout` from a checked block (one reduced
/// dimension of size 1 when every dimension has size 1).
void mergeReduceDims(const ReduceShape &shape, ReduceLayout &layout);

/// A double converted to an integer type without undefined behaviour:
/// saturated, NaN to 0.
template <typename T> T toInteger(double value) {
  if (value != value)
    return T(0);
  if (value <= static_cast<double>(std::numeric_limits<T>::lowest()))
    return std::numeric_limits<T>::lowest();
  if (value >= static_cast<double>(std::numeric_limits<T>::max()))
    return std::numeric_limits<T>::max();
  return static_cast<T>(value);
}

/// The value of reducing nothing, per ONNX (opset 18 defines it): the
/// identity of the operation; max/min the lowest/highest value. Fails where
/// an integer type has no such value.
template <typename T>
weft_rt_status reduceEmptyValue(weft_rt_context *ctx, int64_t kind, T &result) {
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
  return WEFT_RT_OK;
}

//===----------------------------------------------------------------------===//
// Softmax, normalization and arg_reduce
//===----------------------------------------------------------------------===//

/// A validated softmax parameter block: x viewed as outer x axis x inner.
struct SoftmaxShape {
  int64_t dtype, outer, axis, inner;
  bool log;
  /// outer * axis * inner.
  int64_t count;
};

/// Reads and checks a softmax block (f32, f64).
weft_rt_status parseSoftmax(weft_rt_context *ctx, const int64_t *params,
                            SoftmaxShape &shape);

/// A validated normalize parameter block: outer rows of `size` elements.
struct NormalizeShape {
  int64_t dtype;
  bool instance;
  int64_t outer, size, channels;
  double epsilon;
  /// outer * size.
  int64_t count;
};

/// Reads and checks a normalize block (f32, f64).
weft_rt_status parseNormalize(weft_rt_context *ctx, const int64_t *params,
                              NormalizeShape &shape);

/// A validated batch_norm parameter block.
struct BatchNormShape {
  int64_t dtype, n, c, inner;
  double epsilon;
  /// N * C and N * C * inner.
  int64_t planes, count;
};

/// Reads and checks a batch_norm block whose dtype is one of `dtypes`.
weft_rt_status parseBatchNorm(weft_rt_context *ctx, const int64_t *params,
                              uint32_t dtypes, BatchNormShape &shape);

/// A validated arg_reduce parameter block: x viewed as outer x axis x inner.
struct ArgReduceShape {
  int64_t dtype, kind, outer, axis, inner;
  bool selectLast;
  /// Elements in (outer * axis * inner) and out (outer * inner).
  int64_t count, outCount;
};

/// Reads and checks an arg_reduce block; an empty axis is left to the
/// caller, which only minds it when there are outputs.
weft_rt_status parseArgReduce(weft_rt_context *ctx, const int64_t *params,
                              ArgReduceShape &shape);

//===----------------------------------------------------------------------===//
// Data movement and indexing
//===----------------------------------------------------------------------===//

/// A validated transpose block; dims and perm point into it.
struct TransposeShape {
  int64_t elementBytes, rank, count;
  const int64_t *dims, *perm;
};
weft_rt_status parseTranspose(weft_rt_context *ctx, const int64_t *params,
                              TransposeShape &shape);

/// A validated slice block: every read lies inside the input.
struct SliceShape {
  int64_t elementBytes, rank, outCount;
  const int64_t *inDims, *outDims, *starts, *steps;
};
weft_rt_status parseSlice(weft_rt_context *ctx, const int64_t *params,
                          SliceShape &shape);

/// The modes of weft_rt_cpu_pad.
enum PadMode : int64_t { kConstant = 0, kReflect, kEdge, kWrap };

/// A validated pad block; pads (before for each dimension, then after)
/// points into it.
struct PadShape {
  int64_t elementBytes, mode, rank, inCount, outCount;
  const int64_t *inDims, *pads;
  int64_t outDims[kMaxRank];
};
weft_rt_status parsePad(weft_rt_context *ctx, const int64_t *params,
                        PadShape &shape);

/// A validated tile block.
struct TileShape {
  int64_t elementBytes, rank, outCount;
  const int64_t *inDims, *repeats;
  int64_t outDims[kMaxRank];
};
weft_rt_status parseTile(weft_rt_context *ctx, const int64_t *params,
                         TileShape &shape);

/// A validated trilu block: dims are batch, rows and cols; k is as given.
struct TriluShape {
  int64_t elementBytes, count, k;
  bool upper;
  const int64_t *dims;
};
weft_rt_status parseTrilu(weft_rt_context *ctx, const int64_t *params,
                          TriluShape &shape);

/// A validated copy2d block. With no rows or no row bytes nothing else is
/// checked: there is nothing to copy.
struct Copy2dShape {
  int64_t rows, rowBytes, srcOffset, srcStride, dstOffset, dstStride;
  bool empty() const { return rows == 0 || rowBytes == 0; }
};
weft_rt_status parseCopy2d(weft_rt_context *ctx, const int64_t *params,
                           Copy2dShape &shape);

/// A validated gather block (the indices themselves are not read): count
/// indices along the axis; wideIndices when they are i64, not i32.
struct GatherShape {
  int64_t elementBytes, outer, axis, inner, count, outBytes;
  bool wideIndices;
};
weft_rt_status parseGather(weft_rt_context *ctx, const int64_t *params,
                           GatherShape &shape);

/// A validated gather_elements block (the indices themselves are not read);
/// count is the number of indices.
struct GatherElementsShape {
  int64_t elementBytes, rank, axis, count;
  bool wideIndices;
  const int64_t *inDims, *indexDims;
};
weft_rt_status parseGatherElements(weft_rt_context *ctx, const int64_t *params,
                                   GatherElementsShape &shape);

} // namespace weft::rt::cpu

#endif // WEFT_RUNTIME_CPU_KERNELPARAMS_H
