//===- ClockSync.cpp - Clock offsets between the ranks of a job -----------===//

#include "ClockSync.h"

#include <cstdlib>
#include <cstring>

using namespace weft::rt;

ClockSyncPoint
weft::rt::bestClockEstimate(const std::vector<ClockRound> &rounds) {
  ClockSyncPoint best;
  best.uncertaintyUs = -1;
  for (const ClockRound &round : rounds) {
    double trip = round.receivedUs - round.sentUs;
    if (!(trip >= 0))
      continue;
    if (best.uncertaintyUs >= 0 && trip / 2 >= best.uncertaintyUs)
      continue;
    best.atUs = (round.sentUs + round.receivedUs) / 2;
    best.offsetUs = round.peerUs - best.atUs;
    best.uncertaintyUs = trip / 2;
  }
  return best;
}

/// An integer from environment variable `name`, or `fallback`.
static long long integerFromEnvironment(const char *name, long long fallback) {
  const char *text = std::getenv(name);
  if (!text || !*text)
    return fallback;
  char *end = nullptr;
  long long value = std::strtoll(text, &end, 10);
  return *end == '\0' ? value : fallback;
}

double weft::rt::testClockSkewUs() {
  static const double skew = [] {
    long long perRank =
        integerFromEnvironment("WEFT_TEST_CLOCK_SKEW_US_PER_RANK", 0);
    if (perRank == 0)
      return 0.0;
    // Open MPI's, then the PMI name of other launchers.
    long long rank = integerFromEnvironment(
        "OMPI_COMM_WORLD_RANK", integerFromEnvironment("PMI_RANK", 0));
    return static_cast<double>(perRank) * static_cast<double>(rank);
  }();
  return skew;
}
