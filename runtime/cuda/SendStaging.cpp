//===- SendStaging.cpp - Device buffers that a SEND op sends from ---------===//
//
// A slot is allocated at its op's first call, in the first run: the runtime
// learns of a program's SEND ops and their sizes only from their calls. A
// cudaMalloc may wait for the device's queued work; that work was issued
// before this SEND, so it precedes it in the global order of a pipeline's
// operations (docs/Pipelines.md) and a wait for it cannot deadlock.
//
//===----------------------------------------------------------------------===//

#include "cuda/SendStaging.h"
#include "cuda/CudaStatus.h"

using namespace weft::rt::cuda;

static cudaError_t allocateDevice(void **ptr, size_t bytes) {
  return cudaMalloc(ptr, bytes);
}

static cudaError_t createOrderingEvent(cudaEvent_t *event) {
  return cudaEventCreateWithFlags(event, cudaEventDisableTiming);
}

StagingApi weft::rt::cuda::realStagingApi() {
  return {allocateDevice, cudaFree, createOrderingEvent, cudaEventDestroy,
          cudaEventSynchronize};
}

SendStaging::~SendStaging() {
  // A destructor cannot report; a failure here means the device is gone.
  for (auto &entry : slots)
    release(entry.second);
}

void SendStaging::release(SendSlot &slot) {
  if (slot.buffer)
    api.free(slot.buffer);
  if (slot.sentEvent)
    api.destroyEvent(slot.sentEvent);
  slot = SendSlot();
}

size_t SendStaging::bytesHeld() const {
  size_t total = 0;
  for (const auto &entry : slots)
    total += entry.second.bytes;
  return total;
}

/// Records a failed call of the staging like cudaFail does, naming the op.
static weft_rt_status stagingFail(weft_rt_context *ctx, cudaError_t error,
                                  const char *call, size_t bytes) {
  weft_rt_status status = statusOfCudaError(error, WEFT_RT_INTERNAL);
  return weft_rt_fail(ctx, status,
                      "weft_rt_cuda_collective send: %s failed for the %zu "
                      "bytes of CUDA memory the send is staged in: %s (%s)",
                      call, bytes, cudaGetErrorString(error),
                      cudaGetErrorName(error));
}

weft_rt_status SendStaging::slotFor(weft_rt_context *ctx, const int64_t *params,
                                    size_t bytes, SendSlot **out_slot) {
  if (!params || !out_slot || bytes == 0)
    return weft_rt_fail(ctx, WEFT_RT_INTERNAL,
                        "SendStaging::slotFor: no parameter block, no "
                        "out_slot or no bytes (empty sends are skipped)");
  auto it = slots.find(params);
  if (it != slots.end() && it->second.bytes >= bytes) {
    *out_slot = &it->second;
    return WEFT_RT_OK;
  }
  if (it != slots.end()) {
    // The old buffer may still be read by the transfer stream. The send that
    // reads it was issued earlier, so waiting for it cannot deadlock.
    SendSlot &old = it->second;
    cudaError_t error =
        old.sent ? api.synchronizeEvent(old.sentEvent) : cudaSuccess;
    release(old);
    slots.erase(it);
    if (error != cudaSuccess)
      return stagingFail(ctx, error, "cudaEventSynchronize", bytes);
  }
  SendSlot slot;
  cudaError_t error = api.allocate(&slot.buffer, bytes);
  if (error != cudaSuccess) {
    // A failed allocation is not sticky; the next call may try again.
    slot.buffer = nullptr;
    return stagingFail(ctx, error, "cudaMalloc", bytes);
  }
  slot.bytes = bytes;
  error = api.createEvent(&slot.sentEvent);
  if (error != cudaSuccess) {
    slot.sentEvent = nullptr;
    release(slot);
    return stagingFail(ctx, error, "cudaEventCreateWithFlags", bytes);
  }
  *out_slot = &(slots[params] = slot);
  return WEFT_RT_OK;
}
