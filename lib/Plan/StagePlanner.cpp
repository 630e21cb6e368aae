//===- StagePlanner.cpp - Stages and their sub-meshes, chosen together ----===//
//
// See StagePlanner.h. The DP's states are (layers done, stages so far when
// capped, the last stage's shape, the free devices as a sorted multiset of
// (kind, free count, holds the last stage)); each keeps a Pareto set of
// labels (sum, slowest finished cycle, last stage's cycle so far) with a
// back-pointer. The plan is rebuilt from the back-pointers on concrete
// nodes (the lowest-numbered node of the chosen class) and evaluated with
// the same formulas as the brute force.
//
//===----------------------------------------------------------------------===//

#include "weft/Plan/StagePlanner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

using namespace weft::plan;

static constexpr double kInfinity = std::numeric_limits<double>::infinity();

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

static bool isPart(const StageProblem &p, const SubMeshShape &s) {
  return s.devicesPerNode < p.devicesPerNode[s.kind];
}

/// Fills the times of `plan` (cut and placements set) from the problem's
/// callbacks; found stays false if a stage does not fit.
static void evaluate(const StageProblem &p, StagePlan &plan) {
  size_t n = plan.stages.size();
  plan.stageSeconds.assign(n, 0);
  plan.transferInSeconds.assign(n, 0);
  plan.cycleSeconds.assign(n, 0);
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
      static_cast<double>(p.microbatches - 1) * plan.slowestCycleSeconds;
}

/// (primary, secondary) of the objective: smaller is better.
static std::pair<double, double> objectiveKey(const StageProblem &p,
                                              double latency, double cycle) {
  if (p.objective == StageObjective::Throughput)
    return {cycle, latency};
  return {latency, cycle};
}

double weft::plan::stageObjectiveValue(const StageProblem &p,
                                       const StagePlan &plan) {
  if (!plan.found)
    return kInfinity;
  return objectiveKey(p, plan.latencySeconds, plan.slowestCycleSeconds).first;
}

/// The shapes a stage may take: the problem's, or every one the cluster
/// allows.
static std::vector<SubMeshShape> candidateShapes(const StageProblem &p) {
  return p.shapes.empty() ? allSubMeshShapes(p.nodeKinds, p.devicesPerNode)
                          : p.shapes;
}

/// The most stages a plan may have.
static int64_t stageCap(const StageProblem &p) {
  return p.maxStages > 0 ? std::min(p.maxStages, p.layers) : p.layers;
}

//===----------------------------------------------------------------------===//
// The DP
//===----------------------------------------------------------------------===//

namespace {

/// One node's free devices, as the DP's state sees it.
struct NodeClass {
  int kind = 0;
  int64_t free = 0;
  /// The last stage lies inside this node (a part of it).
  bool holdsLast = false;
  bool operator<(const NodeClass &o) const {
    return std::tie(kind, free, holdsLast) <
           std::tie(o.kind, o.free, o.holdsLast);
  }
  bool operator==(const NodeClass &o) const {
    return kind == o.kind && free == o.free && holdsLast == o.holdsLast;
  }
};

struct StateKey {
  int64_t layersDone = 0;
  int64_t stages = 0;
  int lastShape = -1;
  std::vector<NodeClass> nodes;
  bool operator<(const StateKey &o) const {
    return std::tie(layersDone, stages, lastShape, nodes) <
           std::tie(o.layersDone, o.stages, o.lastShape, o.nodes);
  }
};

/// How a label was reached: from label `fromLabel` of state `fromState`
/// by a stage of shape `shape` ending at the state's layersDone, placed on
/// a node of class `node` (part shapes; whole shapes take the lowest whole
/// free nodes).
struct Label {
  double sum = 0, slowestDone = 0, lastCycle = 0;
  int64_t fromState = -1, fromLabel = -1;
  int shape = -1;
  NodeClass node;
};

struct State {
  StateKey key;
  std::vector<Label> labels;
};

/// a is at least as good as b in every criterion.
bool dominates(const Label &a, const Label &b) {
  return a.sum <= b.sum && a.slowestDone <= b.slowestDone &&
         a.lastCycle <= b.lastCycle;
}

class StageDP {
public:
  explicit StageDP(const StageProblem &p)
      : p(p), shapes(candidateShapes(p)), maxStages(stageCap(p)),
        capStages(maxStages < p.layers) {}

  StagePlan run();

private:
  int64_t stateFor(StateKey key);
  void addLabel(int64_t state, const Label &label);
  void expand(int64_t state);
  /// The node classes a stage of `shape` can go to from `nodes`, and the
  /// nodes after it: one choice for whole nodes, one per distinct class
  /// with room for a part.
  std::vector<std::pair<NodeClass, std::vector<NodeClass>>>
  placements(const std::vector<NodeClass> &nodes, const SubMeshShape &shape);
  StagePlan rebuild(int64_t state, int64_t label);
  /// The objective's key that `label` cannot beat: every time still to
  /// come is >= 0, so its figures so far bound the plan's.
  std::pair<double, double> boundOf(const Label &label) const {
    double cycle = std::max(label.slowestDone, label.lastCycle);
    return objectiveKey(
        p, label.sum + static_cast<double>(p.microbatches - 1) * cycle, cycle);
  }

  const StageProblem &p;
  std::vector<SubMeshShape> shapes;
  int64_t maxStages = 0;
  bool capStages = false;
  std::vector<State> states;
  std::map<StateKey, int64_t> index;
  /// State ids by layers done, in creation order.
  std::vector<std::vector<int64_t>> byLayer;
  /// The best complete plan's key so far: labels that cannot beat it are
  /// dropped (branch and bound; complete plans come early because each
  /// state tries its longest last stage first).
  std::pair<double, double> incumbent = {kInfinity, kInfinity};
};

} // namespace

int64_t StageDP::stateFor(StateKey key) {
  auto [it, inserted] = index.try_emplace(key, states.size());
  if (inserted) {
    byLayer[key.layersDone].push_back(states.size());
    states.push_back({std::move(key), {}});
  }
  return it->second;
}

void StageDP::addLabel(int64_t state, const Label &label) {
  std::pair<double, double> bound = boundOf(label);
  if (!(bound < incumbent))
    return;
  if (states[state].key.layersDone == p.layers)
    incumbent = bound;
  std::vector<Label> &labels = states[state].labels;
  for (const Label &kept : labels)
    if (dominates(kept, label))
      return;
  labels.erase(std::remove_if(labels.begin(), labels.end(),
                              [&](const Label &kept) {
                                return dominates(label, kept);
                              }),
               labels.end());
  labels.push_back(label);
}

std::vector<std::pair<NodeClass, std::vector<NodeClass>>>
StageDP::placements(const std::vector<NodeClass> &nodes,
                    const SubMeshShape &shape) {
  std::vector<std::pair<NodeClass, std::vector<NodeClass>>> out;
  int64_t size = p.devicesPerNode[shape.kind];
  // Whatever the stage takes, the old last stage is no longer the last.
  auto cleared = [](std::vector<NodeClass> v) {
    for (NodeClass &c : v)
      c.holdsLast = false;
    return v;
  };
  if (shape.devicesPerNode == size) {
    std::vector<NodeClass> after = cleared(nodes);
    int64_t needed = shape.nodes;
    for (NodeClass &c : after)
      if (needed > 0 && c.kind == shape.kind && c.free == size) {
        c.free = 0;
        --needed;
      }
    if (needed == 0) {
      std::sort(after.begin(), after.end());
      out.push_back({NodeClass{shape.kind, size, false}, std::move(after)});
    }
    return out;
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeClass &c = nodes[i];
    if (c.kind != shape.kind || c.free < shape.devicesPerNode)
      continue;
    // Equal classes are interchangeable: try each once.
    if (i > 0 && nodes[i - 1] == c)
      continue;
    std::vector<NodeClass> after = cleared(nodes);
    after[i].free -= shape.devicesPerNode;
    after[i].holdsLast = true;
    std::sort(after.begin(), after.end());
    out.push_back({c, std::move(after)});
  }
  return out;
}

void StageDP::expand(int64_t id) {
  // Labels the incumbent overtook since they were kept go first, in place:
  // later labels point at these by index. (No label is added to this state
  // from now on: every state before it in the order has been expanded.)
  std::vector<Label> &kept = states[id].labels;
  kept.erase(std::remove_if(kept.begin(), kept.end(),
                            [&](const Label &label) {
                              return !(boundOf(label) < incumbent);
                            }),
             kept.end());
  // Copies: the states vector grows below.
  StateKey key = states[id].key;
  std::vector<Label> labels = kept;
  if (key.stages >= maxStages || labels.empty())
    return;
  const SubMeshShape *last = key.lastShape >= 0 ? &shapes[key.lastShape]
                                                : nullptr;
  for (int64_t end = p.layers; end > key.layersDone; --end) {
    for (size_t s = 0; s < shapes.size(); ++s) {
      const SubMeshShape &shape = shapes[s];
      double t = p.stageSeconds(key.layersDone, end, shape);
      if (!std::isfinite(t))
        continue;
      for (auto &[node, after] : placements(key.nodes, shape)) {
        double transfer = 0;
        if (last && p.transferSeconds) {
          bool sameNode = isPart(p, *last) && isPart(p, shape) &&
                          node.holdsLast;
          transfer =
              p.transferSeconds(key.layersDone, *last, shape, sameNode);
        }
        // The last stage also collects the outputs.
        double collect =
            end == p.layers && p.outputSeconds ? p.outputSeconds(shape) : 0;
        StateKey next;
        next.layersDone = end;
        next.stages = capStages ? key.stages + 1 : 0;
        next.lastShape = static_cast<int>(s);
        next.nodes = after;
        int64_t to = stateFor(std::move(next));
        for (size_t l = 0; l < labels.size(); ++l) {
          const Label &from = labels[l];
          Label label;
          label.sum = from.sum + transfer + t + collect;
          label.slowestDone =
              last ? std::max(from.slowestDone, from.lastCycle + transfer)
                   : 0;
          label.lastCycle = t + transfer + collect;
          label.fromState = id;
          label.fromLabel = static_cast<int64_t>(l);
          label.shape = static_cast<int>(s);
          label.node = node;
          addLabel(to, label);
        }
      }
    }
  }
}

StagePlan StageDP::rebuild(int64_t id, int64_t labelIndex) {
  // The transitions, last stage first.
  struct Step {
    int64_t first, last;
    int shape;
    NodeClass node;
  };
  std::vector<Step> steps;
  while (states[id].key.layersDone > 0) {
    const Label &label = states[id].labels[labelIndex];
    int64_t from = label.fromState;
    steps.push_back({states[from].key.layersDone, states[id].key.layersDone,
                     label.shape, label.node});
    id = from;
    labelIndex = label.fromLabel;
  }
  std::reverse(steps.begin(), steps.end());
  // Replayed on concrete nodes: the lowest-numbered node of each class.
  std::vector<int64_t> freeDevices;
  for (int kind : p.nodeKinds)
    freeDevices.push_back(p.devicesPerNode[kind]);
  int64_t lastNode = -1;
  StagePlan plan;
  for (const Step &step : steps) {
    const SubMeshShape &shape = shapes[step.shape];
    int64_t size = p.devicesPerNode[shape.kind];
    StagePlacement placement;
    placement.shape = shape;
    int64_t holds = -1;
    for (size_t i = 0; i < p.nodeKinds.size(); ++i) {
      if (p.nodeKinds[i] != shape.kind)
        continue;
      if (shape.devicesPerNode == size) {
        if (freeDevices[i] == size &&
            static_cast<int64_t>(placement.nodes.size()) < shape.nodes)
          placement.nodes.push_back(i);
        continue;
      }
      bool isLast = static_cast<int64_t>(i) == lastNode;
      if (placement.nodes.empty() && freeDevices[i] == step.node.free &&
          isLast == step.node.holdsLast)
        placement.nodes.push_back(i);
    }
    for (int64_t node : placement.nodes) {
      placement.firstDevice = size - freeDevices[node];
      freeDevices[node] -= shape.devicesPerNode;
    }
    if (shape.devicesPerNode == size)
      placement.firstDevice = 0;
    else
      holds = placement.nodes.front();
    lastNode = holds;
    plan.firstLayer.push_back(step.first);
    plan.stages.push_back(std::move(placement));
  }
  plan.firstLayer.push_back(p.layers);
  evaluate(p, plan);
  return plan;
}

StagePlan StageDP::run() {
  byLayer.assign(p.layers + 1, {});
  StateKey start;
  for (int kind : p.nodeKinds)
    start.nodes.push_back({kind, p.devicesPerNode[kind], false});
  std::sort(start.nodes.begin(), start.nodes.end());
  addLabel(stateFor(start), Label{});
  for (int64_t layer = 0; layer < p.layers; ++layer)
    for (size_t i = 0; i < byLayer[layer].size(); ++i)
      expand(byLayer[layer][i]);
  int64_t bestState = -1, bestLabel = -1;
  std::pair<double, double> best = {kInfinity, kInfinity};
  for (int64_t id : byLayer[p.layers])
    for (size_t l = 0; l < states[id].labels.size(); ++l) {
      const Label &label = states[id].labels[l];
      double cycle = std::max(label.slowestDone, label.lastCycle);
      double latency =
          label.sum + static_cast<double>(p.microbatches - 1) * cycle;
      std::pair<double, double> key = objectiveKey(p, latency, cycle);
      if (key < best) {
        best = key;
        bestState = id;
        bestLabel = static_cast<int64_t>(l);
      }
    }
  StagePlan plan;
  if (bestState >= 0)
    plan = rebuild(bestState, bestLabel);
  plan.states = static_cast<int64_t>(states.size());
  for (const State &state : states)
    plan.labels += static_cast<int64_t>(state.labels.size());
  return plan;
}

StagePlan weft::plan::planStages(const StageProblem &problem) {
  return StageDP(problem).run();
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
    evaluate(p, plan);
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
