//===- ShardingILP.h - Alpa's intra-operator sharding ILP -------*- C++ -*-===//
//
// Plain C++ (no IR): picks one strategy per op minimising compute plus
// resharding cost under a per-device memory budget, by an ILP solved with
// COIN-OR CBC, and by exhaustive search for tests.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_PLAN_SHARDINGILP_H
#define WEFT_PLAN_SHARDINGILP_H

#include "weft/Plan/StrategyGraph.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <vector>

namespace weft::plan {

/// Limits and reductions of solveILP.
struct SolveOptions {
  /// CBC branch-and-bound node limit: the deterministic limit.
  int64_t maxNodes = 20000;
  /// Safety net only (wall clock); reported when hit.
  double timeLimitSeconds = 60;
  /// Drop strategies dominated in cost, memory and every edge row/column.
  bool pruneDominated = true;
  /// Fold nodes with one strategy / chains into neighbours before solving.
  bool mergeFollowers = true;
  /// Under a memory budget, reduced ILPs with more variables than this are
  /// not given to CBC whole (its root alone can take minutes) but solved by
  /// a Lagrangian relaxation of the memory rows plus CBC on the strategies it
  /// singles out: a plan within the budget and a lower bound, so `gap` is
  /// honest but `optimal` rarely set. See docs/Planner-ILP.md.
  int64_t maxDirectVariables = 5000;
};

/// A plan and how it was found.
struct Solution {
  /// Per ORIGINAL node.
  std::vector<int> choice;
  /// Total cost (node + edge) of the choice, recomputed from the graph.
  double objective = 0;
  /// Max over live sets (incl. always-live) for the choice.
  double peakMemoryBytes = 0;
  /// Proven optimal by CBC (or trivially).
  bool optimal = false;
  bool hitNodeLimit = false, hitTimeLimit = false;
  /// Relative optimality gap when not optimal: (objective - best proven
  /// lower bound) / objective; +infinity when no bound is known.
  double gap = 0;
  /// Of the ILP actually solved (after merging/pruning).
  int64_t numVariables = 0, numConstraints = 0;
  int64_t nodesBeforeReduction = 0, nodesAfterReduction = 0,
          strategiesPruned = 0;
  double solveSeconds = 0;
};

/// Solves the ILP (docs/Planner-ILP.md). Errors: invalid graph or options;
/// infeasible (every choice forbidden, or a memory budget below the smallest
/// peak any plan needs, which a second solve finds and the message gives);
/// CBC failure. Deterministic: the same graph gives the same solution
/// (single thread, fixed seeds, counted limits, ties broken towards lower
/// strategy indices) unless the time limit fires.
llvm::Expected<Solution> solveILP(const StrategyGraph &g,
                                  const SolveOptions &options = {});

/// Exhaustive search, for tests: the lexicographically smallest optimal
/// choice. Refuses graphs with more than 1e6 combinations.
llvm::Expected<Solution> solveBruteForce(const StrategyGraph &g);

} // namespace weft::plan

#endif // WEFT_PLAN_SHARDINGILP_H
