//===- AutoStages.cpp - weftc --stages=auto: the stage planner's DP -------===//
//
// The glue between the model and weft/Plan/StagePlanner.h. It clusters the
// model's ops into a chain of layers (aligned with its repeated blocks, or
// balanced by one-device time). It prices a run of layers on a sub-mesh
// with the intra-operator planner (StagePricer, shared among stages of the
// same structure), within the devices' memory, and the tensors between two
// stages with the resharding planner (StageTransfers.cpp). Then it runs the
// DP, turns its plan into stages of concrete devices, and reports it beside
// its bounds and the best Megatron-style plan (StageBaselines.cpp). The
// cluster's nodes become the DP's nodes: the devices of one kind in one
// node form one DP node, so a node with two device kinds gives two.
//
//===----------------------------------------------------------------------===//

#include "AutoStagesParts.h"
#include "Stages.h"

#include "weft/Plan/StageCut.h"
#include "weft/Transforms/StagePricing.h"
#include "weft/Transforms/StageSignature.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InterleavedRange.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <tuple>

using namespace mlir;
using namespace mlir::weft;
using namespace mlir::weft::autostages;

std::string mlir::weft::autostages::formatSeconds(double seconds) {
  if (seconds >= 1e-3)
    return llvm::formatv("{0:F3} ms", seconds * 1e3).str();
  return llvm::formatv("{0:F3} us", seconds * 1e6).str();
}

namespace {


/// A value a compute op makes and a later one reads: it crosses every cut
/// in (def, lastUse].
struct LiveRange {
  Value value;
  int64_t def = 0, lastUse = 0;
};

/// The values of `computeOps` read by a later compute op, in op order.
static std::vector<LiveRange> liveRanges(ArrayRef<Operation *> computeOps) {
  DenseMap<Operation *, int64_t> computeIndex;
  for (auto [i, op] : llvm::enumerate(computeOps))
    computeIndex[op] = static_cast<int64_t>(i);
  std::vector<LiveRange> ranges;
  for (auto [i, op] : llvm::enumerate(computeOps))
    for (Value result : op->getResults()) {
      int64_t lastUse = static_cast<int64_t>(i);
      for (Operation *user : result.getUsers())
        if (auto it = computeIndex.find(user); it != computeIndex.end())
          lastUse = std::max(lastUse, it->second);
      if (lastUse > static_cast<int64_t>(i))
        ranges.push_back({result, static_cast<int64_t>(i), lastUse});
    }
  return ranges;
}

/// Per cut position i (just before compute op i, 0 .. ops): the bytes of
/// the values made before it and read at or after it.
static std::vector<double> cutBytesOf(ArrayRef<Operation *> computeOps,
                                      ArrayRef<LiveRange> ranges) {
  // A value adds its bytes to the cuts (def, last use]: a difference array.
  std::vector<double> delta(computeOps.size() + 2, 0);
  for (const LiveRange &range : ranges) {
    double bytes = tensorBytes(range.value.getType());
    delta[range.def + 1] += bytes;
    delta[range.lastUse + 1] -= bytes;
  }
  std::vector<double> bytes(computeOps.size() + 1, 0);
  double running = 0;
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = running += delta[i];
  return bytes;
}

/// Per boundary b of the layers that start at `firstOp` (b in 0 ..
/// layers): the tensors made before compute op firstOp[b] and read at or
/// after it, as (elements, bytes per element), sorted.
static std::vector<std::vector<std::pair<int64_t, int64_t>>>
crossingTensors(ArrayRef<LiveRange> ranges, ArrayRef<int64_t> firstOp) {
  std::vector<std::vector<std::pair<int64_t, int64_t>>> out(firstOp.size());
  for (const LiveRange &range : ranges) {
    auto type = dyn_cast<ShapedType>(range.value.getType());
    if (!type || !type.hasStaticShape())
      continue;
    int64_t elementBytes =
        std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
    for (size_t b = 1; b + 1 < firstOp.size(); ++b)
      if (firstOp[b] > range.def && firstOp[b] <= range.lastUse)
        out[b].emplace_back(type.getNumElements(), elementBytes);
  }
  for (auto &tensors : out)
    llvm::sort(tensors);
  return out;
}

/// Clusters `body`'s compute ops into layers. A model that repeats a block
/// gets layers aligned with its blocks (clusterRepeatedLayers): every copy
/// of the block is the same layers, so runs of whole blocks are one
/// problem for the pricer, whatever their place, and as many layers as
/// blocks cost few more solves than one. Otherwise, or with `maxLayers`,
/// layers of balanced one-device time on `device`: `maxLayers` of them, or
/// (0) as many as keep the stage prices near 320 for `numShapes` sub-mesh
/// shapes (finer layers let cuts fall closer to the balance point; each run
/// of layers on each shape is one ILP, L (L + 1) / 2 x shapes of them),
/// between 4 and 16.
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
  std::vector<LiveRange> ranges = liveRanges(chain.computeOps);
  std::vector<double> cutBytes = cutBytesOf(chain.computeOps, ranges);
  if (maxLayers <= 0) {
    StageSignatures signatures;
    plan::LayerClusters clusters = plan::clusterRepeatedLayers(
        signatures.structureHashes(chain.computeOps), costs, cutBytes);
    chain.firstOp = std::move(clusters.firstOp);
    chain.repeats = std::move(clusters.repeats);
    chain.partsPerBlock = clusters.partsPerBlock;
    chain.blocksPerLayer = clusters.blocksPerLayer;
  }
  if (chain.firstOp.empty()) {
    if (maxLayers <= 0)
      maxLayers = std::clamp<int64_t>(
          static_cast<int64_t>(std::sqrt(
              640.0 / static_cast<double>(std::max<size_t>(numShapes, 1)))),
          4, 16);
    int64_t layers = std::min<int64_t>(
        static_cast<int64_t>(chain.computeOps.size()), maxLayers);
    chain.firstOp = plan::balancedCut(costs, layers).firstOp;
  }
  chain.numLayers = static_cast<int64_t>(chain.firstOp.size()) - 1;
  chain.layerOf.assign(chain.computeOps.size(), 0);
  for (int64_t l = 0; l < chain.numLayers; ++l)
    for (int64_t i = chain.firstOp[l]; i < chain.firstOp[l + 1]; ++i)
      chain.layerOf[i] = l;
  chain.boundaryTensors = crossingTensors(ranges, chain.firstOp);
  return chain;
}


/// The stage planner's report: the plan, and how far it can be from the
/// best one. Each layer needs at least its cheapest device-seconds (price
/// x devices) and at least its fastest time on any sub-mesh.
void writeReport(std::string &report, const plan::StageProblem &problem,
                 const LayerChain &chain, const plan::StagePlan &result,
                 size_t prices, const StagePricer::Stats &pricing,
                 int64_t devices, const ManualPlans &manual,
                 llvm::ArrayRef<std::string> kindNames,
                 llvm::ArrayRef<std::vector<int64_t>> stageMeshShapes) {
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
                      "stage prices ({3} solved, {4} shared); DP {5} states, "
                      "{6} labels\n",
                      problem.layers, problem.shapes.size(), prices,
                      pricing.misses, pricing.shared, result.states,
                      result.labels);
  if (!chain.repeats.empty()) {
    int64_t blocks = 0;
    for (const plan::RepeatedBlocks &run : chain.repeats)
      blocks += run.count;
    os << llvm::formatv("  layers follow {0} repeated block(s) in {1} "
                        "run(s) (the first: {2} x {3} ops), ",
                        blocks, chain.repeats.size(), chain.repeats[0].count,
                        chain.repeats[0].period);
    if (chain.blocksPerLayer > 1)
      os << llvm::formatv("{0} blocks a layer\n", chain.blocksPerLayer);
    else
      os << llvm::formatv("{0} layer(s) a block\n", chain.partsPerBlock);
  }
  for (auto [k, placement] : llvm::enumerate(result.stages))
    os << llvm::formatv("  stage {0}: layers {1}..{2} on {3} device(s) "
                        "({4}x{5} {9}, mesh {10}), compute {6}, transfer in "
                        "{7}, cycle {8}\n",
                        k, result.firstLayer[k], result.firstLayer[k + 1] - 1,
                        placement.shape.devices(), placement.shape.nodes,
                        placement.shape.devicesPerNode,
                        formatSeconds(result.stageSeconds[k]),
                        formatSeconds(result.transferInSeconds[k]),
                        formatSeconds(result.cycleSeconds[k]),
                        kindNames[placement.shape.kind],
                        llvm::interleaved(stageMeshShapes[k], "x", "", ""));
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
  bool throughput = problem.objective == plan::StageObjective::Throughput;
  double reached = throughput ? result.slowestCycleSeconds
                              : result.latencySeconds;
  os << llvm::formatv("  the search's bound on the {0}: {1} (the best shapes "
                      "the devices allow, the cheapest transfers, nodes not "
                      "packed): ratio {2:F3}\n",
                      throughput ? "slowest cycle" : "latency",
                      formatSeconds(result.lowerBoundSeconds),
                      result.lowerBoundSeconds > 0
                          ? reached / result.lowerBoundSeconds
                          : 1.0);
  if (!result.complete)
    os << llvm::formatv(
        "  the search stopped at its limit of {0} DP states a pass: the plan "
        "is the best found, {1}, not proven optimal over every packing\n",
        problem.maxStates,
        result.inOrderComplete
            ? "at least the best that fills the nodes in order"
            : "(the search in node order stopped too)");
  os << llvm::formatv("  {0} microbatch(es): latency {1}\n",
                      problem.microbatches,
                      formatSeconds(result.latencySeconds));
  if (result.stages.size() > 1) {
    // The same sub-meshes and placement with the layers split evenly: what
    // balancing by predicted time gains (unequal devices, uneven layers).
    plan::StagePlan even = result;
    size_t n = result.stages.size();
    for (size_t k = 0; k <= n; ++k)
      even.firstLayer[k] = static_cast<int64_t>(k) * problem.layers /
                           static_cast<int64_t>(n);
    plan::evaluatePlan(problem, even);
    os << "  the same sub-meshes with the layers split evenly ("
       << llvm::interleaved(llvm::ArrayRef(even.firstLayer).drop_back())
       << "): ";
    if (even.found)
      os << llvm::formatv("slowest cycle {0}, latency {1}\n",
                          formatSeconds(even.slowestCycleSeconds),
                          formatSeconds(even.latencySeconds));
    else
      os << "a stage does not fit its devices' memory\n";
  }
  os << "  Megatron-style plans (tp inside a node x pp stages of even block "
        "counts x dp, on all devices; each stage sharded by the same "
        "planner): ";
  if (!manual.skipped.empty()) {
    os << "not tried: " << manual.skipped << "\n";
  } else if (manual.fitting == 0) {
    os << llvm::formatv("{0} tried, none fits the devices' memory\n",
                        manual.tried);
  } else {
    os << llvm::formatv(
        "{0} tried, {1} fit; the best tp {2} x pp {3} x dp {4}: slowest cycle "
        "{5}, latency {6}; this plan's cycle {7:F3}x and latency {8:F3}x of "
        "it\n",
        manual.tried, manual.fitting, manual.tp, manual.pp, manual.dp,
        formatSeconds(manual.best.slowestCycleSeconds),
        formatSeconds(manual.best.latencySeconds),
        result.slowestCycleSeconds / manual.best.slowestCycleSeconds,
        result.latencySeconds / manual.best.latencySeconds);
  }
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
  int64_t numLayers = chain.numLayers;

  StagePricerOptions pricerOptions;
  pricerOptions.objective = options.objective;
  StagePricer pricer(func, cluster, pricerOptions);
  // (first layer, last layer, shape) -> seconds, +inf where it does not fit.
  std::map<std::tuple<int64_t, int64_t, plan::SubMeshShape>, double> priced;
  std::string pricingError;
  // Each layer run is read once and each shape's mesh made once: the DP
  // asks for every run on every shape.
  std::map<std::pair<int64_t, int64_t>, int64_t> stageNumbers;
  auto keepError = [&](llvm::Error error) {
    if (pricingError.empty())
      pricingError = llvm::toString(std::move(error));
    else
      llvm::consumeError(std::move(error));
  };
  // Layers [first, last) on `mesh`: seconds, +inf where they do not fit.
  auto meshSeconds = [&](int64_t first, int64_t last, const plan::Mesh &mesh) {
    double seconds = std::numeric_limits<double>::infinity();
    auto [stage, freshStage] = stageNumbers.try_emplace({first, last}, -1);
    if (freshStage) {
      ArrayRef<Operation *> ops =
          ArrayRef<Operation *>(computeOps)
              .slice(chain.firstOp[first],
                     chain.firstOp[last] - chain.firstOp[first]);
      llvm::Expected<int64_t> number = pricer.stageNumber(ops);
      if (!number)
        keepError(number.takeError());
      else
        stage->second = *number;
    }
    if (stage->second < 0)
      return seconds;
    llvm::Expected<StageCost> price =
        pricer.cost(stage->second, mesh, options.mode);
    if (!price)
      keepError(price.takeError());
    else if (price->fits)
      seconds = price->seconds;
    return seconds;
  };
  std::map<plan::SubMeshShape, plan::Mesh> meshes;
  auto stageSeconds = [&](int64_t first, int64_t last,
                          const plan::SubMeshShape &shape) {
    auto key = std::make_tuple(first, last, shape);
    if (auto it = priced.find(key); it != priced.end())
      return it->second;
    auto [mesh, freshMesh] = meshes.try_emplace(shape);
    if (freshMesh)
      mesh->second = meshOf(grouped, pricingPlacement(grouped, shape));
    return priced[key] = meshSeconds(first, last, mesh->second);
  };
  BoundaryTransfers transfers(cluster, grouped, chain, options.reshardMethod);
  auto transferSeconds = [&](int64_t layer, const plan::SubMeshShape &from,
                             const plan::SubMeshShape &to, bool sameNode) {
    return transfers.seconds(layer, from, to, sameNode);
  };

  // The outputs go to the collector, the last stage's first device: one
  // receiver, over the link from the stage's last device (the node's own
  // link, or the network for a stage of whole nodes), priced as the
  // resharding planner prices one message (plan::messageLink: per-node
  // links, NIC rails).
  double outputBytes = 0;
  for (Value result : body.getTerminator()->getOperands())
    outputBytes += tensorBytes(result.getType());
  auto outputSeconds = [&](const plan::SubMeshShape &last) {
    if (last.devices() == 1)
      return 0.0;
    plan::Mesh mesh = meshOf(grouped, pricingPlacement(grouped, last));
    return plan::messageSeconds(
        plan::messageLink(cluster, mesh.devices.back(), mesh.devices.front()),
        outputBytes);
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
  plan::StagePlan searched = plan::planStages(problem);
  // The best Megatron-style plan, priced the same way. Its stages' dp x tp
  // meshes are not among the DP's (one logical mesh per sub-mesh: m devices
  // of a node as one axis, n nodes as n x g), so it can be the better
  // plan; then it is the plan, and the report says so.
  ManualPlans manual =
      bestMegatronPlan(grouped, problem, megatronUnits(chain), meshSeconds,
                       transfers);
  bool megatronWins = plan::stageObjectiveKey(problem, manual.best) <
                      plan::stageObjectiveKey(problem, searched);
  plan::StagePlan result = megatronWins ? manual.best : searched;
  if (megatronWins) {
    result.states = searched.states;
    result.labels = searched.labels;
    result.complete = searched.complete;
    result.inOrderComplete = searched.inOrderComplete;
    // Nothing in the DP's space beats its bound, and nothing among the
    // Megatron-style plans beats their best.
    double megatron = plan::stageObjectiveValue(problem, manual.best);
    result.lowerBoundSeconds =
        searched.found ? std::min(searched.lowerBoundSeconds, megatron)
                       : megatron;
  }
  if (!result.found) {
    InFlightDiagnostic diag = func.emitError(
        "--stages=auto: no pipeline of these devices fits the model");
    if (!pricingError.empty())
      diag << ": " << pricingError;
    else if (!transfers.error.empty())
      diag << ": " << transfers.error;
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
  std::vector<std::vector<int64_t>> stageMeshShapes;
  for (auto [k, placement] : llvm::enumerate(result.stages)) {
    plan::Mesh mesh =
        megatronWins ? manual.meshes[k] : meshOf(grouped, placement);
    StageRequest request;
    request.devices.assign(mesh.devices.begin(), mesh.devices.end());
    request.meshShape = mesh.shape;
    stageMeshShapes.push_back(request.meshShape);
    stages.push_back(std::move(request));
  }

  std::string skips = describeSkipTransfers(
      computeOps, layerOf, result, grouped, transfers, stageOfLayer);
  if (megatronWins) {
    skips += "  the stages above are the best Megatron-style plan's: ";
    if (searched.found)
      skips += llvm::formatv("the DP's plan, whose sub-meshes are priced on "
                             "one mesh shape each, has slowest cycle {0} and "
                             "latency {1}\n",
                             formatSeconds(searched.slowestCycleSeconds),
                             formatSeconds(searched.latencySeconds))
                   .str();
    else
      skips += "the DP, whose sub-meshes are priced on one mesh shape each, "
               "found no plan that fits\n";
  }
  std::vector<std::string> kindNames;
  for (int deviceKind : grouped.deviceKindOf)
    kindNames.push_back(cluster.kinds[deviceKind].name);
  writeReport(report, problem, chain, result, priced.size(), pricer.stats(),
              static_cast<int64_t>(devices.size()), manual, kindNames,
              stageMeshShapes);
  report += skips;
  if (requestSeconds)
    *requestSeconds = problem.objective == plan::StageObjective::Throughput
                          ? static_cast<double>(problem.microbatches) *
                                result.slowestCycleSeconds
                          : result.latencySeconds;
  return assignment;
}
