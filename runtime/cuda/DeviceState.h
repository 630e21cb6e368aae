//===- DeviceState.h - What a running CUDA program's kernels share -*- C++
//-*-===//
//
// One GPU program runs on one device and one compute stream, plus a stream
// for a pipeline stage's transfers (NcclTransfer.h). Its kernels find the
// streams, the library handles bound to the compute stream and a scratch
// buffer through the context, where the CUDA model attaches them before a
// run.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_CUDA_DEVICESTATE_H
#define WEFT_RUNTIME_CUDA_DEVICESTATE_H

#include "cuda/Device.h"
#include "cuda/Gemm.h"
#include "cuda/SendStaging.h"

#include <cudnn.h>

#include <cstddef>
#include <memory>
#include <vector>

namespace weft::rt::cuda {

/// The NCCL communicators of a program that is one device of a mesh
/// (runtime/cuda/NcclComm.h).
class NcclMesh;

/// Everything kernels need from the program's device. Created once when a
/// CUDA model is created (so that a run allocates nothing but the staging
/// of its sends, at their first run) and attached to its context. Kernels
/// queue their work on `stream` and never synchronize: the model waits for
/// both streams once after the run (synchronizeDeviceState).
struct DeviceState {
  DeviceInfo info;
  /// The compute stream: every kernel, copy and collective.
  Stream stream;
  /// SEND and RECV between pipeline stages, joined to `stream` by
  /// `handoff`, `arrived` and the staging's events (NcclTransfer.h). Idle
  /// where NCCL cannot order it against the collectives (NcclMesh::
  /// transferStream).
  Stream transferStream;
  Event handoff;
  Event arrived;
  /// The SEND ops' staging buffers; read by the transfer stream.
  SendStaging sendStaging;
  /// Bound to `stream`, CUBLAS_DEFAULT_MATH (no TF32 for f32).
  CublasHandle cublas;
  /// Bound to `stream`; null until the first kernel that needs cuDNN
  /// creates it (cudnnCreate loads cuDNN's sub-libraries: a program with no
  /// convolution does not pay for it). Destroyed with the state.
  cudnnHandle_t cudnn = nullptr;
  /// Device scratch memory for library calls (cuDNN algorithms, cuBLAS),
  /// `workspaceBytes` long, allocated with the state. A kernel that needs
  /// more picks another algorithm or fails with a message that says so.
  void *workspace = nullptr;
  size_t workspaceBytes = 0;
  /// The mesh's NCCL communicators for collectives; not owned. Null for a
  /// single device.
  NcclMesh *nccl = nullptr;

  DeviceState() = default;
  DeviceState(const DeviceState &) = delete;
  DeviceState &operator=(const DeviceState &) = delete;
  ~DeviceState();
};

/// The default scratch size: enough for cuDNN's fast convolution
/// algorithms on the shared models.
inline constexpr size_t kDefaultWorkspaceBytes = size_t(64) << 20;

/// Opens GPU `ordinal` (openDevice: fails with WEFT_RT_DEVICE_UNAVAILABLE
/// and a clear message without a usable one), creates the streams, their
/// events and the cuBLAS handle and allocates `workspaceBytes` of scratch.
/// On failure *out_state is left as it was: what was made is freed.
weft_rt_status createDeviceState(weft_rt_context *ctx, int ordinal,
                                 const std::vector<int> &architectures,
                                 size_t workspaceBytes,
                                 std::unique_ptr<DeviceState> *out_state);

/// Waits for both streams (the transfer stream's sends too), even when the
/// first fails, and reports the first failure. A stream never created is
/// not waited for.
weft_rt_status synchronizeDeviceState(weft_rt_context *ctx, DeviceState &state);

/// The state of the CUDA program running with ctx. When none is attached
/// (a kernel called outside a CUDA model), fails ctx with WEFT_RT_INTERNAL,
/// naming `kernel`, and returns null.
DeviceState *deviceStateOf(weft_rt_context *ctx, const char *kernel);

/// Attaches (or with null detaches) the state kernels of ctx use; not owned.
void attachDeviceState(weft_rt_context *ctx, DeviceState *state);

/// The cuDNN handle of `state`, created on first use and bound to its
/// stream. Fails (WEFT_RT_DEVICE_UNAVAILABLE when cuDNN cannot be loaded)
/// with the library's text in ctx.
weft_rt_status cudnnHandleOf(weft_rt_context *ctx, DeviceState &state,
                             cudnnHandle_t *out_handle);

} // namespace weft::rt::cuda

#endif // WEFT_RUNTIME_CUDA_DEVICESTATE_H
