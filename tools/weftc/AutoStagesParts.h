//===- AutoStagesParts.h - The pieces of weftc --stages=auto -----*- C++ -*-===//
//
// Internal to weftc: the cluster as the stage DP sees it (device groups),
// the model as a chain of layers, the pricing of the tensors between
// stages (StageTransfers.cpp), and the plans the report compares the
// planner's with (StageBaselines.cpp). AutoStages.cpp joins them.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TOOLS_WEFTC_AUTOSTAGESPARTS_H
#define WEFT_TOOLS_WEFTC_AUTOSTAGESPARTS_H

#include "weft/Plan/Cluster.h"
#include "weft/Plan/LayerClustering.h"
#include "weft/Plan/Reshard.h"
#include "weft/Plan/StagePlanner.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace mlir::weft::autostages {

namespace plan = ::weft::plan;

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

/// Groups `devices` (cluster indices) by node and device kind.
GroupedCluster groupDevices(const plan::Cluster &cluster,
                            ArrayRef<int> devices);

/// The mesh of a stage placed on groups `placement.nodes` from device
/// `placement.firstDevice` on.
plan::Mesh meshOf(const GroupedCluster &grouped,
                  const plan::StagePlacement &placement);

/// The placement on which a shape is priced: the first groups of its kind.
/// Groups of one kind are alike, so the price holds for every placement.
plan::StagePlacement pricingPlacement(const GroupedCluster &grouped,
                                      const plan::SubMeshShape &shape);

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
                    plan::ReshardMethod method);

  /// The boundary's tensors between stages of these shapes, placed as the
  /// DP asks (cached).
  double seconds(int64_t boundary, const plan::SubMeshShape &from,
                 const plan::SubMeshShape &to, bool sameNode);
  /// The seconds of the boundary's tensors from mesh `from` to mesh `to`.
  double between(int64_t boundary, const plan::Mesh &from,
                 const plan::Mesh &to);
  /// The seconds of one tensor of `elements` x `elementBytes` from mesh
  /// `from` to mesh `to`, replicated on both.
  double tensorSeconds(int64_t elements, int64_t elementBytes,
                       const plan::Mesh &from, const plan::Mesh &to);

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
            bool sameNode) const;

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
  /// The best plan (found when one fits): its cuts, placements (the DP's
  /// shapes for its devices) and figures, and each stage's dp x tp mesh.
  plan::StagePlan best;
  std::vector<plan::Mesh> meshes;
  /// Why none was tried (devices of several kinds or node sizes).
  std::string skipped;
};

/// Where Megatron's stages may start: at the start of a repeated block
/// when the layers follow blocks (Megatron splits whole transformer
/// layers; what precedes the first block goes with the first stage), else
/// at every layer. Layer 0 first.
std::vector<int64_t> megatronUnits(const LayerChain &chain);

/// Every Megatron-style plan of the devices (stages starting at `units`),
/// priced with `meshSeconds` (layers [first, last) on a mesh, +infinity
/// when they do not fit) and `transfers`; the best by the objective.
ManualPlans bestMegatronPlan(
    const GroupedCluster &grouped, const plan::StageProblem &problem,
    const std::vector<int64_t> &units,
    const std::function<double(int64_t, int64_t, const plan::Mesh &)>
        &meshSeconds,
    BoundaryTransfers &transfers);

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
    const std::function<int(int64_t)> &stageOfLayer);

/// "1.303 ms" or, below a millisecond, "12.345 us".
std::string formatSeconds(double seconds);

} // namespace mlir::weft::autostages

#endif // WEFT_TOOLS_WEFTC_AUTOSTAGESPARTS_H
