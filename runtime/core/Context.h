//===- Context.h - The runtime context's insides ----------------*- C++ -*-===//
//
// What weft_rt_context holds; private to the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_CORE_CONTEXT_H
#define WEFT_RUNTIME_CORE_CONTEXT_H

#include "ClockSync.h"
#include "weft_rt.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace weft::rt {

/// One op's time in one run, for --profile.
struct ProfileEvent {
  int64_t opId;
  double startUs;
  double durationUs;
};

/// State a kernel keeps between calls of the same op (a oneDNN primitive, a
/// packed weight), owned by the context.
struct CachedKernel {
  virtual ~CachedKernel() = default;
};

/// A backend's health check (weft_rt_context_add_health_check).
struct HealthCheck {
  weft_rt_health_check_fn check;
  weft_rt_health_abort_fn abort;
  void *user;
};

/// Microseconds on a monotonic clock (the steady clock, which the processes
/// of one host share; plus testClockSkewUs()).
double nowMicroseconds();

} // namespace weft::rt

struct weft_rt_context {
  std::string error;
  int32_t numThreads = 1;
  /// Set by weft_rt_model_enable_profile; events grow by one per op run.
  bool profiling = false;
  std::vector<weft::rt::ProfileEvent> events;
  /// Rank 0's clock against this one, estimated around the profiled runs
  /// of a multi-rank job (ClockSync.h); written into the profile.
  std::vector<weft::rt::ClockSyncPoint> clockSync;
  /// Keyed by the op's parameter block: generated code passes each op a
  /// constant block of its own, so its address names the op.
  std::unordered_map<const int64_t *, std::unique_ptr<weft::rt::CachedKernel>>
      kernelCache;
  /// The running program's peer table (the signature's "peers" record):
  /// peerSlots (peer, tag) pairs inside the model's weights mapping, which
  /// SEND and RECV name by slot. Set by weft_rt_model_create, cleared when
  /// that model is destroyed.
  const int64_t *peerTable = nullptr;
  int64_t peerSlots = 0;
  /// The mesh communicator of weft_rt_context_set_comm; not owned. Null for
  /// a single device.
  weft_rt_comm *comm = nullptr;
  /// The weft::rt::cuda::DeviceState of a running CUDA program (its stream,
  /// library handles and scratch); not owned. Null on the CPU.
  void *cudaDeviceState = nullptr;
  /// Set with cudaDeviceState: waits for the device's queued work. A GPU's
  /// kernels run after their launch returns, so a profiled op's time is
  /// taken from its begin to the end of its work: op hooks call this.
  void (*waitForDevice)(void *deviceState) = nullptr;
  /// Set while the communicator has receives posted into staging buffers
  /// (comm/Transfers.h): weft_rt_op_begin calls it so that their messages
  /// move while the program computes. Null otherwise.
  void (*progressTransfers)(weft_rt_context *ctx) = nullptr;
  /// The op that weft_rt_op_begin last began (-1: none yet), read by the
  /// failure detector's thread.
  std::atomic<int64_t> currentOp{-1};
  /// The backends' health checks, run by the failure detector's thread.
  std::mutex healthChecksMutex;
  std::vector<weft::rt::HealthCheck> healthChecks;
};

#endif // WEFT_RUNTIME_CORE_CONTEXT_H
