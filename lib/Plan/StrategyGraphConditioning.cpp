//===- StrategyGraphConditioning.cpp - Solving by fixing one node ---------===//
//
// The exact reductions solve series-parallel graphs outright. A transformer
// is one, but for the causal mask: a single constant that every layer reads
// joins all the layers, so on 2-D meshes (where the mask keeps several
// strategies) 5 nodes a layer survived as a 16,000-variable ILP. Fixing that
// one node to each of its strategies leaves a series-parallel graph each
// time, and the cheapest of those plans is the optimum.
//
//===----------------------------------------------------------------------===//

#include "weft/Plan/StrategyGraph.h"

#include <cmath>
#include <limits>

using namespace weft::plan;

/// `r`'s surviving nodes and edges as a graph of their own, without memory.
static StrategyGraph reducedAsGraph(const StrategyGraph &g,
                                    const ReducedGraph &r) {
  StrategyGraph out;
  for (const ReducedGraph::Node &node : r.nodes) {
    size_t count = node.cost.size();
    out.nodes.push_back({g.nodes[node.original].name,
                         std::vector<std::string>(count), node.cost,
                         std::vector<double>(count, 0), false});
  }
  for (const ReducedGraph::Edge &edge : r.edges) {
    size_t cols = r.nodes[edge.to].strategies.size();
    StrategyGraph::Edge copy{edge.from, edge.to, {}};
    for (size_t i = 0; i < edge.cost.size(); i += cols)
      copy.cost.emplace_back(edge.cost.begin() + i,
                             edge.cost.begin() + i + cols);
    out.edges.push_back(std::move(copy));
  }
  return out;
}

std::optional<std::vector<int>>
weft::plan::solveByConditioning(const StrategyGraph &g, const ReducedGraph &r,
                                const ReduceOptions &options) {
  if (r.nodes.empty() || !r.memoryRows.empty() || options.minimisePeak ||
      r.infeasible != ReducedGraph::Infeasible::None)
    return std::nullopt;
  std::vector<int> degree(r.nodes.size(), 0);
  for (const ReducedGraph::Edge &edge : r.edges) {
    ++degree[edge.from];
    ++degree[edge.to];
  }
  int hub = 0;
  for (size_t v = 1; v < degree.size(); ++v)
    if (degree[v] > degree[hub])
      hub = static_cast<int>(v);

  StrategyGraph sub = reducedAsGraph(g, r);
  // One node at a time: conditioning inside would multiply the solves.
  ReduceOptions inner = options;
  inner.condition = false;
  const std::vector<double> hubCost = sub.nodes[hub].cost;
  std::vector<int> best;
  double bestCost = std::numeric_limits<double>::infinity();
  for (size_t fixed = 0; fixed < hubCost.size(); ++fixed) {
    if (!std::isfinite(hubCost[fixed]))
      continue;
    for (size_t i = 0; i < hubCost.size(); ++i)
      sub.nodes[hub].cost[i] =
          i == fixed ? hubCost[i] : std::numeric_limits<double>::infinity();
    ReducedGraph rest = reduce(sub, inner);
    if (rest.infeasible == ReducedGraph::Infeasible::Forbidden)
      continue; // no plan with the hub at this strategy
    if (rest.infeasible != ReducedGraph::Infeasible::None ||
        !rest.nodes.empty())
      return std::nullopt;
    std::vector<int> choice = rest.expand(sub, {});
    double cost = planCost(sub, choice);
    if (cost < bestCost) {
      bestCost = cost;
      best = std::move(choice);
    }
  }
  if (best.empty())
    return std::nullopt;
  return best;
}
