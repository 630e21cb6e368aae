//===- NcclWatchdog.h - NCCL's part in the failure detector -----*- C++ -*-===//
//
// A rank whose peer died waits inside an NCCL kernel that never ends: no
// MPI timeout or heartbeat of its own can wake it. NCCL reports such
// failures asynchronously (ncclCommGetAsyncError: a remote peer gone, a
// network error), and ncclCommAbort makes the blocked operations return.
// The watchdog is a health check (weft_rt_context_add_health_check) that
// the failure detector's thread polls: on the first error it reports which
// communicator failed and why, and its abort hook aborts every
// communicator, so that the main thread's waits end with an error.
// It watches communicators, not streams: SEND and RECV on the transfer
// stream are operations of the world's communicator, watched as the
// others, and an abort ends NCCL's kernels on either stream, so that the
// model's wait for both streams (synchronizeDeviceState) returns.
//
// NCCL is reached through NcclApi, so that tests can stand in for it
// without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_CUDA_NCCLWATCHDOG_H
#define WEFT_RUNTIME_CUDA_NCCLWATCHDOG_H

#include <nccl.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace weft::rt::cuda {

/// The NCCL calls the watchdog makes.
struct NcclApi {
  ncclResult_t (*getAsyncError)(ncclComm_t comm, ncclResult_t *result);
  ncclResult_t (*abort)(ncclComm_t comm);
  const char *(*errorString)(ncclResult_t result);
  const char *(*lastError)(ncclComm_t comm);
};

/// The real NCCL.
NcclApi realNcclApi();

class NcclWatchdog {
public:
  /// A communicator to watch and its name in messages ("the world",
  /// "mesh axes [0]").
  struct Watched {
    ncclComm_t comm;
    std::string name;
  };

  NcclWatchdog(std::vector<Watched> comms, NcclApi api = realNcclApi())
      : comms(std::move(comms)), api(api) {}

  /// weft_rt_health_check_fn: 0 while every communicator is well (or still
  /// initializing); else a message naming the failed one.
  static int32_t check(void *self, char *message, size_t size);
  /// weft_rt_health_abort_fn: ncclCommAbort on every communicator, once.
  static void abort(void *self);

  /// Whether abort ran: the communicators must not be destroyed again.
  bool aborted() const { return abortedAll.load(); }

private:
  std::vector<Watched> comms;
  NcclApi api;
  std::atomic<bool> abortedAll{false};
};

} // namespace weft::rt::cuda

#endif // WEFT_RUNTIME_CUDA_NCCLWATCHDOG_H
