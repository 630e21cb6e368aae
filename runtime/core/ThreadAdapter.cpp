//===- ThreadAdapter.cpp - Choosing a run's thread count by measure -------===//

#include "ThreadAdapter.h"

#include <algorithm>

using namespace weft::rt;

ThreadAdapter::ThreadAdapter(int maxThreads) {
  for (int n = std::max(maxThreads, 1);; n /= 2) {
    candidates.push_back({n});
    if (n == 1)
      break;
  }
}

int ThreadAdapter::next() {
  probing = candidates.size() > 1 && untilProbe <= 0;
  return candidates[probing ? nextProbe : best].threads;
}

void ThreadAdapter::record(int threads, double seconds) {
  ++total;
  if (threads < maximum())
    ++below;
  auto it = std::find_if(candidates.begin(), candidates.end(),
                         [&](const Candidate &c) { return c.threads == threads; });
  if (it == candidates.end() || !(seconds >= 0))
    return;
  if (!probing) {
    // Smoothed, so that one slow run (a page fault, a preemption) does not
    // decide; the first measurement stands alone.
    it->smoothed = it->smoothed > 0 ? 0.75 * it->smoothed + 0.25 * seconds
                                    : seconds;
    --untilProbe;
    return;
  }
  // A probe says how that count does now; older probes are stale.
  it->smoothed = seconds;
  probing = false;
  size_t probed = static_cast<size_t>(it - candidates.begin());
  if (probed == best) {
    untilProbe = probeInterval;
    return;
  }
  if (it->smoothed < kSwitchMargin * candidates[best].smoothed) {
    // The other count is faster now: run it, and look again soon.
    best = probed;
    probeInterval = kFirstProbeInterval;
  } else {
    probeInterval = std::min(probeInterval * 2, kMaxProbeInterval);
  }
  untilProbe = probeInterval;
  // The next probe tries the next other candidate.
  do
    nextProbe = (nextProbe + 1) % candidates.size();
  while (nextProbe == best);
}
