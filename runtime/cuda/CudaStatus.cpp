//===- CudaStatus.cpp - CUDA, cuBLAS and NCCL errors as statuses ----------===//
//
// Maps the libraries' error codes to weft_rt_status and records their text.
//
//===----------------------------------------------------------------------===//

#include "cuda/CudaStatus.h"

#include <cstring>

using namespace weft::rt::cuda;

/// "Device.cpp" of "/path/to/runtime/cuda/Device.cpp": messages stay short
/// and do not depend on where the runtime was built.
static const char *baseName(const char *file) {
  const char *slash = std::strrchr(file, '/');
  return slash ? slash + 1 : file;
}

weft_rt_status weft::rt::cuda::statusOfCudaError(cudaError_t error,
                                                 weft_rt_status otherwise) {
  switch (error) {
  case cudaSuccess:
    return WEFT_RT_OK;
  case cudaErrorInsufficientDriver:
  case cudaErrorNoDevice:
  case cudaErrorInvalidDevice:
  case cudaErrorDevicesUnavailable:
  case cudaErrorStubLibrary:
  case cudaErrorSystemDriverMismatch:
  case cudaErrorCompatNotSupportedOnDevice:
  case cudaErrorSystemNotReady:
  case cudaErrorInitializationError:
  case cudaErrorNoKernelImageForDevice:
  case cudaErrorUnsupportedPtxVersion:
    return WEFT_RT_DEVICE_UNAVAILABLE;
  case cudaErrorMemoryAllocation:
    return WEFT_RT_OUT_OF_MEMORY;
  default:
    return otherwise;
  }
}

weft_rt_status weft::rt::cuda::statusOfCublasError(cublasStatus_t error) {
  switch (error) {
  case CUBLAS_STATUS_SUCCESS:
    return WEFT_RT_OK;
  case CUBLAS_STATUS_NOT_INITIALIZED:
  case CUBLAS_STATUS_ARCH_MISMATCH:
    return WEFT_RT_DEVICE_UNAVAILABLE;
  case CUBLAS_STATUS_ALLOC_FAILED:
    return WEFT_RT_OUT_OF_MEMORY;
  case CUBLAS_STATUS_NOT_SUPPORTED:
    return WEFT_RT_UNSUPPORTED;
  default:
    return WEFT_RT_INTERNAL;
  }
}

weft_rt_status weft::rt::cuda::cudaFail(weft_rt_context *ctx, cudaError_t error,
                                        weft_rt_status otherwise,
                                        const char *call, const char *file,
                                        int line) {
  return weft_rt_fail(ctx, statusOfCudaError(error, otherwise),
                      "%s failed at %s:%d: %s (%s)", call, baseName(file), line,
                      cudaGetErrorString(error), cudaGetErrorName(error));
}

weft_rt_status weft::rt::cuda::cublasFail(weft_rt_context *ctx,
                                          cublasStatus_t error,
                                          const char *call, const char *file,
                                          int line) {
  return weft_rt_fail(ctx, statusOfCublasError(error),
                      "%s failed at %s:%d: %s (%s)", call, baseName(file), line,
                      cublasGetStatusString(error), cublasGetStatusName(error));
}
