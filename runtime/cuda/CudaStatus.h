//===- CudaStatus.h - CUDA, cuBLAS and NCCL errors as statuses --*- C++ -*-===//
//
// Check macros that turn a failed CUDA runtime, cuBLAS or NCCL call into a
// weft_rt_status with a message in the context naming the call, the file and
// line, and the library's own text. Nothing here prints or aborts.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_CUDA_CUDASTATUS_H
#define WEFT_RUNTIME_CUDA_CUDASTATUS_H

#include "weft_rt.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

namespace weft::rt::cuda {

/// The status a failed CUDA runtime call maps to: WEFT_RT_DEVICE_UNAVAILABLE
/// for a missing or unusable GPU or driver, WEFT_RT_OUT_OF_MEMORY for an
/// allocation, else `otherwise`.
weft_rt_status statusOfCudaError(cudaError_t error, weft_rt_status otherwise);

/// The status a failed cuBLAS call maps to (NOT_INITIALIZED, which is what
/// cublasCreate returns without a usable GPU: device unavailable).
weft_rt_status statusOfCublasError(cublasStatus_t error);

/// Records "<call> failed at <file>:<line>: <CUDA's text> (<error name>)" in
/// ctx and returns statusOfCudaError(error, otherwise).
weft_rt_status cudaFail(weft_rt_context *ctx, cudaError_t error,
                        weft_rt_status otherwise, const char *call,
                        const char *file, int line);
/// The same for cuBLAS (cublasGetStatusString's text).
weft_rt_status cublasFail(weft_rt_context *ctx, cublasStatus_t error,
                          const char *call, const char *file, int line);
/// The same for NCCL (ncclGetErrorString and ncclGetLastError's detail);
/// always WEFT_RT_COMM_ERROR.
weft_rt_status ncclFail(weft_rt_context *ctx, ncclResult_t error,
                        const char *call, const char *file, int line);

} // namespace weft::rt::cuda

/// Returns from the calling function when a CUDA runtime call fails, with
/// statusOfCudaError(error, otherwise). `otherwise` is the status of errors
/// that are neither a missing device nor a failed allocation (usually
/// WEFT_RT_INTERNAL).
#define WEFT_CUDA_CHECK(ctx, otherwise, call)                                  \
  do {                                                                         \
    cudaError_t weftCudaError = (call);                                        \
    if (weftCudaError != cudaSuccess)                                          \
      return ::weft::rt::cuda::cudaFail((ctx), weftCudaError, (otherwise),     \
                                        #call, __FILE__, __LINE__);            \
  } while (0)

/// Returns from the calling function when a cuBLAS call fails.
#define WEFT_CUBLAS_CHECK(ctx, call)                                           \
  do {                                                                         \
    cublasStatus_t weftCublasError = (call);                                   \
    if (weftCublasError != CUBLAS_STATUS_SUCCESS)                              \
      return ::weft::rt::cuda::cublasFail((ctx), weftCublasError, #call,       \
                                          __FILE__, __LINE__);                 \
  } while (0)

/// Returns from the calling function when an NCCL call fails.
#define WEFT_NCCL_CHECK(ctx, call)                                             \
  do {                                                                         \
    ncclResult_t weftNcclError = (call);                                       \
    if (weftNcclError != ncclSuccess)                                          \
      return ::weft::rt::cuda::ncclFail((ctx), weftNcclError, #call, __FILE__, \
                                        __LINE__);                             \
  } while (0)

#endif // WEFT_RUNTIME_CUDA_CUDASTATUS_H
