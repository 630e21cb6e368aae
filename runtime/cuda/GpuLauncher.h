//===- GpuLauncher.h - Launching generated GPU kernels -----------*- C++
//-*-===//
//
// Code generated for --target=cuda launches its own kernels (fused
// elementwise loops, lowered by MLIR's gpu -> NVVM path) through the `mgpu*`
// entry points that MLIR's gpu-to-llvm lowering calls. Weft implements them
// here on the CUDA runtime API: every launch goes to the running program's
// stream, and failures are kept for the model to report after the run
// (the entry points return nothing).
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_CUDA_GPULAUNCHER_H
#define WEFT_RUNTIME_CUDA_GPULAUNCHER_H

#include "cuda/DeviceState.h"

#include <string>

namespace weft::rt::cuda {

/// Makes `state` the device of the generated kernels this thread launches,
/// for the scope's life, and clears the launch error.
class ScopedLaunchDevice {
public:
  explicit ScopedLaunchDevice(DeviceState *state);
  ~ScopedLaunchDevice();
  ScopedLaunchDevice(const ScopedLaunchDevice &) = delete;
  ScopedLaunchDevice &operator=(const ScopedLaunchDevice &) = delete;
};

/// Loads every GPU module the program embeds on the current device (they
/// register at start-up, before a device is chosen), so that a run loads
/// nothing and a GPU the package has no code for is refused when the model
/// is created: WEFT_RT_DEVICE_UNAVAILABLE naming the GPU's architecture.
weft_rt_status loadGpuModules(weft_rt_context *ctx, const DeviceInfo &device);

/// The first failure of a generated kernel's load or launch on this thread
/// since the ScopedLaunchDevice began: WEFT_RT_OK, or its status with the
/// message recorded in ctx.
weft_rt_status takeLaunchError(weft_rt_context *ctx);

} // namespace weft::rt::cuda

#endif // WEFT_RUNTIME_CUDA_GPULAUNCHER_H
