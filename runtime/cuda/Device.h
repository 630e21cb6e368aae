//===- Device.h - CUDA devices, the device arena and copies -----*- C++ -*-===//
//
// Opening a GPU for a program (with the checks that make "device
// unavailable" a clear message rather than a crash), the arena a program
// runs in (one cudaMalloc at start), its streams and the events that order
// them, and copies between host and arena. Every call returns a status with
// the message in the context.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_CUDA_DEVICE_H
#define WEFT_RUNTIME_CUDA_DEVICE_H

#include "weft_rt.h"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace weft::rt::cuda {

/// What a program needs to know of the GPU it runs on.
struct DeviceInfo {
  int ordinal = -1;
  std::string name;
  /// Compute capability: sm_<major><minor>.
  int major = 0;
  int minor = 0;
  size_t totalMemory = 0;
  int multiProcessorCount = 0;
};

/// "" when a GPU of compute capability major.minor can run a package built
/// for `architectures` (as 80, 90: sm_80, sm_90), else why not: "GPU sm_75
/// is older than the package's architectures (sm_80, sm_90)". Only devices
/// older than the oldest architecture are refused here; whether a newer one
/// needs PTX is the loader's to say. An empty list or a value below 10 is a
/// caller's bug and reported as such.
std::string checkArchitecture(int major, int minor,
                              const std::vector<int> &architectures);

/// Makes GPU `ordinal` current for this thread and describes it in *out_info.
/// Fails with WEFT_RT_DEVICE_UNAVAILABLE when there is no usable GPU ("no
/// CUDA device", or the driver's own text with the call that failed), when
/// `ordinal` is not below the device count, or when checkArchitecture
/// refuses the GPU; with WEFT_RT_INVALID_ARGUMENT for a negative ordinal or
/// a malformed architecture list.
weft_rt_status openDevice(weft_rt_context *ctx, int ordinal,
                          const std::vector<int> &architectures,
                          DeviceInfo *out_info);

/// A CUDA stream owned by this object (non-blocking with respect to the
/// legacy default stream).
class Stream {
public:
  Stream() = default;
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;
  ~Stream();

  /// Creates the stream on the current device; fails if it already has one.
  weft_rt_status create(weft_rt_context *ctx);
  /// Waits until everything queued on the stream is done; reports the first
  /// asynchronous failure of its work.
  weft_rt_status synchronize(weft_rt_context *ctx);
  cudaStream_t get() const { return stream; }

private:
  cudaStream_t stream = nullptr;
};

/// A CUDA event owned by this object, created without timing (it only
/// orders streams: a wait on it is cheaper then).
class Event {
public:
  Event() = default;
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;
  ~Event();

  /// Creates the event on the current device; fails if it already has one.
  weft_rt_status create(weft_rt_context *ctx);
  cudaEvent_t get() const { return event; }

private:
  cudaEvent_t event = nullptr;
};

/// Fails ctx with WEFT_RT_INVALID_ARGUMENT unless [offset, offset + bytes)
/// lies within an arena of `arenaBytes` bytes (without overflowing);
/// `what` names the copy in the message ("input 'x'").
weft_rt_status checkArenaRange(weft_rt_context *ctx, size_t arenaBytes,
                               size_t offset, size_t bytes, const char *what);

/// A program's device memory: one cudaMalloc of the planned peak at start
/// (never managed memory), freed by the destructor. Generated code then
/// allocates nothing.
class DeviceArena {
public:
  DeviceArena() = default;
  DeviceArena(const DeviceArena &) = delete;
  DeviceArena &operator=(const DeviceArena &) = delete;
  ~DeviceArena();

  /// Allocates `bytes` (a signature's "arena" record) on the current device.
  /// On failure the message names the planned bytes and cudaMemGetInfo's
  /// free and total bytes. Fails if this arena is already allocated.
  weft_rt_status allocate(weft_rt_context *ctx, size_t bytes);
  /// Copies `bytes` from host memory `src` to arena offset `offset`,
  /// asynchronously on `stream`, then waits for it. The range is checked
  /// first (checkArenaRange); `what` names the copy in messages.
  weft_rt_status copyToDevice(weft_rt_context *ctx, Stream &stream,
                              size_t offset, const void *src, size_t bytes,
                              const char *what);
  /// The reverse: arena [offset, offset + bytes) into host memory `dst`.
  weft_rt_status copyToHost(weft_rt_context *ctx, Stream &stream, void *dst,
                            size_t offset, size_t bytes, const char *what);

  /// The device pointer (null before allocate) and its size.
  void *data() const { return base; }
  size_t size() const { return bytes; }

private:
  void *base = nullptr;
  size_t bytes = 0;
};

} // namespace weft::rt::cuda

#endif // WEFT_RUNTIME_CUDA_DEVICE_H
