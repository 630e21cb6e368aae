//===- ShardingILPTest.cpp - Tests of the sharding ILP and its reductions -===//
//
// Checks the CBC-solved ILP against exhaustive search on random graphs, on
// hand-made cases whose answers are known, on invalid input, for
// determinism, and times it on Alpa-sized layered graphs.
//
//===----------------------------------------------------------------------===//

#include "weft/Plan/ShardingILP.h"

#include "llvm/Support/FormatVariadic.h"

#include "gtest/gtest.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

using namespace weft::plan;

static constexpr double kInf = std::numeric_limits<double>::infinity();
static constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

static StrategyGraph::Node makeNode(std::string name, std::vector<double> cost,
                                    std::vector<double> memory = {},
                                    bool alwaysLive = false) {
  StrategyGraph::Node node;
  node.name = std::move(name);
  for (size_t i = 0; i < cost.size(); ++i)
    node.strategyNames.push_back("s" + std::to_string(i));
  if (memory.empty())
    memory.assign(cost.size(), 0);
  node.cost = std::move(cost);
  node.memoryBytes = std::move(memory);
  node.memoryAlwaysLive = alwaysLive;
  return node;
}

static std::string errorText(llvm::Error error) {
  return llvm::toString(std::move(error));
}

/// A random graph of 2-7 nodes with 1-4 strategies, DAG edges (some
/// duplicated, all-zero, separable or with +infinity pairs) and, for about
/// half, live sets and a budget that may be too small.
static StrategyGraph randomGraph(std::mt19937 &rng) {
  auto uniform = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  auto chance = [&](double p) { return std::bernoulli_distribution(p)(rng); };
  StrategyGraph g;
  int n = uniform(2, 7);
  // Small integers make ties (exercising the tie-break); reals with a 1e-6
  // scale exercise the cost scaling.
  bool integral = chance(0.5);
  double scale = chance(0.5) ? 1e-6 : 1.0;
  auto cost = [&]() {
    return scale * (integral ? uniform(0, 9)
                             : std::uniform_real_distribution<>(0, 1)(rng));
  };
  for (int v = 0; v < n; ++v) {
    int k = uniform(1, 4);
    std::vector<double> costs, memory;
    for (int i = 0; i < k; ++i) {
      costs.push_back(chance(0.05) ? kInf : cost());
      memory.push_back(uniform(0, 100) * 1e6);
    }
    g.nodes.push_back(
        makeNode("n" + std::to_string(v), costs, memory, chance(0.2)));
  }
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) {
      if (!chance(0.4))
        continue;
      int copies = chance(0.1) ? 2 : 1;
      int kind = uniform(0, 9);
      for (int c = 0; c < copies; ++c) {
        StrategyGraph::Edge edge{a, b, {}};
        int rows = g.nodes[a].cost.size(), cols = g.nodes[b].cost.size();
        std::vector<double> rowPart(rows), colPart(cols);
        for (double &x : rowPart)
          x = cost();
        for (double &x : colPart)
          x = cost();
        edge.cost.assign(rows, std::vector<double>(cols, 0));
        for (int i = 0; i < rows; ++i)
          for (int j = 0; j < cols; ++j) {
            if (kind == 0)
              continue; // all zero
            edge.cost[i][j] = kind == 1 ? rowPart[i] + colPart[j] : cost();
            if (kind >= 2 && chance(0.1))
              edge.cost[i][j] = kInf;
          }
        if (chance(0.5)) {
          // The same edge, stated from the other end.
          std::vector<std::vector<double>> t(cols, std::vector<double>(rows));
          for (int i = 0; i < rows; ++i)
            for (int j = 0; j < cols; ++j)
              t[j][i] = edge.cost[i][j];
          edge = {b, a, std::move(t)};
        }
        g.edges.push_back(std::move(edge));
      }
    }
  if (chance(0.5)) {
    double total = 0;
    for (const StrategyGraph::Node &node : g.nodes)
      total +=
          *std::max_element(node.memoryBytes.begin(), node.memoryBytes.end());
    int sets = uniform(0, 3);
    for (int s = 0; s < sets; ++s) {
      std::vector<int> set;
      for (int v = 0; v < n; ++v)
        if (chance(0.5))
          set.push_back(v);
      g.liveSets.push_back(set);
    }
    g.memoryBudgetBytes =
        std::round(std::uniform_real_distribution<>(0.1, 0.9)(rng) * total /
                   1e6) *
        1e6;
  }
  return g;
}

/// The number of allowed plans within the budget whose cost is within
/// `tolerance` of `best`.
static int countNearOptimal(const StrategyGraph &g, double best,
                            double tolerance) {
  std::vector<int> choice(g.nodes.size(), 0);
  int count = 0;
  for (;;) {
    double cost = planCost(g, choice);
    if (std::isfinite(cost) && cost <= best + tolerance &&
        planPeakMemory(g, choice) <= g.memoryBudgetBytes)
      ++count;
    int v = choice.size() - 1;
    while (v >= 0 && ++choice[v] == (int)g.nodes[v].cost.size())
      choice[v--] = 0;
    if (v < 0)
      return count;
  }
}

// Tests that the ILP agrees with exhaustive search on 160 random graphs under
// every combination of reductions: same feasibility, the same error for a
// too-small budget, the same objective, and the same plan when it is unique.
// Mode 4 forces budgeted graphs through the Lagrangian phase, whose plan
// must fit and whose gap must be measured from a valid lower bound.
TEST(ShardingILP, MatchesBruteForceOnRandomGraphs) {
  std::mt19937 rng(20240607);
  int feasible = 0, unique = 0, overBudget = 0, forbidden = 0, relaxed = 0;
  for (int trial = 0; trial < 160; ++trial) {
    StrategyGraph g = randomGraph(rng);
    llvm::Expected<Solution> exact = solveBruteForce(g);
    std::string exactError;
    if (!exact)
      exactError = errorText(exact.takeError());
    bool isUnique = false;
    if (exact) {
      ++feasible;
      double tolerance = 1e-9 * std::max(1e-6, std::abs(exact->objective));
      isUnique = countNearOptimal(g, exact->objective, tolerance) == 1;
      unique += isUnique;
    } else if (exactError.find("memory budget too small") !=
               std::string::npos) {
      ++overBudget;
    } else {
      ++forbidden;
    }
    for (int mode = 0; mode < 5; ++mode) {
      SolveOptions options;
      options.pruneDominated = mode & 1 || mode == 4;
      options.mergeFollowers = mode & 2 || mode == 4;
      if (mode == 4)
        options.maxDirectVariables = 0;
      SCOPED_TRACE(llvm::formatv("trial {0} mode {1}", trial, mode).str());
      llvm::Expected<Solution> ilp = solveILP(g, options);
      if (!exact) {
        ASSERT_FALSE(static_cast<bool>(ilp)) << "brute force: " << exactError;
        std::string ilpError = errorText(ilp.takeError());
        if (exactError.find("memory budget") != std::string::npos)
          EXPECT_EQ(ilpError, exactError);
        else
          EXPECT_NE(ilpError.find("every plan is forbidden"), std::string::npos)
              << ilpError;
        continue;
      }
      ASSERT_TRUE(static_cast<bool>(ilp)) << errorText(ilp.takeError());
      double tolerance = 1e-9 * std::max(1e-6, std::abs(exact->objective));
      if (mode == 4) {
        EXPECT_GE(ilp->objective, exact->objective - tolerance);
        EXPECT_LE(ilp->objective * (1 - ilp->gap),
                  exact->objective + tolerance);
        if (ilp->optimal) {
          EXPECT_NEAR(ilp->objective, exact->objective, tolerance);
        }
        relaxed += !ilp->optimal || ilp->numVariables > 0;
        EXPECT_LE(ilp->peakMemoryBytes, g.memoryBudgetBytes);
        continue;
      }
      EXPECT_TRUE(ilp->optimal);
      EXPECT_NEAR(ilp->objective, exact->objective, tolerance);
      EXPECT_EQ(ilp->objective, planCost(g, ilp->choice));
      EXPECT_LE(ilp->peakMemoryBytes, g.memoryBudgetBytes);
      if (isUnique) {
        EXPECT_EQ(ilp->choice, exact->choice);
      }
    }
  }
  std::printf("random graphs: %d feasible (%d with a unique optimum), %d "
              "over budget, %d forbidden; %d took the Lagrangian path\n",
              feasible, unique, overBudget, forbidden, relaxed);
  // The generator must actually cover every outcome.
  EXPECT_GE(unique, 60);
  EXPECT_GE(overBudget, 10);
  EXPECT_GE(forbidden, 3);
}

// Tests that resharding can make the locally cheaper strategy globally worse:
// a's and c's cheaper strategies disagree with each other, and every edge
// charges for disagreeing, so the plan pays 2 us more at a to save 4 at c.
TEST(ShardingILP, ReshardingOutweighsLocalCost) {
  StrategyGraph g;
  g.nodes = {makeNode("a", {1e-6, 3e-6}), makeNode("b", {2e-6, 2e-6}),
             makeNode("c", {5e-6, 1e-6})};
  std::vector<std::vector<double>> agree = {{0, 10e-6}, {10e-6, 0}};
  g.edges = {{0, 1, agree}, {1, 2, agree}};
  for (int mode = 0; mode < 4; ++mode) {
    SolveOptions options;
    options.pruneDominated = mode & 1;
    options.mergeFollowers = mode & 2;
    llvm::Expected<Solution> solution = solveILP(g, options);
    ASSERT_TRUE(static_cast<bool>(solution)) << errorText(solution.takeError());
    EXPECT_EQ(solution->choice, (std::vector<int>{1, 1, 1}));
    EXPECT_NEAR(solution->objective, 6e-6, 1e-15);
    EXPECT_TRUE(solution->optimal);
  }
}

/// A weight feeding a matmul: replicated is faster, sharded needs a quarter
/// of the memory.
static StrategyGraph matmulGraph() {
  StrategyGraph g;
  g.nodes = {makeNode("weight", {0, 0}, {8 * kGiB, 2 * kGiB}, true),
             makeNode("matmul", {1e-3, 1.5e-3}, {1 * kGiB, 0.25 * kGiB}),
             makeNode("relu", {1e-5, 1e-5}, {1 * kGiB, 0.25 * kGiB})};
  g.edges = {{0, 1, {{0, kInf}, {kInf, 0}}}, {1, 2, {{0, 2e-4}, {1e-4, 0}}}};
  g.liveSets = {{1}, {1, 2}};
  return g;
}

// Tests that a budget the replicated plan exceeds forces the sharded one.
TEST(ShardingILP, MemoryBudgetForcesSharding) {
  StrategyGraph g = matmulGraph();
  llvm::Expected<Solution> unlimited = solveILP(g);
  ASSERT_TRUE(static_cast<bool>(unlimited)) << errorText(unlimited.takeError());
  EXPECT_EQ(unlimited->choice, (std::vector<int>{0, 0, 0}));
  EXPECT_DOUBLE_EQ(unlimited->peakMemoryBytes, 10 * kGiB);

  g.memoryBudgetBytes = 4 * kGiB;
  for (int mode = 0; mode < 4; ++mode) {
    SolveOptions options;
    options.pruneDominated = mode & 1;
    options.mergeFollowers = mode & 2;
    llvm::Expected<Solution> limited = solveILP(g, options);
    ASSERT_TRUE(static_cast<bool>(limited)) << errorText(limited.takeError());
    EXPECT_EQ(limited->choice, (std::vector<int>{1, 1, 1}));
    EXPECT_DOUBLE_EQ(limited->peakMemoryBytes, 2.5 * kGiB);
    EXPECT_NEAR(limited->objective, 1.51e-3, 1e-12);
  }
}

// Tests that a budget below every plan's peak is reported with the budget and
// the smallest peak, found by the second solve.
TEST(ShardingILP, InfeasibleBudgetNamesTheNeed) {
  StrategyGraph g = matmulGraph();
  g.memoryBudgetBytes = 0.5 * kGiB;
  for (int mode = 0; mode < 4; ++mode) {
    SolveOptions options;
    options.pruneDominated = mode & 1;
    options.mergeFollowers = mode & 2;
    llvm::Expected<Solution> solution = solveILP(g, options);
    ASSERT_FALSE(static_cast<bool>(solution));
    std::string text = errorText(solution.takeError());
    EXPECT_NE(text.find("needs at least 2.50 GiB (2684354560 bytes) per "
                        "device"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("the budget is 0.50 GiB (536870912 bytes)"),
              std::string::npos)
        << text;
  }
}

// Tests that a graph whose every plan is forbidden is an error naming a node.
TEST(ShardingILP, EveryPlanForbidden) {
  StrategyGraph g;
  g.nodes = {makeNode("producer", {1, 1}), makeNode("consumer", {1, 1})};
  g.edges = {{0, 1, {{kInf, 0}, {kInf, kInf}}},
             {0, 1, {{0, kInf}, {kInf, kInf}}}};
  llvm::Expected<Solution> solution = solveILP(g);
  ASSERT_FALSE(static_cast<bool>(solution));
  std::string text = errorText(solution.takeError());
  EXPECT_NE(text.find("every plan is forbidden"), std::string::npos) << text;
  EXPECT_NE(text.find("'producer'"), std::string::npos) << text;
}

// Tests that malformed graphs are rejected with the offending element named.
TEST(ShardingILP, ValidationErrors) {
  auto expectError = [](const StrategyGraph &g, const char *needle) {
    llvm::Error error = validate(g);
    ASSERT_TRUE(static_cast<bool>(error)) << "expected: " << needle;
    std::string text = errorText(std::move(error));
    EXPECT_NE(text.find(needle), std::string::npos) << text;
    llvm::Expected<Solution> solution = solveILP(g);
    ASSERT_FALSE(static_cast<bool>(solution));
    EXPECT_EQ(errorText(solution.takeError()), text);
  };
  auto base = [] {
    StrategyGraph g;
    g.nodes = {makeNode("x", {1, 2}), makeNode("y", {3})};
    g.edges = {{0, 1, {{0}, {1}}}};
    return g;
  };
  ASSERT_FALSE(static_cast<bool>(validate(base())));

  StrategyGraph g = base();
  g.nodes[0].strategyNames.pop_back();
  expectError(g, "node 0 ('x') has 1 strategy names but 2 costs");
  g = base();
  g.nodes[1].memoryBytes.push_back(0);
  expectError(g, "node 1 ('y') has 2 memory sizes but 1 costs");
  g = base();
  g.nodes[1] = makeNode("y", {});
  expectError(g, "node 1 ('y') has no strategies");
  g = base();
  g.nodes[0].cost[1] = -1;
  expectError(g, "node 0 ('x'): cost of strategy 1 ('s1') is -1");
  g = base();
  g.nodes[0].cost[0] = std::nan("");
  expectError(g, "cost of strategy 0");
  g = base();
  g.nodes[0].memoryBytes[0] = kInf;
  expectError(g, "memory of strategy 0");
  g = base();
  g.edges[0].cost[1][0] = std::nan("");
  expectError(g, "edge 0 (node 0 ('x') -> node 1 ('y')): cost[1][0] is");
  g = base();
  g.edges[0].cost.pop_back();
  expectError(g, "edge 0 (node 0 ('x') -> node 1 ('y')) has 1 cost rows");
  g = base();
  g.edges[0].cost[0].push_back(0);
  expectError(g, "cost row 0 has 2 entries but the consumer has 1");
  g = base();
  g.edges.push_back({1, 2, {{0}}});
  expectError(g, "edge 1 (1 -> 2): node index out of range [0, 2)");
  g = base();
  g.edges.push_back({-1, 0, {}});
  expectError(g, "edge 1 (-1 -> 0): node index out of range");
  g = base();
  g.edges.push_back({1, 1, {{0}}});
  expectError(g, "edge 1 connects node 1 ('y') to itself");
  g = base();
  g.liveSets = {{0}, {1, 5}};
  expectError(g, "live set 1 names node 5");
  g = base();
  g.memoryBudgetBytes = std::nan("");
  expectError(g, "memory budget is");
}

// Tests the trivial graphs: none, and one whose reductions decide everything.
TEST(ShardingILP, TrivialGraphs) {
  llvm::Expected<Solution> empty = solveILP(StrategyGraph());
  ASSERT_TRUE(static_cast<bool>(empty)) << errorText(empty.takeError());
  EXPECT_TRUE(empty->choice.empty());
  EXPECT_TRUE(empty->optimal);

  StrategyGraph g;
  g.nodes = {makeNode("a", {2, 1, 1}), makeNode("b", {4})};
  g.edges = {{0, 1, {{1}, {1}, {0}}}};
  llvm::Expected<Solution> solution = solveILP(g);
  ASSERT_TRUE(static_cast<bool>(solution)) << errorText(solution.takeError());
  EXPECT_EQ(solution->choice, (std::vector<int>{2, 0}));
  EXPECT_EQ(solution->objective, 5);
  EXPECT_EQ(solution->nodesAfterReduction, 0);
  EXPECT_EQ(solution->numVariables, 0);
}

// Tests the byte formatting used in reports.
TEST(ShardingILP, FormatBytes) {
  EXPECT_EQ(formatBytes(512), "512 B");
  EXPECT_EQ(formatBytes(1536), "1.50 KiB");
  EXPECT_EQ(formatBytes(3.25 * kGiB), "3.25 GiB");
  EXPECT_EQ(formatBytes(kInf), "unlimited");
}

// Tests that exact ties go to the lower strategy index, with or without the
// reductions (which would otherwise hide the tie-break).
TEST(ShardingILP, TiesGoToLowerIndices) {
  StrategyGraph g;
  g.nodes = {makeNode("a", {1, 1, 1}), makeNode("b", {2, 2}),
             makeNode("c", {0, 0})};
  g.edges = {{0, 1, {{1, 1}, {1, 1}, {1, 1}}}, {1, 2, {{0, 5}, {5, 0}}}};
  for (int mode = 0; mode < 4; ++mode) {
    SolveOptions options;
    options.pruneDominated = mode & 1;
    options.mergeFollowers = mode & 2;
    llvm::Expected<Solution> solution = solveILP(g, options);
    ASSERT_TRUE(static_cast<bool>(solution)) << errorText(solution.takeError());
    EXPECT_EQ(solution->choice, (std::vector<int>{0, 0, 0})) << mode;
    EXPECT_EQ(solution->objective, 4);
  }
}

/// A hard graph of `numOps` ops in program order, up to
/// `maxStrategies` strategies each. A strategy reads and writes layouts from
/// a small set independently at random (unlike real ops, whose input and
/// output layouts go together: this makes the LP bound weak); resharding is
/// free when they match, else it costs by the
/// layout pair and the tensor size. Each op reads the previous one and
/// sometimes an earlier one (skip connections); every third reads an
/// always-live weight. Live sets are windows of four consecutive ops; with
/// `budget`, the budget lies between the smallest and largest peaks.
static StrategyGraph layeredGraph(int numOps, int maxStrategies, uint32_t seed,
                                  bool budget) {
  std::mt19937 rng(seed);
  auto uniform = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  constexpr int kLayouts = 8;
  const double shards[kLayouts] = {1, 2, 2, 4, 4, 8, 8, 8};
  double pairCost[kLayouts][kLayouts];
  for (auto &row : pairCost)
    for (double &c : row)
      c = uniform(1, 5) * 1e-10;
  StrategyGraph g;
  std::vector<std::vector<int>> outLayout, inLayout;
  std::vector<double> bytes;
  auto addNode = [&](const std::string &name, int k, double size, bool weight) {
    std::vector<double> cost, memory;
    std::vector<int> outs, ins;
    for (int i = 0; i < k; ++i) {
      outs.push_back(uniform(0, kLayouts - 1));
      ins.push_back(uniform(0, kLayouts - 1));
      cost.push_back(
          weight ? 0 : size * 1e-12 * uniform(5, 20) / shards[outs.back()]);
      memory.push_back(size / shards[outs.back()]);
    }
    g.nodes.push_back(makeNode(name, cost, memory, weight));
    outLayout.push_back(outs);
    inLayout.push_back(ins);
    bytes.push_back(size);
    return static_cast<int>(g.nodes.size()) - 1;
  };
  auto connect = [&](int from, int to) {
    StrategyGraph::Edge edge{from, to, {}};
    for (int out : outLayout[from]) {
      edge.cost.emplace_back();
      for (int in : inLayout[to])
        edge.cost.back().push_back(out == in ? 0
                                             : bytes[from] * pairCost[out][in]);
    }
    g.edges.push_back(std::move(edge));
  };
  std::vector<int> ops;
  int lo = std::max(1, maxStrategies / 2);
  while (static_cast<int>(g.nodes.size()) < numOps) {
    int t = ops.size();
    int op = addNode("op" + std::to_string(t), uniform(lo, maxStrategies),
                     uniform(1, 64) * 1e6, false);
    if (t > 0)
      connect(ops[t - 1], op);
    if (t > 2 && uniform(0, 1))
      connect(ops[t - uniform(2, std::min(t, 8))], op);
    if (t % 3 == 0 && static_cast<int>(g.nodes.size()) < numOps)
      connect(addNode("w" + std::to_string(t), uniform(2, 4),
                      uniform(1, 32) * 1e6, true),
              op);
    ops.push_back(op);
  }
  for (size_t t = 0; t < ops.size(); ++t)
    g.liveSets.push_back(std::vector<int>(ops.begin() + std::max<int>(0, t - 3),
                                          ops.begin() + t + 1));
  if (budget) {
    std::vector<int> smallest, largest;
    for (const StrategyGraph::Node &node : g.nodes) {
      const std::vector<double> &m = node.memoryBytes;
      smallest.push_back(std::min_element(m.begin(), m.end()) - m.begin());
      largest.push_back(std::max_element(m.begin(), m.end()) - m.begin());
    }
    double least = planPeakMemory(g, smallest);
    g.memoryBudgetBytes =
        std::round(least + 0.3 * (planPeakMemory(g, largest) - least));
  }
  return g;
}

/// A transformer-like graph on a mesh of `sizes.size()` axes, as Alpa's
/// pass would build it: matmuls whose strategies assign each mesh axis to
/// the M, K or N dimension or to none (partial sums over K pay an
/// all-reduce), element-wise ops that keep any layout, and always-live
/// weights. Resharding between 2-D layouts costs all-gathers and
/// all-to-alls; no strategy list is longer than `maxStrategies`. Live sets
/// are windows of four consecutive ops; with `budget`, the budget lies 30%
/// of the way from the smallest to the largest peak.
static StrategyGraph transformerGraph(int numNodes, std::vector<int> sizes,
                                      int maxStrategies, uint32_t seed,
                                      bool budget) {
  std::mt19937 rng(seed);
  const int axes = sizes.size();
  int layouts = 1;
  for (int a = 0; a < axes; ++a)
    layouts *= 3;
  // Layout l puts mesh axis a on tensor dim (l / 3^a) % 3 - 1 (-1: none).
  auto dimOf = [](int layout, int axis) {
    for (int a = 0; a < axis; ++a)
      layout /= 3;
    return layout % 3 - 1;
  };
  auto shards = [&](int layout) {
    double n = 1;
    for (int a = 0; a < axes; ++a)
      n *= dimOf(layout, a) >= 0 ? sizes[a] : 1;
    return n;
  };
  auto reshard = [&](int from, int to, double bytes) {
    if (from == to)
      return 0.0;
    double volume = 0;
    for (int a = 0; a < axes; ++a) {
      int x = dimOf(from, a), y = dimOf(to, a);
      if (x >= 0 && y < 0)
        volume += bytes / shards(from) * (sizes[a] - 1); // all-gather
      else if (x >= 0 && y >= 0 && x != y)
        volume += bytes / shards(from); // all-to-all
    }
    return 5e-6 + volume / 1e11;
  };
  struct Info {
    std::vector<int> out;
    std::vector<std::vector<int>> in; // [strategy][operand]
    double bytes;
  };
  std::vector<Info> info;
  StrategyGraph g;
  // Keeps at most maxStrategies of the candidates, chosen at random.
  auto cap = [&](int count) {
    std::vector<int> keep(count);
    for (int i = 0; i < count; ++i)
      keep[i] = i;
    std::shuffle(keep.begin(), keep.end(), rng);
    keep.resize(std::min(count, maxStrategies));
    std::sort(keep.begin(), keep.end());
    return keep;
  };
  auto add = [&](const std::string &name, Info node, std::vector<double> cost,
                 bool weight) {
    std::vector<double> memory;
    for (int l : node.out)
      memory.push_back(node.bytes / shards(l));
    g.nodes.push_back(makeNode(name, cost, memory, weight));
    info.push_back(std::move(node));
    return static_cast<int>(g.nodes.size()) - 1;
  };
  auto connect = [&](int from, int to, int operand) {
    StrategyGraph::Edge edge{from, to, {}};
    for (int o : info[from].out) {
      edge.cost.emplace_back();
      for (const std::vector<int> &in : info[to].in)
        edge.cost.back().push_back(reshard(o, in[operand], info[from].bytes));
    }
    g.edges.push_back(std::move(edge));
  };
  std::vector<int> ops;
  auto layoutOf = [&](const std::vector<int> &dimAxes) {
    int l = 0;
    for (int a = axes - 1; a >= 0; --a)
      l = l * 3 + dimAxes[a] + 1;
    return l;
  };
  auto weightNode = [&](const std::string &name, double bytes) {
    Info node{cap(layouts), {}, bytes};
    return add(name, node, std::vector<double>(node.out.size(), 0), true);
  };
  auto elementwise = [&](const std::string &name, std::vector<int> inputs,
                         double bytes) {
    Info node{cap(layouts), {}, bytes};
    std::vector<double> cost;
    for (int l : node.out) {
      node.in.push_back(std::vector<int>(inputs.size(), l));
      cost.push_back(bytes / shards(l) / 1e12);
    }
    int v = add(name, node, cost, false);
    for (size_t o = 0; o < inputs.size(); ++o)
      connect(inputs[o], v, o);
    ops.push_back(v);
    return v;
  };
  // [m, k] x [k, n]; each axis goes to m, k, n or nowhere.
  auto matmul = [&](const std::string &name, int lhs, int rhs, double m,
                    double k, double n) {
    int combos = 1;
    for (int a = 0; a < axes; ++a)
      combos *= 4;
    Info node{{}, {}, 2 * m * n};
    std::vector<double> cost;
    for (int c : cap(combos)) {
      std::vector<int> lhsDims(axes), rhsDims(axes), outDims(axes);
      double devices = 1, reduce = 1;
      for (int a = 0, code = c; a < axes; ++a, code /= 4) {
        int role = code % 4; // 0 none, 1 m, 2 k, 3 n
        lhsDims[a] = role == 1 ? 0 : role == 2 ? 1 : -1;
        rhsDims[a] = role == 2 ? 0 : role == 3 ? 1 : -1;
        outDims[a] = role == 1 ? 0 : role == 3 ? 1 : -1;
        devices *= role ? sizes[a] : 1;
        reduce *= role == 2 ? sizes[a] : 1;
      }
      int out = layoutOf(outDims);
      node.out.push_back(out);
      node.in.push_back({layoutOf(lhsDims), layoutOf(rhsDims)});
      double allReduce = reduce > 1 ? 2 * (reduce - 1) / reduce * node.bytes /
                                          shards(out) / 1e11
                                    : 0;
      cost.push_back(2 * m * k * n / devices / 1e14 + allReduce);
    }
    int v = add(name, node, cost, false);
    connect(lhs, v, 0);
    connect(rhs, v, 1);
    ops.push_back(v);
    return v;
  };
  const double tokens = 2048, hidden = 4096;
  int x = elementwise("embed", {}, 2 * tokens * hidden);
  for (int layer = 0; static_cast<int>(g.nodes.size()) < numNodes; ++layer) {
    std::string p = "l" + std::to_string(layer) + ".";
    double h = hidden, t = tokens;
    int q = matmul(p + "q", x, weightNode(p + "wq", 2 * h * h), t, h, h);
    int k = matmul(p + "k", x, weightNode(p + "wk", 2 * h * h), t, h, h);
    int v = matmul(p + "v", x, weightNode(p + "wv", 2 * h * h), t, h, h);
    int scores = matmul(p + "scores", q, k, t, h, t);
    int probs = elementwise(p + "softmax", {scores}, 2 * t * t);
    int context = matmul(p + "context", probs, v, t, t, h);
    int proj =
        matmul(p + "proj", context, weightNode(p + "wo", 2 * h * h), t, h, h);
    int norm1 =
        elementwise(p + "norm1",
                    {elementwise(p + "add1", {proj, x}, 2 * t * h)}, 2 * t * h);
    int up =
        matmul(p + "up", norm1, weightNode(p + "w1", 8 * h * h), t, h, 4 * h);
    int act = elementwise(p + "gelu", {up}, 8 * t * h);
    int down =
        matmul(p + "down", act, weightNode(p + "w2", 8 * h * h), t, 4 * h, h);
    x = elementwise(p + "norm2",
                    {elementwise(p + "add2", {down, norm1}, 2 * t * h)},
                    2 * t * h);
  }
  for (size_t i = 0; i < ops.size(); ++i)
    g.liveSets.push_back(std::vector<int>(ops.begin() + std::max<int>(0, i - 3),
                                          ops.begin() + i + 1));
  if (budget) {
    std::vector<int> smallest, largest;
    for (const StrategyGraph::Node &node : g.nodes) {
      const std::vector<double> &m = node.memoryBytes;
      smallest.push_back(std::min_element(m.begin(), m.end()) - m.begin());
      largest.push_back(std::max_element(m.begin(), m.end()) - m.begin());
    }
    double least = planPeakMemory(g, smallest);
    g.memoryBudgetBytes =
        std::round(least + 0.3 * (planPeakMemory(g, largest) - least));
  }
  return g;
}

static Solution solveAndReport(const StrategyGraph &g, const char *label) {
  llvm::Expected<Solution> solution = solveILP(g);
  if (!solution) {
    ADD_FAILURE() << label << ": " << errorText(solution.takeError());
    return Solution();
  }
  size_t strategies = 0;
  for (const StrategyGraph::Node &node : g.nodes)
    strategies += node.cost.size();
  std::printf("%-24s %5zu nodes %6zu strategies %5zu edges -> %4lld nodes "
              "%5lld pruned, ILP %7lld vars %7lld rows, %s%s%s, cost %.6g s "
              "gap %.2g, %.3f s\n",
              label, g.nodes.size(), strategies, g.edges.size(),
              (long long)solution->nodesAfterReduction,
              (long long)solution->strategiesPruned,
              (long long)solution->numVariables,
              (long long)solution->numConstraints,
              solution->optimal ? "optimal" : "not proven optimal",
              solution->hitNodeLimit ? " (node limit)" : "",
              solution->hitTimeLimit ? " (time limit)" : "",
              solution->objective, solution->gap, solution->solveSeconds);
  return *solution;
}

// Tests that on transformer-like graphs whose plain ILP (no reductions) CBC
// proves, the default solve finds the same cost; on the 56-node one under a
// budget it takes the Lagrangian path, whose bound must hold.
TEST(ShardingILP, ReductionsKeepTheOptimumOnTransformerGraphs) {
  struct Case {
    int nodes;
    std::vector<int> mesh;
    bool budget;
  };
  for (const Case &c : {Case{21, {2, 2}, false}, Case{21, {2, 2}, true},
                        Case{56, {4, 2}, true}}) {
    StrategyGraph g = transformerGraph(c.nodes, c.mesh, 25, 11, c.budget);
    llvm::Expected<Solution> reduced = solveILP(g);
    ASSERT_TRUE(static_cast<bool>(reduced)) << errorText(reduced.takeError());
    SolveOptions plain;
    plain.pruneDominated = plain.mergeFollowers = false;
    plain.maxDirectVariables = INT64_MAX;
    llvm::Expected<Solution> full = solveILP(g, plain);
    ASSERT_TRUE(static_cast<bool>(full)) << errorText(full.takeError());
    EXPECT_TRUE(full->optimal);
    EXPECT_LE(reduced->peakMemoryBytes, g.memoryBudgetBytes);
    double optimum = full->objective;
    EXPECT_GE(reduced->objective, optimum * (1 - 1e-9));
    // The gap is measured from a lower bound: the optimum cannot beat it.
    EXPECT_LE(reduced->objective * (1 - reduced->gap), optimum * (1 + 1e-9));
    if (reduced->optimal) {
      EXPECT_NEAR(reduced->objective, optimum, 1e-9 * optimum);
    }
    std::printf("transformer %d nodes%s: %.9g (%s, gap %.2g, %.2f s), plain "
                "ILP %.9g (%lld vars, %.2f s)\n",
                c.nodes, c.budget ? " budget" : "", reduced->objective,
                reduced->optimal ? "optimal" : "not proven", reduced->gap,
                reduced->solveSeconds, optimum, (long long)full->numVariables,
                full->solveSeconds);
  }
}

// Tests that a 500-node transformer-like graph (up to 16 strategies) solves
// in seconds, unbudgeted to proven optimality, under a budget to a plan
// within it with a small gap, twice to the identical plan.
TEST(ShardingILP, TransformerGraphIsFastAndDeterministic) {
  StrategyGraph free = transformerGraph(500, {4, 2}, 25, 7, false);
  Solution unlimited = solveAndReport(free, "transformer 500");
  EXPECT_TRUE(unlimited.optimal);
  StrategyGraph g = transformerGraph(500, {4, 2}, 25, 7, true);
  Solution first = solveAndReport(g, "transformer 500 budget");
  Solution second = solveAndReport(g, "  again");
  EXPECT_EQ(first.choice, second.choice);
  EXPECT_EQ(first.objective, second.objective);
  EXPECT_EQ(first.peakMemoryBytes, second.peakMemoryBytes);
  EXPECT_LE(first.peakMemoryBytes, g.memoryBudgetBytes);
  // The same ops and costs: the budget can only make the plan dearer.
  EXPECT_GE(first.objective, unlimited.objective * (1 - 1e-12));
  EXPECT_LT(first.gap, 0.1);
  EXPECT_FALSE(first.hitTimeLimit);
  EXPECT_LT(first.solveSeconds, 60);
}

// Tests that the time limit bounds the whole solve of a hard graph (random
// layouts: weak LP bound, nothing reduces) and is reported.
TEST(ShardingILP, TimeLimitIsASafetyNet) {
  StrategyGraph g = layeredGraph(150, 16, 3, true);
  SolveOptions options;
  options.timeLimitSeconds = 2;
  llvm::Expected<Solution> solution = solveILP(g, options);
  ASSERT_TRUE(static_cast<bool>(solution)) << errorText(solution.takeError());
  EXPECT_LT(solution->solveSeconds, 15);
  EXPECT_LE(solution->peakMemoryBytes, g.memoryBudgetBytes);
  if (!solution->optimal) {
    EXPECT_TRUE(solution->hitTimeLimit || solution->hitNodeLimit);
  }
  std::printf("hard 150-node graph, 2 s limit: %.3f s, %s, gap %.3g\n",
              solution->solveSeconds,
              solution->optimal ? "optimal" : "not proven optimal",
              solution->gap);
}

// Prints sizes and times for Alpa-sized graphs (run with
// --gtest_also_run_disabled_tests; nothing is asserted on the times).
TEST(ShardingILP, DISABLED_ScalingReport) {
  for (int nodes : {100, 300, 1000})
    for (int axes : {2, 3})
      for (bool budget : {false, true}) {
        std::vector<int> mesh =
            axes == 2 ? std::vector<int>{4, 2} : std::vector<int>{2, 2, 2};
        std::string label = llvm::formatv("transformer {0} {1}-D{2}", nodes,
                                          axes, budget ? " budget" : "")
                                .str();
        solveAndReport(transformerGraph(nodes, mesh, 25, nodes, budget),
                       label.c_str());
      }
  for (bool budget : {false, true}) {
    std::string label =
        llvm::formatv("random layouts 200{0}", budget ? " budget" : "").str();
    solveAndReport(layeredGraph(200, 16, 5, budget), label.c_str());
  }
}

// Tests the hub conditioning of reduce(): a chain whose every node also
// reads one shared node (a transformer's causal mask) is not
// series-parallel, but fixing the hub leaves chains. reduce() must leave
// nothing for CBC, and the plan must be the brute-force optimum.
TEST(ShardingILP, HubGraphsReduceToNothingAndStayOptimal) {
  std::mt19937 rng(20261206);
  std::uniform_real_distribution<> cost(0.0, 10.0);
  int leftWithout = 0;
  for (int trial = 0; trial < 40; ++trial) {
    SCOPED_TRACE(llvm::formatv("trial {0}", trial).str());
    int chain = 4 + trial % 4;
    int strategies = 2 + trial % 3;
    StrategyGraph g;
    auto addNode = [&](const std::string &name) {
      StrategyGraph::Node node;
      node.name = name;
      for (int s = 0; s < strategies; ++s) {
        node.strategyNames.push_back("s" + std::to_string(s));
        node.cost.push_back(cost(rng));
        node.memoryBytes.push_back(0);
      }
      g.nodes.push_back(std::move(node));
    };
    auto matrix = [&]() {
      std::vector<std::vector<double>> m(strategies,
                                         std::vector<double>(strategies));
      for (auto &row : m)
        for (double &entry : row)
          entry = cost(rng);
      return m;
    };
    addNode("hub");
    for (int v = 1; v <= chain; ++v) {
      addNode("n" + std::to_string(v));
      g.edges.push_back({0, v, matrix()});
      if (v > 1)
        g.edges.push_back({v - 1, v, matrix()});
    }
    // Close the chain into a ring: without the hub it stays
    // series-parallel, with it the hub joins every node.
    g.edges.push_back({1, chain, matrix()});

    ReduceOptions options;
    ReducedGraph reduced = reduce(g, options);
    EXPECT_TRUE(reduced.nodes.empty());
    // Without conditioning the wheel does not reduce (unless pruning
    // leaves some node a single strategy).
    ReduceOptions plain;
    plain.condition = false;
    leftWithout += !reduce(g, plain).nodes.empty();
    llvm::Expected<Solution> exact = solveBruteForce(g);
    ASSERT_TRUE(static_cast<bool>(exact)) << errorText(exact.takeError());
    llvm::Expected<Solution> ilp = solveILP(g, SolveOptions());
    ASSERT_TRUE(static_cast<bool>(ilp)) << errorText(ilp.takeError());
    double tolerance = 1e-9 * std::max(1.0, std::abs(exact->objective));
    EXPECT_NEAR(ilp->objective, exact->objective, tolerance);
    EXPECT_EQ(ilp->numVariables, 0);
  }
  // The conditioning is what solves them.
  EXPECT_GE(leftWithout, 30);
}
