//===- StageCutTest.cpp - The balanced cut against brute force ------------===//

#include "weft/Plan/StageCut.h"

#include "llvm/ADT/STLExtras.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>

using namespace weft::plan;

namespace {

/// The memory of a run [from, to): any rule, for the brute force.
using RunMemory = std::function<double(int64_t from, int64_t to)>;

/// The smallest largest-run sum over every way to cut `costs` into `stages`
/// non-empty runs whose memory (when given) is at most `cap`, by
/// enumeration; +infinity when no cut fits.
double bruteForceBest(const std::vector<double> &costs, int64_t stages,
                      const RunMemory &memoryOf = nullptr, double cap = 0) {
  int64_t n = costs.size();
  double best = std::numeric_limits<double>::infinity();
  std::vector<int64_t> cuts;
  std::function<void(int64_t, int64_t)> place = [&](int64_t from,
                                                    int64_t left) {
    if (left == 1) {
      double worst = 0;
      int64_t start = 0;
      std::vector<int64_t> bounds = cuts;
      bounds.push_back(n);
      for (int64_t end : bounds) {
        if (memoryOf && memoryOf(start, end) > cap)
          return; // This cut does not fit.
        double run = 0;
        for (int64_t i = start; i < end; ++i)
          run += costs[i];
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

/// The memory of run [from, to) straight from stageMemory's definition, op
/// by op: at each op of the run, every tensor the run holds then.
double memoryByDefinition(const std::vector<HeldTensor> &tensors, int64_t from,
                          int64_t to) {
  auto readIn = [](const HeldTensor &t, int64_t first, int64_t end) {
    for (int64_t reader : t.readers)
      if (reader >= first && reader < end)
        return true;
    return false;
  };
  double most = 0;
  for (int64_t op = from; op < to; ++op) {
    double held = 0;
    for (const HeldTensor &t : tensors) {
      if (t.producer < from) {
        if (readIn(t, from, to)) // Weights and inputs once, received twice.
          held +=
              t.producer == HeldTensor::kFromOutside ? t.bytes : 2 * t.bytes;
        continue;
      }
      if (t.producer >= to)
        continue;
      if (t.isModelOutput || readIn(t, to, 1 << 30)) {
        held += t.bytes; // Leaves the run: its output buffer throughout.
        continue;
      }
      int64_t last = t.producer;
      for (int64_t reader : t.readers)
        last = std::max(last, reader);
      if (t.producer <= op && op <= last)
        held += t.bytes;
    }
    most = std::max(most, held);
  }
  return most;
}

/// The weights run [from, to) reads, each once.
double weightsByDefinition(const std::vector<HeldTensor> &tensors, int64_t from,
                           int64_t to) {
  double bytes = 0;
  for (const HeldTensor &t : tensors)
    if (t.isWeight &&
        llvm::any_of(t.readers, [&](int64_t r) { return r >= from && r < to; }))
      bytes += t.bytes;
  return bytes;
}

/// Checks `cut` against the brute force: well formed, its work, its memory
/// figures, and its largest run's sum equal to `expected`.
void expectCut(const StageCut &cut, const std::vector<double> &costs,
               int64_t stages, double expected,
               const std::vector<HeldTensor> *tensors = nullptr) {
  int64_t n = costs.size();
  ASSERT_EQ(cut.firstOp.size(), static_cast<size_t>(stages + 1));
  ASSERT_EQ(cut.firstOp.front(), 0);
  ASSERT_EQ(cut.firstOp.back(), n);
  ASSERT_EQ(cut.memory.size(), tensors ? static_cast<size_t>(stages) : 0);
  double worst = 0;
  for (int64_t k = 0; k < stages; ++k) {
    int64_t from = cut.firstOp[k], to = cut.firstOp[k + 1];
    ASSERT_LT(from, to) << "stage " << k << " is empty";
    double run = 0;
    for (int64_t i = from; i < to; ++i)
      run += costs[i];
    EXPECT_NEAR(run, cut.work[k], 1e-9);
    worst = std::max(worst, run);
    if (tensors) {
      EXPECT_EQ(cut.memory[k], memoryByDefinition(*tensors, from, to))
          << "stage " << k;
      EXPECT_EQ(cut.weightMemory[k], weightsByDefinition(*tensors, from, to))
          << "stage " << k;
    }
  }
  EXPECT_NEAR(worst, expected, 1e-9) << "n " << n << " stages " << stages;
}

TEST(StageCut, MatchesBruteForce) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> cost(0.0, 10.0);
  for (int trial = 0; trial < 300; ++trial) {
    int64_t n = 1 + trial % 11;
    std::vector<double> costs(n);
    for (double &c : costs)
      c = trial % 7 == 0 ? std::floor(cost(rng)) : cost(rng);
    for (int64_t stages = 1; stages <= n; ++stages)
      expectCut(balancedCut(costs, stages), costs, stages,
                bruteForceBest(costs, stages));
  }
}

TEST(StageCut, TiesGoToTheShortestLastRun) {
  // 1 | 2 1 and 1 2 | 1 both have a largest run of 3.
  EXPECT_EQ(balancedCut({1, 2, 1}, 2).firstOp, (std::vector<int64_t>{0, 2, 3}));
}

/// Each op reads a weight of its own: the memory of a run is the sum of its
/// ops' weights.
std::vector<HeldTensor> ownWeights(const std::vector<double> &bytes) {
  std::vector<HeldTensor> tensors;
  for (size_t i = 0; i < bytes.size(); ++i) {
    HeldTensor weight;
    weight.bytes = bytes[i];
    weight.readers = {static_cast<int64_t>(i)};
    weight.isWeight = true;
    tensors.push_back(weight);
  }
  return tensors;
}

TEST(StageCut, FastestCutWithinWeightsMatchesBruteForce) {
  std::mt19937 rng(23);
  std::uniform_real_distribution<double> cost(0.0, 10.0);
  std::uniform_int_distribution<int> bytes(0, 9);
  int constrained = 0, impossible = 0;
  for (int trial = 0; trial < 300; ++trial) {
    int64_t n = 2 + trial % 10;
    std::vector<double> costs(n), weights(n);
    for (int64_t i = 0; i < n; ++i) {
      costs[i] = cost(rng);
      weights[i] = bytes(rng);
    }
    std::vector<HeldTensor> tensors = ownWeights(weights);
    auto weightSum = [&](int64_t from, int64_t to) {
      double sum = 0;
      for (int64_t i = from; i < to; ++i)
        sum += weights[i];
      return sum;
    };
    double total = weightSum(0, n);
    for (int64_t stages = 1; stages <= std::min<int64_t>(n, 4); ++stages) {
      double cap = std::floor(total / stages) + trial % 3;
      double expected = bruteForceBest(costs, stages, weightSum, cap);
      StageCut cut = balancedCut(costs, stages, tensors, cap);
      if (std::isinf(expected)) {
        // No cut fits: the fastest cut regardless, said so.
        ++impossible;
        EXPECT_FALSE(cut.withinMemory);
        expectCut(cut, costs, stages, bruteForceBest(costs, stages), &tensors);
        continue;
      }
      EXPECT_TRUE(cut.withinMemory);
      for (double held : cut.memory)
        EXPECT_LE(held, cap);
      expectCut(cut, costs, stages, expected, &tensors);
      constrained += expected > bruteForceBest(costs, stages) + 1e-9;
    }
  }
  // The cap changed the answer in some cases and made others impossible.
  EXPECT_GT(constrained, 10);
  EXPECT_GT(impossible, 10);
}

/// A random model of `n` ops: inputs, weights (some shared), each op's
/// activations read by later ops, the last op's (and a few others') read
/// by the model's output.
std::vector<HeldTensor> randomModel(std::mt19937 &rng, int64_t n) {
  std::uniform_int_distribution<int> small(0, 9), large(0, 40), coin(0, 9);
  std::vector<HeldTensor> tensors;
  auto add = [&](double bytes, int64_t producer, bool isWeight) {
    HeldTensor t;
    t.bytes = bytes;
    t.producer = producer;
    t.isWeight = isWeight;
    tensors.push_back(t);
    return tensors.size() - 1;
  };
  std::vector<size_t> readable = {add(small(rng), -1, false)};
  if (coin(rng) < 3)
    readable.push_back(add(large(rng), -1, false));
  std::vector<size_t> weights;
  for (int64_t w = 0; w < std::max<int64_t>(1, n / 3); ++w)
    weights.push_back(add(small(rng), -1, true));
  for (int64_t op = 0; op < n; ++op) {
    int reads = 1 + (coin(rng) < 4);
    for (int r = 0; r < reads; ++r) {
      // Mostly the newest tensors, sometimes an older one (a residual).
      size_t back = coin(rng) < 7 ? 0 : rng() % readable.size();
      size_t pick =
          readable[readable.size() - 1 - std::min(back, readable.size() - 1)];
      tensors[pick].readers.push_back(op);
    }
    if (coin(rng) < 5)
      tensors[weights[rng() % weights.size()]].readers.push_back(op);
    readable.push_back(add(large(rng), op, false));
    if (coin(rng) < 2)
      readable.push_back(add(small(rng), op, false));
    if (op == n - 1 || coin(rng) < 1)
      tensors[readable.back()].isModelOutput = true;
  }
  for (HeldTensor &t : tensors) {
    llvm::sort(t.readers);
    t.readers.erase(llvm::unique(t.readers), t.readers.end());
  }
  return tensors;
}

TEST(StageCut, FastestCutWithinMemoryMatchesBruteForce) {
  std::mt19937 rng(37);
  std::uniform_real_distribution<double> cost(0.0, 10.0);
  int constrained = 0, impossible = 0, weightsMisjudge = 0;
  for (int trial = 0; trial < 400; ++trial) {
    int64_t n = 2 + trial % 9;
    std::vector<double> costs(n);
    for (double &c : costs)
      c = cost(rng);
    std::vector<HeldTensor> tensors = randomModel(rng, n);
    auto memoryOf = [&](int64_t from, int64_t to) {
      return memoryByDefinition(tensors, from, to);
    };
    auto weightsOf = [&](int64_t from, int64_t to) {
      return weightsByDefinition(tensors, from, to);
    };
    for (int64_t stages = 1; stages <= std::min<int64_t>(n, 4); ++stages) {
      // Caps around the least any cut needs: its largest stage's memory.
      double least = std::numeric_limits<double>::infinity();
      for (double cap = 0; std::isinf(least) && cap < 2000; cap += 1)
        if (!std::isinf(bruteForceBest(costs, stages, memoryOf, cap)))
          least = cap;
      double cap = least + (trial % 4 == 0 ? -1 : (trial % 4) * 7);
      double expected = bruteForceBest(costs, stages, memoryOf, cap);
      StageCut cut = balancedCut(costs, stages, tensors, cap);
      if (std::isinf(expected)) {
        ++impossible;
        EXPECT_FALSE(cut.withinMemory);
        expectCut(cut, costs, stages, bruteForceBest(costs, stages), &tensors);
        continue;
      }
      EXPECT_TRUE(cut.withinMemory);
      for (double held : cut.memory)
        EXPECT_LE(held, cap);
      expectCut(cut, costs, stages, expected, &tensors);
      constrained += expected > bruteForceBest(costs, stages) + 1e-9;
      // Counting weights alone would have allowed a faster cut that does
      // not fit.
      weightsMisjudge +=
          bruteForceBest(costs, stages, weightsOf, cap) < expected - 1e-9;
    }
  }
  EXPECT_GT(constrained, 30);
  EXPECT_GT(impossible, 30);
  EXPECT_GT(weightsMisjudge, 30);
}

/// A chain: op i reads the tensor op i - 1 computes (op 0 the model's
/// input), the last op's is the model's output; no weights.
std::vector<HeldTensor> chain(const std::vector<double> &bytes) {
  std::vector<HeldTensor> tensors;
  HeldTensor input;
  input.bytes = 1;
  input.readers = {0};
  tensors.push_back(input);
  int64_t n = bytes.size();
  for (int64_t op = 0; op < n; ++op) {
    HeldTensor t;
    t.bytes = bytes[op];
    t.producer = op;
    if (op + 1 < n)
      t.readers = {op + 1};
    t.isModelOutput = op + 1 == n;
    tensors.push_back(t);
  }
  return tensors;
}

TEST(StageCut, ActivationsDecideTheCut) {
  // The fastest cut, 1 2 | 2 1, sends op 1's 100 bytes to stage 1, which
  // holds them twice (received and staged): 200 > 150. Cutting before or
  // after ops 1-2 keeps them in one stage; of those equal cuts, the last
  // stage is the shorter.
  std::vector<double> costs = {1, 2, 2, 1};
  std::vector<HeldTensor> tensors = chain({1, 100, 1, 1});
  EXPECT_EQ(balancedCut(costs, 2).firstOp, (std::vector<int64_t>{0, 2, 4}));
  StageCut cut = balancedCut(costs, 2, tensors, 150);
  EXPECT_TRUE(cut.withinMemory);
  EXPECT_EQ(cut.firstOp, (std::vector<int64_t>{0, 3, 4}));
  // Stage 0: the input and op 2's tensor (sent on) throughout, ops 0 and
  // 1's tensors at op 1. Stage 1: op 2's tensor twice, the output.
  EXPECT_EQ(cut.memory, (std::vector<double>{1 + 1 + (1 + 100), 2 + 1}));
  EXPECT_EQ(cut.weightMemory, (std::vector<double>{0, 0}));
  // With room for it received, the fastest cut.
  EXPECT_EQ(balancedCut(costs, 2, tensors, 300).firstOp,
            (std::vector<int64_t>{0, 2, 4}));
}

TEST(StageCut, ALongerRunMayHoldLess) {
  // Op 0's 10 bytes, which only op 1 reads, are received (twice) by a run
  // that starts at op 1 and computed by one that starts at op 0: [1, 2) does
  // not fit in 12 but [0, 2) does, so the scan must look past it.
  std::vector<double> costs = {3, 1, 1, 1};
  std::vector<HeldTensor> tensors = chain({10, 1, 1, 1});
  StageCut cut = balancedCut(costs, 2, tensors, 12);
  EXPECT_TRUE(cut.withinMemory);
  EXPECT_EQ(cut.firstOp, (std::vector<int64_t>{0, 2, 4}));
  EXPECT_GT(stageMemory(tensors, 4, 1, 2).total, 12);
  EXPECT_LE(stageMemory(tensors, 4, 0, 2).total, 12);
}

TEST(StageCut, TensorsPassingByAreNotHeld) {
  // Op 0's 50 bytes are read by op 3 alone: stage [1, 3) does not hold
  // them (a pipeline sends them from op 0's stage to op 3's directly), but
  // [1, 4) receives them.
  std::vector<HeldTensor> tensors = chain({1, 1, 1, 1});
  HeldTensor skip;
  skip.bytes = 50;
  skip.producer = 0;
  skip.readers = {3};
  tensors.push_back(skip);
  // Received twice, sent on, live inside.
  EXPECT_EQ(stageMemory(tensors, 4, 1, 3).total, 2 + 1 + 1);
  EXPECT_EQ(stageMemory(tensors, 4, 1, 4).total, (2 + 100) + 1 + (1 + 1));
  EXPECT_EQ(stageMemory(tensors, 4, 0, 1).total, 1 + (1 + 50));
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
