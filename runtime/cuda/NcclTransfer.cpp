//===- NcclTransfer.cpp - SEND and RECV on a transfer stream --------------===//
//
// The event protocol of NcclTransfer.h and the choice of the stream.
//
//===----------------------------------------------------------------------===//

#include "cuda/NcclTransfer.h"
#include "cuda/CudaStatus.h"

#include <cerrno>
#include <cstdlib>

using namespace weft::rt::cuda;

static cudaError_t copyDeviceToDevice(void *dst, const void *src, size_t bytes,
                                      cudaStream_t stream) {
  return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream);
}

static cudaError_t waitForEvent(cudaStream_t stream, cudaEvent_t event) {
  return cudaStreamWaitEvent(stream, event, 0);
}

static ncclResult_t sendBytes(const void *buffer, size_t bytes, int peer,
                              ncclComm_t comm, cudaStream_t stream) {
  return ncclSend(buffer, bytes, ncclUint8, peer, comm, stream);
}

static ncclResult_t recvBytes(void *buffer, size_t bytes, int peer,
                              ncclComm_t comm, cudaStream_t stream) {
  return ncclRecv(buffer, bytes, ncclUint8, peer, comm, stream);
}

TransferApi weft::rt::cuda::realTransferApi() {
  return {copyDeviceToDevice, cudaEventRecord, waitForEvent, ncclGroupStart,
          ncclGroupEnd,       sendBytes,       recvBytes};
}

/// Returns when a CUDA call of the protocol fails.
#define WEFT_TRANSFER_CUDA(call)                                               \
  do {                                                                         \
    cudaError_t weftCudaError = (call);                                        \
    if (weftCudaError != cudaSuccess)                                          \
      return cudaFail(ctx, weftCudaError, WEFT_RT_INTERNAL, #call, __FILE__,   \
                      __LINE__);                                               \
  } while (0)

/// Returns when an NCCL call fails, after ending an open group (a no-op
/// where none is open).
#define WEFT_TRANSFER_NCCL(call)                                               \
  do {                                                                         \
    ncclResult_t weftNcclResult = (call);                                      \
    if (weftNcclResult != ncclSuccess) {                                       \
      if (inGroup)                                                             \
        api.groupEnd();                                                        \
      *out_ncclFailed = true;                                                  \
      return ncclFail(ctx, weftNcclResult, #call, __FILE__, __LINE__);         \
    }                                                                          \
  } while (0)

weft_rt_status weft::rt::cuda::stagedSend(weft_rt_context *ctx,
                                          const TransferApi &api,
                                          const TransferLane &lane,
                                          SendSlot &slot, const void *in,
                                          size_t bytes, int peer,
                                          bool *out_ncclFailed) {
  if (!slot.buffer || slot.bytes < bytes || !slot.sentEvent)
    return weft_rt_fail(ctx, WEFT_RT_INTERNAL,
                        "stagedSend: the staging slot holds %zu bytes, the "
                        "send %zu",
                        slot.bytes, bytes);
  // The op's previous send may still read the staging buffer: the copy
  // waits for it (on the device), and only for it.
  if (slot.sent)
    WEFT_TRANSFER_CUDA(api.wait(lane.compute, slot.sentEvent));
  // In program order on the compute stream: after the kernels that wrote
  // `in`, before those that may overwrite it.
  WEFT_TRANSFER_CUDA(api.copy(slot.buffer, in, bytes, lane.compute));
  WEFT_TRANSFER_CUDA(api.record(lane.handoff, lane.compute));
  WEFT_TRANSFER_CUDA(api.wait(lane.transfer, lane.handoff));
  bool inGroup = false;
  WEFT_TRANSFER_NCCL(api.groupStart());
  inGroup = true;
  WEFT_TRANSFER_NCCL(
      api.send(slot.buffer, bytes, peer, lane.comm, lane.transfer));
  inGroup = false;
  WEFT_TRANSFER_NCCL(api.groupEnd());
  WEFT_TRANSFER_CUDA(api.record(slot.sentEvent, lane.transfer));
  slot.sent = true;
  return WEFT_RT_OK;
}

weft_rt_status weft::rt::cuda::orderedRecv(weft_rt_context *ctx,
                                           const TransferApi &api,
                                           const TransferLane &lane, void *out,
                                           size_t bytes, int peer,
                                           bool *out_ncclFailed) {
  // Kernels queued before this call may still read `out`: the receive
  // waits for them.
  WEFT_TRANSFER_CUDA(api.record(lane.handoff, lane.compute));
  WEFT_TRANSFER_CUDA(api.wait(lane.transfer, lane.handoff));
  bool inGroup = false;
  WEFT_TRANSFER_NCCL(api.groupStart());
  inGroup = true;
  WEFT_TRANSFER_NCCL(api.recv(out, bytes, peer, lane.comm, lane.transfer));
  inGroup = false;
  WEFT_TRANSFER_NCCL(api.groupEnd());
  // Kernels queued after this call read `out`: they wait for the data.
  WEFT_TRANSFER_CUDA(api.record(lane.arrived, lane.transfer));
  WEFT_TRANSFER_CUDA(api.wait(lane.compute, lane.arrived));
  return WEFT_RT_OK;
}

TransferStreamChoice
weft::rt::cuda::chooseTransferStream(int ncclVersion,
                                     const char *launchOrderImplicit) {
  TransferStreamChoice choice;
  // NCCL_VERSION(2, 26, 0): NCCL_LAUNCH_ORDER_IMPLICIT came with 2.26.
  if (ncclVersion < 22600) {
    // Codes before 2.9 were 1000 * major + 100 * minor + patch.
    bool old = ncclVersion < 10000;
    int major = old ? ncclVersion / 1000 : ncclVersion / 10000;
    int minor = old ? ncclVersion / 100 % 10 : ncclVersion / 100 % 100;
    choice.reason = "NCCL " + std::to_string(major) + "." +
                    std::to_string(minor) + "." +
                    std::to_string(ncclVersion % 100) +
                    " is older than 2.26, which can order the kernels of "
                    "several communicators (NCCL_LAUNCH_ORDER_IMPLICIT)";
    return choice;
  }
  if (!launchOrderImplicit) {
    choice.ownStream = true;
    choice.setLaunchOrder = true;
    return choice;
  }
  // As NCCL reads it: empty or unparsable is its default, 0.
  errno = 0;
  long long value = std::strtoll(launchOrderImplicit, nullptr, 0);
  if (errno != 0)
    value = 0;
  if (value != 0) {
    choice.ownStream = true;
    return choice;
  }
  choice.reason = std::string("NCCL_LAUNCH_ORDER_IMPLICIT='") +
                  launchOrderImplicit +
                  "' turns NCCL's ordering of the kernels of several "
                  "communicators off";
  return choice;
}
