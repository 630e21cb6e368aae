//===- FailureDetector.h - Heartbeats to the launcher -----------*- C++ -*-===//
//
// The rank side of Weft's failure detector. A thread of its own sends the
// launcher (weft-run) a heartbeat with what the program is doing, so that
// weft-run names a rank that died or stopped within a bound instead of
// letting its peers wait for it; it runs the backends' health checks
// (weft_rt_context_add_health_check: NCCL's asynchronous errors), and it
// ends the process when the launcher is gone, so that no rank outlives a
// killed weft-run. One thread, no MPI: the program's MPI stays
// single-threaded (MPI_THREAD_FUNNELED).
//
// The protocol is lines of text on a stream socket (a Unix socket on one
// machine, TCP for ranks on other hosts), rank to launcher only:
//   hello <rank> <pid> <host>
//   beat <activity>
//   failed <reason>
// The launcher never writes; the end of its stream means it is gone.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_CORE_FAILUREDETECTOR_H
#define WEFT_RUNTIME_CORE_FAILUREDETECTOR_H

#include "weft_rt.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace weft::rt {

/// Where and how often to send heartbeats: from the environment weft-run
/// sets (WEFT_HEARTBEAT=unix:@NAME, unix:PATH or tcp:HOST:PORT, and
/// WEFT_HEARTBEAT_MS).
struct HeartbeatConfig {
  /// Empty: no launcher listens (the program was started another way).
  std::string address;
  std::chrono::milliseconds interval{1000};
};
/// False with `error` when WEFT_HEARTBEAT or WEFT_HEARTBEAT_MS is malformed.
bool readHeartbeatConfig(HeartbeatConfig &out, std::string &error);

/// Connects a stream socket to `address` (the forms above); -1 with `error`.
int connectHeartbeatSocket(const std::string &address, std::string &error);

class FailureDetector {
public:
  /// What to do when the launcher is gone or a health check failed: print
  /// `message` and end the process (the driver's choice of exit code).
  using FailFn = std::function<void(const std::string &message)>;
  /// What the program is doing now, for heartbeats ("op 12 (matmul fc1)").
  /// Called from the detector's thread: it may only read atomics.
  using DescribeFn = std::function<std::string()>;

  FailureDetector(weft_rt_context *ctx, DescribeFn describe, FailFn onLauncherGone,
                  FailFn onCheckFailed);
  ~FailureDetector();
  FailureDetector(const FailureDetector &) = delete;
  FailureDetector &operator=(const FailureDetector &) = delete;

  /// Connects to the launcher (when `config` names one) and starts the
  /// thread; false with `error` when the launcher cannot be reached.
  bool start(const HeartbeatConfig &config, int rank,
             std::string &error);
  /// Sends one heartbeat now (the driver calls it at each phase change, so
  /// the launcher's last word of a rank is fresh).
  void beatNow();
  /// Stops the thread and closes the socket; the launcher sees the end of
  /// the stream after the process ends.
  void stop();

private:
  void loop();
  bool send(const std::string &line);
  bool launcherGone();
  void runHealthChecks();

  weft_rt_context *ctx;
  DescribeFn describe;
  FailFn onLauncherGone, onCheckFailed;
  std::chrono::milliseconds interval{1000};
  int fd = -1;
  std::thread thread;
  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false, beatRequested = false;
  std::mutex sendMutex;
};

} // namespace weft::rt

#endif // WEFT_RUNTIME_CORE_FAILUREDETECTOR_H
