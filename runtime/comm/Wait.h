//===- Wait.h - Waiting for MPI without holding a core ----------*- C++ -*-===//
//
// Open MPI's blocking calls poll their shared-memory queues until the
// message arrives, so a rank waiting for a slow peer keeps a core busy: on
// a machine with more ranks than cores (or a busy one) the waiting rank
// takes the core the peer needs. Every MPI wait of the runtime goes through
// waitFor instead: a non-blocking call, tested in a tight loop for a short
// while (a collective among running ranks ends within microseconds), then
// with sleeps that grow to a bound. Private to the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_COMM_WAIT_H
#define WEFT_RUNTIME_COMM_WAIT_H

// MPI itself, as the runtime includes it.
#include "comm/Comm.h"

#include <cstdint>

namespace weft::rt {

/// How a wait spends its time: spinning first, then sleeping.
struct WaitPolicy {
  /// Microseconds of MPI_Test in a tight loop before the first sleep.
  int64_t spinMicroseconds = 50;
  /// The first sleep, doubled after each test that finds the wait not
  /// done, up to maxSleepMicroseconds.
  int64_t firstSleepMicroseconds = 5;
  int64_t maxSleepMicroseconds = 250;
};

/// The process's policy: WaitPolicy's defaults, or WEFT_MPI_SPIN_US and
/// WEFT_MPI_MAX_SLEEP_US when they are non-negative integers (read once).
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
