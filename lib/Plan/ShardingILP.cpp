//===- ShardingILP.cpp - Alpa's sharding ILP solved with CBC --------------===//
//
// Builds the ILP of docs/Planner-ILP.md over a reduced strategy graph, solves
// it with COIN-OR CBC (single thread, fixed seeds, node limit), expands the
// answer to the original graph and explains infeasibility.
//
//===----------------------------------------------------------------------===//

#include "weft/Plan/ShardingILP.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FormatVariadic.h"

// CBC's C interface: its C++ headers throw exceptions, which this project
// compiles without.
#include "coin/Cbc_C_Interface.h"

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <climits>
#include <cmath>
#include <string>

using namespace weft::plan;

static constexpr double kInf = std::numeric_limits<double>::infinity();

static llvm::Error failure(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

using Clock = std::chrono::steady_clock;

/// The least time limit a CBC run is started with.
static constexpr double kMinCbcSeconds = 0.02;

/// `options` with the time limit cut to what is left of it since `started`:
/// the limit bounds the whole solve, not each CBC run.
static SolveOptions timeLeft(const SolveOptions &options,
                             Clock::time_point started) {
  SolveOptions left = options;
  double used = std::chrono::duration<double>(Clock::now() - started).count();
  left.timeLimitSeconds = std::max(options.timeLimitSeconds - used, 1e-3);
  return left;
}

namespace {
/// What one CBC run found, in the reduced graph's terms.
struct IlpOutcome {
  enum Status {
    Solved,
    Infeasible,
    NoPlan,
    Abandoned,
    Skipped
  } status = Abandoned;
  /// Kept-strategy position per reduced node.
  std::vector<int> choice;
  bool optimal = false, nodeLimit = false, timeLimit = false;
  /// Objective and lower bound in model units.
  double objective = 0, bound = 0;
  /// Model units: seconds per cost unit, bytes per memory unit.
  double costUnit = 1, memoryUnit = 1;
  int64_t variables = 0, constraints = 0;
};

/// An ILP in the column-major form CBC loads.
struct IlpModel {
  std::vector<double> colLower, colUpper, objective;
  std::vector<int> integers;
  std::vector<double> rowLower, rowUpper;
  struct Entry {
    int row, col;
    double value;
  };
  std::vector<Entry> entries;

  int addCol(double lower, double upper, double cost, bool integer) {
    colLower.push_back(lower);
    colUpper.push_back(upper);
    objective.push_back(cost);
    if (integer)
      integers.push_back(colLower.size() - 1);
    return colLower.size() - 1;
  }
  int addRow(double lower, double upper) {
    rowLower.push_back(lower);
    rowUpper.push_back(upper);
    return rowLower.size() - 1;
  }
  void add(int row, int col, double value) {
    entries.push_back({row, col, value});
  }
};
} // namespace

/// The ILP of docs/Planner-ILP.md for `r`: binary s per kept strategy,
/// continuous e per pair of equal-row/equal-column groups of each edge,
/// memory rows, and for the peak goal a variable P to minimise. Memory rows
/// are tightened by `shrinkBytes`.
static IlpModel buildModel(const ReducedGraph &r, bool minimisePeak,
                           double shrinkBytes, IlpOutcome &outcome,
                           std::vector<int> &firstColumn) {
  // Scale so the largest cost and memory coefficients are 1: seconds are
  // ~1e-6 and bytes ~1e9, far from CBC's tolerances.
  double costUnit = 0, memoryUnit = 0;
  for (const ReducedGraph::Node &node : r.nodes) {
    for (double c : node.cost)
      if (std::isfinite(c))
        costUnit = std::max(costUnit, c);
    for (double m : node.memory)
      memoryUnit = std::max(memoryUnit, m);
  }
  for (const ReducedGraph::Edge &edge : r.edges)
    for (double c : edge.cost)
      if (std::isfinite(c))
        costUnit = std::max(costUnit, c);
  outcome.costUnit = costUnit > 0 ? costUnit : 1;
  outcome.memoryUnit = memoryUnit > 0 ? memoryUnit : 1;

  IlpModel model;
  firstColumn.clear();
  for (const ReducedGraph::Node &node : r.nodes) {
    firstColumn.push_back(model.colLower.size());
    int row = model.addRow(1, 1);
    for (double c : node.cost) {
      bool allowed = std::isfinite(c);
      int col = model.addCol(0, allowed ? 1 : 0,
                             allowed ? c / outcome.costUnit : 0, true);
      model.add(row, col, 1);
    }
  }
  // e[p][q] = 1 iff the producer's choice is in row group p and the
  // consumer's in column group q; equal lines share one variable.
  for (const ReducedGraph::Edge &edge : r.edges) {
    int rows = r.nodes[edge.from].strategies.size();
    int cols = r.nodes[edge.to].strategies.size();
    std::vector<int> rowGroup, colGroup;
    int rowGroups = groupEqualLines(edge.cost, rows, cols, false, rowGroup);
    int colGroups = groupEqualLines(edge.cost, rows, cols, true, colGroup);
    int firstRow = model.rowLower.size();
    for (int p = 0; p < rowGroups + colGroups; ++p)
      model.addRow(0, 0);
    for (int i = 0; i < rows; ++i)
      model.add(firstRow + rowGroup[i], firstColumn[edge.from] + i, -1);
    for (int j = 0; j < cols; ++j)
      model.add(firstRow + rowGroups + colGroup[j], firstColumn[edge.to] + j,
                -1);
    std::vector<char> seen(rowGroups * colGroups, 0);
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j) {
        int p = rowGroup[i], q = colGroup[j];
        double c = edge.cost[i * cols + j];
        if (seen[p * colGroups + q] || !std::isfinite(c))
          continue;
        seen[p * colGroups + q] = 1;
        int col = model.addCol(0, 1, c / outcome.costUnit, false);
        model.add(firstRow + p, col, 1);
        model.add(firstRow + rowGroups + q, col, 1);
      }
  }
  if (r.memoryRows.empty())
    return model;
  // W carries the always-live memory once instead of in every row.
  int always = -1, alwaysRow = -1;
  for (size_t v = 0; v < r.nodes.size(); ++v) {
    if (!r.nodes[v].alwaysLive)
      continue;
    if (always < 0) {
      always = model.addCol(0, DBL_MAX, 0, false);
      alwaysRow = model.addRow(0, 0);
      model.add(alwaysRow, always, 1);
    }
    for (size_t i = 0; i < r.nodes[v].memory.size(); ++i)
      if (r.nodes[v].memory[i] != 0)
        model.add(alwaysRow, firstColumn[v] + i,
                  -r.nodes[v].memory[i] / outcome.memoryUnit);
  }
  int peak = minimisePeak ? model.addCol(0, DBL_MAX, 1, false) : -1;
  for (const ReducedGraph::MemoryRow &memoryRow : r.memoryRows) {
    double limit = minimisePeak ? 0 : r.budgetBytes - shrinkBytes;
    int row = model.addRow(-DBL_MAX, (limit - memoryRow.constantBytes) /
                                         outcome.memoryUnit);
    for (int v : memoryRow.nodes)
      for (size_t i = 0; i < r.nodes[v].memory.size(); ++i)
        if (r.nodes[v].memory[i] != 0)
          model.add(row, firstColumn[v] + i,
                    r.nodes[v].memory[i] / outcome.memoryUnit);
    if (memoryRow.withAlwaysLive && always >= 0)
      model.add(row, always, 1);
    if (peak >= 0)
      model.add(row, peak, -1);
  }
  return model;
}

/// Solves the ILP of `r` with CBC, from `start` when it is not empty.
static IlpOutcome solveReduced(const ReducedGraph &r, bool minimisePeak,
                               const SolveOptions &options, double shrinkBytes,
                               const std::vector<int> &start) {
  IlpOutcome outcome;
  std::vector<int> firstColumn;
  IlpModel model =
      buildModel(r, minimisePeak, shrinkBytes, outcome, firstColumn);
  const int numCols = model.colLower.size(), numRows = model.rowLower.size();
  outcome.variables = numCols;
  outcome.constraints = numRows;

  // Column-major matrix, entries of a column in row order.
  std::vector<int> starts(numCols + 1, 0), index(model.entries.size());
  std::vector<double> values(model.entries.size());
  for (const IlpModel::Entry &entry : model.entries)
    ++starts[entry.col + 1];
  for (int c = 0; c < numCols; ++c)
    starts[c + 1] += starts[c];
  std::vector<int> fill(starts.begin(), starts.end() - 1);
  std::stable_sort(model.entries.begin(), model.entries.end(),
                   [](const auto &x, const auto &y) { return x.row < y.row; });
  for (const IlpModel::Entry &entry : model.entries) {
    index[fill[entry.col]] = entry.row;
    values[fill[entry.col]++] = entry.value;
  }

  // What is left of the time limit is too little for CBC to do anything
  // but stop inside its preprocessing, where CBC 2.10.8 was seen to read a
  // null pointer (under ASan, with 1 ms left): say that time ran out.
  if (options.timeLimitSeconds < kMinCbcSeconds) {
    outcome.status = IlpOutcome::NoPlan;
    outcome.timeLimit = true;
    return outcome;
  }
  Cbc_Model *cbc = Cbc_newModel();
  llvm::scope_exit release([&] { Cbc_deleteModel(cbc); });
  Cbc_loadProblem(cbc, numCols, numRows, starts.data(), index.data(),
                  values.data(), model.colLower.data(), model.colUpper.data(),
                  model.objective.data(), model.rowLower.data(),
                  model.rowUpper.data());
  for (int col : model.integers)
    Cbc_setInteger(cbc, col);
  // Determinism: one thread, fixed seeds, and the node limit (not the
  // clock) as the limit that normally stops the search.
  int64_t maxNodes = std::clamp<int64_t>(options.maxNodes, 0, INT_MAX);
  std::string nodes = std::to_string(maxNodes);
  std::string seconds = llvm::formatv("{0}", options.timeLimitSeconds).str();
  const char *parameters[][2] = {
      {"log", "0"},
      {"slog", "0"},
      {"threads", "0"},
      {"randomSeed", "1234567"},
      {"randomCbcSeed", "1234567"},
      {"timeMode", "elapsed"},
      {"seconds", seconds.c_str()},
      {"maxNodes", nodes.c_str()},
      // Costs are scaled to at most 1: keep optimality tight.
      {"allowableGap", "1e-9"},
      {"ratioGap", "0"},
      {"increment", "1e-9"}};
  for (const auto &parameter : parameters)
    Cbc_setParameter(cbc, parameter[0], parameter[1]);
  Cbc_setLogLevel(cbc, 0);

  if (!start.empty()) {
    // Every binary, zeros included: CBC then only derives the continuous
    // variables instead of searching for the unnamed binaries.
    std::vector<int> columns;
    std::vector<double> values;
    for (size_t v = 0; v < start.size(); ++v)
      for (size_t i = 0; i < r.nodes[v].cost.size(); ++i) {
        columns.push_back(firstColumn[v] + i);
        values.push_back(static_cast<int>(i) == start[v] ? 1.0 : 0.0);
      }
    Cbc_setMIPStartI(cbc, columns.size(), columns.data(), values.data());
  }

  Cbc_solve(cbc);
  outcome.nodeLimit = Cbc_isNodeLimitReached(cbc);
  outcome.timeLimit = Cbc_isSecondsLimitReached(cbc);
  if (Cbc_isProvenInfeasible(cbc)) {
    outcome.status = IlpOutcome::Infeasible;
    return outcome;
  }
  const double *solution = Cbc_bestSolution(cbc);
  if (!solution) {
    outcome.status =
        Cbc_isAbandoned(cbc) ? IlpOutcome::Abandoned : IlpOutcome::NoPlan;
    return outcome;
  }
  for (size_t v = 0; v < r.nodes.size(); ++v) {
    int pick = -1;
    for (size_t i = 0; i < r.nodes[v].cost.size(); ++i)
      if (solution[firstColumn[v] + i] > 0.5)
        pick = i;
    if (pick < 0) {
      outcome.status = IlpOutcome::Abandoned;
      return outcome;
    }
    outcome.choice.push_back(pick);
  }
  outcome.status = IlpOutcome::Solved;
  outcome.optimal = Cbc_isProvenOptimal(cbc);
  outcome.objective = Cbc_getObjValue(cbc);
  outcome.bound = Cbc_getBestPossibleObjValue(cbc);
  return outcome;
}

/// `r` keeping only the strategies `keep` marks; `positions[v]` lists the
/// kept positions of node v.
static ReducedGraph
restrictStrategies(const ReducedGraph &r,
                   const std::vector<std::vector<char>> &keep,
                   std::vector<std::vector<int>> &positions) {
  ReducedGraph narrow;
  narrow.memoryRows = r.memoryRows;
  narrow.budgetBytes = r.budgetBytes;
  narrow.constantCost = r.constantCost;
  positions.assign(r.nodes.size(), {});
  for (size_t v = 0; v < r.nodes.size(); ++v) {
    const ReducedGraph::Node &node = r.nodes[v];
    ReducedGraph::Node kept;
    kept.original = node.original;
    kept.alwaysLive = node.alwaysLive;
    for (size_t i = 0; i < node.cost.size(); ++i) {
      if (!keep[v][i])
        continue;
      positions[v].push_back(i);
      kept.strategies.push_back(node.strategies[i]);
      kept.cost.push_back(node.cost[i]);
      kept.memory.push_back(node.memory[i]);
    }
    narrow.nodes.push_back(std::move(kept));
  }
  for (const ReducedGraph::Edge &edge : r.edges) {
    ReducedGraph::Edge kept{edge.from, edge.to, {}};
    size_t cols = r.nodes[edge.to].cost.size();
    for (int i : positions[edge.from])
      for (int j : positions[edge.to])
        kept.cost.push_back(edge.cost[i * cols + j]);
    narrow.edges.push_back(std::move(kept));
  }
  return narrow;
}

namespace {
/// What the Lagrangian phase found: the cheapest plan within the budget
/// (empty if none) and the best lower bound it proved.
struct Relaxation {
  std::vector<int> best;
  double bestCost = kInf;
  double bound = -kInf;
  /// The time limit cut the phase short.
  bool timedOut = false;
  /// Size of the narrowed ILP CBC solved (0: none).
  int64_t narrowVariables = 0, narrowConstraints = 0;
};
} // namespace

/// Branch-and-bound nodes for the ILP narrowed to the relaxation's
/// strategies: it serves to find a plan, not to prove one.
static constexpr int64_t kNarrowNodes = 0;

/// Subgradient steps on the multipliers; a fixed count, for determinism.
/// Fewer when the priced graph does not reduce away and each step is a CBC
/// run (of at most kPricedNodes nodes).
static constexpr int kRelaxIterations = 60, kRelaxIterationsWithCbc = 10;
static constexpr int64_t kPricedNodes = 50;

/// Lagrangian relaxation of the memory rows (docs/Planner-ILP.md): each
/// row's price per byte moves into the node costs, and the priced graph,
/// free of memory rows, usually reduces to nothing (else CBC solves what is
/// left). Its optimum bounds the ILP from below; repaired to fit the budget
/// and polished, it is a plan. Subgradient steps move the prices.
static Relaxation relaxMemory(const ReducedGraph &r, const ReducedPlans &plans,
                              const SolveOptions &options,
                              const std::vector<int> &start,
                              Clock::time_point started) {
  Relaxation result;
  // Strategies some priced optimum or plan used: the narrow ILP's columns.
  std::vector<std::vector<char>> seen(r.nodes.size());
  for (size_t v = 0; v < r.nodes.size(); ++v)
    seen[v].assign(r.nodes[v].cost.size(), 0);
  auto mark = [&](const std::vector<int> &choice) {
    for (size_t v = 0; v < choice.size(); ++v)
      seen[v][choice[v]] = 1;
  };
  auto offer = [&](std::vector<int> choice) {
    plans.improve(choice);
    double cost = plans.cost(choice);
    if (cost < result.bestCost) {
      mark(choice);
      result.best = std::move(choice);
      result.bestCost = cost;
    }
  };
  if (!start.empty())
    offer(start);
  StrategyGraph priced;
  for (const ReducedGraph::Node &node : r.nodes) {
    size_t count = node.cost.size();
    priced.nodes.push_back({"", std::vector<std::string>(count), node.cost,
                            std::vector<double>(count, 0), false});
  }
  for (const ReducedGraph::Edge &edge : r.edges) {
    size_t cols = r.nodes[edge.to].strategies.size();
    StrategyGraph::Edge pricedEdge{edge.from, edge.to, {}};
    for (size_t i = 0; i < edge.cost.size(); i += cols)
      pricedEdge.cost.emplace_back(edge.cost.begin() + i,
                                   edge.cost.begin() + i + cols);
    priced.edges.push_back(std::move(pricedEdge));
  }
  SolveOptions inner = options;
  inner.maxNodes = std::min<int64_t>(options.maxNodes, kPricedNodes);
  bool leftover = false;
  // The optimum of the graph priced at `scale` times `price`; empty when it
  // could not be found. `exact`: proven optimal.
  auto solvePriced = [&](const std::vector<double> &price, double scale,
                         bool &exact) -> std::vector<int> {
    for (size_t v = 0; v < r.nodes.size(); ++v) {
      double perByte = 0;
      for (int k : plans.rows(v))
        perByte += scale * price[k];
      for (size_t i = 0; i < r.nodes[v].cost.size(); ++i)
        priced.nodes[v].cost[i] =
            r.nodes[v].cost[i] + perByte * r.nodes[v].memory[i];
    }
    ReducedGraph sub =
        reduce(priced, {options.pruneDominated, options.mergeFollowers, false});
    exact = true;
    if (sub.infeasible != ReducedGraph::Infeasible::None)
      return {};
    if (sub.nodes.empty())
      return sub.expand(priced, {});
    leftover = true;
    IlpOutcome outcome = solveReduced(sub, false, timeLeft(inner, started), 0,
                                      ReducedPlans(sub).greedy(false));
    result.timedOut |= outcome.timeLimit;
    if (outcome.status != IlpOutcome::Solved)
      return {};
    exact = outcome.optimal;
    return sub.expand(priced, outcome.choice);
  };
  auto fitsBudget = [&](const std::vector<int> &choice) {
    for (double bytes : plans.use(choice))
      if (bytes > r.budgetBytes)
        return false;
    return true;
  };
  auto outOfTime = [&] {
    result.timedOut =
        result.timedOut || timeLeft(options, started).timeLimitSeconds <= 1e-3;
    return result.timedOut;
  };
  std::vector<double> price(r.memoryRows.size(), 0), bestPrice = price;
  double step = 2;
  int stalled = 0;
  for (int iteration = 0; iteration < kRelaxIterations; ++iteration) {
    // Where CBC must finish each priced graph, take fewer steps.
    if (leftover && iteration >= kRelaxIterationsWithCbc)
      break;
    if (outOfTime())
      break;
    bool exact;
    std::vector<int> choice = solvePriced(price, 1, exact);
    if (choice.empty())
      break;
    // Early prices are far off; their optima would only widen the narrow
    // ILP.
    if (iteration >= kRelaxIterations - 10)
      mark(choice);
    // L(price) = cost + sum price * (use - budget) at the priced optimum.
    std::vector<double> slope = plans.use(choice);
    double value = plans.cost(choice), norm = 0;
    bool fits = true;
    for (size_t k = 0; k < slope.size(); ++k) {
      slope[k] -= r.budgetBytes;
      value += price[k] * slope[k];
      fits = fits && slope[k] <= 0;
      if (price[k] > 0 || slope[k] > 0)
        norm += slope[k] * slope[k];
    }
    if (exact && value > result.bound) {
      result.bound = value;
      bestPrice = price;
      stalled = 0;
    } else if (++stalled >= 5) {
      step /= 2;
      stalled = 0;
    }
    if (fits || plans.repair(choice))
      offer(std::move(choice));
    if (norm == 0 || step < 1e-4 ||
        result.bestCost - result.bound <= 1e-9 * std::abs(result.bestCost))
      break;
    // Polyak's step towards the best plan's cost (or 10% above the bound).
    double target = std::isfinite(result.bestCost)
                        ? result.bestCost
                        : value + 0.1 * std::abs(value) + 1e-12;
    double t = step * std::max(target - value, 1e-3 * std::abs(value)) / norm;
    for (size_t k = 0; k < price.size(); ++k)
      price[k] = std::max(0.0, price[k] + t * slope[k]);
  }
  // Scaling the best prices up until the priced optimum fits gives plans
  // that trade time for memory where it is cheapest: bisect on the scale.
  double low = 1, high = 1;
  for (int doubling = 0; doubling < 20 && !outOfTime(); ++doubling, high *= 2) {
    bool exact;
    std::vector<int> choice = solvePriced(bestPrice, high, exact);
    if (choice.empty())
      return result;
    if (fitsBudget(choice)) {
      offer(std::move(choice));
      break;
    }
    low = high;
  }
  for (int halving = 0; halving < 8 && high > low && !outOfTime(); ++halving) {
    double middle = (low + high) / 2;
    bool exact;
    std::vector<int> choice = solvePriced(bestPrice, middle, exact);
    if (choice.empty())
      break;
    if (fitsBudget(choice)) {
      offer(std::move(choice));
      high = middle;
    } else {
      low = middle;
    }
  }
  // CBC on the ILP restricted to the seen strategies: small, and it mixes
  // the priced optima where no single price does.
  if (result.best.empty() || outOfTime())
    return result;
  std::vector<std::vector<int>> positions;
  ReducedGraph narrow = restrictStrategies(r, seen, positions);
  std::vector<int> narrowStart(r.nodes.size());
  for (size_t v = 0; v < r.nodes.size(); ++v)
    narrowStart[v] =
        std::find(positions[v].begin(), positions[v].end(), result.best[v]) -
        positions[v].begin();
  SolveOptions narrowOptions = options;
  narrowOptions.maxNodes = std::min<int64_t>(options.maxNodes, kNarrowNodes);
  IlpOutcome outcome = solveReduced(
      narrow, false, timeLeft(narrowOptions, started), 0, narrowStart);
  result.timedOut |= outcome.timeLimit;
  result.narrowVariables = outcome.variables;
  result.narrowConstraints = outcome.constraints;
  if (outcome.status != IlpOutcome::Solved)
    return result;
  std::vector<int> choice(r.nodes.size());
  for (size_t v = 0; v < r.nodes.size(); ++v)
    choice[v] = positions[v][outcome.choice[v]];
  if (fitsBudget(choice))
    offer(std::move(choice));
  return result;
}

static std::string limitsText(const SolveOptions &options) {
  return llvm::formatv("the node limit is {0}, the time limit {1} s",
                       options.maxNodes, options.timeLimitSeconds);
}

/// Why no plan exists: every plan is forbidden, or the budget is below the
/// smallest peak any allowed plan needs, found by a second solve that
/// minimises the peak.
static llvm::Error explainInfeasible(const StrategyGraph &g,
                                     const SolveOptions &options,
                                     Clock::time_point started) {
  StrategyGraph peakGraph = g;
  for (StrategyGraph::Node &node : peakGraph.nodes)
    for (double &c : node.cost)
      c = std::isfinite(c) ? 0 : c;
  for (StrategyGraph::Edge &edge : peakGraph.edges)
    for (std::vector<double> &row : edge.cost)
      for (double &c : row)
        c = std::isfinite(c) ? 0 : c;
  peakGraph.memoryBudgetBytes = kInf;
  ReducedGraph r =
      reduce(peakGraph, {options.pruneDominated, options.mergeFollowers, true});
  if (r.infeasible == ReducedGraph::Infeasible::Forbidden)
    return failure(r.infeasibleReason);
  std::vector<int> choice;
  double bound = kInf;
  if (r.nodes.empty()) {
    choice = r.expand(g, {});
  } else {
    IlpOutcome outcome = solveReduced(r, true, timeLeft(options, started), 0,
                                      ReducedPlans(r).greedy(true));
    if (outcome.status == IlpOutcome::Infeasible)
      return failure("every plan is forbidden: no combination of strategies "
                     "avoids +infinity costs");
    if (outcome.status != IlpOutcome::Solved)
      return failure("no plan fits the memory budget of " +
                     formatBytes(g.memoryBudgetBytes) +
                     " per device, and CBC found no plan to measure the "
                     "smallest need (" +
                     limitsText(options) + ")");
    choice = r.expand(g, outcome.choice);
    bound = outcome.optimal ? kInf : outcome.bound * outcome.memoryUnit;
  }
  double best = planPeakMemory(g, choice);
  if (best <= g.memoryBudgetBytes)
    return failure(llvm::formatv("CBC found no plan within the memory budget "
                                 "of {0:F0} bytes, yet a plan needing {1:F0} "
                                 "bytes exists (numerical trouble)",
                                 g.memoryBudgetBytes, best));
  return memoryBudgetError(g.memoryBudgetBytes, std::min(best, bound), best);
}

llvm::Expected<Solution> weft::plan::solveILP(const StrategyGraph &g,
                                              const SolveOptions &options) {
  Clock::time_point start = Clock::now();
  if (llvm::Error error = validate(g))
    return std::move(error);
  if (!(options.maxNodes >= 0) || !(options.timeLimitSeconds > 0))
    return failure(llvm::formatv("bad solve options: maxNodes {0} must be "
                                 ">= 0, timeLimitSeconds {1} must be > 0",
                                 options.maxNodes, options.timeLimitSeconds));
  ReducedGraph r =
      reduce(g, {options.pruneDominated, options.mergeFollowers, false});
  if (r.infeasible == ReducedGraph::Infeasible::Forbidden)
    return failure(r.infeasibleReason);
  if (r.infeasible == ReducedGraph::Infeasible::Memory)
    return explainInfeasible(g, options, start);

  Solution solution;
  solution.nodesBeforeReduction = g.nodes.size();
  solution.nodesAfterReduction = r.nodes.size();
  solution.strategiesPruned = r.strategiesPruned;
  solution.optimal = true;
  double bound = -kInf;
  if (r.nodes.empty()) {
    solution.choice = r.expand(g, {});
  } else {
    ReducedPlans plans(r);
    bool proven = false;
    std::vector<int> best = plans.greedy(false);
    if (!best.empty())
      plans.improve(best);
    // CBC proves small ILPs outright. Large ones under a budget go through
    // the Lagrangian phase instead, whose plan stands (optimal when its
    // bound meets it); CBC gets them only if that phase found no plan.
    bool skipCbc = false;
    IlpOutcome probe;
    std::vector<int> columns;
    if (!r.memoryRows.empty() &&
        static_cast<int64_t>(
            buildModel(r, false, 0, probe, columns).colLower.size()) >
            options.maxDirectVariables) {
      Relaxation relaxation = relaxMemory(r, plans, options, best, start);
      solution.hitTimeLimit = relaxation.timedOut;
      solution.numVariables = relaxation.narrowVariables;
      solution.numConstraints = relaxation.narrowConstraints;
      if (!relaxation.best.empty()) {
        best = relaxation.best;
        bound = relaxation.bound;
        skipCbc = true;
        proven =
            relaxation.bestCost - bound <= 1e-9 * std::abs(relaxation.bestCost);
      }
    }
    // CBC meets memory rows within its tolerance; the plan must meet the
    // budget exactly, so tighten the rows by any overshoot and solve again.
    double shrink = 0;
    for (int attempt = 0;; ++attempt) {
      IlpOutcome outcome =
          skipCbc
              ? IlpOutcome{IlpOutcome::Skipped}
              : solveReduced(r, false, timeLeft(options, start), shrink, best);
      if (outcome.status == IlpOutcome::Infeasible)
        return explainInfeasible(g, options, start);
      if (outcome.status != IlpOutcome::Solved && best.empty())
        return failure(outcome.status == IlpOutcome::Abandoned
                           ? "CBC abandoned the solve (numerical "
                             "difficulties)"
                           : "CBC found no plan before its limits stopped "
                             "it (" +
                                 limitsText(options) + ")");
      if (outcome.status != IlpOutcome::Solved) {
        // The relaxation's plan stands, optimal when its bound meets it.
        solution.choice = r.expand(g, best);
        solution.optimal = proven;
        solution.hitNodeLimit |= outcome.nodeLimit;
        solution.hitTimeLimit |= outcome.timeLimit;
        break;
      }
      solution.choice = r.expand(g, outcome.choice);
      solution.numVariables = outcome.variables;
      solution.numConstraints = outcome.constraints;
      solution.optimal = outcome.optimal;
      solution.hitNodeLimit |= outcome.nodeLimit;
      solution.hitTimeLimit |= outcome.timeLimit;
      bound =
          std::max(bound, outcome.bound * outcome.costUnit + r.constantCost);
      double over = planPeakMemory(g, solution.choice) - g.memoryBudgetBytes;
      if (over <= 0)
        break;
      if (attempt == 2)
        return failure(llvm::formatv("CBC's plan exceeds the memory budget "
                                     "by {0:F0} bytes after {1} attempts "
                                     "(numerical trouble)",
                                     over, attempt + 1));
      shrink += over + 1e-9 * g.memoryBudgetBytes;
    }
  }
  canonicalizeChoice(g, solution.choice);
  solution.objective = planCost(g, solution.choice);
  solution.peakMemoryBytes = planPeakMemory(g, solution.choice);
  if (!std::isfinite(solution.objective))
    return failure("internal error: the plan found picks a forbidden pair");
  if (!solution.optimal)
    solution.gap = std::max(0.0, solution.objective - bound) /
                   std::max(std::abs(solution.objective), 1e-300);
  solution.solveSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return solution;
}
