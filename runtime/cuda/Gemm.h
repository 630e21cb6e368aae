//===- Gemm.h - GEMMs on cuBLAS ---------------------------------*- C++ -*-===//
//
// A cuBLAS handle bound to a program's stream, and row-major GEMMs on it
// (planGemm's marshalling, then cublasGemmEx).
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_CUDA_GEMM_H
#define WEFT_RUNTIME_CUDA_GEMM_H

#include "cuda/Device.h"
#include "cuda/GemmPlan.h"

#include <cublas_v2.h>

namespace weft::rt::cuda {

/// A cuBLAS handle owned by this object.
class CublasHandle {
public:
  CublasHandle() = default;
  CublasHandle(const CublasHandle &) = delete;
  CublasHandle &operator=(const CublasHandle &) = delete;
  ~CublasHandle();

  /// Creates the handle on the current device, queues its work on `stream`
  /// and sets CUBLAS_DEFAULT_MATH, so that f32 GEMMs never use TF32. Without
  /// a usable GPU this fails with WEFT_RT_DEVICE_UNAVAILABLE.
  weft_rt_status create(weft_rt_context *ctx, Stream &stream);
  cublasHandle_t get() const { return handle; }

private:
  cublasHandle_t handle = nullptr;
};

/// Queues row-major C = alpha * op(A) x op(B) + beta * C (see GemmRequest;
/// every product of a batch) on the handle's stream; a, b and c are device
/// pointers of the request's dtype. alpha and beta are rounded to float
/// except for f64. With beta 0, C is not read. Returns once queued: the
/// stream's synchronize reports failures of the computation itself.
weft_rt_status gemm(weft_rt_context *ctx, CublasHandle &handle,
                    const GemmRequest &request, double alpha, const void *a,
                    const void *b, double beta, void *c);

/// The same on a raw handle (DeviceState's, bound to the program's stream).
weft_rt_status gemm(weft_rt_context *ctx, cublasHandle_t handle,
                    const GemmRequest &request, double alpha, const void *a,
                    const void *b, double beta, void *c);

} // namespace weft::rt::cuda

#endif // WEFT_RUNTIME_CUDA_GEMM_H
