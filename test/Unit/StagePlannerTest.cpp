//===- StagePlannerTest.cpp - The stage DP against brute force ------------===//

#include "weft/Plan/StagePlanner.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <limits>
#include <random>
#include <set>

using namespace weft::plan;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// A deterministic pseudo-random number in [0, 1) for a key: the DP and the
/// brute force ask in different orders and must get the same costs.
double unitHash(std::initializer_list<int64_t> key) {
  uint64_t h = 1469598103934665603ull;
  for (int64_t v : key) {
    h ^= static_cast<uint64_t>(v) + 0x9e3779b97f4a7c15ull + (h << 6) +
         (h >> 2);
    h *= 1099511628211ull;
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return static_cast<double>(h >> 11) / static_cast<double>(1ull << 53);
}

/// Every stage of `plan` on devices of its shape's kind, inside the
/// cluster, apart from every other stage; the cut covers the layers in
/// order.
void expectValidPlan(const StageProblem &p, const StagePlan &plan) {
  ASSERT_TRUE(plan.found);
  ASSERT_EQ(plan.firstLayer.size(), plan.stages.size() + 1);
  EXPECT_EQ(plan.firstLayer.front(), 0);
  EXPECT_EQ(plan.firstLayer.back(), p.layers);
  for (size_t k = 0; k + 1 < plan.firstLayer.size(); ++k)
    EXPECT_LT(plan.firstLayer[k], plan.firstLayer[k + 1]);
  if (p.maxStages > 0) {
    EXPECT_LE(static_cast<int64_t>(plan.stages.size()), p.maxStages);
  }
  std::set<std::pair<int64_t, int64_t>> used; // (node, device)
  for (const StagePlacement &stage : plan.stages) {
    const SubMeshShape &s = stage.shape;
    int64_t size = p.devicesPerNode[s.kind];
    ASSERT_EQ(static_cast<int64_t>(stage.nodes.size()), s.nodes);
    for (int64_t node : stage.nodes) {
      ASSERT_GE(node, 0);
      ASSERT_LT(node, static_cast<int64_t>(p.nodeKinds.size()));
      EXPECT_EQ(p.nodeKinds[node], s.kind);
      EXPECT_GE(stage.firstDevice, 0);
      EXPECT_LE(stage.firstDevice + s.devicesPerNode, size);
      for (int64_t d = 0; d < s.devicesPerNode; ++d)
        EXPECT_TRUE(used.insert({node, stage.firstDevice + d}).second)
            << "device " << stage.firstDevice + d << " of node " << node
            << " is in two stages";
    }
  }
}

struct RandomCase {
  StageProblem problem;
  uint64_t seed;
};

RandomCase randomCase(uint64_t seed, bool larger = false) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  RandomCase c;
  c.seed = seed;
  StageProblem &p = c.problem;
  int kinds = static_cast<int>(pick(1, 2));
  for (int k = 0; k < kinds; ++k)
    p.devicesPerNode.push_back(pick(larger ? 2 : 1, 4));
  int64_t nodes = pick(larger ? 2 : 1, 3);
  for (int64_t n = 0; n < nodes; ++n)
    p.nodeKinds.push_back(static_cast<int>(n % kinds));
  p.layers = larger ? pick(6, 8) : pick(1, 6);
  p.objective = pick(0, 1) ? StageObjective::Latency
                           : StageObjective::Throughput;
  p.microbatches = pick(1, 4);
  p.maxStages = pick(0, 1) ? pick(1, p.layers) : 0;
  std::vector<double> speed = {1.0, 0.4 + unitHash({(int64_t)seed, 7})};
  // Work grows with the layers taken and shrinks, imperfectly, with the
  // devices; some stages do not fit their memory.
  p.stageSeconds = [seed, speed](int64_t first, int64_t last,
                                 const SubMeshShape &s) {
    double noise = unitHash({(int64_t)seed, first, last, s.kind, s.nodes,
                             s.devicesPerNode});
    if (noise < 0.1)
      return kInf;
    double work = 0;
    for (int64_t l = first; l < last; ++l)
      work += 1 + 3 * unitHash({(int64_t)seed, 100, l});
    double devices = static_cast<double>(s.devices());
    return work / (speed[s.kind] * std::pow(devices, 0.7 + 0.3 * noise));
  };
  p.transferSeconds = [seed](int64_t layer, const SubMeshShape &from,
                             const SubMeshShape &to, bool sameNode) {
    double base = 2 * unitHash({(int64_t)seed, 200, layer, from.kind,
                                from.nodes, from.devicesPerNode, to.kind,
                                to.nodes, to.devicesPerNode});
    return sameNode ? base / 4 : base;
  };
  // Collecting the outputs from a wide last stage costs more.
  p.outputSeconds = [seed](const SubMeshShape &last) {
    return 0.2 * unitHash({(int64_t)seed, 300}) *
           static_cast<double>(last.devices());
  };
  return c;
}

/// The DP and the brute force agree on whether a plan exists and on the
/// optimum, and the DP's plan is valid. Returns whether a plan was found.
bool expectMatchesBruteForce(const StageProblem &p, uint64_t seed,
                             StagePlan &dp) {
  dp = planStages(p);
  StagePlan brute = planStagesByBruteForce(p);
  EXPECT_EQ(dp.found, brute.found) << "seed " << seed;
  if (!dp.found || !brute.found)
    return false;
  expectValidPlan(p, dp);
  double want = stageObjectiveValue(p, brute);
  EXPECT_NEAR(stageObjectiveValue(p, dp), want, 1e-9 * std::max(1.0, want))
      << "seed " << seed;
  return true;
}

} // namespace

TEST(StagePlanner, AllShapesOfACluster) {
  // Two 4-device nodes of kind 0 and one 2-device node of kind 1.
  std::vector<SubMeshShape> shapes = allSubMeshShapes({0, 0, 1}, {4, 2});
  std::vector<SubMeshShape> expected = {{0, 1, 1}, {0, 1, 2}, {0, 1, 3},
                                        {0, 1, 4}, {0, 2, 4}, {1, 1, 1},
                                        {1, 1, 2}};
  EXPECT_EQ(shapes, expected);
}

TEST(StagePlanner, RefusesBadProblems) {
  StageProblem p;
  p.layers = 2;
  p.nodeKinds = {0};
  p.devicesPerNode = {4};
  p.stageSeconds = [](int64_t, int64_t, const SubMeshShape &) { return 1.0; };
  EXPECT_EQ(checkStageProblem(p), "");
  StageProblem noLayers = p;
  noLayers.layers = 0;
  EXPECT_NE(checkStageProblem(noLayers), "");
  StageProblem badShape = p;
  badShape.shapes = {{0, 2, 4}};
  EXPECT_NE(checkStageProblem(badShape).find("does not exist"),
            std::string::npos);
  StageProblem badKind = p;
  badKind.nodeKinds = {1};
  EXPECT_NE(checkStageProblem(badKind), "");
  StageProblem noCost = p;
  noCost.stageSeconds = nullptr;
  EXPECT_NE(checkStageProblem(noCost), "");
}

// The DP's optimum equals the brute force's on random chains: equal and
// unequal node kinds, caps on the stage count, both objectives, stages that
// do not fit, transfers that depend on both sub-meshes and on sharing a
// node. Its plan is valid and its figures are its own plan's.
TEST(StagePlanner, MatchesBruteForce) {
  int compared = 0, unequal = 0, multiStage = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    RandomCase c = randomCase(seed);
    const StageProblem &p = c.problem;
    ASSERT_EQ(checkStageProblem(p), "");
    StagePlan dp;
    if (!expectMatchesBruteForce(p, seed, dp))
      continue;
    ++compared;
    unequal += p.devicesPerNode.size() > 1 && p.nodeKinds.size() > 1;
    multiStage += dp.stages.size() > 1;
    // The plan's figures: the stages' cycles and the closed form.
    double slowest = 0, first = dp.outputCollectionSeconds;
    EXPECT_DOUBLE_EQ(dp.outputCollectionSeconds,
                     p.outputSeconds(dp.stages.back().shape));
    for (size_t k = 0; k < dp.stages.size(); ++k) {
      slowest = std::max(slowest, dp.cycleSeconds[k]);
      first += dp.stageSeconds[k] + dp.transferInSeconds[k];
    }
    EXPECT_DOUBLE_EQ(dp.slowestCycleSeconds, slowest);
    EXPECT_DOUBLE_EQ(dp.firstMicrobatchSeconds, first);
    EXPECT_DOUBLE_EQ(dp.latencySeconds,
                     first + (p.microbatches - 1) * slowest);
  }
  // The cases cover what they claim to (at least 50 of each kind).
  EXPECT_GE(compared, 200);
  EXPECT_GE(unequal, 50);
  EXPECT_GE(multiStage, 50);
}

// Larger chains and clusters, where the DP's bound prunes labels it has
// kept and many placements lead to one state.
TEST(StagePlanner, MatchesBruteForceOnLargerCases) {
  int compared = 0;
  for (uint64_t seed = 1001; seed <= 1030; ++seed) {
    RandomCase c = randomCase(seed, /*larger=*/true);
    StagePlan dp;
    compared += expectMatchesBruteForce(c.problem, seed, dp);
  }
  EXPECT_GE(compared, 20);
}

// Sub-meshes must really pack: with two 8-device nodes, stages of 5, 5 and
// 6 devices would be fastest but do not fit; the plan packs, and the brute
// force agrees.
TEST(StagePlanner, SubMeshesPackIntoNodes) {
  StageProblem p;
  p.layers = 3;
  p.nodeKinds = {0, 0};
  p.devicesPerNode = {8};
  p.maxStages = 3;
  // A stage is fastest on 5 or 6 devices (beyond, communication wins).
  p.stageSeconds = [](int64_t first, int64_t last, const SubMeshShape &s) {
    double d = static_cast<double>(s.devices());
    double speedup = d <= 6 ? d : 6 - 0.5 * (d - 6);
    return static_cast<double>(last - first) / std::max(speedup, 0.5);
  };
  StagePlan plan = planStages(p);
  expectValidPlan(p, plan);
  int64_t devices = 0;
  for (const StagePlacement &stage : plan.stages)
    devices += stage.shape.devices();
  EXPECT_LE(devices, 16);
  EXPECT_NEAR(stageObjectiveValue(p, plan),
              stageObjectiveValue(p, planStagesByBruteForce(p)), 1e-12);
}

// Unequal devices: a node twice as fast gets about twice the layers.
TEST(StagePlanner, FasterNodesGetMoreLayers) {
  StageProblem p;
  p.layers = 12;
  p.nodeKinds = {0, 1};
  p.devicesPerNode = {2, 2};
  p.shapes = {{0, 1, 2}, {1, 1, 2}};
  p.maxStages = 2;
  p.stageSeconds = [](int64_t first, int64_t last, const SubMeshShape &s) {
    return static_cast<double>(last - first) / (s.kind == 0 ? 2.0 : 1.0);
  };
  StagePlan plan = planStages(p);
  expectValidPlan(p, plan);
  ASSERT_EQ(plan.stages.size(), 2u);
  int64_t fastLayers = 0;
  for (size_t k = 0; k < 2; ++k)
    if (plan.stages[k].shape.kind == 0)
      fastLayers = plan.firstLayer[k + 1] - plan.firstLayer[k];
  EXPECT_EQ(fastLayers, 8);
  EXPECT_DOUBLE_EQ(plan.slowestCycleSeconds, 4.0);
}

// Transfers are part of the objective: when moving the boundary tensors
// costs more than the second stage saves, one stage wins; a transfer inside
// one node is cheaper, so the two stages share a node when they can.
TEST(StagePlanner, TransfersShapeThePlan) {
  StageProblem p;
  p.layers = 4;
  p.nodeKinds = {0, 0};
  p.devicesPerNode = {2};
  p.shapes = {{0, 1, 1}};
  p.stageSeconds = [](int64_t first, int64_t last, const SubMeshShape &) {
    return static_cast<double>(last - first);
  };
  p.transferSeconds = [](int64_t, const SubMeshShape &, const SubMeshShape &,
                         bool sameNode) { return sameNode ? 0.1 : 0.6; };
  StagePlan plan = planStages(p);
  expectValidPlan(p, plan);
  // One layer per stage, two stages per node: the transfers inside a node
  // cost 0.1, the one between the nodes 0.6, so the middle stages' cycles
  // are 1 + 0.1 + 0.6 (two stages of two layers would cycle at 2.1).
  ASSERT_EQ(plan.stages.size(), 4u);
  EXPECT_NEAR(plan.slowestCycleSeconds, 1.7, 1e-12);
  EXPECT_EQ(plan.stages[0].nodes, plan.stages[1].nodes);
  EXPECT_EQ(plan.stages[2].nodes, plan.stages[3].nodes);
  EXPECT_NE(plan.stages[1].nodes, plan.stages[2].nodes);
  EXPECT_NEAR(stageObjectiveValue(p, plan),
              stageObjectiveValue(p, planStagesByBruteForce(p)), 1e-12);

  StageProblem costly = p;
  costly.transferSeconds = [](int64_t, const SubMeshShape &,
                              const SubMeshShape &, bool) { return 10.0; };
  StagePlan one = planStages(costly);
  expectValidPlan(costly, one);
  EXPECT_EQ(one.stages.size(), 1u);
  EXPECT_DOUBLE_EQ(one.slowestCycleSeconds, 4.0);
}

// No plan: every stage over its memory.
TEST(StagePlanner, NothingFits) {
  StageProblem p;
  p.layers = 2;
  p.nodeKinds = {0};
  p.devicesPerNode = {2};
  p.stageSeconds = [](int64_t, int64_t, const SubMeshShape &) { return kInf; };
  EXPECT_FALSE(planStages(p).found);
  EXPECT_FALSE(planStagesByBruteForce(p).found);
}

namespace {
/// A GPT-like chain on `nodes` nodes of 8 devices: an embedding, `blocks`
/// equal blocks and a heavy LM head; sharding scales sub-linearly and pays
/// more across nodes; transfers are one boundary tensor.
StageProblem gptLikeProblem(int64_t blocks, int64_t nodes,
                            StageObjective objective, int64_t microbatches) {
  StageProblem p;
  p.layers = blocks + 2;
  p.nodeKinds.assign(nodes, 0);
  p.devicesPerNode = {8};
  p.objective = objective;
  p.microbatches = microbatches;
  int64_t layers = p.layers;
  p.stageSeconds = [layers](int64_t first, int64_t last,
                            const SubMeshShape &s) {
    double work = 0;
    for (int64_t l = first; l < last; ++l)
      work += l == 0 ? 0.2 : l + 1 == layers ? 3.5 : 1.0;
    double d = static_cast<double>(s.devices());
    double comm = 0.02 * static_cast<double>(last - first) *
                  (s.nodes > 1 ? 4.0 : 1.0) * (d > 1 ? 1.0 : 0.0);
    return work / std::pow(d, 0.85) + comm;
  };
  p.transferSeconds = [](int64_t, const SubMeshShape &from,
                         const SubMeshShape &to, bool sameNode) {
    double lanes = static_cast<double>(std::min(from.devices(), to.devices()));
    return (sameNode ? 0.01 : 0.05) / lanes;
  };
  p.outputSeconds = [](const SubMeshShape &last) {
    return last.devices() > 1 ? 0.05 : 0.0;
  };
  return p;
}
} // namespace

// How the DP's work grows with layers and nodes (a report: run with
// --gtest_also_run_disabled_tests).
TEST(StagePlanner, DISABLED_ScalingReport) {
  for (int64_t nodes : {1, 2, 4, 8})
    for (int64_t blocks : {12, 24, 48, 96})
      for (StageObjective objective :
           {StageObjective::Throughput, StageObjective::Latency}) {
        StageProblem p = gptLikeProblem(blocks, nodes, objective, 4);
        auto start = std::chrono::steady_clock::now();
        StagePlan plan = planStages(p);
        double seconds = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - start)
                             .count();
        std::printf("%2lld nodes %3lld blocks %-10s: %6.3f s, %lld states, "
                    "%lld labels, %zu stages, objective %.4f\n",
                    static_cast<long long>(nodes),
                    static_cast<long long>(blocks),
                    objective == StageObjective::Throughput ? "throughput"
                                                            : "latency",
                    seconds, static_cast<long long>(plan.states),
                    static_cast<long long>(plan.labels), plan.stages.size(),
                    stageObjectiveValue(p, plan));
        std::fflush(stdout);
      }
}
