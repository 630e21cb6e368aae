//===- StageProblem.cpp - The stage planner's problem and its oracle ------===//
//
// See StagePlanner.h: the sub-mesh shapes of a cluster, the problem's
// checks, a plan's evaluation (the formulas the DP and the brute force
// share), and the brute force that tests the DP.
//
//===----------------------------------------------------------------------===//

#include "StagePlannerDetail.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

using namespace weft::plan;
using namespace weft::plan::detail;

bool SubMeshShape::operator<(const SubMeshShape &other) const {
  return std::tie(kind, nodes, devicesPerNode) <
         std::tie(other.kind, other.nodes, other.devicesPerNode);
}

std::string SubMeshShape::str() const {
  return std::to_string(nodes) + "x" + std::to_string(devicesPerNode) +
         " of kind " + std::to_string(kind);
}

static int64_t nodesOfKind(const std::vector<int> &nodeKinds, int kind) {
  return std::count(nodeKinds.begin(), nodeKinds.end(), kind);
}

std::vector<SubMeshShape>
weft::plan::allSubMeshShapes(const std::vector<int> &nodeKinds,
                             const std::vector<int64_t> &devicesPerNode) {
  std::vector<SubMeshShape> shapes;
  for (int kind = 0; kind < static_cast<int>(devicesPerNode.size()); ++kind) {
    int64_t nodes = nodesOfKind(nodeKinds, kind);
    if (nodes == 0)
      continue;
    for (int64_t m = 1; m < devicesPerNode[kind]; ++m)
      shapes.push_back({kind, 1, m});
    for (int64_t n = 1; n <= nodes; ++n)
      shapes.push_back({kind, n, devicesPerNode[kind]});
  }
  return shapes;
}

std::string weft::plan::checkStageProblem(const StageProblem &p) {
  if (p.layers < 1)
    return "the model has no layers";
  if (p.nodeKinds.empty())
    return "the cluster has no nodes";
  for (int kind : p.nodeKinds)
    if (kind < 0 || kind >= static_cast<int>(p.devicesPerNode.size()))
      return "node kind " + std::to_string(kind) + " has no size";
  for (int64_t size : p.devicesPerNode)
    if (size < 1)
      return "a node kind has " + std::to_string(size) + " devices";
  for (const SubMeshShape &s : p.shapes) {
    bool known = s.kind >= 0 &&
                 s.kind < static_cast<int>(p.devicesPerNode.size()) &&
                 s.nodes >= 1 && s.devicesPerNode >= 1;
    if (known) {
      int64_t size = p.devicesPerNode[s.kind];
      bool whole = s.devicesPerNode == size &&
                   s.nodes <= nodesOfKind(p.nodeKinds, s.kind);
      bool part = s.nodes == 1 && s.devicesPerNode < size &&
                  nodesOfKind(p.nodeKinds, s.kind) > 0;
      known = whole || part;
    }
    if (!known)
      return "sub-mesh " + s.str() + " does not exist in the cluster";
  }
  if (!p.stageSeconds)
    return "no stage cost";
  if (p.microbatches < 1)
    return "microbatches must be at least 1";
  if (p.maxStages < 0)
    return "maxStages must not be negative";
  return "";
}

//===----------------------------------------------------------------------===//
// Evaluating a plan
//===----------------------------------------------------------------------===//

bool weft::plan::detail::isPart(const StageProblem &p, const SubMeshShape &s) {
  return s.devicesPerNode < p.devicesPerNode[s.kind];
}

void weft::plan::evaluatePlan(const StageProblem &p, StagePlan &plan) {
  size_t n = plan.stages.size();
  plan.stageSeconds.assign(n, 0);
  plan.transferInSeconds.assign(n, 0);
  plan.found = n > 0;
  for (size_t k = 0; k < n; ++k) {
    const StagePlacement &stage = plan.stages[k];
    double t = p.stageSeconds(plan.firstLayer[k], plan.firstLayer[k + 1],
                              stage.shape);
    if (!std::isfinite(t))
      plan.found = false;
    plan.stageSeconds[k] = t;
    if (k > 0 && p.transferSeconds) {
      const StagePlacement &before = plan.stages[k - 1];
      bool sameNode = isPart(p, before.shape) && isPart(p, stage.shape) &&
                      before.nodes == stage.nodes;
      plan.transferInSeconds[k] = p.transferSeconds(
          plan.firstLayer[k], before.shape, stage.shape, sameNode);
    }
  }
  plan.outputCollectionSeconds =
      n > 0 && p.outputSeconds ? p.outputSeconds(plan.stages.back().shape) : 0;
  completePlanTimes(p.microbatches, plan);
}

void weft::plan::completePlanTimes(int64_t microbatches, StagePlan &plan) {
  size_t n = plan.stageSeconds.size();
  plan.cycleSeconds.assign(n, 0);
  plan.firstMicrobatchSeconds = plan.outputCollectionSeconds;
  plan.slowestCycleSeconds = 0;
  for (size_t k = 0; k < n; ++k) {
    double out = k + 1 < n ? plan.transferInSeconds[k + 1]
                           : plan.outputCollectionSeconds;
    plan.cycleSeconds[k] =
        plan.stageSeconds[k] + plan.transferInSeconds[k] + out;
    plan.slowestCycleSeconds =
        std::max(plan.slowestCycleSeconds, plan.cycleSeconds[k]);
    plan.firstMicrobatchSeconds +=
        plan.stageSeconds[k] + plan.transferInSeconds[k];
  }
  plan.latencySeconds =
      plan.firstMicrobatchSeconds +
      static_cast<double>(microbatches - 1) * plan.slowestCycleSeconds;
}

/// (primary, secondary) of the objective: smaller is better.
std::pair<double, double>
weft::plan::detail::objectiveKey(const StageProblem &p, double latency,
                                 double cycle) {
  if (p.objective == StageObjective::Throughput)
    return {cycle, latency};
  return {latency, cycle};
}

double weft::plan::stageObjectiveValue(const StageProblem &p,
                                       const StagePlan &plan) {
  return stageObjectiveKey(p, plan).first;
}

std::pair<double, double>
weft::plan::stageObjectiveKey(const StageProblem &p, const StagePlan &plan) {
  if (!plan.found)
    return {kInfinity, kInfinity};
  return objectiveKey(p, plan.latencySeconds, plan.slowestCycleSeconds);
}

/// The shapes a stage may take: the problem's, or every one the cluster
/// allows.
std::vector<SubMeshShape>
weft::plan::detail::candidateShapes(const StageProblem &p) {
  return p.shapes.empty() ? allSubMeshShapes(p.nodeKinds, p.devicesPerNode)
                          : p.shapes;
}

/// The most stages a plan may have.
int64_t weft::plan::detail::stageCap(const StageProblem &p) {
  return p.maxStages > 0 ? std::min(p.maxStages, p.layers) : p.layers;
}

//===----------------------------------------------------------------------===//
// Brute force
//===----------------------------------------------------------------------===//

namespace {

class BruteForce {
public:
  explicit BruteForce(const StageProblem &p)
      : p(p), shapes(candidateShapes(p)), maxStages(stageCap(p)) {
    for (int kind : p.nodeKinds)
      freeDevices.push_back(p.devicesPerNode[kind]);
  }

  StagePlan run() {
    search(0);
    return best;
  }

private:
  void consider() {
    StagePlan plan = current;
    plan.firstLayer.push_back(p.layers);
    evaluatePlan(p, plan);
    if (!plan.found)
      return;
    auto key = objectiveKey(p, plan.latencySeconds, plan.slowestCycleSeconds);
    if (!best.found ||
        key < objectiveKey(p, best.latencySeconds, best.slowestCycleSeconds))
      best = plan;
  }

  /// Every choice of `count` nodes among `candidates` from `from` on.
  void wholeNodes(const std::vector<int64_t> &candidates, size_t from,
                  int64_t count, std::vector<int64_t> &chosen,
                  const std::function<void()> &use) {
    if (count == 0) {
      use();
      return;
    }
    for (size_t i = from; i < candidates.size(); ++i) {
      chosen.push_back(candidates[i]);
      wholeNodes(candidates, i + 1, count - 1, chosen, use);
      chosen.pop_back();
    }
  }

  void search(int64_t layer) {
    if (layer == p.layers) {
      consider();
      return;
    }
    if (static_cast<int64_t>(current.stages.size()) >= maxStages)
      return;
    for (int64_t end = layer + 1; end <= p.layers; ++end)
      for (const SubMeshShape &shape : shapes) {
        int64_t size = p.devicesPerNode[shape.kind];
        auto place = [&](const std::vector<int64_t> &nodes) {
          StagePlacement placement{shape, nodes, 0};
          if (shape.devicesPerNode < size)
            placement.firstDevice = size - freeDevices[nodes[0]];
          for (int64_t node : nodes)
            freeDevices[node] -= shape.devicesPerNode;
          current.firstLayer.push_back(layer);
          current.stages.push_back(placement);
          search(end);
          current.stages.pop_back();
          current.firstLayer.pop_back();
          for (int64_t node : nodes)
            freeDevices[node] += shape.devicesPerNode;
        };
        if (shape.devicesPerNode == size) {
          std::vector<int64_t> candidates, chosen;
          for (size_t i = 0; i < p.nodeKinds.size(); ++i)
            if (p.nodeKinds[i] == shape.kind && freeDevices[i] == size)
              candidates.push_back(i);
          wholeNodes(candidates, 0, shape.nodes, chosen,
                     [&] { place(chosen); });
          continue;
        }
        for (size_t i = 0; i < p.nodeKinds.size(); ++i)
          if (p.nodeKinds[i] == shape.kind &&
              freeDevices[i] >= shape.devicesPerNode)
            place({static_cast<int64_t>(i)});
      }
  }

  const StageProblem &p;
  std::vector<SubMeshShape> shapes;
  int64_t maxStages = 0;
  std::vector<int64_t> freeDevices;
  StagePlan current, best;
};

} // namespace

StagePlan weft::plan::planStagesByBruteForce(const StageProblem &problem) {
  return BruteForce(problem).run();
}
