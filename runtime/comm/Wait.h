//===- Wait.h - Waiting for MPI without holding a core ----------*- C++ -*-===//
//
// Open MPI's blocking calls poll their shared-memory queues until the
// message arrives, so a rank waiting for a slow peer keeps a core busy: on
// a machine with more ranks than cores (or a busy one) the waiting rank
// takes the core the peer needs. Every MPI wait of the runtime goes through
// waitFor instead: a non-blocking call, tested in a tight loop for a short
// while (a collective among running ranks ends within microseconds), then
// with sleeps that grow to a bound. Where every rank on the host has cores
// of its own, the spin is long instead (a pipeline's transfers would
// otherwise pay a sleep's wake-up each). Private to the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_COMM_WAIT_H
#define WEFT_RUNTIME_COMM_WAIT_H

// MPI itself, as the runtime includes it.
#include "comm/Comm.h"

#include <cstdint>

namespace weft::rt {

/// How a wait spends its time: spinning first (a tight loop, then one that
/// yields the core between tests), then sleeping.
struct WaitPolicy {
  /// The spin of a rank with cores of its own: longer than a pipeline
  /// stage's usual wait for its neighbour.
  static constexpr int64_t kDedicatedSpinMicroseconds = 20000;
  /// The part of a spin that never yields the core.
  static constexpr int64_t kTightSpinMicroseconds = 50;
  /// Microseconds of MPI_Test in a tight loop before the first sleep.
  int64_t spinMicroseconds = 50;
  /// The first sleep, doubled after each test that finds the wait not
  /// done, up to maxSleepMicroseconds.
  int64_t firstSleepMicroseconds = 5;
  int64_t maxSleepMicroseconds = 250;
};

/// Sets the process's policy, once (later calls change nothing): the long
/// spin when the job's ranks on this host (Open MPI's local size, else
/// `worldSize`) times `threadsPerRank` fit the cores this process may use,
/// else WaitPolicy's defaults; WEFT_MPI_SPIN_US and WEFT_MPI_MAX_SLEEP_US
/// override them when they are integers from 0 to 10^6. Communicators call
/// it when they are created.
void configureWaitPolicy(int threadsPerRank, int worldSize);

/// The process's policy (as configureWaitPolicy(1, unknown world) when it
/// was not configured: the short spin unless the host is Open MPI's).
const WaitPolicy &waitPolicy();

/// Completes `request` as MPI_Wait would (MPI_SUCCESS or MPI's error code),
/// without spinning for longer than the policy's spin time.
int waitFor(MPI_Request *request, const WaitPolicy &policy = waitPolicy());
/// The same, filling `status` (MPI_Get_count reads it).
int waitFor(MPI_Request *request, MPI_Status *status,
            const WaitPolicy &policy = waitPolicy());

/// Waits, as waitFor does, until a message from `source` with `tag` arrives
/// on `comm`, and takes it out of the matching queue (MPI_Improbe): receive
/// it with MPI_Imrecv. `status` tells its size before it is received.
int probeFor(int source, int tag, MPI_Comm comm, MPI_Message *message,
             MPI_Status *status, const WaitPolicy &policy = waitPolicy());

} // namespace weft::rt

#endif // WEFT_RUNTIME_COMM_WAIT_H
