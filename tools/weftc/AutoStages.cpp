//===- AutoStages.cpp - weftc --stages=auto: the stage planner's DP -------===//
//
// The glue between the model and weft/Plan/StagePlanner.h. It clusters the
// model's ops into a chain of layers balanced by their one-device time
// (StageCut's balanced cut). It prices a run of layers on a sub-mesh with
// the intra-operator planner (StagePricer, cached), within the devices'
// memory. It prices the tensors between two stages point to point over
// the cluster's links. Then it runs the DP and turns its plan into stages
// of concrete devices. The cluster's nodes become the DP's nodes: the
// devices of one kind in one node form one DP node, so a node with two
// device kinds gives two.
//
//===----------------------------------------------------------------------===//

#include "Stages.h"

#include "weft/Plan/StageCut.h"
#include "weft/Plan/StagePlanner.h"
#include "weft/Transforms/StagePricing.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

using namespace mlir;
using namespace mlir::weft;
namespace plan = ::weft::plan;

namespace {

/// The devices of one kind in one node of the cluster, among those the
/// pipeline may use.
struct DeviceGroup {
  int node = 0;
  int deviceKind = 0;
  std::vector<int> devices;
};

/// The DP's view of the cluster: its nodes (device groups) and their kinds,
/// a kind being a device kind with a device count.
struct GroupedCluster {
  std::vector<DeviceGroup> groups;
  std::vector<int> groupKinds;
  std::vector<int64_t> devicesPerGroup;
  std::vector<int> deviceKindOf;
};

GroupedCluster groupDevices(const plan::Cluster &cluster,
                            ArrayRef<int> devices) {
  GroupedCluster out;
  std::map<std::pair<int, int>, size_t> index;
  for (int device : devices) {
    const plan::Device &d = cluster.devices[device];
    auto [it, inserted] =
        index.try_emplace({d.node, d.kind}, out.groups.size());
    if (inserted)
      out.groups.push_back({d.node, d.kind, {}});
    out.groups[it->second].devices.push_back(device);
  }
  std::map<std::pair<int, int64_t>, int> kinds;
  for (const DeviceGroup &g : out.groups) {
    auto key = std::make_pair(g.deviceKind,
                              static_cast<int64_t>(g.devices.size()));
    auto [it, inserted] =
        kinds.try_emplace(key, static_cast<int>(out.devicesPerGroup.size()));
    if (inserted) {
      out.devicesPerGroup.push_back(key.second);
      out.deviceKindOf.push_back(key.first);
    }
    out.groupKinds.push_back(it->second);
  }
  return out;
}

/// The mesh of a stage placed on groups `groups` from device `first` on.
plan::Mesh meshOf(const GroupedCluster &grouped,
                  const plan::StagePlacement &placement) {
  plan::Mesh mesh;
  const plan::SubMeshShape &shape = placement.shape;
  for (int64_t g : placement.nodes)
    for (int64_t d = 0; d < shape.devicesPerNode; ++d)
      mesh.devices.push_back(
          grouped.groups[g].devices[placement.firstDevice + d]);
  if (shape.nodes > 1)
    mesh.shape = {shape.nodes, shape.devicesPerNode};
  else
    mesh.shape = {shape.devicesPerNode};
  mesh.name = "stage";
  return mesh;
}

/// The placement on which a shape is priced: the first groups of its kind.
/// Groups of one kind are alike, so the price holds for every placement.
plan::StagePlacement pricingPlacement(const GroupedCluster &grouped,
                                      const plan::SubMeshShape &shape) {
  plan::StagePlacement placement;
  placement.shape = shape;
  for (size_t g = 0; g < grouped.groups.size() &&
                     static_cast<int64_t>(placement.nodes.size()) < shape.nodes;
       ++g)
    if (grouped.groupKinds[g] == shape.kind)
      placement.nodes.push_back(static_cast<int64_t>(g));
  return placement;
}


/// The model as the DP sees it: its compute ops (weights and constants
/// left out) in body order, clustered into layers.
struct LayerChain {
  SmallVector<Operation *> computeOps;
  int64_t numLayers = 0;
  /// Per compute op: its layer.
  std::vector<int64_t> layerOf;
  /// Per layer boundary b (between layers b - 1 and b): the bytes of the
  /// values that earlier layers make and layer b or a later one reads.
  std::vector<double> boundaryBytes;
};

/// Clusters `body`'s compute ops into layers of balanced one-device time on
/// `device`: `maxLayers` of them, or (0) as many as keep the stage prices
/// near 320 for `numShapes` sub-mesh shapes (finer layers let cuts fall
/// closer to the balance point; each run of layers on each shape is one
/// ILP, L (L + 1) / 2 x shapes of them), between 4 and 16.
LayerChain clusterIntoLayers(Block &body, const plan::Cluster &cluster,
                             int device, int64_t maxLayers, size_t numShapes) {
  LayerChain chain;
  std::vector<double> costs;
  for (Operation &op : body.without_terminator()) {
    if (isReplicableOp(&op))
      continue;
    chain.computeOps.push_back(&op);
    costs.push_back(opSecondsOnOneDevice(&op, cluster, device));
  }
  if (chain.computeOps.empty())
    return chain;
  if (maxLayers <= 0)
    maxLayers = std::clamp<int64_t>(
        static_cast<int64_t>(std::sqrt(640.0 / static_cast<double>(
                                                   std::max<size_t>(numShapes,
                                                                    1)))),
        4, 16);
  chain.numLayers = std::min<int64_t>(
      static_cast<int64_t>(chain.computeOps.size()), maxLayers);
  plan::StageCut layers = plan::balancedCut(costs, chain.numLayers);
  chain.layerOf.assign(chain.computeOps.size(), 0);
  for (int64_t l = 0; l < chain.numLayers; ++l)
    for (int64_t i = layers.firstOp[l]; i < layers.firstOp[l + 1]; ++i)
      chain.layerOf[i] = l;

  DenseMap<Operation *, int64_t> computeIndex;
  for (auto [i, op] : llvm::enumerate(chain.computeOps))
    computeIndex[op] = static_cast<int64_t>(i);
  chain.boundaryBytes.assign(chain.numLayers + 1, 0);
  for (auto [i, op] : llvm::enumerate(chain.computeOps))
    for (Value result : op->getResults()) {
      int64_t lastUse = chain.layerOf[i];
      for (Operation *user : result.getUsers())
        if (auto it = computeIndex.find(user); it != computeIndex.end())
          lastUse = std::max(lastUse, chain.layerOf[it->second]);
      for (int64_t b = chain.layerOf[i] + 1; b <= lastUse; ++b)
        chain.boundaryBytes[b] += tensorBytes(result.getType());
    }
  return chain;
}

/// "1.303 ms" or, below a millisecond, "12.345 us".
std::string formatSeconds(double seconds) {
  if (seconds >= 1e-3)
    return llvm::formatv("{0:F3} ms", seconds * 1e3).str();
  return llvm::formatv("{0:F3} us", seconds * 1e6).str();
}

/// The stage planner's report: the plan, and how far it can be from the
/// best one. Each layer needs at least its cheapest device-seconds (price
/// x devices) and at least its fastest time on any sub-mesh.
void writeReport(std::string &report, const plan::StageProblem &problem,
                 const plan::StagePlan &result, size_t prices,
                 int64_t solved, int64_t devices) {
  double deviceSeconds = 0, slowestLayer = 0;
  for (int64_t l = 0; l < problem.layers; ++l) {
    double fastest = std::numeric_limits<double>::infinity();
    double cheapest = fastest;
    for (const plan::SubMeshShape &shape : problem.shapes) {
      double t = problem.stageSeconds(l, l + 1, shape);
      fastest = std::min(fastest, t);
      cheapest = std::min(cheapest, t * static_cast<double>(shape.devices()));
    }
    if (std::isfinite(fastest)) {
      slowestLayer = std::max(slowestLayer, fastest);
      deviceSeconds += cheapest;
    }
  }
  double perfect = deviceSeconds / static_cast<double>(devices);
  double bound = std::max(perfect, slowestLayer);
  llvm::raw_string_ostream os(report);
  os << llvm::formatv("stage planner: {0} layers, {1} sub-mesh shapes, {2} "
                      "stage prices ({3} solved); DP {4} states, {5} labels\n",
                      problem.layers, problem.shapes.size(), prices, solved,
                      result.states, result.labels);
  for (auto [k, placement] : llvm::enumerate(result.stages))
    os << llvm::formatv("  stage {0}: layers {1}..{2} on {3} device(s) "
                        "({4}x{5}), compute {6}, transfer in {7}, cycle {8}\n",
                        k, result.firstLayer[k], result.firstLayer[k + 1] - 1,
                        placement.shape.devices(), placement.shape.nodes,
                        placement.shape.devicesPerNode,
                        formatSeconds(result.stageSeconds[k]),
                        formatSeconds(result.transferInSeconds[k]),
                        formatSeconds(result.cycleSeconds[k]));
  os << "  outputs to the collector: "
     << formatSeconds(result.outputCollectionSeconds)
     << " (in the last stage's cycle)\n";
  os << llvm::formatv(
      "  slowest cycle {0}; lower bound {1} (the larger of the layers' least "
      "device-seconds over {2} devices, {3}, and the slowest layer at its "
      "fastest, {4}): ratio {5:F2}\n",
      formatSeconds(result.slowestCycleSeconds), formatSeconds(bound),
      devices, formatSeconds(perfect), formatSeconds(slowestLayer),
      bound > 0 ? result.slowestCycleSeconds / bound : 1.0);
  os << llvm::formatv("  {0} microbatch(es): latency {1}\n",
                      problem.microbatches,
                      formatSeconds(result.latencySeconds));
}

} // namespace

FailureOr<StageAssignment> mlir::weft::assignAutoStages(
    func::FuncOp func, const plan::Cluster &cluster, ArrayRef<int> devices,
    const AutoStageOptions &options, std::vector<StageRequest> &stages,
    std::string &report, double *requestSeconds) {
  Block &body = func.getBody().front();
  GroupedCluster grouped = groupDevices(cluster, devices);
  std::vector<plan::SubMeshShape> shapes =
      plan::allSubMeshShapes(grouped.groupKinds, grouped.devicesPerGroup);
  LayerChain chain = clusterIntoLayers(body, cluster, devices.front(),
                                       options.maxLayers, shapes.size());
  if (chain.computeOps.empty())
    return func.emitError("--stages=auto: the model has no op to compute");
  const SmallVector<Operation *> &computeOps = chain.computeOps;
  const std::vector<int64_t> &layerOf = chain.layerOf;
  const std::vector<double> &boundaryBytes = chain.boundaryBytes;
  int64_t numLayers = chain.numLayers;

  StagePricerOptions pricerOptions;
  pricerOptions.objective = options.objective;
  StagePricer pricer(func, cluster, pricerOptions);
  // (first layer, last layer, shape) -> seconds, +inf where it does not fit.
  std::map<std::tuple<int64_t, int64_t, plan::SubMeshShape>, double> priced;
  std::string pricingError;
  auto stageSeconds = [&](int64_t first, int64_t last,
                          const plan::SubMeshShape &shape) {
    auto key = std::make_tuple(first, last, shape);
    if (auto it = priced.find(key); it != priced.end())
      return it->second;
    SmallVector<Operation *> ops;
    for (auto [i, op] : llvm::enumerate(computeOps))
      if (layerOf[i] >= first && layerOf[i] < last)
        ops.push_back(op);
    plan::Mesh mesh = meshOf(grouped, pricingPlacement(grouped, shape));
    double seconds = std::numeric_limits<double>::infinity();
    llvm::Expected<const StagePrice &> price =
        pricer.price(ops, mesh, options.mode);
    if (!price) {
      if (pricingError.empty())
        pricingError = llvm::toString(price.takeError());
      else
        llvm::consumeError(price.takeError());
    } else if (price->fits) {
      seconds = price->seconds;
    }
    priced[key] = seconds;
    return seconds;
  };
  // Point to point: the sending and receiving devices move their shares
  // in parallel, over a node's link or the network.
  auto transferSeconds = [&](int64_t layer, const plan::SubMeshShape &from,
                             const plan::SubMeshShape &to, bool sameNode) {
    const plan::Link &link = sameNode ? cluster.intraNode : cluster.interNode;
    const plan::Link &used =
        link.bandwidthBytesPerS > 0 ? link : cluster.intraNode;
    if (used.bandwidthBytesPerS <= 0)
      return 0.0;
    double lanes = static_cast<double>(std::min(from.devices(), to.devices()));
    return used.latencySeconds +
           boundaryBytes[layer] / (lanes * used.bandwidthBytesPerS);
  };

  // The outputs go to the collector, the last stage's first device: one
  // receiver, over the node's link (the stage's devices share its node) or
  // the network (a stage of whole nodes).
  double outputBytes = 0;
  for (Value result : body.getTerminator()->getOperands())
    outputBytes += tensorBytes(result.getType());
  auto outputSeconds = [&](const plan::SubMeshShape &last) {
    if (last.devices() == 1)
      return 0.0;
    const plan::Link &link =
        last.nodes > 1 && cluster.interNode.bandwidthBytesPerS > 0
            ? cluster.interNode
            : cluster.intraNode;
    if (link.bandwidthBytesPerS <= 0)
      return 0.0;
    return link.latencySeconds + outputBytes / link.bandwidthBytesPerS;
  };

  plan::StageProblem problem;
  problem.layers = numLayers;
  problem.nodeKinds = grouped.groupKinds;
  problem.devicesPerNode = grouped.devicesPerGroup;
  problem.shapes = shapes;
  problem.stageSeconds = stageSeconds;
  problem.transferSeconds = transferSeconds;
  problem.outputSeconds = outputSeconds;
  problem.objective = options.objective == Objective::Throughput
                          ? plan::StageObjective::Throughput
                          : plan::StageObjective::Latency;
  problem.microbatches = options.microbatches;
  problem.maxStages = options.maxStages;
  std::string problemError = plan::checkStageProblem(problem);
  if (!problemError.empty())
    return func.emitError("--stages=auto: ") << problemError;
  plan::StagePlan result = plan::planStages(problem);
  if (!result.found) {
    InFlightDiagnostic diag = func.emitError(
        "--stages=auto: no pipeline of these devices fits the model");
    if (!pricingError.empty())
      diag << ": " << pricingError;
    else
      diag << ": every cut leaves a stage over its devices' memory";
    return diag;
  }

  // The assignment: compute ops by layer, weights and constants with the
  // op before them (splitIntoStages gives every user stage its copy).
  StageAssignment assignment;
  assignment.numStages = static_cast<int>(result.stages.size());
  auto stageOfLayer = [&](int64_t layer) {
    int stage = 0;
    while (stage + 1 < assignment.numStages &&
           result.firstLayer[stage + 1] <= layer)
      ++stage;
    return stage;
  };
  int current = 0;
  int64_t next = 0;
  for (Operation &op : body.without_terminator()) {
    if (!isReplicableOp(&op))
      current = stageOfLayer(layerOf[next++]);
    assignment.stageOfOp.push_back(current);
  }
  stages.clear();
  for (const plan::StagePlacement &placement : result.stages) {
    plan::Mesh mesh = meshOf(grouped, placement);
    StageRequest request;
    request.devices.assign(mesh.devices.begin(), mesh.devices.end());
    request.meshShape = mesh.shape;
    stages.push_back(std::move(request));
  }

  writeReport(report, problem, result, priced.size(), pricer.stats().misses,
              static_cast<int64_t>(devices.size()));
  if (requestSeconds)
    *requestSeconds = problem.objective == plan::StageObjective::Throughput
                          ? static_cast<double>(problem.microbatches) *
                                result.slowestCycleSeconds
                          : result.latencySeconds;
  return assignment;
}
