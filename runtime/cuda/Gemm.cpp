//===- Gemm.cpp - GEMMs on cuBLAS -----------------------------------------===//
//
// The cuBLAS handle's life and cublasGemmEx with planGemm's arguments.
//
//===----------------------------------------------------------------------===//

#include "cuda/Gemm.h"
#include "cuda/CudaStatus.h"

using namespace weft::rt::cuda;

CublasHandle::~CublasHandle() {
  // Nothing to report to from a destructor.
  if (handle)
    cublasDestroy(handle);
}

weft_rt_status CublasHandle::create(weft_rt_context *ctx, Stream &stream) {
  if (handle)
    return weft_rt_fail(ctx, WEFT_RT_INTERNAL,
                        "the cuBLAS handle was already created");
  if (!stream.get())
    return weft_rt_fail(ctx, WEFT_RT_INTERNAL,
                        "cuBLAS handle: the CUDA stream was never created");
  WEFT_CUBLAS_CHECK(ctx, cublasCreate(&handle));
  WEFT_CUBLAS_CHECK(ctx, cublasSetStream(handle, stream.get()));
  // Explicit, so that no process-wide default can turn TF32 on for f32.
  WEFT_CUBLAS_CHECK(ctx, cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
  return WEFT_RT_OK;
}

weft_rt_status weft::rt::cuda::gemm(weft_rt_context *ctx, CublasHandle &handle,
                                    const GemmRequest &request, double alpha,
                                    const void *a, const void *b, double beta,
                                    void *c) {
  return gemm(ctx, handle.get(), request, alpha, a, b, beta, c);
}

weft_rt_status weft::rt::cuda::gemm(weft_rt_context *ctx, cublasHandle_t handle,
                                    const GemmRequest &request, double alpha,
                                    const void *a, const void *b, double beta,
                                    void *c) {
  if (!handle)
    return weft_rt_fail(ctx, WEFT_RT_INTERNAL,
                        "GEMM: the cuBLAS handle was never created");
  CublasGemmCall call;
  if (weft_rt_status status = planGemm(ctx, request, &call))
    return status;
  bool empty = request.m == 0 || request.n == 0 || request.batch == 0;
  if (!empty && (!c || (request.k > 0 && (!a || !b))))
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "GEMM: a null device pointer (a=%p b=%p c=%p)", a, b,
                        c);
  if (empty)
    return WEFT_RT_OK;
  const void *first = call.first == GemmOperand::A ? a : b;
  const void *second = call.second == GemmOperand::A ? a : b;
  // cuBLAS reads the scalars in the compute type's precision.
  float alphaF = static_cast<float>(alpha), betaF = static_cast<float>(beta);
  const void *alphaP = call.doubleScalars ? static_cast<const void *>(&alpha)
                                          : static_cast<const void *>(&alphaF);
  const void *betaP = call.doubleScalars ? static_cast<const void *>(&beta)
                                         : static_cast<const void *>(&betaF);
  if (call.batchCount == 1) {
    WEFT_CUBLAS_CHECK(ctx,
                      cublasGemmEx(handle, call.transa, call.transb, call.m,
                                   call.n, call.k, alphaP, first, call.dataType,
                                   call.lda, second, call.dataType, call.ldb,
                                   betaP, c, call.dataType, call.ldc,
                                   call.computeType, CUBLAS_GEMM_DEFAULT));
    return WEFT_RT_OK;
  }
  WEFT_CUBLAS_CHECK(ctx, cublasGemmStridedBatchedEx(
                             handle, call.transa, call.transb, call.m, call.n,
                             call.k, alphaP, first, call.dataType, call.lda,
                             call.strideFirst, second, call.dataType, call.ldb,
                             call.strideSecond, betaP, c, call.dataType,
                             call.ldc, call.strideC, call.batchCount,
                             call.computeType, CUBLAS_GEMM_DEFAULT));
  return WEFT_RT_OK;
}
