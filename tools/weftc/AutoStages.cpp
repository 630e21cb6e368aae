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

#include "weft/Plan/LayerClustering.h"
#include "weft/Plan/Reshard.h"
#include "weft/Plan/StageCut.h"
#include "weft/Plan/StagePlanner.h"
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
#include <optional>
#include <set>
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
  /// Layer l holds compute ops [firstOp[l], firstOp[l + 1]).
  std::vector<int64_t> firstOp;
  /// Per compute op: its layer.
  std::vector<int64_t> layerOf;
  /// Per layer boundary b (between layers b - 1 and b): the values that
  /// earlier layers make and layer b or a later one reads, as (elements,
  /// bytes per element), sorted; boundaries with equal lists move alike.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> boundaryTensors;
  /// The repeated blocks the layers follow (empty: the balanced rule).
  std::vector<plan::RepeatedBlocks> repeats;
  int64_t partsPerBlock = 1, blocksPerLayer = 1;
};

/// Per cut position i (just before compute op i, 0 .. ops): the bytes of
/// the values made before it and read at or after it.
static std::vector<double> cutBytesOf(ArrayRef<Operation *> computeOps) {
  DenseMap<Operation *, int64_t> computeIndex;
  for (auto [i, op] : llvm::enumerate(computeOps))
    computeIndex[op] = static_cast<int64_t>(i);
  // A value adds its bytes to the cuts (def, last use]: a difference array.
  std::vector<double> delta(computeOps.size() + 2, 0);
  for (auto [i, op] : llvm::enumerate(computeOps))
    for (Value result : op->getResults()) {
      int64_t lastUse = static_cast<int64_t>(i);
      for (Operation *user : result.getUsers())
        if (auto it = computeIndex.find(user); it != computeIndex.end())
          lastUse = std::max(lastUse, it->second);
      if (lastUse == static_cast<int64_t>(i))
        continue;
      double bytes = tensorBytes(result.getType());
      delta[i + 1] += bytes;
      delta[lastUse + 1] -= bytes;
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
crossingTensors(ArrayRef<Operation *> computeOps,
                ArrayRef<int64_t> firstOp) {
  DenseMap<Operation *, int64_t> computeIndex;
  for (auto [i, op] : llvm::enumerate(computeOps))
    computeIndex[op] = static_cast<int64_t>(i);
  std::vector<std::vector<std::pair<int64_t, int64_t>>> out(firstOp.size());
  for (auto [i, op] : llvm::enumerate(computeOps))
    for (Value result : op->getResults()) {
      int64_t lastUse = static_cast<int64_t>(i);
      for (Operation *user : result.getUsers())
        if (auto it = computeIndex.find(user); it != computeIndex.end())
          lastUse = std::max(lastUse, it->second);
      auto type = dyn_cast<ShapedType>(result.getType());
      if (lastUse == static_cast<int64_t>(i) || !type ||
          !type.hasStaticShape())
        continue;
      int64_t elementBytes =
          std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
      for (size_t b = 1; b + 1 < firstOp.size(); ++b)
        if (firstOp[b] > static_cast<int64_t>(i) && firstOp[b] <= lastUse)
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
  std::vector<double> cutBytes = cutBytesOf(chain.computeOps);
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
  chain.boundaryTensors = crossingTensors(chain.computeOps, chain.firstOp);
  return chain;
}

/// Prices moving a layer boundary's tensors from one stage to the next
/// with the resharding planner, as the pipeline's transfers will be planned
/// (weft/Transforms/Pipeline.h's TransferNetwork: the same method, a rank
/// performing one message at a time, broadcast chains as runtime calls).
/// Each tensor is priced replicated on both sides: the next stage's first
/// ops (a norm, a convolution's halo) usually read it whole, and the
/// sender's sharding only adds choices; the tensors of a boundary move one
/// after the other. The two stages are placed as the DP asks: inside one
/// node, one after the other, or on different nodes; shapes that cannot be
/// placed so are +infinity (the DP never uses them). Boundaries with the
/// same tensors share their prices, and each tensor is priced flat (its
/// elements in one dimension): replicated to replicated, only its bytes
/// matter.
class BoundaryTransfers {
public:
  BoundaryTransfers(const plan::Cluster &cluster,
                    const GroupedCluster &grouped, const LayerChain &chain,
                    plan::ReshardMethod method)
      : cluster(cluster), grouped(grouped), method(method) {
    std::map<std::vector<std::pair<int64_t, int64_t>>, int64_t> numbers;
    for (const auto &tensors : chain.boundaryTensors) {
      auto [it, inserted] = numbers.try_emplace(tensors, lists.size());
      if (inserted)
        lists.push_back(tensors);
      listOfBoundary.push_back(it->second);
    }
  }

  double seconds(int64_t boundary, const plan::SubMeshShape &from,
                 const plan::SubMeshShape &to, bool sameNode) {
    auto key = std::make_tuple(listOfBoundary[boundary], from, to, sameNode);
    if (auto it = cache.find(key); it != cache.end())
      return it->second;
    std::optional<std::pair<plan::Mesh, plan::Mesh>> meshes =
        placePair(from, to, sameNode);
    double total = meshes ? between(boundary, meshes->first, meshes->second)
                          : std::numeric_limits<double>::infinity();
    cache[key] = total;
    return total;
  }

  /// The seconds of the boundary's tensors from mesh `from` to mesh `to`.
  double between(int64_t boundary, const plan::Mesh &from,
                 const plan::Mesh &to) {
    double total = 0;
    for (const auto &[elements, elementBytes] : boundaryList(boundary))
      total += tensorSeconds(elements, elementBytes, from, to);
    return total;
  }

  /// The seconds of one tensor of `elements` x `elementBytes` from mesh
  /// `from` to mesh `to`, replicated on both.
  double tensorSeconds(int64_t elements, int64_t elementBytes,
                       const plan::Mesh &from, const plan::Mesh &to) {
    plan::ReshardProblem problem;
    problem.shape = {elements};
    problem.elementBytes = elementBytes;
    problem.source = {from, plan::TensorSharding::replicated(1)};
    problem.destination = {to, plan::TensorSharding::replicated(1)};
    llvm::Expected<plan::ReshardPlan> planned = plan::planResharding(
        cluster, problem, method, TransferNetwork().options);
    if (!planned) {
      if (error.empty())
        error = "transfer pricing: " + llvm::toString(planned.takeError());
      else
        llvm::consumeError(planned.takeError());
      return std::numeric_limits<double>::infinity();
    }
    return planned->predictedSeconds;
  }

  /// The first pricing error (empty when none).
  std::string error;

private:
  const std::vector<std::pair<int64_t, int64_t>> &
  boundaryList(int64_t boundary) const {
    return lists[listOfBoundary[boundary]];
  }

  /// Meshes for two neighbouring stages of these shapes: inside one node
  /// (`sameNode`: one after the other on the first node of their kind), or
  /// on different nodes (the first ones of each kind that the other does
  /// not use). None when the cluster has no such place.
  std::optional<std::pair<plan::Mesh, plan::Mesh>>
  placePair(const plan::SubMeshShape &from, const plan::SubMeshShape &to,
            bool sameNode) const {
    auto nodesOfKind = [&](int kind) {
      std::vector<int64_t> out;
      for (size_t g = 0; g < grouped.groups.size(); ++g)
        if (grouped.groupKinds[g] == kind)
          out.push_back(static_cast<int64_t>(g));
      return out;
    };
    plan::StagePlacement a, b;
    a.shape = from;
    b.shape = to;
    if (sameNode) {
      std::vector<int64_t> nodes = nodesOfKind(from.kind);
      if (from.kind != to.kind || from.nodes != 1 || to.nodes != 1 ||
          nodes.empty() ||
          from.devicesPerNode + to.devicesPerNode >
              grouped.devicesPerGroup[from.kind])
        return std::nullopt;
      a.nodes = b.nodes = {nodes.front()};
      b.firstDevice = from.devicesPerNode;
    } else {
      std::vector<int64_t> fromNodes = nodesOfKind(from.kind);
      if (static_cast<int64_t>(fromNodes.size()) < from.nodes)
        return std::nullopt;
      a.nodes.assign(fromNodes.begin(), fromNodes.begin() + from.nodes);
      for (int64_t g : nodesOfKind(to.kind))
        if (static_cast<int64_t>(b.nodes.size()) < to.nodes &&
            !llvm::is_contained(a.nodes, g))
          b.nodes.push_back(g);
      if (static_cast<int64_t>(b.nodes.size()) < to.nodes)
        return std::nullopt;
    }
    return std::make_pair(meshOf(grouped, a), meshOf(grouped, b));
  }

  const plan::Cluster &cluster;
  const GroupedCluster &grouped;
  plan::ReshardMethod method;
  /// Each boundary's tensors, as a number into `lists`.
  std::vector<int64_t> listOfBoundary;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> lists;
  std::map<std::tuple<int64_t, plan::SubMeshShape, plan::SubMeshShape, bool>,
           double>
      cache;
};

/// The best of the manual plans Megatron-LM's users write, priced by the
/// same cost model as the stage planner's: tp devices inside a node split
/// each layer's tensors, pp stages of as even counts of blocks as their
/// number allows (of layers when the model repeats no block), dp copies of
/// each stage; every device used (tp x pp x dp = N).
/// Stage k takes the k-th run of tp x dp devices in node order, as a
/// dp x tp mesh, and its sharding is the intra-operator planner's on that
/// mesh (Megatron's column and row splits are among its choices, so this
/// is the best such plan, not only Megatron's).
struct ManualPlans {
  /// Plans priced, and those whose stages fit their devices' memory.
  int64_t tried = 0, fitting = 0;
  int64_t tp = 0, pp = 0, dp = 0;
  double cycleSeconds = std::numeric_limits<double>::infinity();
  double latencySeconds = std::numeric_limits<double>::infinity();
  /// Why none was tried (devices of several kinds or node sizes).
  std::string skipped;
};

/// Where Megatron's stages may start: at the start of a repeated block
/// when the layers follow blocks (Megatron splits whole transformer
/// layers; what precedes the first block goes with the first stage), else
/// at every layer. Layer 0 first.
std::vector<int64_t> megatronUnits(const LayerChain &chain) {
  std::vector<int64_t> blockStarts;
  for (const plan::RepeatedBlocks &run : chain.repeats)
    for (int64_t b = 0; b < run.count; ++b) {
      int64_t op = run.first + b * run.period;
      auto at = llvm::lower_bound(chain.firstOp, op);
      if (at != chain.firstOp.end() && *at == op)
        blockStarts.push_back(at - chain.firstOp.begin());
    }
  llvm::sort(blockStarts);
  std::vector<int64_t> units = {0};
  if (blockStarts.empty()) {
    for (int64_t l = 1; l < chain.numLayers; ++l)
      units.push_back(l);
    return units;
  }
  // The first block goes with what precedes it (an embedding).
  for (int64_t start : llvm::drop_begin(blockStarts))
    units.push_back(start);
  return units;
}

ManualPlans bestMegatronPlan(
    const GroupedCluster &grouped, const plan::StageProblem &problem,
    const std::vector<int64_t> &units,
    const std::function<double(int64_t, int64_t, const plan::Mesh &)>
        &meshSeconds,
    BoundaryTransfers &transfers) {
  ManualPlans out;
  if (grouped.devicesPerGroup.size() != 1) {
    out.skipped = "the devices are of several kinds or node sizes";
    return out;
  }
  std::vector<int> ordered;
  for (const DeviceGroup &g : grouped.groups)
    llvm::append_range(ordered, g.devices);
  int64_t devices = static_cast<int64_t>(ordered.size());
  int64_t nodeSize = grouped.devicesPerGroup.front();
  int64_t layers = problem.layers;
  bool throughput = problem.objective == plan::StageObjective::Throughput;
  auto key = [&](double cycle, double latency) {
    return throughput ? std::make_pair(cycle, latency)
                      : std::make_pair(latency, cycle);
  };
  for (int64_t tp = 1; tp <= nodeSize; ++tp) {
    if (nodeSize % tp != 0)
      continue;
    int64_t numUnits = static_cast<int64_t>(units.size());
    for (int64_t pp = 1; pp <= numUnits && tp * pp <= devices; ++pp) {
      if (devices % (tp * pp) != 0)
        continue;
      int64_t dp = devices / (tp * pp);
      ++out.tried;
      std::vector<plan::Mesh> meshes(pp);
      std::vector<int64_t> first(pp + 1);
      for (int64_t k = 0; k < pp; ++k)
        first[k] = units[k * numUnits / pp];
      first[pp] = layers;
      for (int64_t k = 0; k < pp; ++k) {
        plan::Mesh &mesh = meshes[k];
        mesh.name = "stage";
        mesh.devices.assign(ordered.begin() + k * tp * dp,
                            ordered.begin() + (k + 1) * tp * dp);
        if (dp == 1 || tp == 1)
          mesh.shape = {tp * dp};
        else
          mesh.shape = {dp, tp};
      }
      std::vector<double> compute(pp), in(pp, 0);
      bool fits = true;
      for (int64_t k = 0; k < pp && fits; ++k) {
        compute[k] = meshSeconds(first[k], first[k + 1], meshes[k]);
        if (k > 0)
          in[k] = transfers.between(first[k], meshes[k - 1], meshes[k]);
        fits = std::isfinite(compute[k]) && std::isfinite(in[k]);
      }
      if (!fits)
        continue;
      ++out.fitting;
      plan::SubMeshShape last;
      last.nodes = std::max<int64_t>(1, tp * dp / nodeSize);
      last.devicesPerNode = tp * dp / last.nodes;
      double collect =
          problem.outputSeconds ? problem.outputSeconds(last) : 0.0;
      double cycle = 0, latency = collect;
      for (int64_t k = 0; k < pp; ++k) {
        cycle = std::max(cycle, compute[k] + in[k] +
                                    (k + 1 < pp ? in[k + 1] : collect));
        latency += compute[k] + in[k];
      }
      latency += static_cast<double>(problem.microbatches - 1) * cycle;
      if (key(cycle, latency) < key(out.cycleSeconds, out.latencySeconds)) {
        out.tp = tp;
        out.pp = pp;
        out.dp = dp;
        out.cycleSeconds = cycle;
        out.latencySeconds = latency;
      }
    }
  }
  return out;
}

std::string formatSeconds(double seconds);

/// The report's line on tensors that skip stages (a DAG's skip
/// connections): the DP's chain prices such a tensor at every boundary it
/// crosses, as if each stage between relayed it; the pipeline sends it
/// straight from its stage to each reader's. Those direct transfers are
/// priced here, after the DP, on the plan's real meshes. Empty when no
/// tensor skips a stage.
std::string describeSkipTransfers(
    ArrayRef<Operation *> computeOps, const std::vector<int64_t> &layerOf,
    const plan::StagePlan &plan, const GroupedCluster &grouped,
    BoundaryTransfers &transfers,
    const std::function<int(int64_t)> &stageOfLayer) {
  DenseMap<Operation *, int> stageOf;
  for (auto [i, op] : llvm::enumerate(computeOps))
    stageOf[op] = stageOfLayer(layerOf[i]);
  int64_t count = 0;
  double seconds = 0;
  int widest = 0;
  for (Operation *op : computeOps)
    for (Value result : op->getResults()) {
      auto type = dyn_cast<ShapedType>(result.getType());
      if (!type || !type.hasStaticShape())
        continue;
      int from = stageOf[op];
      std::set<int> readers;
      for (Operation *user : result.getUsers())
        if (auto it = stageOf.find(user);
            it != stageOf.end() && it->second > from + 1)
          readers.insert(it->second);
      for (int to : readers) {
        ++count;
        widest = std::max(widest, to - from);
        seconds += transfers.tensorSeconds(
            type.getNumElements(),
            std::max<int64_t>(1, type.getElementTypeBitWidth() / 8),
            meshOf(grouped, plan.stages[from]),
            meshOf(grouped, plan.stages[to]));
      }
    }
  if (count == 0)
    return "";
  return llvm::formatv("  {0} transfer(s) skip stages (up to {1} stages "
                       "ahead): the DP priced each at every boundary it "
                       "crosses; sent directly, after the DP: {2} in all\n",
                       count, widest, formatSeconds(seconds))
      .str();
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
                 const LayerChain &chain, const plan::StagePlan &result,
                 size_t prices, const StagePricer::Stats &pricing,
                 int64_t devices, const ManualPlans &manual,
                 llvm::ArrayRef<std::string> kindNames) {
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
                        "({4}x{5} {9}), compute {6}, transfer in {7}, cycle "
                        "{8}\n",
                        k, result.firstLayer[k], result.firstLayer[k + 1] - 1,
                        placement.shape.devices(), placement.shape.nodes,
                        placement.shape.devicesPerNode,
                        formatSeconds(result.stageSeconds[k]),
                        formatSeconds(result.transferInSeconds[k]),
                        formatSeconds(result.cycleSeconds[k]),
                        kindNames[placement.shape.kind]);
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
        formatSeconds(manual.cycleSeconds),
        formatSeconds(manual.latencySeconds),
        result.slowestCycleSeconds / manual.cycleSeconds,
        result.latencySeconds / manual.latencySeconds);
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
  plan::StagePlan result = plan::planStages(problem);
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
  for (const plan::StagePlacement &placement : result.stages) {
    plan::Mesh mesh = meshOf(grouped, placement);
    StageRequest request;
    request.devices.assign(mesh.devices.begin(), mesh.devices.end());
    request.meshShape = mesh.shape;
    stages.push_back(std::move(request));
  }

  std::string skips = describeSkipTransfers(
      computeOps, layerOf, result, grouped, transfers, stageOfLayer);
  ManualPlans manual =
      bestMegatronPlan(grouped, problem, megatronUnits(chain), meshSeconds,
                       transfers);
  std::vector<std::string> kindNames;
  for (int deviceKind : grouped.deviceKindOf)
    kindNames.push_back(cluster.kinds[deviceKind].name);
  writeReport(report, problem, chain, result, priced.size(), pricer.stats(),
              static_cast<int64_t>(devices.size()), manual, kindNames);
  report += skips;
  if (requestSeconds)
    *requestSeconds = problem.objective == plan::StageObjective::Throughput
                          ? static_cast<double>(problem.microbatches) *
                                result.slowestCycleSeconds
                          : result.latencySeconds;
  return assignment;
}
