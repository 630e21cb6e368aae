//===- ClockSyncTest.cpp - Tests of the ping-pong clock estimate ----------===//
//
// bestClockEstimate against rounds made from a known offset: the estimate
// of the shortest round, within half its round trip of the truth.
//
//===----------------------------------------------------------------------===//

#include "ClockSync.h"

#include "gtest/gtest.h"

#include <cmath>
#include <vector>

using namespace weft::rt;

namespace {

/// A round whose request takes `out` us and reply `back` us, sent at local
/// time `sent`, where the reference clock is `offset` us ahead.
ClockRound roundOf(double sent, double out, double back, double offset) {
  ClockRound round;
  round.sentUs = sent;
  round.peerUs = sent + out + offset;
  round.receivedUs = sent + out + back;
  return round;
}

// Tests that symmetric delays give the offset exactly, and that the
// shortest round is the one kept.
TEST(ClockSyncTest, ShortestRoundWins) {
  const double offset = -5e6;
  std::vector<ClockRound> rounds = {roundOf(100, 40, 10, offset),
                                    roundOf(200, 3, 3, offset),
                                    roundOf(300, 2, 30, offset)};
  ClockSyncPoint best = bestClockEstimate(rounds);
  EXPECT_DOUBLE_EQ(best.offsetUs, offset);
  EXPECT_DOUBLE_EQ(best.uncertaintyUs, 3);
  EXPECT_DOUBLE_EQ(best.atUs, 203);
}

// Tests that with unequal delays the error stays within the uncertainty
// (half the round trip), whichever way they split.
TEST(ClockSyncTest, ErrorWithinHalfTheRoundTrip) {
  for (double out : {0.0, 1.0, 7.5, 20.0})
    for (double back : {0.0, 2.0, 13.0}) {
      ClockSyncPoint best =
          bestClockEstimate({roundOf(1000, out, back, 123.25)});
      EXPECT_LE(std::fabs(best.offsetUs - 123.25), best.uncertaintyUs + 1e-9)
          << out << " " << back;
      EXPECT_DOUBLE_EQ(best.uncertaintyUs, (out + back) / 2);
    }
}

// Tests that rounds whose reply arrived before the request left (a broken
// clock) are ignored, and that no usable round says so.
TEST(ClockSyncTest, ImpossibleRoundsAreIgnored) {
  ClockRound broken;
  broken.sentUs = 50;
  broken.peerUs = 0;
  broken.receivedUs = 10;
  EXPECT_EQ(bestClockEstimate({broken}).uncertaintyUs, -1);
  EXPECT_EQ(bestClockEstimate({}).uncertaintyUs, -1);
  ClockSyncPoint best = bestClockEstimate({broken, roundOf(0, 1, 1, 7)});
  EXPECT_DOUBLE_EQ(best.offsetUs, 7);
}

} // namespace
