//===- StageCutTest.cpp - The balanced cut against brute force ------------===//

#include "weft/Plan/StageCut.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>

using namespace weft::plan;

namespace {

/// The smallest largest-run sum over every way to cut `costs` into `stages`
/// non-empty runs, by enumeration.
double bruteForceBest(const std::vector<double> &costs, int64_t stages,
                      const std::vector<double> &memory = {},
                      double cap = 0) {
  int64_t n = costs.size();
  double best = std::numeric_limits<double>::infinity();
  std::vector<int64_t> cuts;
  std::function<void(int64_t, int64_t)> place = [&](int64_t from,
                                                    int64_t left) {
    if (left == 1) {
      double worst = 0, run = 0;
      int64_t start = 0;
      std::vector<int64_t> bounds = cuts;
      bounds.push_back(n);
      for (int64_t end : bounds) {
        run = 0;
        double held = 0;
        for (int64_t i = start; i < end; ++i) {
          run += costs[i];
          if (!memory.empty())
            held += memory[i];
        }
        if (!memory.empty() && held > cap)
          return; // This cut does not fit.
        worst = std::max(worst, run);
        start = end;
      }
      best = std::min(best, worst);
      return;
    }
    for (int64_t cut = from + 1; cut <= n - (left - 1); ++cut) {
      cuts.push_back(cut);
      place(cut, left - 1);
      cuts.pop_back();
    }
  };
  place(0, stages);
  return best;
}

TEST(StageCut, MatchesBruteForce) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> cost(0.0, 10.0);
  for (int trial = 0; trial < 300; ++trial) {
    int64_t n = 1 + trial % 11;
    std::vector<double> costs(n);
    for (double &c : costs)
      c = trial % 7 == 0 ? std::floor(cost(rng)) : cost(rng);
    for (int64_t stages = 1; stages <= n; ++stages) {
      StageCut cut = balancedCut(costs, stages);
      ASSERT_EQ(cut.firstOp.size(), static_cast<size_t>(stages + 1));
      ASSERT_EQ(cut.firstOp.front(), 0);
      ASSERT_EQ(cut.firstOp.back(), n);
      double worst = 0;
      for (int64_t k = 0; k < stages; ++k) {
        ASSERT_LT(cut.firstOp[k], cut.firstOp[k + 1]) << "stage " << k
                                                      << " is empty";
        double run = 0;
        for (int64_t i = cut.firstOp[k]; i < cut.firstOp[k + 1]; ++i)
          run += costs[i];
        EXPECT_NEAR(run, cut.work[k], 1e-9);
        worst = std::max(worst, run);
      }
      EXPECT_NEAR(worst, bruteForceBest(costs, stages), 1e-9)
          << "n " << n << " stages " << stages;
    }
  }
}

TEST(StageCut, FastestCutWithinMemoryMatchesBruteForce) {
  std::mt19937 rng(23);
  std::uniform_real_distribution<double> cost(0.0, 10.0);
  std::uniform_int_distribution<int> bytes(0, 9);
  int constrained = 0, impossible = 0;
  for (int trial = 0; trial < 300; ++trial) {
    int64_t n = 2 + trial % 10;
    std::vector<double> costs(n), memory(n);
    for (int64_t i = 0; i < n; ++i) {
      costs[i] = cost(rng);
      memory[i] = bytes(rng);
    }
    double total = 0;
    for (double m : memory)
      total += m;
    for (int64_t stages = 1; stages <= std::min<int64_t>(n, 4); ++stages) {
      double cap = std::floor(total / stages) + trial % 3;
      double expected = bruteForceBest(costs, stages, memory, cap);
      StageCut cut = balancedCut(costs, stages, memory, cap);
      ASSERT_EQ(cut.memory.size(), static_cast<size_t>(stages));
      if (std::isinf(expected)) {
        // No cut fits: the fastest cut regardless, said so.
        ++impossible;
        EXPECT_FALSE(cut.withinMemory);
        EXPECT_NEAR(*std::max_element(cut.work.begin(), cut.work.end()),
                    bruteForceBest(costs, stages), 1e-9);
        continue;
      }
      EXPECT_TRUE(cut.withinMemory);
      for (double held : cut.memory)
        EXPECT_LE(held, cap);
      double worst = *std::max_element(cut.work.begin(), cut.work.end());
      EXPECT_NEAR(worst, expected, 1e-9) << "n " << n << " stages " << stages;
      constrained += expected > bruteForceBest(costs, stages) + 1e-9;
    }
  }
  // The cap changed the answer in some cases and made others impossible.
  EXPECT_GT(constrained, 10);
  EXPECT_GT(impossible, 10);
}

TEST(StageCut, ZeroCostOpsStillGiveNonEmptyStages) {
  std::vector<double> costs(6, 0.0);
  StageCut cut = balancedCut(costs, 4);
  for (int k = 0; k < 4; ++k)
    EXPECT_LT(cut.firstOp[k], cut.firstOp[k + 1]);
}

TEST(StageCut, RefusesImpossibleCounts) {
  std::vector<double> costs = {1, 2};
  EXPECT_TRUE(balancedCut(costs, 3).firstOp.empty());
  EXPECT_TRUE(balancedCut(costs, 0).firstOp.empty());
}

TEST(AllocateDevices, FollowsTheWork) {
  // One each, then to the largest work per device.
  EXPECT_EQ(allocateDevices({3, 1}, 4), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(allocateDevices({1, 1, 1}, 3), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(allocateDevices({0, 0}, 5), (std::vector<int64_t>{4, 1}));
  std::vector<int64_t> counts = allocateDevices({5, 2, 9}, 10);
  int64_t total = 0;
  for (int64_t c : counts) {
    EXPECT_GE(c, 1);
    total += c;
  }
  EXPECT_EQ(total, 10);
  // The greedy rule minimizes the largest work per device (brute force
  // over all splits of 10 into 3 positive parts).
  double best = std::numeric_limits<double>::infinity();
  for (int64_t a = 1; a <= 8; ++a)
    for (int64_t b = 1; a + b <= 9; ++b) {
      int64_t c = 10 - a - b;
      best = std::min(best, std::max({5.0 / a, 2.0 / b, 9.0 / c}));
    }
  double got = std::max({5.0 / counts[0], 2.0 / counts[1], 9.0 / counts[2]});
  EXPECT_DOUBLE_EQ(got, best);
}

} // namespace
