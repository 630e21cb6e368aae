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

#include "StagePlannerDetail.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

using namespace weft::plan;
using namespace weft::plan::detail;

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

/// What a DP pass minimizes, and so which figures of a label matter.
enum class Criteria {
  /// The latency of M > 1 microbatches: (sum, slowest cycle), all three
  /// figures.
  All,
  /// The latency of one microbatch: the sum first, the cycle on ties.
  SumFirst,
  /// The slowest cycle alone (the throughput objective's first pass).
  Cycle,
  /// The latency among plans whose every cycle is within a cap (the
  /// throughput objective's second pass, the cap its optimal cycle): the
  /// closed cycles no longer matter.
  SumUnderCap,
};

/// Every stage price and the bounds on what the layers still to do need,
/// worked out once for every pass.
struct StageTables {
  StageTables(const StageProblem &p, const std::vector<SubMeshShape> &shapes);

  /// Seconds of layers [first, end) on shapes[s].
  double price(int64_t first, int64_t end, size_t s) const {
    return prices[(first * (layers + 1) + end) * numShapes + s];
  }
  /// Where the bounds of (layers done, wholly free nodes, free devices in
  /// the other nodes) are.
  size_t restIndex(int64_t layersDone, int64_t wholeNodes,
                   int64_t partFree) const {
    return (layersDone * (numNodes + 1) + wholeNodes) * (maxPartFree + 1) +
           partFree;
  }

  /// The least transfer into (out of) a stage on shapes[s] at boundary b
  /// (0 at the model's ends).
  double transferIn(int64_t b, size_t s) const {
    return minIn[b * numShapes + s];
  }
  double transferOut(int64_t b, size_t s) const {
    return minOut[b * numShapes + s];
  }

  /// Calls fn(end, shape, t, c, rest) for every stage [first, end) that
  /// the rest tables consider from (first, w, f): its share of the latency
  /// t, its cycle c and the rest's index after it.
  template <typename Fn>
  void forEachStage(int64_t first, int64_t w, int64_t f, Fn fn) const;

  const StageProblem *p;
  const std::vector<SubMeshShape> *shapes;
  int64_t layers = 0;
  size_t numShapes = 0;
  std::vector<double> prices, minIn, minOut, collect;
  int64_t largestNode = 0;
  int64_t numNodes = 0, maxPartFree = 0;
  /// Per (layers done i, wholly free nodes W, free devices F in partly used
  /// nodes): the least sum of stage times, and the least slowest cycle, of
  /// any cut of layers [i, layers) into stages that take whole nodes from
  /// the W and parts from a pool of F devices (or open one of the W, adding
  /// its other devices to the pool). Each stage pays its least transfers in
  /// (from i on) and out, the last the collection of the outputs. Kinds,
  /// the neighbours' real shapes and how the pool is split into nodes are
  /// left out, so every real plan is one of these: +infinity when none
  /// fits.
  std::vector<double> restSum, restCycle;
};

StageTables::StageTables(const StageProblem &p,
                         const std::vector<SubMeshShape> &shapes)
    : p(&p), shapes(&shapes), layers(p.layers), numShapes(shapes.size()) {
  prices.assign((layers + 1) * (layers + 1) * numShapes, kInfinity);
  for (int64_t first = 0; first < layers; ++first)
    for (int64_t end = first + 1; end <= layers; ++end)
      for (size_t s = 0; s < numShapes; ++s)
        prices[(first * (layers + 1) + end) * numShapes + s] =
            p.stageSeconds(first, end, shapes[s]);
  collect.assign(numShapes, 0);
  if (p.outputSeconds)
    for (size_t s = 0; s < numShapes; ++s)
      collect[s] = p.outputSeconds(shapes[s]);
  // The cheapest transfer into and out of a stage of each shape at each
  // boundary, whatever its neighbour and whether they share a node.
  minIn.assign((layers + 1) * numShapes, 0);
  minOut.assign(minIn.size(), 0);
  if (p.transferSeconds)
    for (int64_t b = 1; b < layers; ++b)
      for (size_t s = 0; s < numShapes; ++s) {
        double in = kInfinity, out = kInfinity;
        for (size_t o = 0; o < numShapes; ++o)
          for (bool sameNode : {false, true}) {
            in = std::min(in,
                          p.transferSeconds(b, shapes[o], shapes[s], sameNode));
            out = std::min(
                out, p.transferSeconds(b, shapes[s], shapes[o], sameNode));
          }
        minIn[b * numShapes + s] = in;
        minOut[b * numShapes + s] = out;
      }
  // A node opened for a part adds at most the largest node's other
  // devices to the pool.
  for (int kind : p.nodeKinds)
    largestNode = std::max(largestNode, p.devicesPerNode[kind]);
  numNodes = static_cast<int64_t>(p.nodeKinds.size());
  maxPartFree = numNodes * (largestNode - 1);
  restSum.assign((layers + 1) * (numNodes + 1) * (maxPartFree + 1),
                 kInfinity);
  restCycle.assign(restSum.size(), kInfinity);
  for (int64_t w = 0; w <= numNodes; ++w)
    for (int64_t f = 0; f <= maxPartFree; ++f)
      restSum[restIndex(layers, w, f)] = restCycle[restIndex(layers, w, f)] =
          0;
  for (int64_t first = layers - 1; first >= 0; --first)
    for (int64_t w = 0; w <= numNodes; ++w)
      for (int64_t f = 0; f <= maxPartFree; ++f) {
        double &sum = restSum[restIndex(first, w, f)];
        double &cycle = restCycle[restIndex(first, w, f)];
        forEachStage(first, w, f,
                     [&](int64_t, size_t, double t, double c, size_t rest) {
                       sum = std::min(sum, t + restSum[rest]);
                       cycle = std::min(cycle, std::max(c, restCycle[rest]));
                     });
      }
}

template <typename Fn>
void StageTables::forEachStage(int64_t first, int64_t w, int64_t f,
                               Fn fn) const {
  for (size_t s = 0; s < numShapes; ++s) {
    const SubMeshShape &shape = (*shapes)[s];
    bool whole = shape.devicesPerNode == p->devicesPerNode[shape.kind];
    int64_t m = shape.devicesPerNode;
    for (int64_t end = first + 1; end <= layers; ++end) {
      // Its compute and transfer in, and the last stage collects the
      // outputs; its cycle also has its transfer out.
      double in = transferIn(first, s);
      double t = price(first, end, s) + in +
                 (end == layers ? collect[s] : 0.0);
      double c = price(first, end, s) + in +
                 (end == layers ? collect[s] : transferOut(end, s));
      if (!std::isfinite(t))
        continue;
      if (whole) {
        if (shape.nodes <= w)
          fn(end, s, t, c, restIndex(end, w - shape.nodes, f));
        continue;
      }
      if (m <= f)
        fn(end, s, t, c, restIndex(end, w, f - m));
      if (w >= 1)
        fn(end, s, t, c,
           restIndex(end, w - 1, std::min(maxPartFree, f + largestNode - m)));
    }
  }
}

/// One pass of the DP under one criteria.
class StageDP {
public:
  /// With `inOrder`, the search keeps to placements that fill the nodes in
  /// order (see placements()): far fewer states, every plan still real.
  StageDP(const StageProblem &p, const std::vector<SubMeshShape> &shapes,
          const StageTables &tables, Criteria criteria,
          double cycleCap = kInfinity, bool inOrder = false)
      : p(p), shapes(shapes), tables(tables), criteria(criteria),
        cycleCap(cycleCap), inOrder(inOrder), maxStages(stageCap(p)),
        capStages(maxStages < p.layers) {}

  /// The best plan's key ({+inf, +inf} when none) and, when `plan` is not
  /// null, the plan with the work counts.
  std::pair<double, double> run(StagePlan *plan);
  /// Starts the search from a plan already known (`key` its key): only
  /// what beats it is kept, and it is the answer when nothing does.
  void seed(const StagePlan &plan, std::pair<double, double> key) {
    if (!plan.found || !(key < incumbent))
      return;
    seedPlan = plan;
    incumbent = key;
  }

private:
  int64_t stateFor(StateKey key);
  void addLabel(int64_t state, const Label &label);
  void expand(int64_t state);
  /// Drops the labels of states at `layer` that a state with as many
  /// layers done, stages and the same last shape, but at least as many
  /// free devices everywhere, does as well or better (nodesDominate): every
  /// plan from the poorer state is open to the richer one, at the same
  /// prices.
  void pruneDominatedStates(int64_t layer);
  /// Every node of `b` maps to its own node of `a`, of its kind, with at
  /// least as many free devices, the node holding the last stage to the
  /// one holding it.
  bool nodesDominate(const std::vector<NodeClass> &a,
                     const std::vector<NodeClass> &b) const;
  /// The node classes a stage of `shape` can go to from `nodes`, and the
  /// nodes after it: one choice for whole nodes, one per distinct class
  /// with room for a part. In order, a part goes only to the node of the
  /// last stage or to a wholly free node, and a node the pipeline leaves
  /// keeps no free devices.
  std::vector<std::pair<NodeClass, std::vector<NodeClass>>>
  placements(const std::vector<NodeClass> &nodes, const SubMeshShape &shape);
  StagePlan rebuild(int64_t state, int64_t label);
  bool dominates(const Label &a, const Label &b) const;
  /// The criteria's key of a complete plan ending in `label`.
  std::pair<double, double> finalKey(const Label &label) const;
  /// The key that `label`, with `nodes` left after its `layersDone`
  /// layers, cannot beat: its figures so far plus what the layers still to
  /// do need at least (every time is >= 0). {+inf, +inf} when it breaks
  /// the cycle cap.
  std::pair<double, double> boundOf(const Label &label, int64_t layersDone,
                                    const std::vector<NodeClass> &nodes) const;
  std::pair<double, double> boundOf(const Label &label,
                                    const StateKey &key) const {
    return boundOf(label, key.layersDone, key.nodes);
  }
  const StageProblem &p;
  const std::vector<SubMeshShape> &shapes;
  const StageTables &tables;
  Criteria criteria;
  double cycleCap;
  bool inOrder;
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
  StagePlan seedPlan;
  /// A state was not made: maxStates was reached.
  bool capped = false;
};

} // namespace

int64_t StageDP::stateFor(StateKey key) {
  if (p.maxStates > 0 && static_cast<int64_t>(states.size()) >= p.maxStates) {
    auto it = index.find(key);
    if (it != index.end())
      return it->second;
    capped = true;
    return -1;
  }
  auto [it, inserted] = index.try_emplace(key, states.size());
  if (inserted) {
    byLayer[key.layersDone].push_back(states.size());
    states.push_back({std::move(key), {}});
  }
  return it->second;
}

bool StageDP::dominates(const Label &a, const Label &b) const {
  bool lastAndClosed =
      a.slowestDone <= b.slowestDone && a.lastCycle <= b.lastCycle;
  switch (criteria) {
  case Criteria::All:
    return a.sum <= b.sum && lastAndClosed;
  case Criteria::SumFirst:
    return a.sum < b.sum || (a.sum == b.sum && lastAndClosed);
  case Criteria::Cycle:
    return lastAndClosed;
  case Criteria::SumUnderCap:
    return a.sum <= b.sum && a.lastCycle <= b.lastCycle;
  }
  return false;
}

std::pair<double, double> StageDP::finalKey(const Label &label) const {
  double cycle = std::max(label.slowestDone, label.lastCycle);
  if (criteria == Criteria::Cycle)
    return {cycle, 0};
  return objectiveKey(
      p, label.sum + static_cast<double>(p.microbatches - 1) * cycle, cycle);
}

std::pair<double, double>
StageDP::boundOf(const Label &label, int64_t layersDone,
                 const std::vector<NodeClass> &nodes) const {
  int64_t wholeNodes = 0, partFree = 0;
  for (const NodeClass &c : nodes) {
    if (c.free == p.devicesPerNode[c.kind])
      ++wholeNodes;
    else
      partFree += c.free;
  }
  size_t rest = tables.restIndex(layersDone, wholeNodes, partFree);
  // The last stage's cycle gets its transfer out, if a stage follows.
  double last = label.lastCycle;
  if (layersDone < p.layers && label.shape >= 0)
    last += tables.transferOut(layersDone, label.shape);
  double cycle =
      std::max({label.slowestDone, last, tables.restCycle[rest]});
  if (criteria == Criteria::Cycle)
    return {cycle, 0};
  if (cycle > cycleCap)
    return {kInfinity, kInfinity};
  if (criteria == Criteria::SumUnderCap)
    cycle = cycleCap;
  return objectiveKey(p,
                      label.sum + tables.restSum[rest] +
                          static_cast<double>(p.microbatches - 1) * cycle,
                      cycle);
}

void StageDP::addLabel(int64_t state, const Label &label) {
  std::pair<double, double> bound = boundOf(label, states[state].key);
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

bool StageDP::nodesDominate(const std::vector<NodeClass> &a,
                            const std::vector<NodeClass> &b) const {
  // The node that holds the last stage must map to its counterpart: a
  // stage placed there next shares a node with it in both states.
  const NodeClass *lastA = nullptr, *lastB = nullptr;
  for (const NodeClass &c : a)
    if (c.holdsLast)
      lastA = &c;
  for (const NodeClass &c : b)
    if (c.holdsLast)
      lastB = &c;
  if (!lastA != !lastB)
    return false;
  if (lastA && (lastA->kind != lastB->kind || lastA->free < lastB->free))
    return false;
  // The others, kind by kind, most free first: the i-th of `a` covers the
  // i-th of `b` (both lists are sorted by (kind, free) ascending and have
  // as many nodes of each kind).
  size_t i = a.size(), j = b.size();
  while (i > 0 && j > 0) {
    const NodeClass &x = a[i - 1], &y = b[j - 1];
    if (x.holdsLast) {
      --i;
      continue;
    }
    if (y.holdsLast) {
      --j;
      continue;
    }
    if (x.kind != y.kind || x.free < y.free)
      return false;
    --i;
    --j;
  }
  return true;
}

void StageDP::pruneDominatedStates(int64_t layer) {
  std::map<std::pair<int64_t, int>, std::vector<int64_t>> groups;
  for (int64_t id : byLayer[layer]) {
    const StateKey &key = states[id].key;
    if (!states[id].labels.empty())
      groups[{key.stages, key.lastShape}].push_back(id);
  }
  for (auto &[group, ids] : groups) {
    if (ids.size() < 2)
      continue;
    for (int64_t b : ids)
      for (int64_t a : ids) {
        std::vector<Label> &poorer = states[b].labels;
        if (a == b || poorer.empty() || states[a].labels.empty() ||
            !nodesDominate(states[a].key.nodes, states[b].key.nodes))
          continue;
        const std::vector<Label> &richer = states[a].labels;
        poorer.erase(std::remove_if(poorer.begin(), poorer.end(),
                                    [&](const Label &label) {
                                      for (const Label &kept : richer)
                                        if (dominates(kept, label))
                                          return true;
                                      return false;
                                    }),
                     poorer.end());
      }
  }
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
  // In order, the node the pipeline leaves is closed: what it has left is
  // never used.
  auto leave = [&](std::vector<NodeClass> &after, size_t stay) {
    if (!inOrder)
      return;
    for (size_t j = 0; j < after.size(); ++j)
      if (j != stay && after[j].free < p.devicesPerNode[after[j].kind])
        after[j].free = 0;
  };
  if (shape.devicesPerNode == size) {
    std::vector<NodeClass> after = cleared(nodes);
    leave(after, after.size());
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
    if (inOrder && !c.holdsLast && c.free < size)
      continue;
    std::vector<NodeClass> after = cleared(nodes);
    leave(after, i);
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
                              return !(boundOf(label, states[id].key) <
                                       incumbent);
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
      double t = tables.price(key.layersDone, end, s);
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
        // The state is made only for a label that can still win.
        int64_t to = -1;
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
          if (!(boundOf(label, end, after) < incumbent))
            continue;
          if (to < 0) {
            StateKey next;
            next.layersDone = end;
            next.stages = capStages ? key.stages + 1 : 0;
            next.lastShape = static_cast<int>(s);
            next.nodes = after;
            to = stateFor(std::move(next));
            if (to < 0)
              break;
          }
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
  evaluatePlan(p, plan);
  return plan;
}

std::pair<double, double> StageDP::run(StagePlan *plan) {
  byLayer.assign(p.layers + 1, {});
  StateKey start;
  for (int kind : p.nodeKinds)
    start.nodes.push_back({kind, p.devicesPerNode[kind], false});
  std::sort(start.nodes.begin(), start.nodes.end());
  addLabel(stateFor(start), Label{});
  for (int64_t layer = 0; layer < p.layers; ++layer) {
    pruneDominatedStates(layer);
    for (size_t i = 0; i < byLayer[layer].size(); ++i)
      expand(byLayer[layer][i]);
  }
  int64_t bestState = -1, bestLabel = -1;
  std::pair<double, double> best = {kInfinity, kInfinity};
  for (int64_t id : byLayer[p.layers])
    for (size_t l = 0; l < states[id].labels.size(); ++l) {
      std::pair<double, double> key = finalKey(states[id].labels[l]);
      if (key < best) {
        best = key;
        bestState = id;
        bestLabel = static_cast<int64_t>(l);
      }
    }
  // Nothing beat the seed: it is the plan.
  if (bestState < 0 && seedPlan.found)
    best = incumbent;
  if (!plan)
    return best;
  if (bestState >= 0) {
    *plan = rebuild(bestState, bestLabel);
  } else if (seedPlan.found) {
    *plan = seedPlan;
    plan->states = plan->labels = 0;
  }
  plan->states += static_cast<int64_t>(states.size());
  for (const State &state : states)
    plan->labels += static_cast<int64_t>(state.labels.size());
  plan->complete = plan->complete && !capped;
  return best;
}

/// Places stages of `shapes` (in order) node by node: whole shapes on the
/// lowest wholly free nodes of their kind, parts next to the stage before
/// when it fits there, else on the lowest node of their kind with room.
/// Empty when they do not fit.
static std::vector<StagePlacement>
placeInOrder(const StageProblem &p,
             const std::vector<const SubMeshShape *> &shapes) {
  std::vector<int64_t> free;
  for (int kind : p.nodeKinds)
    free.push_back(p.devicesPerNode[kind]);
  std::vector<StagePlacement> placed;
  int64_t lastNode = -1;
  for (const SubMeshShape *shape : shapes) {
    int64_t size = p.devicesPerNode[shape->kind];
    StagePlacement placement;
    placement.shape = *shape;
    if (shape->devicesPerNode == size) {
      for (size_t i = 0; i < free.size() &&
                         static_cast<int64_t>(placement.nodes.size()) <
                             shape->nodes;
           ++i)
        if (p.nodeKinds[i] == shape->kind && free[i] == size)
          placement.nodes.push_back(static_cast<int64_t>(i));
      if (static_cast<int64_t>(placement.nodes.size()) < shape->nodes)
        return {};
      for (int64_t node : placement.nodes)
        free[node] = 0;
      lastNode = -1;
    } else {
      int64_t node = -1;
      if (lastNode >= 0 && p.nodeKinds[lastNode] == shape->kind &&
          free[lastNode] >= shape->devicesPerNode)
        node = lastNode;
      for (size_t i = 0; i < free.size() && node < 0; ++i)
        if (p.nodeKinds[i] == shape->kind && free[i] >= shape->devicesPerNode)
          node = static_cast<int64_t>(i);
      if (node < 0)
        return {};
      placement.nodes = {node};
      placement.firstDevice = size - free[node];
      free[node] -= shape->devicesPerNode;
      lastNode = node;
    }
    placed.push_back(std::move(placement));
  }
  return placed;
}

/// A plan to start the search from: k stages of one shape, the layers cut
/// among them for the least slowest stage (a bottleneck DP), then a last
/// stage of any shape (the last layers often differ: an LM head whose
/// outputs are collected). The best, by `key`, over every shape, count and
/// last stage that fit. A good plan found first prunes all that cannot
/// beat it; on identical layers it is often the optimum, and the DP then
/// only has to show that nothing is better.
static StagePlan simplePlan(
    const StageProblem &p, const std::vector<SubMeshShape> &shapes,
    const StageTables &tables,
    const std::function<std::pair<double, double>(const StagePlan &)> &key) {
  StagePlan best;
  std::pair<double, double> bestKey = {kInfinity, kInfinity};
  int64_t layers = p.layers, cap = stageCap(p);
  int64_t devices = 0;
  for (int kind : p.nodeKinds)
    devices += p.devicesPerNode[kind];
  std::vector<double> collect(shapes.size(), 0);
  if (p.outputSeconds)
    for (size_t s = 0; s < shapes.size(); ++s)
      collect[s] = p.outputSeconds(shapes[s]);
  for (size_t s = 0; s < shapes.size(); ++s) {
    int64_t most =
        std::min({cap - 1, devices / shapes[s].devices(), layers - 1});
    // cut[k][j]: the least slowest stage of layers [0, j) in k stages.
    std::vector<std::vector<double>> cut(
        std::max<int64_t>(most, 0) + 1,
        std::vector<double>(layers + 1, kInfinity));
    std::vector<std::vector<int64_t>> from(
        cut.size(), std::vector<int64_t>(layers + 1, -1));
    cut[0][0] = 0;
    for (int64_t k = 1; k <= most; ++k)
      for (int64_t j = k; j < layers; ++j)
        for (int64_t i = k - 1; i < j; ++i) {
          double slowest = std::max(cut[k - 1][i], tables.price(i, j, s));
          if (slowest < cut[k][j]) {
            cut[k][j] = slowest;
            from[k][j] = i;
          }
        }
    for (int64_t k = 0; k <= most; ++k)
      for (size_t last = 0; last < shapes.size(); ++last) {
        // The last stage's start, by the same bottleneck.
        int64_t start = -1;
        double slowest = kInfinity;
        for (int64_t j = k; j < layers; ++j) {
          double t = std::max(cut[k][j], tables.price(j, layers, last) +
                                             collect[last]);
          if (t < slowest) {
            slowest = t;
            start = j;
          }
        }
        if (start < 0)
          continue;
        StagePlan plan;
        plan.firstLayer.assign(k + 2, layers);
        plan.firstLayer[k] = start;
        for (int64_t j = start, c = k; c > 0; j = from[c][j], --c)
          plan.firstLayer[c - 1] = from[c][j];
        std::vector<const SubMeshShape *> order(k, &shapes[s]);
        order.push_back(&shapes[last]);
        plan.stages = placeInOrder(p, order);
        if (plan.stages.empty())
          continue;
        evaluatePlan(p, plan);
        if (plan.found && key(plan) < bestKey) {
          bestKey = key(plan);
          best = std::move(plan);
        }
      }
  }
  return best;
}

/// The plan the rest tables' optimum describes from the start (by
/// `bySum`: the least sum, else the least slowest cycle; on ties the
/// longest stage, then the fewest devices), placed in order: often a few
/// transfers from the optimum when the packing works out. Not found when
/// it does not fit the nodes.
static StagePlan relaxedPlan(const StageProblem &p,
                             const std::vector<SubMeshShape> &shapes,
                             const StageTables &tables, bool bySum) {
  const std::vector<double> &rest = bySum ? tables.restSum : tables.restCycle;
  StagePlan plan;
  std::vector<const SubMeshShape *> order;
  int64_t first = 0, w = tables.numNodes, f = 0;
  while (first < p.layers) {
    double target = rest[tables.restIndex(first, w, f)];
    if (!std::isfinite(target))
      return {};
    int64_t bestEnd = -1;
    size_t bestShape = 0, bestRest = 0;
    tables.forEachStage(first, w, f,
                        [&](int64_t end, size_t s, double t, double c,
                            size_t after) {
                          double value = bySum ? t + rest[after]
                                               : std::max(c, rest[after]);
                          if (value != target)
                            return;
                          if (end > bestEnd ||
                              (end == bestEnd && shapes[s].devices() <
                                                     shapes[bestShape]
                                                         .devices())) {
                            bestEnd = end;
                            bestShape = s;
                            bestRest = after;
                          }
                        });
    if (bestEnd < 0)
      return {};
    plan.firstLayer.push_back(first);
    order.push_back(&shapes[bestShape]);
    // The index encodes (layers done, W, F).
    f = static_cast<int64_t>(bestRest % (tables.maxPartFree + 1));
    w = static_cast<int64_t>((bestRest / (tables.maxPartFree + 1)) %
                             (tables.numNodes + 1));
    first = bestEnd;
  }
  plan.firstLayer.push_back(p.layers);
  if (static_cast<int64_t>(order.size()) > stageCap(p))
    return {};
  plan.stages = placeInOrder(p, order);
  if (plan.stages.empty())
    return {};
  evaluatePlan(p, plan);
  return plan;
}

/// The better of simplePlan and relaxedPlan by `key`.
static StagePlan seedPlan(
    const StageProblem &p, const std::vector<SubMeshShape> &shapes,
    const StageTables &tables, bool bySum,
    const std::function<std::pair<double, double>(const StagePlan &)> &key) {
  StagePlan simple = simplePlan(p, shapes, tables, key);
  StagePlan relaxed = relaxedPlan(p, shapes, tables, bySum);
  if (relaxed.found && (!simple.found || key(relaxed) < key(simple)))
    return relaxed;
  return simple;
}

/// One search (both passes for throughput), started from the better of
/// the seed plans and `extra` (when found). `inOrder`: StageDP's.
static StagePlan searchPlans(const StageProblem &problem,
                             const std::vector<SubMeshShape> &shapes,
                             const StageTables &tables, bool inOrder,
                             const StagePlan &extra) {
  auto objective = [&](const StagePlan &plan) {
    return objectiveKey(problem, plan.latencySeconds,
                        plan.slowestCycleSeconds);
  };
  StagePlan plan;
  if (problem.objective == StageObjective::Latency) {
    StageDP dp(problem, shapes, tables,
               problem.microbatches == 1 ? Criteria::SumFirst
                                         : Criteria::All,
               kInfinity, inOrder);
    StagePlan seed = seedPlan(problem, shapes, tables, true, objective);
    dp.seed(seed, objective(seed));
    if (extra.found)
      dp.seed(extra, objective(extra));
    dp.run(&plan);
    return plan;
  }
  // Throughput: the least slowest cycle first, then the least latency
  // among the plans that reach it, with the closed cycles out of the
  // labels in both passes (far fewer labels than all three figures).
  StagePlan first;
  StageDP cycles(problem, shapes, tables, Criteria::Cycle, kInfinity,
                 inOrder);
  auto cycleKey = [](const StagePlan &plan) {
    return std::make_pair(plan.slowestCycleSeconds, 0.0);
  };
  StagePlan seed = seedPlan(problem, shapes, tables, false, cycleKey);
  cycles.seed(seed, cycleKey(seed));
  if (extra.found)
    cycles.seed(extra, cycleKey(extra));
  std::pair<double, double> cycle = cycles.run(&first);
  if (!std::isfinite(cycle.first))
    return first;
  StageDP latency(problem, shapes, tables, Criteria::SumUnderCap,
                  cycle.first, inOrder);
  latency.seed(first, objective(first));
  if (extra.found && extra.slowestCycleSeconds <= cycle.first)
    latency.seed(extra, objective(extra));
  latency.run(&plan);
  if (!plan.found)
    plan = first; // not expected: the first pass's plan meets its cycle
  plan.states += first.states;
  plan.labels += first.labels;
  plan.complete = plan.complete && first.complete;
  return plan;
}

/// planStages past its tables. The search over placements that fill the
/// nodes in order comes first: it has far fewer states, and its plan, a
/// real one, starts the full search, which then only keeps what beats it.
/// When the full search stops at maxStates, its plan is still at least the
/// best in order.
static StagePlan planWithTables(const StageProblem &problem,
                                const std::vector<SubMeshShape> &shapes,
                                const StageTables &tables) {
  StagePlan ordered = searchPlans(problem, shapes, tables, true, {});
  StagePlan plan = searchPlans(problem, shapes, tables, false, ordered);
  plan.states += ordered.states;
  plan.labels += ordered.labels;
  plan.inOrderComplete = ordered.complete;
  return plan;
}

StagePlan weft::plan::planStages(const StageProblem &problem) {
  std::vector<SubMeshShape> shapes = candidateShapes(problem);
  StageTables tables(problem, shapes);
  size_t start = tables.restIndex(0, tables.numNodes, 0);
  double boundCycle = tables.restCycle[start];
  double bound = problem.objective == StageObjective::Throughput
                     ? boundCycle
                     : tables.restSum[start] +
                           static_cast<double>(problem.microbatches - 1) *
                               boundCycle;
  StagePlan plan = planWithTables(problem, shapes, tables);
  plan.lowerBoundSeconds = std::min(bound, stageObjectiveValue(problem, plan));
  return plan;
}
