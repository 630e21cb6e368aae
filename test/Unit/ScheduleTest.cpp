//===- ScheduleTest.cpp - The GPipe closed form against a simulation ------===//
//
// The oracle runs microbatches through a chain of stages step by step, as
// Weft's runtime does: a transfer starts when the sender has computed the
// microbatch and the receiver is done with the one before, and keeps both
// busy. Its first microbatch and its steady-state period must be the
// closed form's.
//
//===----------------------------------------------------------------------===//

#include "weft/Plan/Schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

using namespace weft::plan;

namespace {

/// When the last stage finishes microbatch m - 1, for m = 1 .. count, in a
/// chain with compute[k] and transfer[k] (stage k to k + 1) times.
std::vector<double> simulateChain(const std::vector<double> &compute,
                                  const std::vector<double> &transfer,
                                  int count) {
  size_t stages = compute.size();
  std::vector<double> freeAt(stages, 0), done;
  for (int m = 0; m < count; ++m) {
    double computed = 0;
    for (size_t k = 0; k < stages; ++k) {
      double start = freeAt[k];
      if (k > 0) {
        double send = std::max(computed, freeAt[k]);
        double arrived = send + transfer[k - 1];
        freeAt[k - 1] = arrived; // The sender is busy until it is sent.
        start = arrived;
      }
      computed = start + compute[k];
      freeAt[k] = computed;
    }
    done.push_back(computed);
  }
  return done;
}

PipelineTimes chain(const std::vector<double> &compute,
                    const std::vector<double> &transfer) {
  PipelineTimes times;
  times.stageSeconds = compute;
  for (size_t k = 0; k < transfer.size(); ++k)
    times.transfers.push_back(
        {static_cast<int>(k), static_cast<int>(k + 1), transfer[k]});
  return times;
}

TEST(ScheduleTest, OneStageIsItsOwnTimeAndRate) {
  PipelineTimes times;
  times.stageSeconds = {0.5};
  ScheduleEstimate e = estimateGPipe(times, 1);
  EXPECT_DOUBLE_EQ(e.latencySeconds, 0.5);
  EXPECT_DOUBLE_EQ(e.throughputPerSecond, 2.0);
  EXPECT_EQ(e.bottleneckStage, 0);
}

TEST(ScheduleTest, HandWorkedTwoStages) {
  // Stage 1 (3 s, plus the 1 s transfer in) is the bottleneck: 4 s cycles.
  ScheduleEstimate e = estimateGPipe(chain({1, 3}, {1}), 3);
  EXPECT_DOUBLE_EQ(e.firstMicrobatchSeconds, 5);
  EXPECT_DOUBLE_EQ(e.cycleSeconds, 4);
  EXPECT_EQ(e.bottleneckStage, 1);
  EXPECT_DOUBLE_EQ(e.latencySeconds, 13);
  EXPECT_DOUBLE_EQ(e.throughputPerSecond, 1.0 / 12);
  EXPECT_DOUBLE_EQ(simulateChain({1, 3}, {1}, 3).back(), 13);
}

TEST(ScheduleTest, OutputCollectionCountsOnTheLastStage) {
  PipelineTimes times = chain({2, 2}, {0});
  times.transfers.push_back({0, -1, 1}); // An output made by stage 0.
  ScheduleEstimate e = estimateGPipe(times, 1);
  EXPECT_DOUBLE_EQ(e.firstMicrobatchSeconds, 5);
  EXPECT_DOUBLE_EQ(e.cycleSeconds, 3);
}

TEST(ScheduleTest, MatchesTheSimulatedChain) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> time(0.1, 2.0);
  for (int trial = 0; trial < 300; ++trial) {
    size_t stages = 1 + trial % 5;
    std::vector<double> compute, transfer;
    for (size_t k = 0; k < stages; ++k)
      compute.push_back(time(rng));
    for (size_t k = 0; k + 1 < stages; ++k)
      transfer.push_back(time(rng) * (trial % 3 == 0 ? 0 : 0.3));
    ScheduleEstimate e = estimateGPipe(chain(compute, transfer), 1);
    std::vector<double> done = simulateChain(compute, transfer, 200);
    EXPECT_NEAR(e.firstMicrobatchSeconds, done[0], 1e-9) << trial;
    // The steady state leaves one cycle between microbatches.
    EXPECT_NEAR(done[199] - done[198], e.cycleSeconds, 1e-9) << trial;
    // The closed form never promises more than the chain delivers.
    for (int m = 1; m <= 200; m += 37) {
      ScheduleEstimate many = estimateGPipe(chain(compute, transfer), m);
      EXPECT_GE(many.latencySeconds + 1e-9, done[m - 1]) << trial;
    }
  }
}

} // namespace
