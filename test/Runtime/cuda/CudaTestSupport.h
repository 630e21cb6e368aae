//===- CudaTestSupport.h - Helpers of the CUDA backend's tests --*- C++ -*-===//
//
// Whether this machine has a GPU, asked of the kernel driver's files rather
// than of CUDA (whose answer is what the tests check), and a context that
// frees itself.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TEST_RUNTIME_CUDA_CUDATESTSUPPORT_H
#define WEFT_TEST_RUNTIME_CUDA_CUDATESTSUPPORT_H

#include "weft_rt.h"

#include <filesystem>
#include <memory>

namespace weft::rt::cuda::test {

/// True when the NVIDIA kernel driver exposes a GPU here.
inline bool gpuPresent() {
  std::error_code error;
  if (std::filesystem::exists("/dev/nvidia0", error))
    return true;
  std::filesystem::path gpus = "/proc/driver/nvidia/gpus";
  if (!std::filesystem::is_directory(gpus, error))
    return false;
  return std::filesystem::directory_iterator(gpus, error) !=
         std::filesystem::directory_iterator();
}

struct ContextDeleter {
  void operator()(weft_rt_context *ctx) const { weft_rt_context_destroy(ctx); }
};
using ContextPtr = std::unique_ptr<weft_rt_context, ContextDeleter>;

inline ContextPtr makeContext() {
  weft_rt_context *ctx = nullptr;
  if (weft_rt_context_create(&ctx) != WEFT_RT_OK)
    return nullptr;
  return ContextPtr(ctx);
}

} // namespace weft::rt::cuda::test

#endif // WEFT_TEST_RUNTIME_CUDA_CUDATESTSUPPORT_H
