//===- Gemm.h - Matrix products on OpenBLAS and oneDNN ----------*- C++ -*-===//
//
// The GEMM calls shared by matmul, conv (im2col) and einsum, with the backend
// selectable so that weft-kernel-bench can compare them; private to
// runtime/cpu.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_CPU_GEMM_H
#define WEFT_RUNTIME_CPU_GEMM_H

#include "KernelSupport.h"

namespace weft::rt::cpu {

/// Which library multiplies f32 matrices. Auto is what the kernels use: the
/// faster of the two per shape class, as measured by weft-kernel-bench.
enum class GemmBackend { Auto, OpenBlas, OneDnn };

/// Row-major C = alpha * op(A) x op(B) + beta * C with op(A) MxK, op(B) KxN,
/// on the threads OpenMP's max-threads setting allows (one inside a parallel
/// region).
weft_rt_status gemmF32(weft_rt_context *ctx, GemmBackend backend, bool transA,
                       bool transB, int64_t m, int64_t n, int64_t k,
                       float alpha, const float *a, int64_t lda, const float *b,
                       int64_t ldb, float beta, float *c, int64_t ldc);

/// y = alpha * x B^T (+ beta * y when beta != 0) for a row vector x of k
/// floats and B of n rows, `ldb` floats apart (Gemv.cpp), on up to
/// `threads` threads; false (nothing written) without AVX2 or AVX-512.
bool gemvTransposedB(int64_t n, int64_t k, float alpha, const float *x,
                     const float *b, int64_t ldb, float beta, float *y,
                     int threads);

/// The same for f64, on OpenBLAS (oneDNN has no dgemm).
weft_rt_status gemmF64(weft_rt_context *ctx, bool transA, bool transB,
                       int64_t m, int64_t n, int64_t k, double alpha,
                       const double *a, int64_t lda, const double *b,
                       int64_t ldb, double beta, double *c, int64_t ldc);

/// weft_rt_cpu_matmul with a chosen f32 backend.
weft_rt_status matmulWith(weft_rt_context *ctx, GemmBackend backend,
                          const int64_t *params, const void *a, const void *b,
                          const void *bias, void *out);

/// Dense batched product out[i] = x[i] (MxK) times y[i] (KxN) for `batch`
/// matrices stored one after another, for dtype f32, f64, i32 or i64 (the
/// contraction step of einsum).
weft_rt_status batchedMatmul(weft_rt_context *ctx, int64_t dtype, int64_t batch,
                             int64_t m, int64_t n, int64_t k, const void *x,
                             const void *y, void *out);

} // namespace weft::rt::cpu

#endif // WEFT_RUNTIME_CPU_GEMM_H
