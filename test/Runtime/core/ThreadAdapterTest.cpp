//===- ThreadAdapterTest.cpp - The driver's choice of thread count --------===//
//
// Synthetic machines: each gives a run time per thread count, which may
// change part way (a process starts spinning beside us, then stops). The
// adapter must settle on the fastest count and pay little for its probes.
//
//===----------------------------------------------------------------------===//

#include "ThreadAdapter.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>

using namespace weft::rt;

namespace {

/// Runs `runs` runs; `time(run, threads)` is the machine. Returns the
/// total time and counts runs by thread count.
double simulate(ThreadAdapter &adapter, int runs,
                const std::function<double(int, int)> &time,
                std::map<int, int> &byThreads) {
  double total = 0;
  for (int run = 0; run < runs; ++run) {
    int threads = adapter.next();
    double seconds = time(run, threads);
    adapter.record(threads, seconds);
    total += seconds;
    ++byThreads[threads];
  }
  return total;
}

} // namespace

TEST(ThreadAdapterTest, CandidatesHalveDownToOne) {
  ThreadAdapter adapter(6);
  EXPECT_EQ(adapter.maximum(), 6);
  std::map<int, int> seen;
  // Probes visit every other count: 3 and 1.
  simulate(adapter, 2000, [](int, int threads) { return 1.0 / threads; },
           seen);
  EXPECT_GT(seen[3], 0);
  EXPECT_GT(seen[1], 0);
  EXPECT_EQ(seen.size(), 3u);
}

TEST(ThreadAdapterTest, OneThreadNeverProbes) {
  ThreadAdapter adapter(1);
  std::map<int, int> seen;
  simulate(adapter, 100, [](int, int) { return 1.0; }, seen);
  EXPECT_EQ(seen[1], 100);
  EXPECT_EQ(adapter.runsBelowMaximum(), 0);
}

// An idle machine: two threads are faster, and the probes of one thread
// (twice as slow) cost under 2% over many runs.
TEST(ThreadAdapterTest, IdleMachineKeepsTheMaximum) {
  ThreadAdapter adapter(2);
  std::map<int, int> seen;
  double total = simulate(
      adapter, 5000, [](int, int threads) { return threads == 2 ? 1.0 : 2.0; },
      seen);
  EXPECT_LT(total / 5000.0, 1.02);
  EXPECT_GT(seen[2], 4900);
}

// A busy machine: two threads are ten times slower than one (every barrier
// waits for the thread without a core). The adapter moves to one thread
// after its first probe and stays within 5% of the best over the run.
TEST(ThreadAdapterTest, BusyMachineFallsBackToOneThread) {
  ThreadAdapter adapter(2);
  std::map<int, int> seen;
  double total = simulate(
      adapter, 5000, [](int, int threads) { return threads == 2 ? 10.0 : 1.0; },
      seen);
  EXPECT_LT(total / 5000.0, 1.05);
  EXPECT_GT(adapter.runsBelowMaximum(), 4900);
}

// The load comes and goes: the adapter follows within a bounded number of
// runs each way.
TEST(ThreadAdapterTest, FollowsALoadThatComesAndGoes) {
  ThreadAdapter adapter(2);
  auto machine = [](int run, int threads) {
    bool busy = run >= 2000 && run < 4000;
    if (busy)
      return threads == 2 ? 3.0 : 1.0;
    return threads == 2 ? 0.6 : 1.0;
  };
  std::map<int, int> seen;
  double total = simulate(adapter, 6000, machine, seen);
  // The best possible: 0.6 idle, 1.0 busy.
  double best = 4000 * 0.6 + 2000 * 1.0;
  EXPECT_LT(total, 1.10 * best);
  // Late in each phase it runs the phase's best count.
  ThreadAdapter again(2);
  int lastIdleThreads = 0, lastBusyThreads = 0;
  for (int run = 0; run < 6000; ++run) {
    int threads = again.next();
    again.record(threads, machine(run, threads));
    if (run == 3990)
      lastBusyThreads = threads;
    if (run == 5990)
      lastIdleThreads = threads;
  }
  EXPECT_EQ(lastBusyThreads, 1);
  EXPECT_EQ(lastIdleThreads, 2);
}

// Noise of +-3% never makes it leave the faster count for long.
TEST(ThreadAdapterTest, NoiseBelowTheMarginDoesNotSwitch) {
  ThreadAdapter adapter(2);
  int tick = 0;
  std::map<int, int> seen;
  simulate(
      adapter, 3000,
      [&](int, int threads) {
        double jitter = (++tick % 3 - 1) * 0.03;
        return (threads == 2 ? 1.0 : 1.04) * (1.0 + jitter);
      },
      seen);
  EXPECT_GT(seen[2], 2800);
}

// A program's first run is cold (pages faulted in, kernel plans built):
// here 50 times a warm run. It says nothing about thread counts, and the
// probe of one thread (1.8x slower when warm) must not win against it.
TEST(ThreadAdapterTest, ColdFirstRunDoesNotDecide) {
  ThreadAdapter adapter(2);
  std::map<int, int> seen;
  simulate(
      adapter, 30,
      [](int run, int threads) {
        if (run == 0)
          return 50.0;
        return threads == 2 ? 1.0 : 1.8;
      },
      seen);
  // Only the probes (runs 8 and 25) ran on one thread.
  EXPECT_EQ(adapter.runsBelowMaximum(), 2);
}

// One preempted run (ten times the usual) just before a probe does not
// hand the next runs to the slower count either.
TEST(ThreadAdapterTest, OnePreemptedRunDoesNotDecide) {
  ThreadAdapter adapter(2);
  std::map<int, int> seen;
  int lastTwoThreadRun = -1;
  simulate(
      adapter, 40,
      [&](int run, int threads) {
        // The run before the first probe (run 8) is the slow one.
        if (threads == 2 && run == 7)
          return 10.0;
        if (threads == 2)
          lastTwoThreadRun = run;
        return threads == 2 ? 1.0 : 1.5;
      },
      seen);
  // Only the probes (runs 8 and 25) ran on one thread.
  EXPECT_EQ(adapter.runsBelowMaximum(), 2);
  EXPECT_EQ(lastTwoThreadRun, 39);
}
