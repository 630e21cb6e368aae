//===- GemmPlan.cpp - Row-major GEMMs as cuBLAS calls ---------------------===//
//
// The checks and the row-major to column-major marshalling of GEMMs; pure,
// so that unit tests cover it on machines without a GPU.
//
//===----------------------------------------------------------------------===//

#include "cuda/GemmPlan.h"

#include <algorithm>
#include <climits>

using namespace weft::rt::cuda;

/// Fails unless `ld` can hold rows of `rowLength` elements.
static weft_rt_status checkLeadingDim(weft_rt_context *ctx, const char *name,
                                      int64_t ld, int64_t rowLength,
                                      const char *layout) {
  int64_t least = std::max<int64_t>(rowLength, 1);
  if (ld >= least)
    return WEFT_RT_OK;
  return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                      "GEMM: %s = %lld is less than %lld, the length of a row "
                      "of %s",
                      name, static_cast<long long>(ld),
                      static_cast<long long>(least), layout);
}

weft_rt_status weft::rt::cuda::planGemm(weft_rt_context *ctx,
                                        const GemmRequest &request,
                                        CublasGemmCall *out_call) {
  cudaDataType_t dataType;
  cublasComputeType_t computeType = CUBLAS_COMPUTE_32F;
  switch (request.dtype) {
  case WEFT_RT_F32:
    dataType = CUDA_R_32F;
    break;
  case WEFT_RT_F64:
    dataType = CUDA_R_64F;
    computeType = CUBLAS_COMPUTE_64F;
    break;
  case WEFT_RT_F16:
    dataType = CUDA_R_16F;
    break;
  case WEFT_RT_BF16:
    dataType = CUDA_R_16BF;
    break;
  default:
    return weft_rt_fail(
        ctx, WEFT_RT_UNSUPPORTED,
        "GEMM on the GPU supports f32, f64, f16 and bf16, not %s "
        "(dtype %d)",
        weft_rt_dtype_name(request.dtype), request.dtype);
  }
  const GemmRequest &r = request;
  if (r.m < 0 || r.n < 0 || r.k < 0)
    return weft_rt_fail(
        ctx, WEFT_RT_INVALID_ARGUMENT,
        "GEMM: negative size M=%lld N=%lld K=%lld", static_cast<long long>(r.m),
        static_cast<long long>(r.n), static_cast<long long>(r.k));
  if (weft_rt_status status =
          checkLeadingDim(ctx, "lda", r.lda, r.transA ? r.m : r.k,
                          r.transA ? "A (K x M, transposed)" : "A (M x K)"))
    return status;
  if (weft_rt_status status =
          checkLeadingDim(ctx, "ldb", r.ldb, r.transB ? r.k : r.n,
                          r.transB ? "B (N x K, transposed)" : "B (K x N)"))
    return status;
  if (weft_rt_status status =
          checkLeadingDim(ctx, "ldc", r.ldc, r.n, "C (M x N)"))
    return status;
  if (r.batch < 0 || r.strideA < 0 || r.strideB < 0 || r.strideC < 0)
    return weft_rt_fail(
        ctx, WEFT_RT_INVALID_ARGUMENT,
        "GEMM: negative batch %lld or strides A=%lld B=%lld "
        "C=%lld",
        static_cast<long long>(r.batch), static_cast<long long>(r.strideA),
        static_cast<long long>(r.strideB), static_cast<long long>(r.strideC));
  // Products that wrote over each other's C would race.
  if (r.batch > 1 && r.m > 0 && r.n > 0 &&
      (r.strideC / r.ldc < r.m - 1 ||
       (r.strideC / r.ldc == r.m - 1 && r.strideC % r.ldc < r.n)))
    return weft_rt_fail(
        ctx, WEFT_RT_INVALID_ARGUMENT,
        "GEMM: strideC = %lld makes the %lld x %lld products "
        "(ldc = %lld) overlap",
        static_cast<long long>(r.strideC), static_cast<long long>(r.m),
        static_cast<long long>(r.n), static_cast<long long>(r.ldc));
  if (r.batch > INT_MAX)
    return weft_rt_fail(ctx, WEFT_RT_UNSUPPORTED,
                        "GEMM: %lld products exceed cuBLAS's 32-bit batch "
                        "count",
                        static_cast<long long>(r.batch));
  for (int64_t value : {r.m, r.n, r.k, r.lda, r.ldb, r.ldc})
    if (value > INT_MAX)
      return weft_rt_fail(
          ctx, WEFT_RT_UNSUPPORTED,
          "GEMM: %lld exceeds cuBLAS's 32-bit sizes "
          "(M=%lld N=%lld K=%lld lda=%lld ldb=%lld ldc=%lld)",
          static_cast<long long>(value), static_cast<long long>(r.m),
          static_cast<long long>(r.n), static_cast<long long>(r.k),
          static_cast<long long>(r.lda), static_cast<long long>(r.ldb),
          static_cast<long long>(r.ldc));

  // Column-major C^T (N x M) = op(B)^T (N x K) * op(A)^T (K x M). A stored
  // row-major K x N reads column-major as the N x K matrix B^T = op(B)^T
  // itself; stored N x K (transB) it reads as B, which must be transposed.
  // Likewise for A. The leading dimensions carry over unchanged.
  CublasGemmCall call;
  call.transa = r.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  call.transb = r.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  call.m = static_cast<int>(r.n);
  call.n = static_cast<int>(r.m);
  call.k = static_cast<int>(r.k);
  call.first = GemmOperand::B;
  call.second = GemmOperand::A;
  call.lda = static_cast<int>(r.ldb);
  call.ldb = static_cast<int>(r.lda);
  call.ldc = static_cast<int>(r.ldc);
  call.dataType = dataType;
  call.computeType = computeType;
  call.doubleScalars = computeType == CUBLAS_COMPUTE_64F;
  call.batchCount = static_cast<int>(r.batch);
  call.strideFirst = r.strideB;
  call.strideSecond = r.strideA;
  call.strideC = r.strideC;
  *out_call = call;
  return WEFT_RT_OK;
}
