//===- BruteForce.cpp - Plan evaluation, heuristics, exhaustive search ----===//
//
// Evaluates plans on strategy graphs and reduced graphs (cost, peak memory,
// deterministic tie break, the greedy/repair/local-search heuristics the ILP
// solver starts from), formats memory errors, and finds the best plan by
// trying every combination: the reference the ILP is tested against.
//
//===----------------------------------------------------------------------===//

#include "weft/Plan/ShardingILP.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <chrono>
#include <cmath>

using namespace weft::plan;

static constexpr double kInf = std::numeric_limits<double>::infinity();

static llvm::Error failure(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

double weft::plan::planCost(const StrategyGraph &g,
                            llvm::ArrayRef<int> choice) {
  double total = 0;
  for (size_t v = 0; v < g.nodes.size(); ++v)
    total += g.nodes[v].cost[choice[v]];
  for (const StrategyGraph::Edge &edge : g.edges)
    total += edge.cost[choice[edge.from]][choice[edge.to]];
  return total;
}

double weft::plan::planPeakMemory(const StrategyGraph &g,
                                  llvm::ArrayRef<int> choice) {
  MemoryRows rows = memoryRows(g);
  double always = 0;
  for (int v : rows.alwaysLive)
    always += g.nodes[v].memoryBytes[choice[v]];
  double peak = 0;
  for (const std::vector<int> &set : rows.sets) {
    double sum = always;
    for (int v : set)
      sum += g.nodes[v].memoryBytes[choice[v]];
    peak = std::max(peak, sum);
  }
  return peak;
}

int weft::plan::canonicalizeChoice(const StrategyGraph &g,
                                   std::vector<int> &choice) {
  const int n = static_cast<int>(g.nodes.size());
  std::vector<std::vector<int>> incident(n);
  for (size_t e = 0; e < g.edges.size(); ++e) {
    incident[g.edges[e].from].push_back(e);
    incident[g.edges[e].to].push_back(e);
  }
  // Memory only limits moves under a finite budget; then track every row's
  // use and which rows each node is in (always-live nodes: all of them).
  bool limited = std::isfinite(g.memoryBudgetBytes);
  MemoryRows rows = limited ? memoryRows(g) : MemoryRows();
  // Rows no choice can overflow need no tracking.
  if (limited && !memoryCanBind(g, rows)) {
    limited = false;
    rows = MemoryRows();
  }
  std::vector<double> use(rows.sets.size(), 0);
  std::vector<std::vector<int>> rowsOf(n);
  std::vector<char> inAll(n, 0);
  for (int v : rows.alwaysLive)
    inAll[v] = 1;
  for (size_t r = 0; r < rows.sets.size(); ++r) {
    for (int v : rows.alwaysLive)
      use[r] += g.nodes[v].memoryBytes[choice[v]];
    for (int v : rows.sets[r]) {
      use[r] += g.nodes[v].memoryBytes[choice[v]];
      rowsOf[v].push_back(r);
    }
  }
  double tolerance = 1e-12 * std::abs(planCost(g, choice));
  int moves = 0;
  for (int pass = 0; pass < 4; ++pass) {
    bool changed = false;
    for (int v = 0; v < n; ++v) {
      const StrategyGraph::Node &node = g.nodes[v];
      int current = choice[v];
      for (int i = 0, e = node.cost.size(); i < e; ++i) {
        if (i == current || !std::isfinite(node.cost[i]))
          continue;
        double delta = node.cost[i] - node.cost[current];
        for (int edgeIndex : incident[v]) {
          const StrategyGraph::Edge &edge = g.edges[edgeIndex];
          int other = edge.from == v ? choice[edge.to] : choice[edge.from];
          double now = edge.from == v ? edge.cost[current][other]
                                      : edge.cost[other][current];
          double then =
              edge.from == v ? edge.cost[i][other] : edge.cost[other][i];
          delta += then - now;
        }
        if (!std::isfinite(delta))
          continue;
        if (!(delta < -tolerance || (i < current && delta <= tolerance)))
          continue;
        double grow = node.memoryBytes[i] - node.memoryBytes[current];
        bool fits = true;
        if (limited && grow > 0) {
          auto check = [&](int r) {
            fits = fits && use[r] + grow <= g.memoryBudgetBytes;
          };
          if (inAll[v])
            for (size_t r = 0; r < use.size(); ++r)
              check(r);
          for (int r : rowsOf[v])
            check(r);
        }
        if (!fits)
          continue;
        if (limited) {
          if (inAll[v])
            for (double &u : use)
              u += grow;
          for (int r : rowsOf[v])
            use[r] += grow;
        }
        choice[v] = current = i;
        ++moves;
        changed = true;
      }
    }
    if (!changed)
      break;
  }
  return moves;
}

static const char *const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};

static int unitFor(double bytes) {
  int unit = 0;
  while (unit < 5 && std::abs(bytes) >= 1024.0 * std::pow(1024.0, unit))
    ++unit;
  return unit;
}

static std::string formatIn(double bytes, int unit) {
  if (unit == 0)
    return llvm::formatv("{0:F0} B", bytes).str();
  return llvm::formatv("{0:F2} {1}", bytes / std::pow(1024.0, unit),
                       kUnits[unit])
      .str();
}

std::string weft::plan::formatBytes(double bytes) {
  if (!std::isfinite(bytes))
    return bytes > 0 ? "unlimited" : "invalid";
  return formatIn(bytes, unitFor(bytes));
}

llvm::Error weft::plan::memoryBudgetError(double budgetBytes,
                                          double neededBytes,
                                          double bestFoundBytes) {
  int unit = unitFor(std::max(budgetBytes, neededBytes));
  std::string message = llvm::formatv(
      "memory budget too small: every plan needs at least {0} ({1:F0} bytes) "
      "per device, the budget is {2} ({3:F0} bytes)",
      formatIn(neededBytes, unit), neededBytes, formatIn(budgetBytes, unit),
      budgetBytes);
  if (bestFoundBytes > neededBytes * (1 + 1e-9))
    message += llvm::formatv("; the search stopped before proving that bound "
                             "tight, the best plan found needs {0} ({1:F0} "
                             "bytes)",
                             formatIn(bestFoundBytes, unit), bestFoundBytes);
  return failure(message);
}

ReducedPlans::ReducedPlans(const ReducedGraph &r)
    : r(r), incident(r.nodes.size()), rowsOf(r.nodes.size()) {
  for (size_t e = 0; e < r.edges.size(); ++e) {
    incident[r.edges[e].from].push_back(e);
    incident[r.edges[e].to].push_back(e);
  }
  for (size_t k = 0; k < r.memoryRows.size(); ++k) {
    for (int v : r.memoryRows[k].nodes)
      rowsOf[v].push_back(k);
    if (r.memoryRows[k].withAlwaysLive)
      for (size_t v = 0; v < r.nodes.size(); ++v)
        if (r.nodes[v].alwaysLive)
          rowsOf[v].push_back(k);
  }
}

double ReducedPlans::score(const std::vector<int> &choice, int v, int i) const {
  double total = r.nodes[v].cost[i];
  for (int e : incident[v]) {
    const ReducedGraph::Edge &edge = r.edges[e];
    int cols = r.nodes[edge.to].strategies.size();
    if (edge.from == v && choice[edge.to] >= 0)
      total += edge.cost[i * cols + choice[edge.to]];
    else if (edge.to == v && choice[edge.from] >= 0)
      total += edge.cost[choice[edge.from] * cols + i];
  }
  return total;
}

double ReducedPlans::cost(const std::vector<int> &choice) const {
  double total = r.constantCost;
  for (size_t v = 0; v < r.nodes.size(); ++v)
    total += r.nodes[v].cost[choice[v]];
  for (const ReducedGraph::Edge &edge : r.edges)
    total += edge.cost[choice[edge.from] * r.nodes[edge.to].strategies.size() +
                       choice[edge.to]];
  return total;
}

std::vector<double> ReducedPlans::use(const std::vector<int> &choice) const {
  std::vector<double> bytes(r.memoryRows.size());
  for (size_t k = 0; k < bytes.size(); ++k)
    bytes[k] = r.memoryRows[k].constantBytes;
  for (size_t v = 0; v < r.nodes.size(); ++v)
    if (choice[v] >= 0)
      for (int k : rowsOf[v])
        bytes[k] += r.nodes[v].memory[choice[v]];
  return bytes;
}

bool ReducedPlans::fits(const std::vector<double> &use,
                        const std::vector<int> &choice, int v, int i) const {
  double grow = r.nodes[v].memory[i] -
                (choice[v] >= 0 ? r.nodes[v].memory[choice[v]] : 0);
  for (int k : rowsOf[v])
    if (use[k] + grow > r.budgetBytes)
      return false;
  return true;
}

void ReducedPlans::move(std::vector<double> &use, std::vector<int> &choice,
                        int v, int i) const {
  double grow = r.nodes[v].memory[i] -
                (choice[v] >= 0 ? r.nodes[v].memory[choice[v]] : 0);
  for (int k : rowsOf[v])
    use[k] += grow;
  choice[v] = i;
}

std::vector<int> ReducedPlans::greedy(bool minimisePeak) const {
  const int n = r.nodes.size();
  std::vector<int> choice(n, -1);
  std::vector<double> bytes = use(choice);
  for (int v = 0; v < n; ++v) {
    int best = -1;
    double bestKey = kInf;
    for (int i = 0, e = r.nodes[v].cost.size(); i < e; ++i) {
      double key = score(choice, v, i);
      if (!std::isfinite(key) || !fits(bytes, choice, v, i))
        continue;
      if (minimisePeak) {
        key = 0;
        for (int k : rowsOf[v])
          key = std::max(key, bytes[k] + r.nodes[v].memory[i]);
      }
      if (key < bestKey)
        best = i, bestKey = key;
    }
    if (best < 0)
      return {};
    move(bytes, choice, v, best);
  }
  return choice;
}

void ReducedPlans::improve(std::vector<int> &choice) const {
  std::vector<double> bytes = use(choice);
  double tolerance = 1e-12 * std::abs(cost(choice));
  for (int pass = 0; pass < 3; ++pass) {
    bool changed = false;
    for (size_t v = 0; v < r.nodes.size(); ++v) {
      double now = score(choice, v, choice[v]);
      for (int i = 0, e = r.nodes[v].cost.size(); i < e; ++i) {
        double then = score(choice, v, i);
        if (then < now - tolerance && fits(bytes, choice, v, i)) {
          move(bytes, choice, v, i);
          now = then;
          changed = true;
        }
      }
    }
    if (!changed)
      return;
  }
}

bool ReducedPlans::repair(std::vector<int> &choice) const {
  std::vector<double> bytes = use(choice);
  for (;;) {
    std::vector<char> over(bytes.size());
    bool any = false;
    for (size_t k = 0; k < bytes.size(); ++k)
      any |= over[k] = bytes[k] > r.budgetBytes;
    if (!any)
      return true;
    // Only nodes in an overflowing row can help.
    std::vector<int> candidates;
    std::vector<char> taken(r.nodes.size(), 0);
    for (size_t k = 0; k < bytes.size(); ++k) {
      if (!over[k])
        continue;
      for (int v : r.memoryRows[k].nodes)
        if (!taken[v])
          taken[v] = 1, candidates.push_back(v);
      if (r.memoryRows[k].withAlwaysLive)
        for (size_t v = 0; v < r.nodes.size(); ++v)
          if (r.nodes[v].alwaysLive && !taken[v])
            taken[v] = 1, candidates.push_back(v);
    }
    std::sort(candidates.begin(), candidates.end());
    // Each candidate's best move, by extra cost per byte saved in the
    // overflowing rows.
    struct Move {
      double ratio;
      int node, strategy;
    };
    std::vector<Move> moves;
    for (int v : candidates) {
      double now = score(choice, v, choice[v]);
      Move best{kInf, v, -1};
      for (int i = 0, e = r.nodes[v].cost.size(); i < e; ++i) {
        double saved = 0;
        for (int k : rowsOf[v])
          if (over[k])
            saved += r.nodes[v].memory[choice[v]] - r.nodes[v].memory[i];
        double extra = score(choice, v, i) - now;
        if (saved > 0 && std::isfinite(extra) && extra / saved < best.ratio)
          best = {extra / saved, v, i};
      }
      if (best.strategy >= 0)
        moves.push_back(best);
    }
    if (moves.empty())
      return false;
    std::stable_sort(
        moves.begin(), moves.end(),
        [](const Move &x, const Move &y) { return x.ratio < y.ratio; });
    // Apply the best moves of this round; a neighbour of a moved node has a
    // stale ratio and waits for the next round.
    std::vector<char> stale(r.nodes.size(), 0);
    for (const Move &m : moves) {
      if (stale[m.node])
        continue;
      bool helps = false;
      for (int k : rowsOf[m.node])
        helps = helps || bytes[k] > r.budgetBytes;
      if (!helps)
        continue;
      move(bytes, choice, m.node, m.strategy);
      for (int e : incident[m.node])
        stale[r.edges[e].from] = stale[r.edges[e].to] = 1;
    }
  }
}

/// Advances `choice` to the next combination, the last node fastest (so
/// combinations come in lexicographic order); false after the last.
static bool nextCombination(const StrategyGraph &g, std::vector<int> &choice) {
  for (int v = static_cast<int>(choice.size()) - 1; v >= 0; --v) {
    if (++choice[v] < static_cast<int>(g.nodes[v].cost.size()))
      return true;
    choice[v] = 0;
  }
  return false;
}

llvm::Expected<Solution> weft::plan::solveBruteForce(const StrategyGraph &g) {
  auto start = std::chrono::steady_clock::now();
  if (llvm::Error error = validate(g))
    return std::move(error);
  double combinations = 1;
  for (const StrategyGraph::Node &node : g.nodes)
    combinations *= node.cost.size();
  if (combinations > 1e6)
    return failure(llvm::formatv("brute force refuses {0:E2} combinations "
                                 "(more than 1e6)",
                                 combinations));
  std::vector<int> choice(g.nodes.size(), 0);
  Solution solution;
  bool allowed = false, found = false;
  double leastPeak = std::numeric_limits<double>::infinity();
  do {
    double cost = planCost(g, choice);
    if (!std::isfinite(cost))
      continue;
    allowed = true;
    double peak = planPeakMemory(g, choice);
    leastPeak = std::min(leastPeak, peak);
    // Strictly better only: the first of equal plans is the smallest.
    if (peak > g.memoryBudgetBytes || (found && cost >= solution.objective))
      continue;
    found = true;
    solution.choice = choice;
    solution.objective = cost;
    solution.peakMemoryBytes = peak;
  } while (nextCombination(g, choice));
  if (!allowed)
    return failure("every plan is forbidden: each combination of strategies "
                   "has a +infinity cost");
  if (!found)
    return memoryBudgetError(g.memoryBudgetBytes, leastPeak, leastPeak);
  solution.optimal = true;
  solution.nodesBeforeReduction = solution.nodesAfterReduction = g.nodes.size();
  solution.solveSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return solution;
}
