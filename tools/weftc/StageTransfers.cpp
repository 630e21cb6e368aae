//===- StageTransfers.cpp - The cluster and the tensors between stages ----===//
//
// See AutoStagesParts.h: device groups and stage meshes, the resharding
// planner's price of a layer boundary between two stages, and the tensors
// that skip stages, priced after the DP.
//
//===----------------------------------------------------------------------===//

#include "AutoStagesParts.h"

#include "weft/Transforms/Pipeline.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <set>

using namespace mlir;
using namespace mlir::weft;
using namespace mlir::weft::autostages;

namespace mlir::weft::autostages {

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

BoundaryTransfers::BoundaryTransfers(const plan::Cluster &cluster,
                                     const GroupedCluster &grouped,
                                     const LayerChain &chain,
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

double BoundaryTransfers::seconds(int64_t boundary,
                                  const plan::SubMeshShape &from,
                                  const plan::SubMeshShape &to,
                                  bool sameNode) {
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

double BoundaryTransfers::between(int64_t boundary, const plan::Mesh &from,
                                  const plan::Mesh &to) {
  double total = 0;
  for (const auto &[elements, elementBytes] : boundaryList(boundary))
    total += tensorSeconds(elements, elementBytes, from, to);
  return total;
}

double BoundaryTransfers::tensorSeconds(int64_t elements,
                                        int64_t elementBytes,
                                        const plan::Mesh &from,
                                        const plan::Mesh &to) {
  plan::ReshardProblem problem;
  problem.shape = {elements};
  problem.elementBytes = elementBytes;
  problem.source = {from, plan::TensorSharding::replicated(from.name, 1)};
  problem.destination = {to, plan::TensorSharding::replicated(to.name, 1)};
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

std::optional<std::pair<plan::Mesh, plan::Mesh>>
BoundaryTransfers::placePair(const plan::SubMeshShape &from,
                             const plan::SubMeshShape &to,
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

} // namespace mlir::weft::autostages
