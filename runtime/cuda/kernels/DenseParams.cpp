//===- DenseParams.cpp - Parameter blocks of the dense CUDA kernels -------===//
//
// Reads the parameter blocks of the dense CUDA kernels with the checks, and
// in the words, of their CPU namesakes (runtime/cpu), accepting the half
// types the GPU kernels add.
//
//===----------------------------------------------------------------------===//

#include "cuda/kernels/DenseParams.h"
#include "cpu/KernelSupport.h"

#include <algorithm>
#include <climits>

using namespace weft::rt::cuda;
using weft::rt::cpu::checkDtype;
using weft::rt::cpu::checkedMul;
using weft::rt::cpu::checkedProduct;
using weft::rt::cpu::dtypeBit;
using weft::rt::cpu::ParamReader;

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
  WEFT_RT_REQUIRE(ctx, params, "matmul: parameter block is NULL");
  ParamReader r(params);
  s.dtype = r.next();
  WEFT_RT_TRY(checkDtype(ctx, "matmul", s.dtype,
                         weft::rt::cpu::kNumericDtypes | kHalfDtypes));
  s.m = r.next();
  s.n = r.next();
  s.k = r.next();
  int64_t transA = r.next(), transB = r.next();
  s.alpha = r.nextDouble();
  s.beta = r.nextDouble();
  s.biasRowStride = r.next();
  s.biasColStride = r.next();
  s.rank = r.next();
  WEFT_RT_REQUIRE(ctx, s.m >= 0 && s.n >= 0 && s.k >= 0,
                  "matmul: negative size M=%lld N=%lld K=%lld", (long long)s.m,
                  (long long)s.n, (long long)s.k);
  WEFT_RT_REQUIRE(ctx,
                  (transA == 0 || transA == 1) && (transB == 0 || transB == 1),
                  "matmul: trans_a=%lld and trans_b=%lld must be 0 or 1",
                  (long long)transA, (long long)transB);
  s.transA = transA, s.transB = transB;
  WEFT_RT_REQUIRE(ctx, s.biasRowStride >= 0 && s.biasColStride >= 0,
                  "matmul: negative bias strides %lld, %lld",
                  (long long)s.biasRowStride, (long long)s.biasColStride);
  WEFT_RT_REQUIRE(ctx, s.rank >= 0 && s.rank <= kDenseMaxRank,
                  "matmul: batch rank %lld is not between 0 and %lld",
                  (long long)s.rank, (long long)kDenseMaxRank);
  const int64_t *dims = r.array(s.rank);
  const int64_t *aStrides = r.array(s.rank);
  const int64_t *bStrides = r.array(s.rank);
  std::copy(dims, dims + s.rank, s.batchDims);
  std::copy(aStrides, aStrides + s.rank, s.aStrides);
  std::copy(bStrides, bStrides + s.rank, s.bStrides);
  WEFT_RT_REQUIRE(ctx, checkedProduct(s.batchDims, s.rank, s.batch),
                  "matmul: batch dimensions are negative or overflow");
  for (int64_t i = 0; i < s.rank; ++i)
    WEFT_RT_REQUIRE(ctx, s.aStrides[i] >= 0 && s.bStrides[i] >= 0,
                    "matmul: negative batch stride at batch dimension %lld",
                    (long long)i);
  int64_t mn, mk, kn, total;
  WEFT_RT_REQUIRE(ctx,
                  checkedMul(s.m, s.n, mn) && checkedMul(s.m, s.k, mk) &&
                      checkedMul(s.k, s.n, kn) &&
                      checkedMul(s.batch, mn, total),
                  "matmul: sizes overflow int64");
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

static int64_t ceilDiv(int64_t a, int64_t b) {
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

weft_rt_status weft::rt::cuda::parsePoolParams(weft_rt_context *ctx,
                                               const int64_t *params,
                                               PoolParams &s) {
  WEFT_RT_REQUIRE(ctx, params, "pool: parameter block is NULL");
  ParamReader r(params);
  s.dtype = r.next();
  int64_t kind = r.next(), includePad = r.next();
  WEFT_RT_REQUIRE(ctx, kind == 0 || kind == 1,
                  "pool: kind %lld is neither 0 (max) nor 1 (average)",
                  (long long)kind);
  s.isMax = kind == 0;
  WEFT_RT_TRY(checkDtype(ctx, s.isMax ? "max pool" : "average pool", s.dtype,
                         s.isMax ? kGpuFloatDtypes | weft::rt::cpu::kByteDtypes
                                 : kGpuFloatDtypes));
  WEFT_RT_REQUIRE(ctx, includePad == 0 || includePad == 1,
                  "pool: count_include_pad is %lld, not 0 or 1",
                  (long long)includePad);
  s.countIncludePad = includePad == 1;
  int64_t rank = r.next(), n = r.next(), c = r.next();
  WEFT_RT_REQUIRE(ctx, rank >= 1 && rank <= 3,
                  "pool: %lld spatial dimensions (1 to 3 are supported)",
                  (long long)rank);
  WEFT_RT_REQUIRE(ctx, checkedMul(n, c, s.planes),
                  "pool: N=%lld and C=%lld are negative or overflow",
                  (long long)n, (long long)c);
  int64_t *fields[] = {s.in,        s.kernel,  s.strides, s.dilations,
                       s.padsBegin, s.padsEnd, s.out};
  const int64_t leading[] = {1, 1, 1, 1, 0, 0, 1};
  for (int f = 0; f < 7; ++f) {
    const int64_t *values = r.array(rank);
    for (int64_t d = 0; d < 3 - rank; ++d)
      fields[f][d] = leading[f];
    for (int64_t d = 0; d < rank; ++d)
      fields[f][3 - rank + d] = values[d];
  }
  for (int64_t d = 3 - rank; d < 3; ++d) {
    long long axis = d - (3 - rank);
    WEFT_RT_REQUIRE(ctx,
                    s.in[d] >= 0 && s.kernel[d] >= 1 && s.strides[d] >= 1 &&
                        s.dilations[d] >= 1 && s.padsBegin[d] >= 0 &&
                        s.padsEnd[d] >= 0,
                    "pool: spatial axis %lld has input %lld, kernel %lld, "
                    "stride %lld, dilation %lld, pads %lld and %lld",
                    axis, (long long)s.in[d], (long long)s.kernel[d],
                    (long long)s.strides[d], (long long)s.dilations[d],
                    (long long)s.padsBegin[d], (long long)s.padsEnd[d]);
    int64_t span, padded;
    WEFT_RT_REQUIRE(
        ctx,
        checkedMul(s.kernel[d] - 1, s.dilations[d], span) &&
            !__builtin_add_overflow(s.in[d], s.padsBegin[d], &padded) &&
            !__builtin_add_overflow(padded, s.padsEnd[d], &padded),
        "pool: sizes of spatial axis %lld overflow", axis);
    WEFT_RT_REQUIRE(ctx, padded > span,
                    "pool: on spatial axis %lld the dilated window (%lld) is "
                    "larger than the padded input (%lld)",
                    axis, (long long)(span + 1), (long long)padded);
    // Floor mode or ceil mode.
    int64_t low = (padded - span - 1) / s.strides[d] + 1;
    int64_t high = ceilDiv(padded - span - 1, s.strides[d]) + 1;
    WEFT_RT_REQUIRE(ctx, s.out[d] == low || s.out[d] == high,
                    "pool: output size %lld on spatial axis %lld, expected "
                    "%lld (or %lld in ceil mode)",
                    (long long)s.out[d], axis, (long long)low, (long long)high);
  }
  int64_t count;
  const int64_t inFactors[] = {s.planes, s.in[0], s.in[1], s.in[2]};
  const int64_t outFactors[] = {s.planes, s.out[0], s.out[1], s.out[2]};
  WEFT_RT_REQUIRE(ctx,
                  checkedProduct(inFactors, 4, count) &&
                      checkedProduct(outFactors, 4, count),
                  "pool: tensor sizes overflow int64");
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
  WEFT_RT_REQUIRE(ctx, params, "batch_norm: parameter block is NULL");
  ParamReader r(params);
  s.dtype = r.next();
  WEFT_RT_TRY(checkDtype(ctx, "batch_norm", s.dtype, kGpuFloatDtypes));
  s.n = r.next(), s.c = r.next(), s.inner = r.next();
  s.epsilon = r.nextDouble();
  WEFT_RT_REQUIRE(ctx,
                  checkedMul(s.n, s.c, s.planes) &&
                      checkedMul(s.planes, s.inner, s.count),
                  "batch_norm: N=%lld, C=%lld, inner=%lld are negative or "
                  "overflow",
                  (long long)s.n, (long long)s.c, (long long)s.inner);
  WEFT_RT_REQUIRE(ctx, s.epsilon >= 0.0,
                  "batch_norm: epsilon %g is negative or NaN", s.epsilon);
  return WEFT_RT_OK;
}

//===----------------------------------------------------------------------===//
// Einsum
//===----------------------------------------------------------------------===//

namespace {
/// One operand's strides per distinct index (summed where an index repeats,
/// which walks a diagonal).
struct EinsumOperand {
  int64_t strides[kDenseMaxIndices] = {};
  bool has[kDenseMaxIndices] = {};
  int64_t count = 1;
};
} // namespace

static weft_rt_status readOperand(weft_rt_context *ctx, ParamReader &r,
                                  int64_t which, int64_t numIndices,
                                  const int64_t *sizes,
                                  EinsumOperand &operand) {
  int64_t rank = r.next();
  WEFT_RT_REQUIRE(ctx, rank >= 0 && rank <= kDenseMaxRank,
                  "einsum: input %lld has rank %lld (at most %lld)",
                  (long long)which, (long long)rank, (long long)kDenseMaxRank);
  const int64_t *indices = r.array(rank);
  int64_t stride = 1;
  for (int64_t p = rank - 1; p >= 0; --p) {
    int64_t l = indices[p];
    WEFT_RT_REQUIRE(ctx, l >= 0 && l < numIndices,
                    "einsum: input %lld names index %lld of %lld",
                    (long long)which, (long long)l, (long long)numIndices);
    operand.strides[l] += stride;
    operand.has[l] = true;
    WEFT_RT_REQUIRE(ctx, checkedMul(stride, sizes[l], stride),
                    "einsum: the size of input %lld overflows",
                    (long long)which);
  }
  operand.count = stride;
  return WEFT_RT_OK;
}

weft_rt_status weft::rt::cuda::parseEinsumParams(weft_rt_context *ctx,
                                                 const int64_t *params,
                                                 EinsumParams &s) {
  WEFT_RT_REQUIRE(ctx, params, "einsum: parameter block is NULL");
  ParamReader r(params);
  s.dtype = r.next();
  WEFT_RT_TRY(checkDtype(ctx, "einsum", s.dtype,
                         weft::rt::cpu::kNumericDtypes | kHalfDtypes));
  int64_t numIndices = r.next();
  WEFT_RT_REQUIRE(ctx, numIndices >= 0 && numIndices <= kDenseMaxIndices,
                  "einsum: %lld distinct indices (at most %lld)",
                  (long long)numIndices, (long long)kDenseMaxIndices);
  const int64_t *sizes = r.array(numIndices);
  int64_t total;
  WEFT_RT_REQUIRE(ctx, checkedProduct(sizes, numIndices, total),
                  "einsum: index sizes are negative or their product "
                  "overflows");
  int64_t outRank = r.next();
  WEFT_RT_REQUIRE(ctx, outRank >= 0 && outRank <= kDenseMaxRank,
                  "einsum: output rank %lld (at most %lld)", (long long)outRank,
                  (long long)kDenseMaxRank);
  const int64_t *outIndices = r.array(outRank);
  bool inOut[kDenseMaxIndices] = {};
  for (int64_t i = 0; i < outRank; ++i) {
    int64_t l = outIndices[i];
    WEFT_RT_REQUIRE(ctx, l >= 0 && l < numIndices && !inOut[l],
                    "einsum: output index %lld at position %lld is out of "
                    "range or repeated",
                    (long long)l, (long long)i);
    inOut[l] = true;
  }
  int64_t numInputs = r.next();
  WEFT_RT_REQUIRE(ctx, numInputs == 1 || numInputs == 2,
                  "einsum: %lld inputs (1 or 2 are supported)",
                  (long long)numInputs);
  EinsumOperand operands[2];
  for (int64_t i = 0; i < numInputs; ++i)
    WEFT_RT_TRY(readOperand(ctx, r, i, numIndices, sizes, operands[i]));
  for (int64_t i = 0; i < outRank; ++i) {
    int64_t l = outIndices[i];
    WEFT_RT_REQUIRE(ctx, operands[0].has[l] || operands[1].has[l],
                    "einsum: output index %lld appears in no input",
                    (long long)l);
  }
  s.numInputs = static_cast<int>(numInputs);
  s.outRank = static_cast<int>(outRank);
  s.outCount = 1;
  for (int64_t i = 0; i < outRank; ++i) {
    int64_t l = outIndices[i];
    s.outSizes[i] = sizes[l];
    s.outCount *= sizes[l];
    for (int t = 0; t < 2; ++t)
      s.outStrides[t][i] = operands[t].strides[l];
  }
  s.sumRank = 0;
  s.sumCount = 1;
  for (int64_t l = 0; l < numIndices; ++l) {
    if (inOut[l] || !(operands[0].has[l] || operands[1].has[l]))
      continue;
    s.sumSizes[s.sumRank] = sizes[l];
    for (int t = 0; t < 2; ++t)
      s.sumStrides[t][s.sumRank] = operands[t].strides[l];
    ++s.sumRank;
    s.sumCount *= sizes[l];
  }
  for (int t = 0; t < 2; ++t)
    s.inCount[t] = t < numInputs ? operands[t].count : 0;
  return WEFT_RT_OK;
}
