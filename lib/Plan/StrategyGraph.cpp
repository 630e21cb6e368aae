//===- StrategyGraph.cpp - Validation, evaluation and reductions ----------===//
//
// Checks strategy graphs, evaluates plans on them, and shrinks them exactly
// (pruning impossible and dominated strategies, folding one-strategy nodes,
// separable edges, leaves and chains) before the ILP: see StrategyGraph.h
// and docs/Planner-ILP.md.
//
//===----------------------------------------------------------------------===//

#include "weft/Plan/StrategyGraph.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>

using namespace weft::plan;

static constexpr double kInf = std::numeric_limits<double>::infinity();

static std::string nodeLabel(const StrategyGraph &g, int v) {
  return llvm::formatv("node {0} ('{1}')", v, g.nodes[v].name).str();
}

static llvm::Error invalid(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Error weft::plan::validate(const StrategyGraph &g) {
  const int n = static_cast<int>(g.nodes.size());
  for (int v = 0; v < n; ++v) {
    const StrategyGraph::Node &node = g.nodes[v];
    size_t count = node.cost.size();
    if (count == 0)
      return invalid(nodeLabel(g, v) + " has no strategies");
    if (!node.strategyNames.empty() && node.strategyNames.size() != count)
      return invalid(llvm::formatv("{0} has {1} strategy names but {2} costs",
                                   nodeLabel(g, v), node.strategyNames.size(),
                                   count));
    auto strategyName = [&](size_t i) {
      return node.strategyNames.empty() ? std::string("unnamed")
                                        : node.strategyNames[i];
    };
    if (node.memoryBytes.size() != count)
      return invalid(llvm::formatv("{0} has {1} memory sizes but {2} costs",
                                   nodeLabel(g, v), node.memoryBytes.size(),
                                   count));
    for (size_t i = 0; i < count; ++i) {
      if (std::isnan(node.cost[i]) || node.cost[i] < 0)
        return invalid(llvm::formatv("{0}: cost of strategy {1} ('{2}') is "
                                     "{3}; costs must be >= 0 or +infinity",
                                     nodeLabel(g, v), i, strategyName(i),
                                     node.cost[i]));
      double bytes = node.memoryBytes[i];
      if (!std::isfinite(bytes) || bytes < 0)
        return invalid(llvm::formatv("{0}: memory of strategy {1} ('{2}') is "
                                     "{3}; it must be finite and >= 0",
                                     nodeLabel(g, v), i, strategyName(i),
                                     bytes));
    }
  }
  for (size_t e = 0; e < g.edges.size(); ++e) {
    const StrategyGraph::Edge &edge = g.edges[e];
    if (edge.from < 0 || edge.from >= n || edge.to < 0 || edge.to >= n)
      return invalid(llvm::formatv("edge {0} ({1} -> {2}): node index out of "
                                   "range [0, {3})",
                                   e, edge.from, edge.to, n));
    if (edge.from == edge.to)
      return invalid(llvm::formatv("edge {0} connects {1} to itself", e,
                                   nodeLabel(g, edge.from)));
    size_t rows = g.nodes[edge.from].cost.size();
    size_t cols = g.nodes[edge.to].cost.size();
    if (edge.cost.size() != rows)
      return invalid(llvm::formatv("edge {0} ({1} -> {2}) has {3} cost rows "
                                   "but the producer has {4} strategies",
                                   e, nodeLabel(g, edge.from),
                                   nodeLabel(g, edge.to), edge.cost.size(),
                                   rows));
    for (size_t i = 0; i < rows; ++i) {
      if (edge.cost[i].size() != cols)
        return invalid(llvm::formatv("edge {0} ({1} -> {2}): cost row {3} has "
                                     "{4} entries but the consumer has {5} "
                                     "strategies",
                                     e, nodeLabel(g, edge.from),
                                     nodeLabel(g, edge.to), i,
                                     edge.cost[i].size(), cols));
      for (size_t j = 0; j < cols; ++j)
        if (std::isnan(edge.cost[i][j]) || edge.cost[i][j] < 0)
          return invalid(llvm::formatv("edge {0} ({1} -> {2}): cost[{3}][{4}] "
                                       "is {5}; costs must be >= 0 or "
                                       "+infinity",
                                       e, nodeLabel(g, edge.from),
                                       nodeLabel(g, edge.to), i, j,
                                       edge.cost[i][j]));
    }
  }
  for (size_t s = 0; s < g.liveSets.size(); ++s)
    for (int v : g.liveSets[s])
      if (v < 0 || v >= n)
        return invalid(llvm::formatv("live set {0} names node {1}, out of "
                                     "range [0, {2})",
                                     s, v, n));
  if (std::isnan(g.memoryBudgetBytes) || g.memoryBudgetBytes < 0)
    return invalid(llvm::formatv("memory budget is {0} bytes; it must be >= 0",
                                 g.memoryBudgetBytes));
  return llvm::Error::success();
}

MemoryRows weft::plan::memoryRows(const StrategyGraph &g) {
  MemoryRows rows;
  std::vector<char> isAlways(g.nodes.size(), 0);
  for (size_t v = 0; v < g.nodes.size(); ++v)
    if (g.nodes[v].memoryAlwaysLive) {
      rows.alwaysLive.push_back(v);
      isAlways[v] = 1;
    }
  if (g.liveSets.empty()) {
    if (!rows.alwaysLive.empty())
      rows.sets.emplace_back();
    return rows;
  }
  for (const std::vector<int> &set : g.liveSets) {
    std::vector<int> row;
    for (int v : set)
      if (!isAlways[v])
        row.push_back(v);
    std::sort(row.begin(), row.end());
    row.erase(std::unique(row.begin(), row.end()), row.end());
    rows.sets.push_back(std::move(row));
  }
  return rows;
}

int weft::plan::groupEqualLines(llvm::ArrayRef<double> matrix, int rows,
                                int cols, bool byColumns,
                                std::vector<int> &group) {
  int lines = byColumns ? cols : rows, length = byColumns ? rows : cols;
  auto at = [&](int line, int k) {
    return byColumns ? matrix[k * cols + line] : matrix[line * cols + k];
  };
  group.assign(lines, -1);
  std::vector<int> representatives;
  for (int line = 0; line < lines; ++line) {
    for (size_t r = 0; r < representatives.size() && group[line] < 0; ++r) {
      int rep = representatives[r];
      bool same = true;
      for (int k = 0; k < length && same; ++k)
        same = at(line, k) == at(rep, k);
      if (same)
        group[line] = r;
    }
    if (group[line] < 0) {
      group[line] = representatives.size();
      representatives.push_back(line);
    }
  }
  return representatives.size();
}

std::vector<int> ReducedGraph::expand(const StrategyGraph &g,
                                      llvm::ArrayRef<int> reducedChoice) const {
  std::vector<int> choice(g.nodes.size(), -1);
  for (size_t r = 0; r < nodes.size(); ++r)
    choice[nodes[r].original] = nodes[r].strategies[reducedChoice[r]];
  // Later eliminations only saw nodes that were alive then: replay backwards.
  for (auto it = eliminations.rbegin(); it != eliminations.rend(); ++it) {
    switch (it->kind) {
    case Elimination::Fixed:
      choice[it->node] = it->strategy;
      break;
    case Elimination::Leaf:
      choice[it->node] = it->table[choice[it->u]];
      break;
    case Elimination::Series:
      choice[it->node] =
          it->table[choice[it->u] * g.nodes[it->w].cost.size() + choice[it->w]];
      break;
    }
  }
  return choice;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

namespace {
/// A node of the graph being reduced.
struct WorkNode {
  bool alive = true;
  /// Kept original strategy indices and their (folded) costs and memory.
  std::vector<int> strategies;
  std::vector<double> cost, memory;
  /// Incident edges; dead ones are skipped and dropped lazily.
  std::vector<int> edges;
  /// In some memory row that matters (a finite budget or the peak goal).
  bool inRows = false;
  /// Smallest memory of the kept strategies (frozen once eliminated).
  double memoryBase = 0;
  /// Bumped whenever the node's strategies, costs or incident edges
  /// change: the pruning passes skip a node they saw at this version (their
  /// check would find nothing new), which makes a round after the first
  /// cost what changed, not the whole graph.
  uint32_t version = 1;
};

/// An edge of the graph being reduced: [strategy of a][strategy of b].
struct WorkEdge {
  bool alive = true;
  int a = 0, b = 0;
  std::vector<double> cost;
  /// Its ends' versions when foldEdges last saw it (an edge only changes
  /// with its ends' versions).
  uint32_t checkedA = 0, checkedB = 0;
};

/// Applies the reductions of ReduceOptions to a fixed point.
class Reducer {
public:
  Reducer(const StrategyGraph &g, const ReduceOptions &options);
  ReducedGraph run();

private:
  int size(int v) const { return nodes[v].strategies.size(); }
  /// Cost of edge `e` when its end `v` picks `iv` and the other end `io`.
  double edgeCost(const WorkEdge &e, int v, int iv, int io) const {
    return e.a == v ? e.cost[iv * size(e.b) + io] : e.cost[io * size(e.b) + iv];
  }
  bool memoryVaries(int v) const;
  /// v's live edges (dead ones dropped first). Valid until an edge is
  /// added at v.
  const std::vector<int> &liveEdges(int v);
  void addEdge(int a, int b, std::vector<double> cost);
  void killEdge(int e);
  void keep(int v, const std::vector<char> &mask);
  void eliminate(int v, ReducedGraph::Elimination record);
  int finitePairs(const std::vector<double> &cost, int rows, int cols) const;
  /// Eliminating chain node v between u and w (edges first, second) into an
  /// edge of `merged` would give the ILP more variables.
  bool grows(const WorkEdge &first, const WorkEdge &second,
             const std::vector<double> &merged, int v, int u, int w);

  bool pruneForbidden();
  bool pruneOverBudget();
  bool pruneDominated();
  bool foldEdges();
  bool foldSingles();
  bool eliminateLeaves();
  bool eliminateChains();
  void finish();

  void touch(int v) { ++nodes[v].version; }

  const StrategyGraph &g;
  ReduceOptions options;
  /// The version of each node that pruneForbidden and pruneDominated last
  /// checked.
  std::vector<uint32_t> forbiddenChecked, dominatedChecked;
  bool memoryMatters;
  MemoryRows rows;
  std::vector<WorkNode> nodes;
  std::vector<WorkEdge> edges;
  llvm::DenseMap<std::pair<int, int>, int> edgeOf;
  ReducedGraph result;
};
} // namespace

static double largestMemory(const StrategyGraph &g, int v) {
  const std::vector<double> &m = g.nodes[v].memoryBytes;
  return m.empty() ? 0.0 : *std::max_element(m.begin(), m.end());
}

/// The largest sum of each row of `rows`.
static std::vector<double> largestRows(const StrategyGraph &g,
                                       const MemoryRows &rows) {
  double always = 0;
  for (int v : rows.alwaysLive)
    always += largestMemory(g, v);
  std::vector<double> sums;
  for (const std::vector<int> &set : rows.sets) {
    double sum = always;
    for (int v : set)
      sum += largestMemory(g, v);
    sums.push_back(sum);
  }
  return sums;
}

bool weft::plan::memoryCanBind(const StrategyGraph &g,
                               const MemoryRows &rows) {
  for (double sum : largestRows(g, rows))
    if (!(sum <= g.memoryBudgetBytes))
      return true;
  return false;
}

/// Drops the rows that no choice can overflow: a row's largest sum (every
/// node at its largest strategy, the always-live nodes included) within the
/// budget constrains nothing, so the ILP without it has the same plans. A
/// node then sits in no row that matters and its memory stops blocking the
/// leaf and chain eliminations: a model far below its devices' memory
/// reduces as if it had no budget (a 48-layer GPT on 16 GB devices: to
/// nothing instead of a 250,000-variable ILP).
static void dropSlackRows(const StrategyGraph &g, MemoryRows &rows) {
  std::vector<double> sums = largestRows(g, rows);
  std::vector<std::vector<int>> kept;
  for (size_t r = 0; r < rows.sets.size(); ++r)
    if (!(sums[r] <= g.memoryBudgetBytes))
      kept.push_back(std::move(rows.sets[r]));
  rows.sets = std::move(kept);
  if (rows.sets.empty())
    rows.alwaysLive.clear();
}

Reducer::Reducer(const StrategyGraph &g, const ReduceOptions &options)
    : g(g), options(options) {
  memoryMatters = options.minimisePeak || std::isfinite(g.memoryBudgetBytes);
  if (memoryMatters)
    rows = memoryRows(g);
  if (memoryMatters && !options.minimisePeak)
    dropSlackRows(g, rows);
  nodes.resize(g.nodes.size());
  forbiddenChecked.assign(g.nodes.size(), 0);
  dominatedChecked.assign(g.nodes.size(), 0);
  for (size_t v = 0; v < g.nodes.size(); ++v) {
    WorkNode &node = nodes[v];
    for (size_t i = 0; i < g.nodes[v].cost.size(); ++i)
      node.strategies.push_back(i);
    node.cost = g.nodes[v].cost;
    node.memory = g.nodes[v].memoryBytes;
  }
  if (!rows.sets.empty())
    for (int v : rows.alwaysLive)
      nodes[v].inRows = true;
  for (const std::vector<int> &set : rows.sets)
    for (int v : set)
      nodes[v].inRows = true;
  for (const StrategyGraph::Edge &edge : g.edges) {
    int rowsCount = g.nodes[edge.from].cost.size();
    int colsCount = g.nodes[edge.to].cost.size();
    std::vector<double> cost(rowsCount * colsCount);
    for (int i = 0; i < rowsCount; ++i)
      for (int j = 0; j < colsCount; ++j)
        cost[i * colsCount + j] = edge.cost[i][j];
    addEdge(edge.from, edge.to, std::move(cost));
  }
}

bool Reducer::memoryVaries(int v) const {
  const WorkNode &node = nodes[v];
  if (!node.inRows)
    return false;
  auto [lo, hi] = std::minmax_element(node.memory.begin(), node.memory.end());
  return *lo != *hi;
}

const std::vector<int> &Reducer::liveEdges(int v) {
  std::vector<int> &list = nodes[v].edges;
  list.erase(std::remove_if(list.begin(), list.end(),
                            [&](int e) { return !edges[e].alive; }),
             list.end());
  return list;
}

void Reducer::addEdge(int a, int b, std::vector<double> cost) {
  touch(a);
  touch(b);
  auto key = std::make_pair(std::min(a, b), std::max(a, b));
  auto found = edgeOf.find(key);
  if (found == edgeOf.end()) {
    edgeOf[key] = edges.size();
    nodes[a].edges.push_back(edges.size());
    nodes[b].edges.push_back(edges.size());
    edges.push_back({true, a, b, std::move(cost)});
    return;
  }
  // Several edges between one pair act as one with the summed costs.
  WorkEdge &edge = edges[found->second];
  for (int i = 0; i < size(a); ++i)
    for (int j = 0; j < size(b); ++j)
      edge.cost[edge.a == a ? i * size(b) + j : j * size(a) + i] +=
          cost[i * size(b) + j];
}

void Reducer::killEdge(int e) {
  touch(edges[e].a);
  touch(edges[e].b);
  edges[e].alive = false;
  edgeOf.erase(std::make_pair(std::min(edges[e].a, edges[e].b),
                              std::max(edges[e].a, edges[e].b)));
}

void Reducer::keep(int v, const std::vector<char> &mask) {
  WorkNode &node = nodes[v];
  int before = size(v);
  touch(v);
  for (int e : liveEdges(v)) {
    WorkEdge &edge = edges[e];
    touch(edge.a == v ? edge.b : edge.a);
    int rowsCount = size(edge.a), colsCount = size(edge.b);
    std::vector<double> cost;
    for (int i = 0; i < rowsCount; ++i)
      for (int j = 0; j < colsCount; ++j)
        if (mask[edge.a == v ? i : j])
          cost.push_back(edge.cost[i * colsCount + j]);
    edge.cost = std::move(cost);
  }
  int kept = 0;
  for (int i = 0; i < before; ++i) {
    if (!mask[i])
      continue;
    node.strategies[kept] = node.strategies[i];
    node.cost[kept] = node.cost[i];
    node.memory[kept] = node.memory[i];
    ++kept;
  }
  node.strategies.resize(kept);
  node.cost.resize(kept);
  node.memory.resize(kept);
  result.strategiesPruned += before - kept;
}

void Reducer::eliminate(int v, ReducedGraph::Elimination record) {
  WorkNode &node = nodes[v];
  if (!node.memory.empty())
    node.memoryBase = *std::min_element(node.memory.begin(), node.memory.end());
  for (int e : liveEdges(v))
    killEdge(e);
  node.alive = false;
  record.node = v;
  result.eliminations.push_back(std::move(record));
}

int Reducer::finitePairs(const std::vector<double> &cost, int rowsCount,
                         int colsCount) const {
  std::vector<int> rowGroup, colGroup;
  int rowGroups = groupEqualLines(cost, rowsCount, colsCount, false, rowGroup);
  int colGroups = groupEqualLines(cost, rowsCount, colsCount, true, colGroup);
  std::vector<int> rowRep(rowGroups), colRep(colGroups);
  for (int i = rowsCount - 1; i >= 0; --i)
    rowRep[rowGroup[i]] = i;
  for (int j = colsCount - 1; j >= 0; --j)
    colRep[colGroup[j]] = j;
  int pairs = 0;
  for (int p : rowRep)
    for (int q : colRep)
      pairs += std::isfinite(cost[p * colsCount + q]);
  return pairs;
}

/// Drops strategies forbidden by their own cost or by every strategy of some
/// neighbour (arc consistency), to a fixed point.
bool Reducer::pruneForbidden() {
  bool changed = false;
  for (bool again = true; again;) {
    again = false;
    for (size_t v = 0; v < nodes.size(); ++v) {
      if (!nodes[v].alive || forbiddenChecked[v] == nodes[v].version)
        continue;
      forbiddenChecked[v] = nodes[v].version;
      std::vector<char> mask(size(v), 1);
      int culprit = -1, removed = 0;
      for (int i = 0; i < size(v); ++i)
        if (!std::isfinite(nodes[v].cost[i]))
          mask[i] = 0, ++removed;
      for (int e : liveEdges(v)) {
        int other = edges[e].a == (int)v ? edges[e].b : edges[e].a;
        for (int i = 0; i < size(v); ++i) {
          if (!mask[i])
            continue;
          bool any = false;
          for (int k = 0; k < size(other) && !any; ++k)
            any = std::isfinite(edgeCost(edges[e], v, i, k));
          if (!any)
            mask[i] = 0, ++removed, culprit = other;
        }
      }
      if (removed == 0)
        continue;
      if (removed == size(v)) {
        result.infeasible = ReducedGraph::Infeasible::Forbidden;
        result.infeasibleReason =
            "every plan is forbidden: no strategy of " + nodeLabel(g, v) +
            " is allowed (each has cost +infinity or a +infinity resharding "
            "cost to every remaining strategy of a neighbour" +
            (culprit >= 0 ? ", e.g. " + nodeLabel(g, culprit) : "") + ")";
        return true;
      }
      keep(v, mask);
      // What is left of v is allowed: only its neighbours need a look.
      forbiddenChecked[v] = nodes[v].version;
      changed = again = true;
    }
  }
  return changed;
}

/// Under a budget, drops strategies that overflow some row even when every
/// other node of it takes its smallest strategy.
bool Reducer::pruneOverBudget() {
  double budget = g.memoryBudgetBytes;
  if (options.minimisePeak || !std::isfinite(budget) || rows.sets.empty())
    return false;
  for (size_t v = 0; v < nodes.size(); ++v)
    if (nodes[v].alive && nodes[v].inRows)
      nodes[v].memoryBase =
          *std::min_element(nodes[v].memory.begin(), nodes[v].memory.end());
  double always = 0;
  for (int v : rows.alwaysLive)
    always += nodes[v].memoryBase;
  std::vector<double> least(nodes.size(), -kInf);
  double worst = -kInf;
  for (const std::vector<int> &set : rows.sets) {
    double sum = always;
    for (int v : set)
      sum += nodes[v].memoryBase;
    // Lenient: pruning less is always exact; the ILP enforces the rest.
    if (sum > budget * (1 + 1e-9)) {
      result.infeasible = ReducedGraph::Infeasible::Memory;
      return true;
    }
    worst = std::max(worst, sum);
    for (int v : set)
      least[v] = std::max(least[v], sum);
  }
  for (int v : rows.alwaysLive)
    least[v] = worst;
  bool changed = false;
  for (size_t v = 0; v < nodes.size(); ++v) {
    if (!nodes[v].alive || !nodes[v].inRows)
      continue;
    double slack = budget * (1 + 1e-9) - least[v] + nodes[v].memoryBase;
    std::vector<char> mask(size(v), 1);
    bool any = false;
    for (int i = 0; i < size(v); ++i)
      if (nodes[v].memory[i] > slack)
        mask[i] = 0, any = true;
    if (any) {
      keep(v, mask);
      changed = true;
    }
  }
  return changed;
}

/// Drops strategy i of a node when some j is no worse in cost, memory (if it
/// matters) and every incident edge, and better somewhere or lower-indexed.
bool Reducer::pruneDominated() {
  bool changed = false;
  for (size_t v = 0; v < nodes.size(); ++v) {
    if (!nodes[v].alive || size(v) < 2 ||
        dominatedChecked[v] == nodes[v].version)
      continue;
    dominatedChecked[v] = nodes[v].version;
    const WorkNode &node = nodes[v];
    bool memory = memoryVaries(v);
    std::vector<int> incident = liveEdges(v);
    auto dominates = [&](int j, int i) {
      bool strict = node.strategies[j] < node.strategies[i];
      auto le = [&](double x, double y) {
        strict = strict || x < y;
        return x <= y;
      };
      if (!le(node.cost[j], node.cost[i]))
        return false;
      if (memory && !le(node.memory[j], node.memory[i]))
        return false;
      for (int e : incident) {
        int other = edges[e].a == (int)v ? edges[e].b : edges[e].a;
        for (int k = 0; k < size(other); ++k)
          if (!le(edgeCost(edges[e], v, j, k), edgeCost(edges[e], v, i, k)))
            return false;
      }
      return strict;
    };
    std::vector<char> mask(size(v), 1);
    bool any = false;
    for (int i = 0; i < size(v); ++i)
      for (int j = 0; j < size(v) && mask[i]; ++j)
        if (j != i && dominates(j, i))
          mask[i] = 0, any = true;
    if (any) {
      keep(v, mask);
      // No strategy left is dominated (dominance is transitive).
      dominatedChecked[v] = nodes[v].version;
      changed = true;
    }
  }
  return changed;
}

/// Drops all-zero edges, and with mergeFollowers folds separable ones
/// (cost[i][j] = x[i] + y[j], e.g. constant) into the two nodes' costs.
bool Reducer::foldEdges() {
  bool changed = false;
  for (size_t e = 0; e < edges.size(); ++e) {
    WorkEdge &edge = edges[e];
    if (!edge.alive || (edge.checkedA == nodes[edge.a].version &&
                        edge.checkedB == nodes[edge.b].version))
      continue;
    edge.checkedA = nodes[edge.a].version;
    edge.checkedB = nodes[edge.b].version;
    int rowsCount = size(edge.a), colsCount = size(edge.b);
    const std::vector<double> &c = edge.cost;
    double largest = 0;
    bool finite = true;
    for (double x : c) {
      finite = finite && std::isfinite(x);
      largest = std::max(largest, x);
    }
    if (!finite || (largest > 0 && !options.mergeFollowers))
      continue;
    bool separable = true;
    for (int i = 0; i < rowsCount && separable; ++i)
      for (int j = 0; j < colsCount && separable; ++j)
        separable = std::abs(c[i * colsCount + j] - c[i * colsCount] - c[j] +
                             c[0]) <= 1e-12 * largest;
    if (!separable)
      continue;
    for (int i = 0; i < rowsCount; ++i)
      nodes[edge.a].cost[i] += c[i * colsCount];
    for (int j = 0; j < colsCount; ++j)
      nodes[edge.b].cost[j] += c[j] - c[0];
    killEdge(e);
    changed = true;
  }
  return changed;
}

/// Folds nodes with one strategy (and isolated nodes whose memory does not
/// matter: they take their cheapest) into their neighbours' costs.
bool Reducer::foldSingles() {
  bool changed = false;
  for (size_t v = 0; v < nodes.size(); ++v) {
    WorkNode &node = nodes[v];
    if (!node.alive)
      continue;
    int pick = 0;
    if (size(v) > 1) {
      if (!liveEdges(v).empty() || memoryVaries(v))
        continue;
      pick = std::min_element(node.cost.begin(), node.cost.end()) -
             node.cost.begin();
    }
    for (int e : liveEdges(v)) {
      int other = edges[e].a == (int)v ? edges[e].b : edges[e].a;
      for (int k = 0; k < size(other); ++k)
        nodes[other].cost[k] += edgeCost(edges[e], v, pick, k);
    }
    result.constantCost += node.cost[pick];
    ReducedGraph::Elimination record;
    record.kind = ReducedGraph::Elimination::Fixed;
    record.strategy = node.strategies[pick];
    eliminate(v, std::move(record));
    changed = true;
  }
  return changed;
}

/// Eliminates nodes with one neighbour whose memory does not vary: each
/// neighbour strategy absorbs the best leaf strategy for it.
bool Reducer::eliminateLeaves() {
  bool changed = false;
  for (size_t v = 0; v < nodes.size(); ++v) {
    if (!nodes[v].alive || memoryVaries(v))
      continue;
    std::vector<int> incident = liveEdges(v);
    if (incident.size() != 1)
      continue;
    const WorkEdge &edge = edges[incident[0]];
    int u = edge.a == (int)v ? edge.b : edge.a;
    ReducedGraph::Elimination record;
    record.kind = ReducedGraph::Elimination::Leaf;
    record.u = u;
    record.table.assign(g.nodes[u].cost.size(), nodes[v].strategies[0]);
    for (int i = 0; i < size(u); ++i) {
      double best = kInf;
      for (int j = 0; j < size(v); ++j) {
        double value = edgeCost(edge, v, j, i) + nodes[v].cost[j];
        if (value < best) {
          best = value;
          record.table[nodes[u].strategies[i]] = nodes[v].strategies[j];
        }
      }
      nodes[u].cost[i] += best;
    }
    eliminate(v, std::move(record));
    changed = true;
  }
  return changed;
}

/// Eliminates nodes with two neighbours u, w whose memory does not vary,
/// replacing them by an u-w edge of best totals, when that does not add ILP
/// variables.
bool Reducer::grows(const WorkEdge &first, const WorkEdge &second,
                    const std::vector<double> &merged, int v, int u, int w) {
  int nu = size(u), nw = size(w);
  int before = size(v) + finitePairs(first.cost, size(first.a), size(first.b)) +
               finitePairs(second.cost, size(second.a), size(second.b));
  auto existing = edgeOf.find(std::make_pair(std::min(u, w), std::max(u, w)));
  std::vector<double> combined = merged;
  if (existing != edgeOf.end()) {
    const WorkEdge &edge = edges[existing->second];
    before += finitePairs(edge.cost, size(edge.a), size(edge.b));
    for (int i = 0; i < nu; ++i)
      for (int k = 0; k < nw; ++k)
        combined[i * nw + k] += edgeCost(edge, u, i, k);
  }
  return finitePairs(combined, nu, nw) > before;
}

bool Reducer::eliminateChains() {
  bool changed = false;
  for (size_t v = 0; v < nodes.size(); ++v) {
    if (!nodes[v].alive || memoryVaries(v))
      continue;
    std::vector<int> incident = liveEdges(v);
    if (incident.size() != 2)
      continue;
    const WorkEdge &first = edges[incident[0]], &second = edges[incident[1]];
    int u = first.a == (int)v ? first.b : first.a;
    int w = second.a == (int)v ? second.b : second.a;
    int nu = size(u), nv = size(v), nw = size(w);
    std::vector<double> merged(nu * nw, kInf);
    std::vector<int> arg(nu * nw, 0);
    for (int i = 0; i < nu; ++i)
      for (int j = 0; j < nv; ++j) {
        double left = edgeCost(first, v, j, i) + nodes[v].cost[j];
        for (int k = 0; k < nw; ++k) {
          double value = left + edgeCost(second, v, j, k);
          if (value < merged[i * nw + k]) {
            merged[i * nw + k] = value;
            arg[i * nw + k] = j;
          }
        }
      }
    if (options.growChains ? nu * nw > kMaxGrownChainPairs
                           : grows(first, second, merged, v, u, w))
      continue;
    ReducedGraph::Elimination record;
    record.kind = ReducedGraph::Elimination::Series;
    record.u = u;
    record.w = w;
    int originalW = g.nodes[w].cost.size();
    record.table.assign(g.nodes[u].cost.size() * originalW,
                        nodes[v].strategies[0]);
    for (int i = 0; i < nu; ++i)
      for (int k = 0; k < nw; ++k)
        record.table[nodes[u].strategies[i] * originalW +
                     nodes[w].strategies[k]] =
            nodes[v].strategies[arg[i * nw + k]];
    eliminate(v, std::move(record));
    addEdge(u, w, std::move(merged));
    changed = true;
  }
  return changed;
}

void Reducer::finish() {
  std::vector<int> index(nodes.size(), -1);
  for (size_t v = 0; v < nodes.size(); ++v) {
    WorkNode &node = nodes[v];
    if (!node.alive)
      continue;
    node.memoryBase = *std::min_element(node.memory.begin(), node.memory.end());
    index[v] = result.nodes.size();
    ReducedGraph::Node reduced;
    reduced.original = v;
    reduced.strategies = node.strategies;
    reduced.cost = node.cost;
    reduced.memory.assign(size(v), 0);
    if (memoryVaries(v)) {
      for (int i = 0; i < size(v); ++i)
        reduced.memory[i] = node.memory[i] - node.memoryBase;
      reduced.alwaysLive = g.nodes[v].memoryAlwaysLive;
    }
    result.nodes.push_back(std::move(reduced));
  }
  for (const WorkEdge &edge : edges)
    if (edge.alive)
      result.edges.push_back({index[edge.a], index[edge.b], edge.cost});
  result.budgetBytes = options.minimisePeak ? kInf : g.memoryBudgetBytes;
  if (!memoryMatters)
    return;

  // Always-live nodes sit in every row: their varying part is shared.
  double always = 0, alwaysMost = 0;
  bool withAlways = false;
  auto most = [&](int r) {
    const std::vector<double> &m = result.nodes[r].memory;
    return *std::max_element(m.begin(), m.end());
  };
  for (int v : rows.alwaysLive) {
    always += nodes[v].memoryBase;
    if (index[v] >= 0 && result.nodes[index[v]].alwaysLive) {
      withAlways = true;
      alwaysMost += most(index[v]);
    }
  }
  std::vector<ReducedGraph::MemoryRow> kept;
  for (const std::vector<int> &set : rows.sets) {
    ReducedGraph::MemoryRow row;
    row.withAlwaysLive = withAlways;
    row.constantBytes = always;
    double largest = always + alwaysMost;
    for (int v : set) {
      row.constantBytes += nodes[v].memoryBase;
      largest += nodes[v].memoryBase;
      if (index[v] >= 0 && memoryVaries(v)) {
        row.nodes.push_back(index[v]);
        largest += most(index[v]);
      }
    }
    if (!options.minimisePeak) {
      // A row no choice can overflow constrains nothing; one every choice
      // overflows proves the budget too small.
      if (largest <= g.memoryBudgetBytes)
        continue;
      if (row.nodes.empty() && !withAlways) {
        result.infeasible = ReducedGraph::Infeasible::Memory;
        return;
      }
    }
    kept.push_back(std::move(row));
  }
  // A row inside another with no larger constant is implied by it.
  std::sort(kept.begin(), kept.end(), [](const auto &x, const auto &y) {
    if (x.nodes.size() != y.nodes.size())
      return x.nodes.size() > y.nodes.size();
    if (x.nodes != y.nodes)
      return x.nodes < y.nodes;
    return x.constantBytes > y.constantBytes;
  });
  std::vector<char> implied(kept.size(), 0);
  bool quadratic = kept.size() <= 4000;
  for (size_t r = 0; r < kept.size(); ++r) {
    for (size_t s = 0; s < r && !implied[r]; ++s) {
      if (implied[s] || kept[s].constantBytes < kept[r].constantBytes)
        continue;
      if (!quadratic && kept[s].nodes != kept[r].nodes)
        continue;
      implied[r] = std::includes(kept[s].nodes.begin(), kept[s].nodes.end(),
                                 kept[r].nodes.begin(), kept[r].nodes.end());
    }
    if (!implied[r])
      result.memoryRows.push_back(kept[r]);
  }
}

ReducedGraph Reducer::run() {
  using Infeasible = ReducedGraph::Infeasible;
  for (bool changed = true; changed;) {
    changed = false;
    if (options.pruneDominated) {
      changed |= pruneForbidden();
      if (result.infeasible == Infeasible::None)
        changed |= pruneOverBudget();
      if (result.infeasible != Infeasible::None)
        return std::move(result);
      changed |= pruneDominated();
    }
    changed |= foldEdges();
    if (options.mergeFollowers) {
      changed |= foldSingles();
      changed |= eliminateLeaves();
      changed |= eliminateChains();
    }
    // Folding is exact, so an infinite constant means no plan is allowed.
    if (!std::isfinite(result.constantCost)) {
      result.infeasible = Infeasible::Forbidden;
      result.infeasibleReason = "every plan is forbidden: some node's only "
                                "remaining strategies have cost +infinity";
      return std::move(result);
    }
  }
  finish();
  return std::move(result);
}

/// Variables an ILP over `r` would have at most: every strategy and every
/// pair of every edge.
static int64_t reducedSize(const ReducedGraph &r) {
  int64_t size = 0;
  for (const ReducedGraph::Node &node : r.nodes)
    size += node.strategies.size();
  for (const ReducedGraph::Edge &edge : r.edges)
    size += edge.cost.size();
  return size;
}

/// Whether some memory row of `g` can bind under `options`.
static bool rowsMatter(const StrategyGraph &g, const ReduceOptions &options) {
  if (options.minimisePeak)
    return true;
  if (!std::isfinite(g.memoryBudgetBytes))
    return false;
  MemoryRows rows = memoryRows(g);
  dropSlackRows(g, rows);
  return !rows.sets.empty();
}

/// Finishes `r` by conditioning (solveByConditioning): its surviving nodes
/// become fixed eliminations. False when that does not work.
static bool conditionAway(const StrategyGraph &g, ReducedGraph &r,
                          const ReduceOptions &options) {
  if (!options.condition)
    return false;
  std::optional<std::vector<int>> choice = solveByConditioning(g, r, options);
  if (!choice)
    return false;
  r.constantCost = ReducedPlans(r).cost(*choice);
  // Replayed backwards: these come first, as the last eliminated.
  for (size_t v = 0; v < r.nodes.size(); ++v) {
    ReducedGraph::Elimination fixed;
    fixed.kind = ReducedGraph::Elimination::Fixed;
    fixed.node = r.nodes[v].original;
    fixed.strategy = r.nodes[v].strategies[(*choice)[v]];
    r.eliminations.push_back(std::move(fixed));
  }
  r.nodes.clear();
  r.edges.clear();
  return true;
}

ReducedGraph weft::plan::reduce(const StrategyGraph &g,
                                const ReduceOptions &options) {
  if (options.growChains || !options.mergeFollowers)
    return Reducer(g, options).run();
  // Chains that do not shrink the ILP are left alone, which on 2-D meshes
  // (25 strategies a node) leaves a transformer's blocks as a 16,000-
  // variable ILP. Without memory rows, a series-parallel graph reduces to
  // nothing when chains may grow, and a transformer's causal mask (one
  // constant every layer reads) is what conditioning removes. All of it is
  // exact, so only ties between equal-cost plans can differ.
  ReduceOptions grow = options;
  grow.growChains = true;
  bool rows = rowsMatter(g, options);
  auto done = [](const ReducedGraph &r) {
    return r.nodes.empty() || !r.memoryRows.empty() ||
           r.infeasible != ReducedGraph::Infeasible::None;
  };
  ReducedGraph first = Reducer(g, rows ? options : grow).run();
  if (done(first) || conditionAway(g, first, options))
    return first;
  ReducedGraph second = Reducer(g, rows ? grow : options).run();
  if (second.infeasible != ReducedGraph::Infeasible::None ||
      !second.memoryRows.empty())
    return first;
  if (second.nodes.empty() || conditionAway(g, second, options))
    return second;
  return reducedSize(second) < reducedSize(first) ? second : first;
}
