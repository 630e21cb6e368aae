//===- DenseParams.cpp - Parameter blocks of the dense CUDA kernels -------===//
//
// Reads the parameter blocks of the dense CUDA kernels with the parsers of
// their CPU namesakes (runtime/cpu/KernelParams.h), so that checks and
// messages are the same, accepting the half types the GPU kernels add.
//
//===----------------------------------------------------------------------===//

#include "cuda/kernels/DenseParams.h"
#include "cpu/KernelParams.h"

#include <algorithm>
#include <climits>

using namespace weft::rt::cuda;
using weft::rt::cpu::checkedMul;
using weft::rt::cpu::dtypeBit;

static constexpr uint32_t kHalfDtypes =
    dtypeBit(WEFT_RT_F16) | dtypeBit(WEFT_RT_BF16);
static constexpr uint32_t kGpuFloatDtypes =
    weft::rt::cpu::kFloatDtypes | kHalfDtypes;

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

weft_rt_status weft::rt::cuda::parseMatmulParams(weft_rt_context *ctx,
                                                 const int64_t *params,
                                                 MatmulParams &s) {
  static_assert(kDenseMaxRank == weft::rt::cpu::kMaxRank);
  weft::rt::cpu::MatmulShape shape;
  WEFT_RT_TRY(weft::rt::cpu::parseMatmul(
      ctx, params, weft::rt::cpu::kNumericDtypes | kHalfDtypes, shape));
  s.dtype = shape.dtype;
  s.m = shape.m, s.n = shape.n, s.k = shape.k;
  s.transA = shape.transA, s.transB = shape.transB;
  s.alpha = shape.alpha, s.beta = shape.beta;
  s.biasRowStride = shape.biasRowStride;
  s.biasColStride = shape.biasColStride;
  s.rank = shape.rank;
  std::copy(shape.batchDims, shape.batchDims + s.rank, s.batchDims);
  std::copy(shape.aStrides, shape.aStrides + s.rank, s.aStrides);
  std::copy(shape.bStrides, shape.bStrides + s.rank, s.bStrides);
  s.batch = shape.batch;
  return WEFT_RT_OK;
}

/// As the CPU kernel's foldsIntoRows: every batch shares B and A's batches
/// lie one after another.
static bool foldsIntoRows(const MatmulParams &s) {
  if (s.transA)
    return false;
  int64_t expected = s.m * s.k;
  for (int64_t d = s.rank - 1; d >= 0; --d) {
    if (s.batchDims[d] == 1)
      continue;
    if (s.bStrides[d] != 0 || s.aStrides[d] != expected)
      return false;
    if (!checkedMul(expected, s.batchDims[d], expected))
      return false;
  }
  return true;
}

MatmulBatchPlan weft::rt::cuda::planMatmulBatches(const MatmulParams &s) {
  MatmulBatchPlan plan;
  if (s.batch > 1 && foldsIntoRows(s) && s.batch * s.m <= INT_MAX) {
    plan.foldRows = true;
    return plan;
  }
  // The dimensions that matter, innermost last.
  int64_t dims[kDenseMaxRank], stridesA[kDenseMaxRank], stridesB[kDenseMaxRank];
  int64_t count = 0;
  for (int64_t d = 0; d < s.rank; ++d) {
    if (s.batchDims[d] == 1)
      continue;
    dims[count] = s.batchDims[d];
    stridesA[count] = s.aStrides[d];
    stridesB[count++] = s.bStrides[d];
  }
  if (count == 0)
    return plan;
  int64_t inner = count - 1;
  plan.innerCount = dims[inner];
  plan.innerStrideA = stridesA[inner];
  plan.innerStrideB = stridesB[inner];
  while (inner > 0) {
    int64_t d = inner - 1, nextA, nextB, merged;
    if (!checkedMul(plan.innerStrideA, plan.innerCount, nextA) ||
        !checkedMul(plan.innerStrideB, plan.innerCount, nextB) ||
        !checkedMul(plan.innerCount, dims[d], merged))
      break;
    // cuBLAS counts products in an int.
    if (stridesA[d] != nextA || stridesB[d] != nextB || merged > INT_MAX)
      break;
    plan.innerCount = merged;
    inner = d;
  }
  plan.outerRank = inner;
  for (int64_t d = 0; d < inner; ++d) {
    plan.outerDims[d] = dims[d];
    plan.outerStridesA[d] = stridesA[d];
    plan.outerStridesB[d] = stridesB[d];
    plan.outerCount *= dims[d];
  }
  return plan;
}

void weft::rt::cuda::outerOffsets(const MatmulBatchPlan &plan, int64_t outer,
                                  int64_t &aOffset, int64_t &bOffset) {
  aOffset = 0, bOffset = 0;
  for (int64_t d = plan.outerRank - 1; d >= 0; --d) {
    int64_t i = outer % plan.outerDims[d];
    outer /= plan.outerDims[d];
    aOffset += i * plan.outerStridesA[d];
    bOffset += i * plan.outerStridesB[d];
  }
}

//===----------------------------------------------------------------------===//
// Pool
//===----------------------------------------------------------------------===//

weft_rt_status weft::rt::cuda::parsePoolParams(weft_rt_context *ctx,
                                               const int64_t *params,
                                               PoolParams &s) {
  weft::rt::cpu::PoolShape shape;
  WEFT_RT_TRY(weft::rt::cpu::parsePool(ctx, params, kGpuFloatDtypes, shape));
  if (shape.channelBlocked)
    return weft_rt_fail(ctx, WEFT_RT_UNSUPPORTED,
                        "pool: the channel-blocked layout (1) is not "
                        "supported by the CUDA backend, which takes NC[D]HW "
                        "only (layout 0)");
  s.dtype = shape.dtype;
  s.isMax = shape.isMax, s.countIncludePad = shape.countIncludePad;
  s.planes = shape.planes;
  std::copy(shape.in, shape.in + 3, s.in);
  std::copy(shape.kernel, shape.kernel + 3, s.kernel);
  std::copy(shape.strides, shape.strides + 3, s.strides);
  std::copy(shape.dilations, shape.dilations + 3, s.dilations);
  std::copy(shape.padsBegin, shape.padsBegin + 3, s.padsBegin);
  std::copy(shape.padsEnd, shape.padsEnd + 3, s.padsEnd);
  std::copy(shape.out, shape.out + 3, s.out);
  s.global = s.out[0] * s.out[1] * s.out[2] == 1 && s.inPlane() > 0;
  for (int d = 0; d < 3; ++d)
    s.global = s.global && s.kernel[d] == s.in[d] && s.dilations[d] == 1 &&
               s.padsBegin[d] == 0 && s.padsEnd[d] == 0;
  return WEFT_RT_OK;
}

//===----------------------------------------------------------------------===//
// Batch normalization
//===----------------------------------------------------------------------===//

weft_rt_status weft::rt::cuda::parseBatchNormParams(weft_rt_context *ctx,
                                                    const int64_t *params,
                                                    BatchNormParams &s) {
  weft::rt::cpu::BatchNormShape shape;
  WEFT_RT_TRY(
      weft::rt::cpu::parseBatchNorm(ctx, params, kGpuFloatDtypes, shape));
  s.dtype = shape.dtype;
  s.n = shape.n, s.c = shape.c, s.inner = shape.inner;
  s.epsilon = shape.epsilon;
  s.planes = shape.planes, s.count = shape.count;
  return WEFT_RT_OK;
}

//===----------------------------------------------------------------------===//
// Einsum
//===----------------------------------------------------------------------===//

weft_rt_status weft::rt::cuda::parseEinsumParams(weft_rt_context *ctx,
                                                 const int64_t *params,
                                                 EinsumParams &s) {
  static_assert(kDenseMaxIndices == weft::rt::cpu::kMaxEinsumIndices);
  weft::rt::cpu::EinsumShape shape;
  WEFT_RT_TRY(weft::rt::cpu::parseEinsum(
      ctx, params, weft::rt::cpu::kNumericDtypes | kHalfDtypes, shape));
  const weft::rt::cpu::EinsumOperand *operands = shape.operands;
  const int64_t *sizes = shape.sizes;
  s.dtype = shape.dtype;
  s.numInputs = static_cast<int>(shape.numInputs);
  s.outRank = static_cast<int>(shape.outRank);
  s.outCount = 1;
  for (int64_t i = 0; i < shape.outRank; ++i) {
    int64_t l = shape.outIndices[i];
    s.outSizes[i] = sizes[l];
    s.outCount *= sizes[l];
    for (int t = 0; t < 2; ++t)
      s.outStrides[t][i] = operands[t].strides[l];
  }
  s.sumRank = 0;
  s.sumCount = 1;
  for (int64_t l = 0; l < shape.numIndices; ++l) {
    if (shape.inOut[l] || !(operands[0].has[l] || operands[1].has[l]))
      continue;
    s.sumSizes[s.sumRank] = sizes[l];
    for (int t = 0; t < 2; ++t)
      s.sumStrides[t][s.sumRank] = operands[t].strides[l];
    ++s.sumRank;
    s.sumCount *= sizes[l];
  }
  for (int t = 0; t < 2; ++t)
    s.inCount[t] = t < shape.numInputs ? operands[t].count : 0;
  return WEFT_RT_OK;
}
