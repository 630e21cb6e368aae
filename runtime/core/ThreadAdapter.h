//===- ThreadAdapter.h - Choosing a run's thread count by measure -*- C++ -*-===//
//
// A second thread helps only while it gets a core: on a busy machine (a
// process spinning beside us, more ranks than cores) every barrier of the
// kernels waits for the thread that was not scheduled, and N threads can
// take several times as long as one. The driver therefore treats its
// thread count as a maximum: the adapter keeps the recent run times of
// each candidate count (N, N/2, ..., 1), runs the count whose median is
// lowest, and now and then probes another, more rarely while the probes
// keep confirming the choice. A median, not a running mean: a program's
// first run faults its pages in and builds its kernels' plans (50 to 120
// ms for a model that then runs in 2), and one preempted run can take ten
// times the usual; a mean carries either for many runs and makes a probe
// of fewer threads look faster than it is.
// Plain C++, no clock of its own: the caller reports each run's time.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_CORE_THREADADAPTER_H
#define WEFT_RUNTIME_CORE_THREADADAPTER_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace weft::rt {

class ThreadAdapter {
public:
  /// Candidates: `maxThreads`, then halving down to 1.
  explicit ThreadAdapter(int maxThreads);

  /// The thread count of the next run.
  int next();
  /// The time of a run made with `threads` (the count next() gave).
  void record(int threads, double seconds);

  /// Runs made so far with fewer threads than the maximum.
  int64_t runsBelowMaximum() const { return below; }
  int64_t runs() const { return total; }
  int maximum() const { return candidates.front().threads; }

  /// A probe of another count comes after this many runs at first, and
  /// twice as many after each probe that confirms the choice, up to
  /// kMaxProbeInterval (a probe that was 10x slower then costs under 1%).
  static constexpr int64_t kFirstProbeInterval = 8;
  static constexpr int64_t kMaxProbeInterval = 1024;
  /// Another count must be this much faster to be chosen (noise).
  static constexpr double kSwitchMargin = 0.95;
  /// How many recent runs of a count its estimate is the median of.
  static constexpr int kWindow = 5;

private:
  struct Candidate {
    int threads;
    /// The latest run times (seconds), oldest first; at most kWindow.
    std::vector<double> recent;
    /// The lower median of `recent`; 0 until measured.
    double estimate() const;
  };
  std::vector<Candidate> candidates;
  size_t best = 0;
  /// The candidate the next probe tries (cycles over the others).
  size_t nextProbe = 1;
  int64_t untilProbe = kFirstProbeInterval;
  int64_t probeInterval = kFirstProbeInterval;
  bool probing = false;
  int64_t below = 0, total = 0;
};

} // namespace weft::rt

#endif // WEFT_RUNTIME_CORE_THREADADAPTER_H
