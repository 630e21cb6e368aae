//===- DenseParams.h - Parameter blocks of dense CUDA kernels ---*- C++ -*-===//
//
// The checked parameter blocks of weft_rt_cuda_matmul, _pool, _batch_norm
// and _einsum as plain structs, and how a matmul's batch becomes cuBLAS
// calls. Parsing runs on the host without a GPU (and is unit-tested so);
// the structs travel by value into DenseKernels.cu's launches.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_CUDA_KERNELS_DENSEPARAMS_H
#define WEFT_RUNTIME_CUDA_KERNELS_DENSEPARAMS_H

#include "weft_rt.h"

#include <cstdint>

namespace weft::rt::cuda {

/// The largest batch rank and einsum output rank (the CPU kernels' kMaxRank).
constexpr int kDenseMaxRank = 16;
/// The most distinct einsum indices (the CPU kernel's bound).
constexpr int kDenseMaxIndices = 64;

/// weft_rt_cpu_matmul's block, checked as the CPU kernel checks it.
struct MatmulParams {
  int64_t dtype = 0;
  int64_t m = 0, n = 0, k = 0;
  bool transA = false, transB = false;
  double alpha = 1.0, beta = 0.0;
  int64_t biasRowStride = 0, biasColStride = 0;
  int64_t rank = 0;
  int64_t batchDims[kDenseMaxRank] = {};
  int64_t aStrides[kDenseMaxRank] = {};
  int64_t bStrides[kDenseMaxRank] = {};
  /// The product of batchDims.
  int64_t batch = 1;
};

/// Reads and checks a matmul block. dtypes: f32, f64, f16, bf16, i32, i64.
weft_rt_status parseMatmulParams(weft_rt_context *ctx, const int64_t *params,
                                 MatmulParams &out);

/// How the batches of a float matmul map to cuBLAS calls: `outerCount`
/// strided-batched GEMMs of `innerCount` products each. Inner product i of
/// outer index o reads A at outerOffsetA(o) + i * innerStrideA (likewise B)
/// and writes C at (o * innerCount + i) * M * N. With foldRows the whole
/// batch is one (batch * M) x N x K GEMM (A's batches lie one after another
/// and B is shared).
struct MatmulBatchPlan {
  bool foldRows = false;
  int64_t innerCount = 1;
  int64_t innerStrideA = 0, innerStrideB = 0;
  /// The batch dimensions left to loop over, outermost first.
  int64_t outerRank = 0;
  int64_t outerDims[kDenseMaxRank] = {};
  int64_t outerStridesA[kDenseMaxRank] = {};
  int64_t outerStridesB[kDenseMaxRank] = {};
  int64_t outerCount = 1;
};

/// The plan of a checked block: size-1 dimensions dropped, then the
/// innermost run of dimensions whose strides nest (stride[d] ==
/// stride[d + 1] * dims[d + 1] in A, B and the dense output alike) becomes
/// one uniform stride.
MatmulBatchPlan planMatmulBatches(const MatmulParams &params);

/// Element offsets in A and B of outer index `outer` of `plan`.
void outerOffsets(const MatmulBatchPlan &plan, int64_t outer, int64_t &aOffset,
                  int64_t &bOffset);

/// weft_rt_cpu_pool's block, 1-D and 2-D pools seen as 3-D ones with leading
/// spatial dimensions of size 1.
struct PoolParams {
  int64_t dtype = 0;
  bool isMax = false, countIncludePad = false;
  /// N * C.
  int64_t planes = 0;
  int64_t in[3] = {}, kernel[3] = {}, strides[3] = {}, dilations[3] = {},
          padsBegin[3] = {}, padsEnd[3] = {}, out[3] = {};
  /// One window over each whole unpadded plane (the CPU kernel's global
  /// path, whose max starts from the first element instead of the lowest
  /// value).
  bool global = false;
  constexpr int64_t outCount() const {
    return planes * out[0] * out[1] * out[2];
  }
  constexpr int64_t inPlane() const { return in[0] * in[1] * in[2]; }
};

/// Reads and checks a pool block. dtypes: f32, f64, f16, bf16 (max also
/// i8, u8). The channel-blocked layout (layout word 1) fails with
/// WEFT_RT_UNSUPPORTED.
weft_rt_status parsePoolParams(weft_rt_context *ctx, const int64_t *params,
                               PoolParams &out);

/// weft_rt_cpu_batch_norm's block.
struct BatchNormParams {
  int64_t dtype = 0;
  int64_t n = 0, c = 0, inner = 0;
  double epsilon = 0.0;
  /// N * C and N * C * inner.
  int64_t planes = 0, count = 0;
};

/// Reads and checks a batch_norm block. dtypes: f32, f64, f16, bf16.
weft_rt_status parseBatchNormParams(weft_rt_context *ctx, const int64_t *params,
                                    BatchNormParams &out);

/// weft_rt_cpu_einsum's block as two strided walks: output element o (dense
/// over outSizes) reads input t at sum(coordinate_d * outStrides[t][d]) plus,
/// for each combination of the summed indices, sum(coordinate_s *
/// sumStrides[t][s]); the products of the inputs are summed. Indices absent
/// from the output and from every input are ignored, as on the CPU.
struct EinsumParams {
  int64_t dtype = 0;
  int numInputs = 1;
  int outRank = 0;
  int64_t outSizes[kDenseMaxRank] = {};
  int64_t outStrides[2][kDenseMaxRank] = {};
  int sumRank = 0;
  int64_t sumSizes[kDenseMaxIndices] = {};
  int64_t sumStrides[2][kDenseMaxIndices] = {};
  int64_t outCount = 1, sumCount = 1;
  /// Elements of each input (0 where absent).
  int64_t inCount[2] = {};
};

/// Reads and checks an einsum block. dtypes: f32, f64, f16, bf16, i32, i64.
weft_rt_status parseEinsumParams(weft_rt_context *ctx, const int64_t *params,
                                 EinsumParams &out);

/// A zero-padded copy of NC[D]HW planes: out plane p holds in plane p at
/// offset begin[] (for convolutions whose pads cuDNN's symmetric ones cannot
/// express).
struct PadPlanesParams {
  int64_t planes = 0;
  int64_t in[3] = {}, out[3] = {}, begin[3] = {};
  /// 2, 4 or 8.
  int64_t elemBytes = 4;
};

} // namespace weft::rt::cuda

#endif // WEFT_RUNTIME_CUDA_KERNELS_DENSEPARAMS_H
