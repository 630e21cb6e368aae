//===- ThreadAdapter.cpp - Choosing a run's thread count by measure -------===//

#include "ThreadAdapter.h"

#include <algorithm>

using namespace weft::rt;

double ThreadAdapter::Candidate::estimate() const {
  if (recent.empty())
    return 0;
  // The lower of the two middle values of an even count: with the cold
  // first run and one warm run, the warm one.
  std::vector<double> sorted = recent;
  auto middle = sorted.begin() + (sorted.size() - 1) / 2;
  std::nth_element(sorted.begin(), middle, sorted.end());
  return *middle;
}

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
    if (static_cast<int>(it->recent.size()) == kWindow)
      it->recent.erase(it->recent.begin());
    it->recent.push_back(seconds);
    --untilProbe;
    return;
  }
  // A probe says how that count does now; older probes are stale.
  it->recent.assign(1, seconds);
  probing = false;
  size_t probed = static_cast<size_t>(it - candidates.begin());
  if (probed == best) {
    untilProbe = probeInterval;
    return;
  }
  if (it->estimate() < kSwitchMargin * candidates[best].estimate()) {
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
