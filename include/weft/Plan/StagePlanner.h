//===- StagePlanner.h - Stages and their sub-meshes, chosen together -*- C++ -*-===//
//
// Plain C++ (no IR): the inter-operator DP of the stage planner. A model
// already clustered into a chain of layers is cut into contiguous stages;
// each stage gets a sub-mesh of the cluster, placed on concrete nodes so
// that the stages really pack (1x5, 1x5 and 1x6 do not fit two 8-device
// nodes), and the tensors between consecutive stages are part of the
// objective: their cost depends on both neighbours' sub-meshes and on
// whether the two share a node.
//
// A sub-mesh fills whole nodes of one kind (n x devicesPerNode) or lies
// inside one node (1 x m, any m, not only powers of two). What a stage
// costs on a sub-mesh comes from the caller (the intra-operator planner's
// prediction, +infinity where it does not fit the memory), as does each
// transfer's cost. The objective follows Schedule.h's GPipe closed form:
// a stage's cycle is its compute plus its transfers in and out; the
// latency of M microbatches is the first one's sum of stages and transfers
// plus (M - 1) slowest cycles.
//
// The DP runs over (layers done, the last stage's sub-mesh, which devices
// are still free) and keeps, per state, the Pareto set of (sum so far,
// slowest finished cycle, the last stage's cycle so far): every objective
// here grows with each of the three, so the set loses nothing and the
// result is optimal within the model. Nodes of one kind with as many free
// devices are interchangeable, so free devices are kept as a sorted
// multiset. planStagesByBruteForce enumerates every plan (for tests).
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_PLAN_STAGEPLANNER_H
#define WEFT_PLAN_STAGEPLANNER_H

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace weft::plan {

/// A sub-mesh shape: `nodes` x `devicesPerNode` devices of node kind
/// `kind`. Either whole nodes (devicesPerNode is the kind's node size) or
/// part of one node (nodes == 1).
struct SubMeshShape {
  int kind = 0;
  int64_t nodes = 1;
  int64_t devicesPerNode = 1;

  int64_t devices() const { return nodes * devicesPerNode; }
  bool operator==(const SubMeshShape &other) const {
    return kind == other.kind && nodes == other.nodes &&
           devicesPerNode == other.devicesPerNode;
  }
  bool operator<(const SubMeshShape &other) const;
  /// "2x8 of kind 0".
  std::string str() const;
};

/// What to minimize.
enum class StageObjective {
  /// The slowest cycle (requests per second with the pipeline full); ties
  /// go to the lower latency.
  Throughput,
  /// One batch of M microbatches through the pipeline; ties go to the
  /// faster cycle.
  Latency,
};

struct StageProblem {
  /// Layers 0 .. layers-1, in order; a stage is a contiguous run of them.
  int64_t layers = 0;
  /// The cluster: each node's kind, and each kind's devices per node.
  std::vector<int> nodeKinds;
  std::vector<int64_t> devicesPerNode;
  /// The sub-meshes a stage may take (allSubMeshShapes() by default when
  /// empty).
  std::vector<SubMeshShape> shapes;
  /// Seconds of one microbatch through layers [first, last) on `shape`;
  /// +infinity when they do not fit its devices' memory.
  std::function<double(int64_t first, int64_t last, const SubMeshShape &)>
      stageSeconds;
  /// Seconds to move one microbatch's tensors at boundary `layer` (from
  /// layer-1 to layer) from a stage on `from` to a stage on `to`;
  /// `sameNode` when both lie inside one node. Null: free.
  std::function<double(int64_t layer, const SubMeshShape &from,
                       const SubMeshShape &to, bool sameNode)>
      transferSeconds;
  /// Seconds to collect one microbatch's model outputs from a last stage
  /// on `shape` (on the collector, its first device); part of that stage's
  /// cycle and of the latency. Null: free.
  std::function<double(const SubMeshShape &)> outputSeconds;
  StageObjective objective = StageObjective::Throughput;
  int64_t microbatches = 1;
  /// At most this many stages (0: as many as there are layers).
  int64_t maxStages = 0;
  /// The DP makes at most this many states per pass (a count, so that the
  /// result does not depend on the machine); past it, the plan is the best
  /// found (StagePlan::complete is false). 0: no limit.
  int64_t maxStates = 100000;
};

/// A stage's place: its shape and the nodes it uses (indices into
/// nodeKinds, ascending), and, inside them, the first device (0 for whole
/// nodes; the devices firstDevice .. firstDevice + devicesPerNode - 1 of the
/// node otherwise).
struct StagePlacement {
  SubMeshShape shape;
  std::vector<int64_t> nodes;
  int64_t firstDevice = 0;
};

struct StagePlan {
  /// False when no plan fits (every stage over its memory, say).
  bool found = false;
  /// Stage k holds layers [firstLayer[k], firstLayer[k + 1]), with
  /// firstLayer.back() == layers.
  std::vector<int64_t> firstLayer;
  std::vector<StagePlacement> stages;
  /// Per stage: compute, and the transfer into it (0 for the first).
  std::vector<double> stageSeconds, transferInSeconds;
  /// Per stage: compute plus transfers in and out (the last stage's out is
  /// the collection of the outputs, outputCollectionSeconds).
  std::vector<double> cycleSeconds;
  double outputCollectionSeconds = 0;
  double slowestCycleSeconds = 0;
  double firstMicrobatchSeconds = 0;
  /// first + (M - 1) x slowest cycle.
  double latencySeconds = 0;
  /// Work of the search: DP states and the labels kept in them.
  int64_t states = 0, labels = 0;
  /// The search ran to its end, so the plan is optimal within the model;
  /// false when it stopped at maxStates.
  bool complete = true;
  /// The first search, over placements that fill the nodes in order (a
  /// part of a node goes to the node of the stage before it or to a wholly
  /// free node), ran to its end: the plan is at least the best of those.
  bool inOrderComplete = true;
  /// What no plan beats, the objective's first figure (the slowest cycle
  /// for throughput, the latency for latency): stages on the best shapes
  /// that the devices allow, with the cheapest transfers any neighbour
  /// could have and no packing into nodes.
  double lowerBoundSeconds = 0;
};

/// Every shape the cluster allows: for each kind, 1 .. its node count whole
/// nodes, and 1 x m for m in 1 .. devices per node - 1 (1 x full node is
/// the one-node whole shape).
std::vector<SubMeshShape> allSubMeshShapes(const std::vector<int> &nodeKinds,
                                           const std::vector<int64_t> &
                                               devicesPerNode);

/// Checks a problem: layers >= 1, a node kind for every node and a size
/// for every kind, shapes that exist in the cluster, callbacks set,
/// microbatches >= 1. Empty when usable, else what is wrong.
std::string checkStageProblem(const StageProblem &problem);

/// The optimal plan (the DP). Deterministic: equal objectives go to the
/// plan met first in a fixed order (fewer layers in earlier stages, shapes
/// in `shapes` order, lower nodes first). Needs a problem that
/// checkStageProblem accepts.
StagePlan planStages(const StageProblem &problem);

/// Every cut set x every shape per stage x every placement, evaluated with
/// the same formulas: the oracle of the tests, exponential.
StagePlan planStagesByBruteForce(const StageProblem &problem);

/// Fills the times of `plan` (its firstLayer and stages set) from the
/// problem's callbacks, with the formulas the DP uses; `found` is false when
/// a stage does not fit.
void evaluatePlan(const StageProblem &problem, StagePlan &plan);

/// The schedule's closed form from a plan's stageSeconds,
/// transferInSeconds and outputCollectionSeconds: each stage's cycle
/// (compute, transfer in and out, the last stage's out the collection),
/// the slowest, the first microbatch's time and the latency of
/// `microbatches`. evaluatePlan ends with it.
void completePlanTimes(int64_t microbatches, StagePlan &plan);

/// The objective's value of `plan` (what planStages minimizes first).
double stageObjectiveValue(const StageProblem &problem,
                           const StagePlan &plan);
/// (first, second) figure of the objective for `plan`, smaller better:
/// (slowest cycle, latency) for throughput, the reverse for latency;
/// +infinity for a plan not found.
std::pair<double, double> stageObjectiveKey(const StageProblem &problem,
                                            const StagePlan &plan);

} // namespace weft::plan

#endif // WEFT_PLAN_STAGEPLANNER_H
