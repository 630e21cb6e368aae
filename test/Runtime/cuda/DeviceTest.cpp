//===- DeviceTest.cpp - Opening GPUs, the arena and copies ----------------===//
//
// Without a GPU (this repository's CI) every device call must fail with
// WEFT_RT_DEVICE_UNAVAILABLE and the driver's words; with one (a GPU
// runner) they must work. Which of the two applies is decided by the kernel
// driver's files (gpuPresent), not by the code under test.
//
//===----------------------------------------------------------------------===//

#include "cuda/Device.h"
#include "CudaTestSupport.h"
#include "cuda/CudaStatus.h"
#include "cuda/DeviceState.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

using namespace weft::rt::cuda;
using namespace weft::rt::cuda::test;

namespace {

const std::vector<int> kArchitectures = {80, 90};

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

// Tests the architecture check on its own, GPU or not.
TEST(CudaDevice, ArchitectureCheck) {
  EXPECT_EQ(checkArchitecture(7, 5, kArchitectures),
            "GPU sm_75 is older than the package's architectures (sm_80, "
            "sm_90)");
  EXPECT_EQ(checkArchitecture(8, 0, kArchitectures), "");
  EXPECT_EQ(checkArchitecture(8, 6, kArchitectures), "");
  EXPECT_EQ(checkArchitecture(9, 0, kArchitectures), "");
  EXPECT_EQ(checkArchitecture(12, 0, {90, 80}), "");
  EXPECT_EQ(checkArchitecture(8, 9, {90}),
            "GPU sm_89 is older than the package's architectures (sm_90)");
  EXPECT_NE(checkArchitecture(9, 0, {}), "");
  EXPECT_TRUE(contains(checkArchitecture(9, 0, {9}), "malformed"));
}

// Tests which CUDA and cuBLAS errors mean "device unavailable".
TEST(CudaDevice, ErrorMapping) {
  EXPECT_EQ(statusOfCudaError(cudaErrorInsufficientDriver, WEFT_RT_INTERNAL),
            WEFT_RT_DEVICE_UNAVAILABLE);
  EXPECT_EQ(statusOfCudaError(cudaErrorNoDevice, WEFT_RT_INTERNAL),
            WEFT_RT_DEVICE_UNAVAILABLE);
  EXPECT_EQ(statusOfCudaError(cudaErrorMemoryAllocation, WEFT_RT_INTERNAL),
            WEFT_RT_OUT_OF_MEMORY);
  EXPECT_EQ(statusOfCudaError(cudaErrorIllegalAddress, WEFT_RT_INTERNAL),
            WEFT_RT_INTERNAL);
  EXPECT_EQ(statusOfCudaError(cudaSuccess, WEFT_RT_INTERNAL), WEFT_RT_OK);
  EXPECT_EQ(statusOfCublasError(CUBLAS_STATUS_NOT_INITIALIZED),
            WEFT_RT_DEVICE_UNAVAILABLE);
  EXPECT_EQ(statusOfCublasError(CUBLAS_STATUS_ALLOC_FAILED),
            WEFT_RT_OUT_OF_MEMORY);
  EXPECT_EQ(statusOfCublasError(CUBLAS_STATUS_INVALID_VALUE), WEFT_RT_INTERNAL);
}

// Tests that the caller's mistakes are reported before CUDA is asked.
TEST(CudaDevice, RejectsBadArguments) {
  auto ctx = makeContext();
  DeviceInfo info;
  EXPECT_EQ(openDevice(ctx.get(), -1, kArchitectures, &info),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(weft_rt_context_error(ctx.get()), "negative"));
  EXPECT_EQ(openDevice(ctx.get(), 0, {}, &info), WEFT_RT_INVALID_ARGUMENT);
  EXPECT_EQ(openDevice(ctx.get(), 0, kArchitectures, nullptr),
            WEFT_RT_INVALID_ARGUMENT);
}

// Tests device 0: unavailable, in the driver's words, exactly when the
// machine has no GPU.
TEST(CudaDevice, OpenDeviceZero) {
  auto ctx = makeContext();
  DeviceInfo info;
  weft_rt_status status = openDevice(ctx.get(), 0, kArchitectures, &info);
  std::string message = weft_rt_context_error(ctx.get());
  if (gpuPresent()) {
    // A GPU older than sm_80 is the one acceptable failure.
    if (status == WEFT_RT_DEVICE_UNAVAILABLE &&
        contains(message, "is older than"))
      GTEST_SKIP() << message;
    ASSERT_EQ(status, WEFT_RT_OK) << message;
    EXPECT_EQ(info.ordinal, 0);
    EXPECT_FALSE(info.name.empty());
    EXPECT_GE(info.major * 10 + info.minor, 80);
    EXPECT_GT(info.totalMemory, 0u);
    return;
  }
  EXPECT_EQ(status, WEFT_RT_DEVICE_UNAVAILABLE) << message;
  // What the driver says, asked independently: its text, or no device.
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    EXPECT_TRUE(contains(message, cudaGetErrorString(error))) << message;
    EXPECT_TRUE(contains(message, "cudaGetDeviceCount")) << message;
    // CUDA's "insufficient" also covers a machine without any driver.
    int driverVersion = -1;
    if (error == cudaErrorInsufficientDriver &&
        cudaDriverGetVersion(&driverVersion) == cudaSuccess &&
        driverVersion == 0) {
      EXPECT_TRUE(contains(message, "no NVIDIA driver is installed"))
          << message;
    }
  } else {
    EXPECT_EQ(count, 0);
    EXPECT_TRUE(contains(message, "no CUDA device")) << message;
  }
}

// Tests that an ordinal past the last device is unavailable either way.
TEST(CudaDevice, OrdinalBeyondDevices) {
  auto ctx = makeContext();
  DeviceInfo info;
  EXPECT_EQ(openDevice(ctx.get(), 1000, kArchitectures, &info),
            WEFT_RT_DEVICE_UNAVAILABLE);
  std::string message = weft_rt_context_error(ctx.get());
  if (gpuPresent()) {
    EXPECT_TRUE(contains(message, "device 1000 was asked for")) << message;
  }
}

// Tests the events that order the compute and transfer streams:
// unavailable without a GPU, holding nothing; made once with one.
TEST(CudaDevice, Events) {
  auto ctx = makeContext();
  Event event;
  if (!gpuPresent()) {
    EXPECT_EQ(event.create(ctx.get()), WEFT_RT_DEVICE_UNAVAILABLE);
    EXPECT_EQ(event.get(), nullptr);
    EXPECT_TRUE(
        contains(weft_rt_context_error(ctx.get()), "cudaEventCreateWithFlags"))
        << weft_rt_context_error(ctx.get());
    return;
  }
  DeviceInfo info;
  ASSERT_EQ(openDevice(ctx.get(), 0, {80}, &info), WEFT_RT_OK)
      << weft_rt_context_error(ctx.get());
  ASSERT_EQ(event.create(ctx.get()), WEFT_RT_OK)
      << weft_rt_context_error(ctx.get());
  EXPECT_NE(event.get(), nullptr);
  EXPECT_EQ(event.create(ctx.get()), WEFT_RT_INTERNAL);
}

// Tests that a device state is made whole or not at all: without a GPU
// createDeviceState fails as openDevice does and hands back nothing; with
// one, the state has its two streams and their events.
TEST(CudaDeviceState, CreatedWholeOrNotAtAll) {
  auto ctx = makeContext();
  std::unique_ptr<DeviceState> state;
  weft_rt_status status = createDeviceState(ctx.get(), 0, kArchitectures,
                                            kDefaultWorkspaceBytes, &state);
  if (!gpuPresent()) {
    EXPECT_EQ(status, WEFT_RT_DEVICE_UNAVAILABLE);
    EXPECT_EQ(state, nullptr);
    EXPECT_TRUE(
        contains(weft_rt_context_error(ctx.get()), "no usable CUDA device"))
        << weft_rt_context_error(ctx.get());
    return;
  }
  ASSERT_EQ(status, WEFT_RT_OK) << weft_rt_context_error(ctx.get());
  ASSERT_NE(state, nullptr);
  EXPECT_NE(state->stream.get(), nullptr);
  EXPECT_NE(state->transferStream.get(), nullptr);
  EXPECT_NE(state->stream.get(), state->transferStream.get());
  EXPECT_NE(state->handoff.get(), nullptr);
  EXPECT_NE(state->arrived.get(), nullptr);
  EXPECT_EQ(state->sendStaging.size(), 0u);
  EXPECT_EQ(synchronizeDeviceState(ctx.get(), *state), WEFT_RT_OK)
      << weft_rt_context_error(ctx.get());
}

// Tests that waiting for a state whose streams were never made asks no
// device (the state of a kernel test without a GPU): a wait on a null
// stream would fail here without a GPU, and wait for the whole device with
// one.
TEST(CudaDeviceState, WaitingForNoStreamsTouchesNoDevice) {
  auto ctx = makeContext();
  DeviceState state;
  EXPECT_EQ(synchronizeDeviceState(ctx.get(), state), WEFT_RT_OK)
      << weft_rt_context_error(ctx.get());
}

// Tests the arena's range check, overflow included.
TEST(CudaArena, RangeCheck) {
  auto ctx = makeContext();
  EXPECT_EQ(checkArenaRange(ctx.get(), 100, 0, 100, "x"), WEFT_RT_OK);
  EXPECT_EQ(checkArenaRange(ctx.get(), 100, 100, 0, "x"), WEFT_RT_OK);
  EXPECT_EQ(checkArenaRange(ctx.get(), 100, 60, 41, "input 'x'"),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(weft_rt_context_error(ctx.get()), "input 'x'"));
  EXPECT_TRUE(contains(weft_rt_context_error(ctx.get()), "100 bytes"));
  EXPECT_EQ(checkArenaRange(ctx.get(), 100, 101, 0, "x"),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_EQ(checkArenaRange(ctx.get(), 100, SIZE_MAX, 2, "x"),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_EQ(checkArenaRange(ctx.get(), 100, 2, SIZE_MAX, "x"),
            WEFT_RT_INVALID_ARGUMENT);
}

// Tests copies before the arena or the stream exist.
TEST(CudaArena, CopyNeedsArenaAndStream) {
  auto ctx = makeContext();
  DeviceArena arena;
  Stream stream;
  char host[4] = {};
  EXPECT_EQ(arena.copyToDevice(ctx.get(), stream, 0, host, 4, "input 'x'"),
            WEFT_RT_INTERNAL);
  EXPECT_TRUE(contains(weft_rt_context_error(ctx.get()), "not allocated"));
  EXPECT_EQ(arena.copyToHost(ctx.get(), stream, host, 0, 4, "output 'y'"),
            WEFT_RT_INTERNAL);
}

// Tests the arena, the stream and both copies: unavailable without a GPU
// (the message naming the planned bytes), a round trip with one.
TEST(CudaArena, AllocateAndCopy) {
  auto ctx = makeContext();
  DeviceArena arena;
  constexpr size_t kBytes = 1 << 20;
  if (!gpuPresent()) {
    EXPECT_EQ(arena.allocate(ctx.get(), kBytes), WEFT_RT_DEVICE_UNAVAILABLE);
    std::string message = weft_rt_context_error(ctx.get());
    EXPECT_TRUE(contains(message, "arena of 1048576 bytes")) << message;
    Stream stream;
    EXPECT_EQ(stream.create(ctx.get()), WEFT_RT_DEVICE_UNAVAILABLE);
    // cuBLAS agrees: its handle cannot be created either.
    cublasHandle_t handle = nullptr;
    cublasStatus_t created = cublasCreate(&handle);
    EXPECT_EQ(statusOfCublasError(created), WEFT_RT_DEVICE_UNAVAILABLE)
        << cublasGetStatusName(created);
    if (created == CUBLAS_STATUS_SUCCESS)
      cublasDestroy(handle);
    return;
  }
  DeviceInfo info;
  ASSERT_EQ(openDevice(ctx.get(), 0, {80}, &info), WEFT_RT_OK)
      << weft_rt_context_error(ctx.get());
  ASSERT_EQ(arena.allocate(ctx.get(), kBytes), WEFT_RT_OK)
      << weft_rt_context_error(ctx.get());
  EXPECT_EQ(arena.size(), kBytes);
  Stream stream;
  ASSERT_EQ(stream.create(ctx.get()), WEFT_RT_OK)
      << weft_rt_context_error(ctx.get());
  std::vector<uint8_t> in(4096), out(4096);
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = static_cast<uint8_t>(i * 13 + 1);
  ASSERT_EQ(arena.copyToDevice(ctx.get(), stream, kBytes - 4096, in.data(),
                               in.size(), "in"),
            WEFT_RT_OK)
      << weft_rt_context_error(ctx.get());
  ASSERT_EQ(arena.copyToHost(ctx.get(), stream, out.data(), kBytes - 4096,
                             out.size(), "out"),
            WEFT_RT_OK)
      << weft_rt_context_error(ctx.get());
  EXPECT_EQ(in, out);
  EXPECT_EQ(arena.copyToHost(ctx.get(), stream, out.data(), kBytes - 4095,
                             out.size(), "out"),
            WEFT_RT_INVALID_ARGUMENT);
  // More than the device has: out of memory, naming free and total.
  DeviceArena huge;
  EXPECT_EQ(huge.allocate(ctx.get(), info.totalMemory * 2),
            WEFT_RT_OUT_OF_MEMORY);
  EXPECT_TRUE(contains(weft_rt_context_error(ctx.get()), "bytes free of"))
      << weft_rt_context_error(ctx.get());
}

} // namespace
