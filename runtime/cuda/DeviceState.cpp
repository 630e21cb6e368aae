//===- DeviceState.cpp - What a running CUDA program's kernels share -----===//
//
// Finding the state through the context, waiting for its two streams, and
// cuDNN's handle made on first use.
//
//===----------------------------------------------------------------------===//

#include "cuda/DeviceState.h"
#include "core/Context.h"
#include "cuda/CudaStatus.h"

#include <string>

using namespace weft::rt::cuda;

DeviceState::~DeviceState() {
  // Destructors cannot report; a failure here means the device is gone.
  // The transfer stream may still read the staging buffers, which the
  // members' destructors free next.
  if (transferStream.get())
    cudaStreamSynchronize(transferStream.get());
  if (cudnn)
    cudnnDestroy(cudnn);
  if (workspace)
    cudaFree(workspace);
}

weft_rt_status weft::rt::cuda::createDeviceState(
    weft_rt_context *ctx, int ordinal, const std::vector<int> &architectures,
    size_t workspaceBytes, std::unique_ptr<DeviceState> *out_state) {
  auto state = std::make_unique<DeviceState>();
  if (weft_rt_status status =
          openDevice(ctx, ordinal, architectures, &state->info))
    return status;
  if (weft_rt_status status = state->stream.create(ctx))
    return status;
  if (weft_rt_status status = state->transferStream.create(ctx))
    return status;
  if (weft_rt_status status = state->handoff.create(ctx))
    return status;
  if (weft_rt_status status = state->arrived.create(ctx))
    return status;
  if (weft_rt_status status = state->cublas.create(ctx, state->stream))
    return status;
  if (workspaceBytes > 0) {
    cudaError_t error = cudaMalloc(&state->workspace, workspaceBytes);
    if (error != cudaSuccess) {
      state->workspace = nullptr;
      size_t freeBytes = 0, totalBytes = 0;
      cudaMemGetInfo(&freeBytes, &totalBytes);
      return weft_rt_fail(ctx, statusOfCudaError(error, WEFT_RT_INTERNAL),
                          "cannot allocate %zu bytes of CUDA scratch memory "
                          "on device %d (%zu of %zu bytes free): %s",
                          workspaceBytes, ordinal, freeBytes, totalBytes,
                          cudaGetErrorString(error));
    }
    state->workspaceBytes = workspaceBytes;
    // cuBLAS would otherwise allocate its own workspace at its first GEMM,
    // inside a run. Kernels share the scratch: they run one after another
    // on the one stream.
    WEFT_CUBLAS_CHECK(ctx,
                      cublasSetWorkspace(state->cublas.get(), state->workspace,
                                         workspaceBytes));
  }
  *out_state = std::move(state);
  return WEFT_RT_OK;
}

DeviceState *weft::rt::cuda::deviceStateOf(weft_rt_context *ctx,
                                           const char *kernel) {
  if (!ctx)
    return nullptr;
  if (!ctx->cudaDeviceState) {
    weft_rt_fail(ctx, WEFT_RT_INTERNAL,
                 "CUDA kernel %s was called without a CUDA device attached to "
                 "its context (only a CUDA model's run may call it)",
                 kernel);
    return nullptr;
  }
  return static_cast<DeviceState *>(ctx->cudaDeviceState);
}

weft_rt_status weft::rt::cuda::synchronizeDeviceState(weft_rt_context *ctx,
                                                      DeviceState &state) {
  weft_rt_status computed =
      state.stream.get() ? state.stream.synchronize(ctx) : WEFT_RT_OK;
  // Also after a failure: a receive on the transfer stream may still write
  // the arena. Its own failure is reported only when the first wait passed.
  std::string first = weft_rt_context_error(ctx);
  weft_rt_status transferred = state.transferStream.get()
                                   ? state.transferStream.synchronize(ctx)
                                   : WEFT_RT_OK;
  if (computed == WEFT_RT_OK)
    return transferred;
  weft_rt_fail(ctx, computed, "%s", first.c_str());
  return computed;
}

/// Context::waitForDevice of a CUDA program: both streams, so that a
/// profiled SEND or RECV ends when its transfer does (failures surface at
/// the model's synchronize after the run).
static void waitForStreams(void *state) {
  auto *device = static_cast<DeviceState *>(state);
  if (device->stream.get())
    cudaStreamSynchronize(device->stream.get());
  if (device->transferStream.get())
    cudaStreamSynchronize(device->transferStream.get());
}

void weft::rt::cuda::attachDeviceState(weft_rt_context *ctx,
                                       DeviceState *state) {
  if (!ctx)
    return;
  ctx->cudaDeviceState = state;
  ctx->waitForDevice = state ? waitForStreams : nullptr;
}

weft_rt_status weft::rt::cuda::cudnnHandleOf(weft_rt_context *ctx,
                                             DeviceState &state,
                                             cudnnHandle_t *out_handle) {
  if (!state.cudnn) {
    cudnnHandle_t handle = nullptr;
    cudnnStatus_t status = cudnnCreate(&handle);
    if (status != CUDNN_STATUS_SUCCESS)
      return weft_rt_fail(ctx, WEFT_RT_DEVICE_UNAVAILABLE,
                          "cannot start cuDNN: cudnnCreate failed: %s",
                          cudnnGetErrorString(status));
    status = cudnnSetStream(handle, state.stream.get());
    if (status != CUDNN_STATUS_SUCCESS) {
      cudnnDestroy(handle);
      return weft_rt_fail(ctx, WEFT_RT_INTERNAL, "cudnnSetStream failed: %s",
                          cudnnGetErrorString(status));
    }
    state.cudnn = handle;
  }
  *out_handle = state.cudnn;
  return WEFT_RT_OK;
}
