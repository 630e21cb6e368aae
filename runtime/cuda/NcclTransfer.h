//===- NcclTransfer.h - SEND and RECV on a transfer stream ------*- C++ -*-===//
//
// A pipeline stage's SEND and RECV run on a CUDA stream of their own (the
// DeviceState's transferStream), so that a stage's sends overlap the
// compute that follows them. The two streams are joined by events:
//
//   SEND: compute  --[wait sent(op)]--copy in->staging(op)--record handoff--
//         transfer --wait handoff--ncclSend(staging(op))--record sent(op)--
//   RECV: compute  --record handoff-------------------------wait arrived--
//         transfer --wait handoff--ncclRecv(out)--record arrived--
//
// A send reads a staging buffer of its op (SendStaging.h), not the arena
// buffer it was given, which later kernels may overwrite; the compute
// stream waits for the op's previous send only before it overwrites that
// staging buffer again, never for the network. A receive is issued in
// program order and the compute stream waits for it (on the device; the
// host does not block): NCCL matches the point-to-point operations of a
// pair of ranks in the order they are issued and has no tags, so a receive
// posted early (a next run's, before this run's later receives from the
// same peer) would take the wrong message. The CPU backend posts receives
// early into the weft-stage-receives staging buffers because MPI matches by
// tag; NCCL cannot.
//
// The CUDA and NCCL calls go through TransferApi, so that tests can check
// the ordering without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_CUDA_NCCLTRANSFER_H
#define WEFT_RUNTIME_CUDA_NCCLTRANSFER_H

#include "cuda/SendStaging.h"
#include "weft_rt.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <string>

namespace weft::rt::cuda {

/// The CUDA and NCCL calls a transfer makes.
struct TransferApi {
  /// cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream).
  cudaError_t (*copy)(void *dst, const void *src, size_t bytes,
                      cudaStream_t stream);
  /// cudaEventRecord.
  cudaError_t (*record)(cudaEvent_t event, cudaStream_t stream);
  /// cudaStreamWaitEvent(stream, event, 0).
  cudaError_t (*wait)(cudaStream_t stream, cudaEvent_t event);
  ncclResult_t (*groupStart)();
  ncclResult_t (*groupEnd)();
  /// ncclSend and ncclRecv of `bytes` as ncclUint8.
  ncclResult_t (*send)(const void *buffer, size_t bytes, int peer,
                       ncclComm_t comm, cudaStream_t stream);
  ncclResult_t (*recv)(void *buffer, size_t bytes, int peer, ncclComm_t comm,
                       cudaStream_t stream);
};

/// The real CUDA runtime and NCCL.
TransferApi realTransferApi();

/// The streams and events a transfer is ordered by, and the communicator
/// it runs on (the world's, ranked by world rank).
struct TransferLane {
  cudaStream_t compute = nullptr;
  cudaStream_t transfer = nullptr;
  /// Recorded on the compute stream and waited for by the transfer stream
  /// at once, at every transfer: a wait takes the event's latest record at
  /// the time of the wait call, so one event serves every transfer.
  cudaEvent_t handoff = nullptr;
  /// The same from the transfer stream to the compute stream after a
  /// receive.
  cudaEvent_t arrived = nullptr;
  ncclComm_t comm = nullptr;
};

/// Queues a SEND of `bytes` (> 0) of device memory `in` to world rank
/// `peer`, staged in `slot` (of at least `bytes`): see the file comment.
/// On an NCCL failure sets *out_ncclFailed (the communicators may then have
/// peers left inside an operation) and returns WEFT_RT_COMM_ERROR; a CUDA
/// failure returns its status with the call named in ctx.
weft_rt_status stagedSend(weft_rt_context *ctx, const TransferApi &api,
                          const TransferLane &lane, SendSlot &slot,
                          const void *in, size_t bytes, int peer,
                          bool *out_ncclFailed);

/// Queues a RECV of `bytes` (> 0) into device memory `out` from world rank
/// `peer`, in program order: see the file comment. Failures as stagedSend.
weft_rt_status orderedRecv(weft_rt_context *ctx, const TransferApi &api,
                           const TransferLane &lane, void *out, size_t bytes,
                           int peer, bool *out_ncclFailed);

/// Whether transfers run on their own stream, and why not.
struct TransferStreamChoice {
  bool ownStream = false;
  /// NCCL_LAUNCH_ORDER_IMPLICIT is unset: set it to 1 before NCCL first
  /// launches a kernel (it reads it once, then).
  bool setLaunchOrder = false;
  /// Empty with ownStream, else why transfers stay on the compute stream.
  std::string reason;
};

/// Transfers on their own stream run concurrently with the mesh's
/// collectives on the compute stream, on other communicators. NCCL kernels
/// wait for their peers on the device, so concurrent kernels of several
/// communicators deadlock unless every device starts them in one order;
/// two streams leave that order to the device's scheduling. NCCL 2.26 and
/// later keep it by themselves with NCCL_LAUNCH_ORDER_IMPLICIT=1: every
/// NCCL kernel of a device starts after the one the host launched before it
/// (with CUDA 12.3 runtime and driver they still overlap; before, they run
/// one after another). Weft launches every rank's operations from one
/// thread in one global order (docs/Pipelines.md, "Order, and why it cannot
/// deadlock"), so the launch orders agree. Hence: own stream with NCCL
/// `ncclVersion` (ncclGetVersion's code) of 2.26 or later and
/// `launchOrderImplicit` (the environment's value, null when unset) unset
/// (to be set to 1) or not 0; else the compute stream, as before, where the
/// stream's order is the launch order. The value is read as NCCL does
/// (strtoll, base 0; unparsable text is 0).
TransferStreamChoice chooseTransferStream(int ncclVersion,
                                          const char *launchOrderImplicit);

} // namespace weft::rt::cuda

#endif // WEFT_RUNTIME_CUDA_NCCLTRANSFER_H
