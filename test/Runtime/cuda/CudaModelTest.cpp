//===- CudaModelTest.cpp - Models of GPU programs -------------------------===//
//
// A "target cuda" program through weft_rt_model_create with the CUDA backend
// installed: without a GPU the failure is "device unavailable" with the
// driver's words; with one, a program that copies its input to its output
// through a generated-kernel-free run round-trips the data through device
// memory. Also the mgpu* entry points' failure outside a run.
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"
#include "cuda/CudaBackend.h"
#include "cuda/GpuLauncher.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

extern "C" void *mgpuStreamCreate();

using namespace weft::rt::cuda;
using namespace weft::rt::cuda::test;

namespace {

/// Copies input x (4 floats at arena offset 0) to output y (offset 64) on
/// the device, as generated code would with a device-to-device copy.
int32_t copyOnDevice(weft_rt_context *ctx, weft_rt_byte_buffer *arena,
                     weft_rt_byte_buffer *) {
  cudaError_t error = cudaMemcpy(arena->aligned + 64, arena->aligned,
                                 4 * sizeof(float), cudaMemcpyDeviceToDevice);
  if (error != cudaSuccess)
    return weft_rt_fail(ctx, WEFT_RT_INTERNAL, "%s", cudaGetErrorString(error));
  return WEFT_RT_OK;
}

const weft_rt_program kCopyProgram = {
    "weft-program 1\narena 128\nweights 0\ntarget cuda sm_75 sm_80 sm_90\n"
    "input x 1 1 4 0\noutput y 1 1 4 64\n",
    copyOnDevice};

TEST(CudaModel, RunsOrSaysTheDeviceIsUnavailable) {
  installCudaBackend();
  ContextPtr ctx = makeContext();
  ASSERT_TRUE(ctx);
  weft_rt_model *model = nullptr;
  weft_rt_status status =
      weft_rt_model_create(ctx.get(), &kCopyProgram, nullptr, &model);
  if (!gpuPresent()) {
    EXPECT_EQ(status, WEFT_RT_DEVICE_UNAVAILABLE);
    EXPECT_EQ(model, nullptr);
    std::string error = weft_rt_context_error(ctx.get());
    EXPECT_NE(error.find("no usable CUDA device"), std::string::npos) << error;
    return;
  }
  ASSERT_EQ(status, WEFT_RT_OK) << weft_rt_context_error(ctx.get());
  const float in[4] = {1.5f, -2.0f, 3.25f, 0.0f};
  std::memcpy(weft_rt_model_input_data(model, 0), in, sizeof(in));
  ASSERT_EQ(weft_rt_model_run(model), WEFT_RT_OK)
      << weft_rt_context_error(ctx.get());
  const void *out = weft_rt_model_output_data(model, 0);
  EXPECT_EQ(std::memcmp(out, in, sizeof(in)), 0);
  weft_rt_model_destroy(model);
}

TEST(CudaModel, LaunchOutsideARunIsAnError) {
  ContextPtr ctx = makeContext();
  ASSERT_TRUE(ctx);
  {
    ScopedLaunchDevice none(nullptr);
    EXPECT_EQ(mgpuStreamCreate(), nullptr);
    EXPECT_EQ(takeLaunchError(ctx.get()), WEFT_RT_INTERNAL);
    std::string error = weft_rt_context_error(ctx.get());
    EXPECT_NE(error.find("launched outside a CUDA model's run"),
              std::string::npos)
        << error;
    // Taken once: the next check is clean.
    EXPECT_EQ(takeLaunchError(ctx.get()), WEFT_RT_OK);
  }
}

} // namespace
