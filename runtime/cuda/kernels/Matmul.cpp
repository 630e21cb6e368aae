//===- Matmul.cpp - Batched matrix products on cuBLAS ---------------------===//
//
// weft_rt_cuda_matmul: weft_rt_cpu_matmul's numpy-style batched products
// with an optional scaled bias, as strided-batched cuBLAS GEMMs for floats
// and a plain kernel for integers.
//
//===----------------------------------------------------------------------===//

#include "cpu/KernelSupport.h"
#include "cuda/CudaStatus.h"
#include "cuda/DeviceState.h"
#include "cuda/kernels/DenseKernels.h"
#include "weft_rt_cuda.h"

using namespace weft::rt::cuda;
using weft::rt::cpu::requireBuffer;

static const char *const kMatmul = "matmul";

/// Queues the GEMMs of a float matmul whose `out` already holds the bias
/// (when beta != 0) or anything (when beta == 0: cuBLAS does not read it).
static weft_rt_status floatGemms(weft_rt_context *ctx, DeviceState &state,
                                 const MatmulParams &s, const char *a,
                                 const char *b, double beta, char *out) {
  const int64_t elem = static_cast<int64_t>(weft_rt_dtype_size(s.dtype));
  MatmulBatchPlan plan = planMatmulBatches(s);
  GemmRequest r;
  r.dtype = static_cast<weft_rt_dtype>(s.dtype);
  r.m = plan.foldRows ? s.batch * s.m : s.m;
  r.n = s.n;
  r.k = s.k;
  r.transA = s.transA;
  r.transB = s.transB;
  r.lda = s.transA ? s.m : s.k;
  r.ldb = s.transB ? s.k : s.n;
  r.ldc = s.n;
  // Leading dimensions of empty rows still have to be at least 1.
  r.lda = r.lda < 1 ? 1 : r.lda;
  r.ldb = r.ldb < 1 ? 1 : r.ldb;
  r.ldc = r.ldc < 1 ? 1 : r.ldc;
  if (plan.foldRows)
    return gemm(ctx, state.cublas, r, s.alpha, a, b, beta, out);
  r.batch = plan.innerCount;
  r.strideA = plan.innerStrideA;
  r.strideB = plan.innerStrideB;
  r.strideC = s.m * s.n;
  const int64_t outStride = plan.innerCount * s.m * s.n * elem;
  for (int64_t outer = 0; outer < plan.outerCount; ++outer) {
    int64_t aOffset, bOffset;
    outerOffsets(plan, outer, aOffset, bOffset);
    WEFT_RT_TRY(gemm(ctx, state.cublas, r, s.alpha, a + aOffset * elem,
                     b + bOffset * elem, beta, out + outer * outStride));
  }
  return WEFT_RT_OK;
}

weft_rt_status weft_rt_cuda_matmul(weft_rt_context *ctx, const int64_t *params,
                                   const void *a, const void *b,
                                   const void *bias, void *out) {
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  MatmulParams s;
  WEFT_RT_TRY(parseMatmulParams(ctx, params, s));
  const bool empty = s.batch * s.m * s.n == 0;
  if (!empty) {
    WEFT_RT_TRY(requireBuffer(ctx, kMatmul, out, "out"));
    if (s.k > 0) {
      WEFT_RT_TRY(requireBuffer(ctx, kMatmul, a, "a"));
      WEFT_RT_TRY(requireBuffer(ctx, kMatmul, b, "b"));
    }
  }
  DeviceState *state = deviceStateOf(ctx, kMatmul);
  if (!state)
    return WEFT_RT_INTERNAL;
  if (empty)
    return WEFT_RT_OK;
  cudaStream_t stream = state->stream.get();
  if (s.dtype == WEFT_RT_I32 || s.dtype == WEFT_RT_I64) {
    WEFT_CUDA_CHECK(ctx, WEFT_RT_INTERNAL,
                    launchIntegerMatmul(s, a, b, bias, out, stream));
    return WEFT_RT_OK;
  }
  const bool withBias = bias && s.beta != 0.0;
  if (s.k == 0 || s.alpha == 0.0) {
    // Nothing comes of A and B: out is beta * bias, or zero.
    WEFT_CUDA_CHECK(ctx, WEFT_RT_INTERNAL,
                    launchMatmulBiasFill(s, withBias ? bias : nullptr, true,
                                         s.beta, out, stream));
    return WEFT_RT_OK;
  }
  // The GEMM scales the broadcast bias by beta as it accumulates onto it.
  if (withBias)
    WEFT_CUDA_CHECK(ctx, WEFT_RT_INTERNAL,
                    launchMatmulBiasFill(s, bias, false, 0.0, out, stream));
  return floatGemms(ctx, *state, s, static_cast<const char *>(a),
                    static_cast<const char *>(b), withBias ? s.beta : 0.0,
                    static_cast<char *>(out));
}
