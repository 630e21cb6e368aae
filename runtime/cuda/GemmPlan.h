//===- GemmPlan.h - Row-major GEMMs as cuBLAS calls -------------*- C++ -*-===//
//
// cuBLAS is column-major; Weft's tensors are row-major. A row-major matrix
// with leading dimension ld is, read column-major, its transpose with the
// same ld, so row-major C = op(A) op(B) is column-major
// C^T = op(B)^T op(A)^T: cuBLAS gets B first, A second, m = N and n = M.
// planGemm works that out (and checks the request) without touching a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_CUDA_GEMMPLAN_H
#define WEFT_RUNTIME_CUDA_GEMMPLAN_H

#include "weft_rt.h"

#include <cublas_v2.h>
#include <library_types.h>

#include <cstdint>

namespace weft::rt::cuda {

/// Row-major C (M x N) = alpha * op(A) x op(B) + beta * C. op(A) is M x K:
/// A is stored M x K, or K x M when transA. op(B) is K x N: B is stored
/// K x N, or N x K when transB. Leading dimensions are the elements from one
/// row to the next (at least the row's length, and at least 1). With
/// `batch` > 1, product i reads A + i * strideA and B + i * strideB and
/// writes C + i * strideC (strides in elements; 0 broadcasts an operand).
struct GemmRequest {
  weft_rt_dtype dtype = WEFT_RT_F32;
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  bool transA = false;
  bool transB = false;
  int64_t lda = 0;
  int64_t ldb = 0;
  int64_t ldc = 0;
  int64_t batch = 1;
  int64_t strideA = 0;
  int64_t strideB = 0;
  int64_t strideC = 0;
};

/// Which of the request's operands a cuBLAS argument is.
enum class GemmOperand { A, B };

/// The arguments of cublasGemmEx for a GemmRequest, in cuBLAS's order:
/// cublasGemmEx(handle, transa, transb, m, n, k, &alpha, <first>, dataType,
/// lda, <second>, dataType, ldb, &beta, C, dataType, ldc, computeType, ...),
/// or of cublasGemmStridedBatchedEx when batchCount > 1 (each operand
/// followed by its stride, batchCount before computeType). alpha and beta
/// are doubles for CUBLAS_COMPUTE_64F and floats otherwise.
struct CublasGemmCall {
  cublasOperation_t transa = CUBLAS_OP_N;
  cublasOperation_t transb = CUBLAS_OP_N;
  int m = 0;
  int n = 0;
  int k = 0;
  GemmOperand first = GemmOperand::B;
  GemmOperand second = GemmOperand::A;
  int lda = 0;
  int ldb = 0;
  int ldc = 0;
  /// Of A, B and C alike.
  cudaDataType_t dataType = CUDA_R_32F;
  /// CUBLAS_COMPUTE_32F for f32 (without TF32, which only
  /// CUBLAS_COMPUTE_32F_FAST_TF32 or the TF32 math mode would allow), and for
  /// f16 and bf16 (f32 accumulation); CUBLAS_COMPUTE_64F for f64.
  cublasComputeType_t computeType = CUBLAS_COMPUTE_32F;
  /// Products and the strides between them, in elements.
  int batchCount = 1;
  long long strideFirst = 0;
  long long strideSecond = 0;
  long long strideC = 0;
  /// True when alpha and beta are doubles (CUBLAS_COMPUTE_64F).
  bool doubleScalars = false;
};

/// Fills *out_call for `request`. Fails with WEFT_RT_INVALID_ARGUMENT for a
/// negative size, stride or batch, a leading dimension too small or batches
/// of C that overlap, WEFT_RT_UNSUPPORTED for a dtype other than f32, f64,
/// f16, bf16 or a size beyond cuBLAS's 32-bit ints.
weft_rt_status planGemm(weft_rt_context *ctx, const GemmRequest &request,
                        CublasGemmCall *out_call);

} // namespace weft::rt::cuda

#endif // WEFT_RUNTIME_CUDA_GEMMPLAN_H
