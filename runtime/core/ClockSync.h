//===- ClockSync.h - Clock offsets between the ranks of a job ----*- C++ -*-===//
//
// A profiled multi-rank run puts every rank's trace on one time line. Ranks
// of one host share CLOCK_MONOTONIC; ranks on several hosts do not, and a
// barrier alone leaves a message latency of skew, as long as a small op. So
// each rank measures its clock against rank 0's by ping-pong, at the start
// and at the end of the profiled runs (clocks drift apart over a long run),
// NTP-style: the round with the shortest round trip bounds the error best.
// weft-run's merge (tools/weft-run/MergeProfile.cpp) applies the offsets,
// interpolated between the two estimates. Private to the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_CORE_CLOCKSYNC_H
#define WEFT_RUNTIME_CORE_CLOCKSYNC_H

#include <cstdint>
#include <vector>

namespace weft::rt {

/// One ping-pong round, times in microseconds: the request left this rank
/// at `sentUs` (this rank's clock), the reference rank stamped its reply at
/// `peerUs` (its clock), and the reply arrived at `receivedUs` (this
/// rank's clock).
struct ClockRound {
  double sentUs = 0, peerUs = 0, receivedUs = 0;
};

/// An estimate of the reference clock against this rank's: reference time
/// = this rank's time + offsetUs, around this rank's time atUs, within
/// +- uncertaintyUs (half the round trip, whichever way the reply's delay
/// split).
struct ClockSyncPoint {
  double atUs = 0;
  double offsetUs = 0;
  double uncertaintyUs = 0;
};

/// The estimate of the round with the shortest round trip (the earliest of
/// equals): the reference stamped its reply at the round's midpoint, so
/// offset = peer - (sent + received) / 2. Rounds whose reply arrived before
/// it left are ignored; none left gives an uncertainty of -1.
ClockSyncPoint bestClockEstimate(const std::vector<ClockRound> &rounds);

/// The rounds each rank plays against rank 0.
inline constexpr int kClockSyncRounds = 16;

/// A test hook: the microseconds the WEFT_TEST_CLOCK_SKEW_US_PER_RANK
/// environment variable asks this process's profile clock to be ahead by,
/// times its MPI rank (read from mpirun's environment), as if each rank ran
/// on a host of its own; 0 without it. Read once.
double testClockSkewUs();

} // namespace weft::rt

#endif // WEFT_RUNTIME_CORE_CLOCKSYNC_H
