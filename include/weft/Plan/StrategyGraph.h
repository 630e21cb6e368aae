//===- StrategyGraph.h - Ops, strategies and resharding costs ---*- C++ -*-===//
//
// Plain C++ (no IR): the graph the intra-operator sharding ILP (Alpa, 4.2)
// is posed on, its validation and evaluation, and the exact reductions
// (pruning, merging) that shrink it before the ILP is built.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_PLAN_STRATEGYGRAPH_H
#define WEFT_PLAN_STRATEGYGRAPH_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace weft::plan {

/// One op (node) with alternative strategies; edges carry resharding costs
/// between the producer's and consumer's strategy choices.
struct StrategyGraph {
  /// An op and its candidate strategies.
  struct Node {
    std::string name;
    /// One name per strategy, for messages; or none.
    std::vector<std::string> strategyNames;
    /// Seconds: compute + the op's own collectives, per strategy. +infinity
    /// forbids the strategy.
    std::vector<double> cost;
    /// Bytes this node's result/state occupies per device, per strategy.
    std::vector<double> memoryBytes;
    /// E.g. weights: counted in every liveness set.
    bool memoryAlwaysLive = false;
  };
  /// A value `from` produces and `to` consumes.
  struct Edge {
    int from, to;
    /// [strategy of from][strategy of to], seconds; +infinity
    /// (std::numeric_limits<double>::infinity()) = forbidden pair.
    std::vector<std::vector<double>> cost;
  };
  std::vector<Node> nodes;
  /// Several edges between the same pair are allowed (summed).
  std::vector<Edge> edges;
  /// Memory constraint: for every set, sum over its nodes of
  /// memoryBytes[chosen] (plus every memoryAlwaysLive node once) <=
  /// memoryBudgetBytes. A node listed twice in a set counts once. Empty sets
  /// list = no memory constraint except always-live.
  std::vector<std::vector<int>> liveSets;
  double memoryBudgetBytes = std::numeric_limits<double>::infinity();
};

/// Validates sizes (every vector sized consistently, indices in range, costs
/// >= 0 and not NaN, no edge from a node to itself, memory finite): returns an
/// error naming the node/edge/set on failure.
llvm::Error validate(const StrategyGraph &g);

/// The memory constraints of a graph, as sets of nodes.
struct MemoryRows {
  /// One per live set (sorted, repeats and always-live nodes removed); one
  /// empty set when there are no live sets but some always-live node; none
  /// when there is neither.
  std::vector<std::vector<int>> sets;
  /// Counted in every set.
  std::vector<int> alwaysLive;
};

/// The memory rows of a valid graph.
MemoryRows memoryRows(const StrategyGraph &g);

/// Whether some row of `rows` (g's) can exceed g's budget: its every node
/// at its largest strategy, the always-live nodes included, sums to more.
bool memoryCanBind(const StrategyGraph &g, const MemoryRows &rows);

/// Total cost (node + edge) of `choice` (one strategy index per node);
/// +infinity when it picks a forbidden strategy or pair. `g` must be valid.
double planCost(const StrategyGraph &g, llvm::ArrayRef<int> choice);

/// The largest memory row for `choice`: max over live sets of the set plus
/// every always-live node once; the always-live nodes alone when there are no
/// sets; 0 when there is neither. `g` must be valid.
double planPeakMemory(const StrategyGraph &g, llvm::ArrayRef<int> choice);

/// Deterministic tie-break and polish of an allowed `choice` within the
/// budget: moves single nodes to a strategy that lowers the cost, or to a
/// lower-indexed one that keeps it (within 1e-12 relative), staying allowed
/// and within the budget. Returns the number of moves. `g` must be valid.
int canonicalizeChoice(const StrategyGraph &g, std::vector<int> &choice);

/// "512 B", "1.50 KiB", "3.25 GiB": binary units, two decimals.
std::string formatBytes(double bytes);

/// The error for a budget no plan fits: "memory budget too small: every plan
/// needs at least X per device, the budget is Y", both in one unit and exact
/// bytes. `bestFoundBytes` > `neededBytes` says the search stopped before
/// proving the bound tight, and is reported too.
llvm::Error memoryBudgetError(double budgetBytes, double neededBytes,
                              double bestFoundBytes);

/// Which of the exact reductions `reduce` applies.
struct ReduceOptions {
  /// Drop strategies that cannot be part of any allowed plan (forbidden by
  /// every neighbour choice, or over budget on their own) and strategies
  /// dominated in cost, memory and every edge row/column.
  bool pruneDominated = true;
  /// Fold one-strategy nodes and separable edges into node costs; eliminate
  /// leaves and (when it does not grow the ILP) chain nodes by dynamic
  /// programming over their neighbours.
  bool mergeFollowers = true;
  /// The goal is the smallest peak memory, not the cost: memory matters even
  /// without a budget, and no strategy is pruned as over budget.
  bool minimisePeak = false;
  /// Eliminate chain nodes even where the new edge has more pairs than the
  /// edges it replaces (up to kMaxGrownChainPairs). reduce() does this on
  /// its own where no memory row matters (see there).
  bool growChains = false;
  /// Where no memory row matters, condition what is left on its busiest
  /// node (solveByConditioning; not again inside it).
  bool condition = true;
};

/// The largest edge (strategy pairs) a grown chain elimination may make.
inline constexpr int kMaxGrownChainPairs = 1 << 14;

/// The problem left after the reductions, over the surviving nodes and
/// strategies, plus what is needed to expand its answer back.
struct ReducedGraph {
  /// A surviving node.
  struct Node {
    /// Index in StrategyGraph::nodes.
    int original = 0;
    /// Original strategy indices still allowed, ascending.
    std::vector<int> strategies;
    /// Per kept strategy: its cost plus everything folded into it.
    std::vector<double> cost;
    /// Per kept strategy: memory bytes above the node's smallest, counted in
    /// the memory rows (all zero when memory does not matter here).
    std::vector<double> memory;
    /// Counted in every memory row.
    bool alwaysLive = false;
  };
  /// A surviving edge between reduced nodes (duplicates summed).
  struct Edge {
    int from = 0, to = 0;
    /// Row-major [strategy of from][strategy of to]; +infinity = forbidden.
    std::vector<double> cost;
  };
  /// A memory constraint: constant + sum of node memory (+ the always-live
  /// nodes' memory when `withAlwaysLive`) <= budget.
  struct MemoryRow {
    /// Reduced nodes whose memory varies, not always-live, ascending.
    std::vector<int> nodes;
    bool withAlwaysLive = false;
    /// Bytes that do not depend on the choice.
    double constantBytes = 0;
  };
  /// How an eliminated node's strategy is recovered (original indices).
  struct Elimination {
    enum Kind { Fixed, Leaf, Series } kind = Fixed;
    int node = 0;
    /// Fixed: the strategy.
    int strategy = 0;
    /// Leaf: table[strategy of u]; Series: table[u * |w strategies| + w].
    int u = -1, w = -1;
    std::vector<int> table;
  };

  std::vector<Node> nodes;
  std::vector<Edge> edges;
  std::vector<MemoryRow> memoryRows;
  /// Budget the rows must meet (infinity when they only feed the peak).
  double budgetBytes = std::numeric_limits<double>::infinity();
  /// Cost that no remaining choice affects.
  double constantCost = 0;
  /// Eliminated nodes, in elimination order.
  std::vector<Elimination> eliminations;
  int64_t strategiesPruned = 0;
  /// The reductions proved that no plan exists.
  enum class Infeasible {
    None,
    Forbidden,
    Memory
  } infeasible = Infeasible::None;
  /// Why, when `infeasible` is Forbidden (names the node).
  std::string infeasibleReason;

  /// The original choice for a choice of kept-strategy positions per reduced
  /// node.
  std::vector<int> expand(const StrategyGraph &g,
                          llvm::ArrayRef<int> reducedChoice) const;
};

/// Plans of a reduced graph (a kept-strategy position per node): their cost
/// and memory-row use, and the heuristics that find and polish them for the
/// ILP solver. Keeps a reference to `r`.
class ReducedPlans {
public:
  explicit ReducedPlans(const ReducedGraph &r);
  /// Cost including the constant; +infinity when forbidden.
  double cost(const std::vector<int> &choice) const;
  /// Bytes per memory row.
  std::vector<double> use(const std::vector<int> &choice) const;
  /// Greedy in node order: each node takes its cheapest strategy given the
  /// nodes before it (for the peak goal: the one adding least memory) that
  /// stays allowed and within the budget. Empty when it gets stuck.
  std::vector<int> greedy(bool minimisePeak) const;
  /// Single-node moves that lower the cost within the budget.
  void improve(std::vector<int> &choice) const;
  /// Moves nodes of overflowing rows to smaller strategies, cheapest per
  /// byte saved first, until every row fits; false when stuck.
  bool repair(std::vector<int> &choice) const;
  /// The memory rows node v is in.
  const std::vector<int> &rows(int v) const { return rowsOf[v]; }

  const ReducedGraph &r;

private:
  /// Cost of v taking i against its placed neighbours.
  double score(const std::vector<int> &choice, int v, int i) const;
  /// Whether v can move to i given the rows' use.
  bool fits(const std::vector<double> &use, const std::vector<int> &choice,
            int v, int i) const;
  void move(std::vector<double> &use, std::vector<int> &choice, int v,
            int i) const;

  std::vector<std::vector<int>> incident, rowsOf;
};

/// Applies the exact reductions to a valid graph; an optimal plan of the
/// result expands to an optimal plan of `g`. Where no memory row can bind
/// (every row's largest sum within the budget), chains may grow their edge
/// and what is left is conditioned on its busiest node
/// (solveByConditioning): series-parallel graphs, and those that one node
/// keeps from being so, reduce to nothing. Otherwise the smaller of the
/// results with and without growing chains.
ReducedGraph reduce(const StrategyGraph &g, const ReduceOptions &options);

/// Finishes a reduction that left nodes but no memory row by conditioning
/// on one node: the surviving node with the most neighbours (a constant
/// that every layer reads, say) is fixed to each of its strategies in turn,
/// and the rest reduced again. When every such graph reduces to nothing,
/// the cheapest of their plans is optimal for `r` (ties go to the lower
/// strategy): returned as a kept-strategy position per node of `r` (expand
/// it with r.expand). Nullopt when `r` has memory rows or no node, or some
/// strategy leaves an ILP. reduce() does this on its own.
std::optional<std::vector<int>>
solveByConditioning(const StrategyGraph &g, const ReducedGraph &r,
                    const ReduceOptions &options);

/// Groups equal rows of a row-major `rows` x `cols` matrix: writes each row's
/// group (numbered by first appearance) to `group` and returns the number of
/// groups. With `byColumns`, groups columns instead.
int groupEqualLines(llvm::ArrayRef<double> matrix, int rows, int cols,
                    bool byColumns, std::vector<int> &group);

} // namespace weft::plan

#endif // WEFT_PLAN_STRATEGYGRAPH_H
