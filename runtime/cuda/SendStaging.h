//===- SendStaging.h - Device buffers that a SEND op sends from -*- C++ -*-===//
//
// A SEND on its own transfer stream (NcclTransfer.h) cannot read the buffer
// that generated code passes it: that buffer lies in the arena, which the
// next kernels on the compute stream may overwrite as soon as the call
// returns. So each SEND op copies its data into a device buffer of its own
// first, kept from one run to the next, and the transfer stream sends from
// there. SendStaging keeps those buffers, keyed by the op's parameter block
// (generated code passes each op a constant block of its own, so its address
// names the op, as for the context's kernelCache), with the event that marks
// the end of the op's last send from its buffer.
//
// The CUDA calls go through StagingApi, so that tests can stand in for them
// without a GPU. Only the CUDA runtime is used here: DeviceState owns the
// staging, and programs of one GPU link no NCCL.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_CUDA_SENDSTAGING_H
#define WEFT_RUNTIME_CUDA_SENDSTAGING_H

#include "weft_rt.h"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <unordered_map>

namespace weft::rt::cuda {

/// The CUDA calls SendStaging makes.
struct StagingApi {
  /// cudaMalloc.
  cudaError_t (*allocate)(void **ptr, size_t bytes);
  /// cudaFree.
  cudaError_t (*free)(void *ptr);
  /// cudaEventCreateWithFlags(event, cudaEventDisableTiming).
  cudaError_t (*createEvent)(cudaEvent_t *event);
  /// cudaEventDestroy.
  cudaError_t (*destroyEvent)(cudaEvent_t event);
  /// cudaEventSynchronize: the host waits for the event.
  cudaError_t (*synchronizeEvent)(cudaEvent_t event);
};

/// The real CUDA runtime.
StagingApi realStagingApi();

/// One SEND op's staging buffer.
struct SendSlot {
  /// `bytes` of device memory.
  void *buffer = nullptr;
  size_t bytes = 0;
  /// Recorded on the transfer stream after the op's last send from
  /// `buffer`; before the compute stream overwrites `buffer`, it waits for
  /// it. Meaningful only once `sent` is true.
  cudaEvent_t sentEvent = nullptr;
  bool sent = false;
};

/// The staging buffers of a program's SEND ops; owned by its DeviceState.
class SendStaging {
public:
  explicit SendStaging(StagingApi api = realStagingApi()) : api(api) {}
  SendStaging(const SendStaging &) = delete;
  SendStaging &operator=(const SendStaging &) = delete;
  /// Frees every buffer and event. Nothing may still read a buffer: the
  /// owner waits for the transfer stream first.
  ~SendStaging();

  /// The slot of the op named by `params`, of at least `bytes` (> 0)
  /// bytes: made at the op's first call (its buffer allocated, its event
  /// created), then the same one. Where the block's address comes back with
  /// more bytes (a freed block whose address was reused, which generated
  /// code never does), the host waits for the slot's last send before the
  /// buffer is replaced. A failure (WEFT_RT_OUT_OF_MEMORY naming the bytes,
  /// or the CUDA call's own) leaves no slot for `params` behind.
  weft_rt_status slotFor(weft_rt_context *ctx, const int64_t *params,
                         size_t bytes, SendSlot **out_slot);

  /// How many slots there are, and their bytes together.
  size_t size() const { return slots.size(); }
  size_t bytesHeld() const;

private:
  /// Frees the slot's buffer and event (what of them there is).
  void release(SendSlot &slot);

  StagingApi api;
  std::unordered_map<const int64_t *, SendSlot> slots;
};

} // namespace weft::rt::cuda

#endif // WEFT_RUNTIME_CUDA_SENDSTAGING_H
