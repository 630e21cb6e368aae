//===- PipelineDevice.cpp - The program of one rank of a pipeline ---------===//
//
// A rank's program is its stage's partitioned body between the receives
// and sends of the transfers its stage takes part in. Each transfer is
// planned by the resharding planner (lib/Plan/Reshard.h) as an ordered list
// of messages. Every point-to-point operation of the job has a key (source
// stage, target stage, transfer, message); each rank runs its receives, its
// stage's compute and its sends in increasing key order (the compute sits
// at key (stage, stage)), so the unfinished operation with the smallest key
// always has both of its ranks ready: blocking sends and receives cannot
// deadlock. A receiver that forwards a broadcast chunk or a ring slice does
// so at a later key than the message that brought it. A broadcast chain
// that runs as one call (weft.broadcast_send, weft.broadcast_recv) sits at
// the key of its first message: every rank of it has finished its smaller
// keys when it reaches the call, and the call needs nothing else.
//
//===----------------------------------------------------------------------===//

#include "weft/ModelFunction.h"
#include "weft/Plan/Reshard.h"
#include "weft/Transforms/AutoShard.h"
#include "weft/Transforms/Pipeline.h"
#include "weft/Transforms/SpmdPartition.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/InterleavedRange.h"

#include <algorithm>
#include <climits>
#include <set>
#include <tuple>

using namespace mlir;
using namespace mlir::weft;
using ::weft::plan::TensorSharding;
namespace plan = ::weft::plan;

/// The name of the one-rank mesh that collects the model's outputs (no
/// weft.mesh of the pipeline: the collector's end of an output's transfer).
static constexpr llvm::StringLiteral kCollectorMesh = "collector";

namespace {
/// One end of a transfer.
struct TransferEnd {
  int stage = 0; // INT_MAX: the model's outputs on the collector.
  std::vector<int64_t> meshShape;
  std::vector<int64_t> ranks;
  /// On the end's mesh (a stage's weft.mesh, or kCollectorMesh).
  TensorSharding sharding;
};

/// A transfer of the job, planned.
struct PlannedTransfer {
  std::string tensor;
  Value value; // In the pipeline's main.
  RankedTensorType type;
  TransferEnd source, target;
  /// The stage result it takes (the source stage's result index).
  unsigned sourceResult = 0;
  /// The pipeline's weft.transfer, or the model output's index.
  TransferOp op;
  int outputIndex = -1;
  /// In cluster devices; messages are mapped to ranks when emitted.
  plan::ReshardPlan plan;
  int64_t firstTag = 0;
  std::string sourceText, targetText;
  /// Per transfer of the plan: the broadcast group its call runs over (-1:
  /// the world, or not a call).
  std::vector<int64_t> callGroups;
};

/// Every transfer of the job, planned, in key order, and the broadcast
/// groups their calls run over.
struct PlannedJob {
  std::vector<PlannedTransfer> transfers;
  /// World ranks of each group, increasing, in first-use order.
  std::vector<std::vector<int64_t>> groups;
};
} // namespace

static std::vector<int64_t> toVector(ArrayRef<int64_t> values) {
  return std::vector<int64_t>(values.begin(), values.end());
}

static TransferEnd endOf(ModuleOp pipeline, ShardingAttr sharding,
                         int stage) {
  TransferEnd end;
  end.stage = stage;
  auto mesh = pipeline.lookupSymbol<MeshOp>(sharding.getMesh().getValue());
  end.meshShape = toVector(mesh.getShape());
  end.ranks = toVector(*mesh.getDevices());
  end.sharding = toTensorSharding(sharding);
  return end;
}

static std::string shardingText(Attribute attr) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << attr;
  return text;
}

int64_t mlir::weft::collectorRank(ModuleOp pipeline) {
  func::FuncOp main = lookupModelFunction(pipeline);
  if (!main)
    return 0;
  StageOp last;
  for (StageOp stage : main.getOps<StageOp>())
    last = stage;
  if (!last)
    return 0;
  auto mesh = pipeline.lookupSymbol<MeshOp>(last.getMesh());
  if (!mesh || !mesh.getDevices() || mesh.getDevices()->empty())
    return 0;
  return *llvm::min_element(*mesh.getDevices());
}

/// The problem of `t` in cluster devices.
static plan::ReshardSide sideOf(const TransferEnd &end,
                                const TransferNetwork &network) {
  plan::ReshardSide side;
  side.mesh.name = end.sharding.mesh;
  side.mesh.shape = end.meshShape;
  for (int64_t rank : end.ranks)
    side.mesh.devices.push_back(
        static_cast<int>(network.clusterDeviceOfRank[rank]));
  side.sharding = end.sharding;
  return side;
}

/// Plans `t` with the network's method.
static FailureOr<plan::ReshardPlan> planOne(const PlannedTransfer &t,
                                            const TransferNetwork &network,
                                            plan::ReshardMethod method) {
  plan::ReshardProblem problem;
  problem.shape = toVector(t.type.getShape());
  problem.elementBytes =
      std::max<int64_t>(1, t.type.getElementTypeBitWidth() / 8);
  problem.source = sideOf(t.source, network);
  problem.destination = sideOf(t.target, network);
  std::string key;
  llvm::raw_string_ostream os(key);
  os << t.type << " " << llvm::interleaved(problem.source.mesh.devices)
     << " " << problem.source.sharding.str() << " "
     << llvm::interleaved(problem.source.mesh.shape) << " -> "
     << llvm::interleaved(problem.destination.mesh.devices) << " "
     << problem.destination.sharding.str() << " "
     << llvm::interleaved(problem.destination.mesh.shape) << " "
     << plan::reshardMethodName(method);
  if (auto it = network.plans->find(key); it != network.plans->end())
    return it->second;
  llvm::Expected<plan::ReshardPlan> planned =
      plan::planResharding(*network.cluster, problem, method, network.options);
  if (!planned)
    return emitError(t.value.getLoc())
           << "internal: transfer plan: " << toString(planned.takeError());
  if (planned->inMesh && problem.source.mesh.size() != 1)
    return emitError(t.value.getLoc())
           << "internal: a transfer within one mesh of "
           << problem.source.mesh.size() << " devices";
  return network.plans->emplace(key, std::move(*planned)).first->second;
}
static FailureOr<plan::ReshardPlan> planOne(const PlannedTransfer &t,
                                            const TransferNetwork &network) {
  return planOne(t, network, network.method);
}

/// The broadcast group of every call of every transfer, in key order and
/// then plan order, so that every rank's program numbers them alike:
/// deduplicated by rank set, at most network.maxBroadcastGroups.
static std::vector<std::vector<int64_t>>
assignBroadcastGroups(std::vector<PlannedTransfer> &transfers,
                      const TransferNetwork &network) {
  plan::BroadcastGroups groups(network.maxBroadcastGroups);
  for (PlannedTransfer &t : transfers) {
    t.callGroups.assign(t.plan.transfers.size(), -1);
    for (auto [k, transfer] : llvm::enumerate(t.plan.transfers)) {
      std::vector<int> ranks;
      for (int device : plan::broadcastChain(transfer))
        ranks.push_back(static_cast<int>(network.rankOf(device)));
      if (!ranks.empty())
        t.callGroups[k] = groups.groupOf(ranks);
    }
  }
  std::vector<std::vector<int64_t>> out;
  for (const std::vector<int> &set : groups.sets())
    out.emplace_back(set.begin(), set.end());
  return out;
}

/// Every transfer of the job (the pipeline's weft.transfer ops, then the
/// collection of each model output that a stage computes on the collector
/// rank), planned and in key order, with the tags of their pieces and the
/// broadcast groups of their calls.
static FailureOr<PlannedJob> planTransfers(ModuleOp pipeline,
                                           const TransferNetwork &network) {
  func::FuncOp main = getModelFunction(pipeline, "pipeline transfers");
  if (!main)
    return failure();
  int64_t collector = collectorRank(pipeline);
  DenseMap<Operation *, int> stageIndex;
  for (auto [k, stage] : llvm::enumerate(main.getOps<StageOp>()))
    stageIndex[stage] = static_cast<int>(k);
  std::vector<PlannedTransfer> transfers;
  auto stageOfValue = [&](Value v) -> std::pair<StageOp, unsigned> {
    auto result = cast<OpResult>(v);
    return {cast<StageOp>(result.getOwner()), result.getResultNumber()};
  };
  for (TransferOp op : main.getOps<TransferOp>()) {
    PlannedTransfer t;
    t.op = op;
    t.value = op.getInput();
    t.type = cast<RankedTensorType>(op.getType());
    auto [stage, index] = stageOfValue(op.getInput());
    t.sourceResult = index;
    t.source = endOf(pipeline, op.getSource(), stageIndex[stage]);
    // The consumer: the stage on the target mesh that uses it.
    int target = INT_MAX;
    for (Operation *user : op->getUsers())
      if (auto consumer = dyn_cast<StageOp>(user))
        target = std::min(target, stageIndex[consumer]);
    if (target == INT_MAX)
      return op.emitOpError("internal: a transfer that no stage uses");
    t.target = endOf(pipeline, op.getTarget(), target);
    t.sourceText = shardingText(op.getSource());
    t.targetText = shardingText(op.getTarget());
    transfers.push_back(std::move(t));
  }
  Operation *ret = main.getBody().front().getTerminator();
  for (auto [i, output] : llvm::enumerate(ret->getOperands())) {
    if (isa<BlockArgument>(output))
      continue; // Every rank has the inputs whole.
    PlannedTransfer t;
    t.value = output;
    t.outputIndex = static_cast<int>(i);
    t.type = cast<RankedTensorType>(output.getType());
    auto [stage, index] = stageOfValue(output);
    t.sourceResult = index;
    // The source sharding is the one the stage's result leaves in: that of
    // any transfer of it, else the stage module's (recorded by
    // chooseBoundaryShardings on the stage's result attributes).
    auto sharding = stage->getAttrOfType<ArrayAttr>(kResultShardingsAttr);
    ShardingAttr from =
        sharding ? cast<ShardingAttr>(sharding[index])
                 : ShardingAttr::getReplicated(stage.getMeshAttr(),
                                               t.type.getRank());
    t.source = endOf(pipeline, from, stageIndex[stage]);
    t.target.stage = INT_MAX;
    t.target.meshShape = {1};
    t.target.ranks = {collector};
    t.target.sharding =
        TensorSharding::replicated(kCollectorMesh, t.type.getRank());
    t.sourceText = shardingText(from);
    t.targetText = "whole on rank " + std::to_string(collector);
    transfers.push_back(std::move(t));
  }
  if (!network.cluster)
    return pipeline.emitError("internal: transfers planned without a cluster");
  for (PlannedTransfer &t : transfers) {
    FailureOr<plan::ReshardPlan> planned = planOne(t, network);
    if (failed(planned))
      return failure();
    t.plan = std::move(*planned);
  }
  std::stable_sort(transfers.begin(), transfers.end(),
                   [](const PlannedTransfer &a, const PlannedTransfer &b) {
                     return std::make_pair(a.source.stage, a.target.stage) <
                            std::make_pair(b.source.stage, b.target.stage);
                   });
  int64_t tag = 0;
  for (PlannedTransfer &t : transfers) {
    t.firstTag = tag;
    tag += static_cast<int64_t>(t.plan.messages.size());
  }
  // The runtime's bound on tags (weft.send's verifier says the same).
  if (tag > (int64_t(1) << 20))
    return pipeline.emitError("the pipeline's transfers have ")
           << tag << " messages; at most 2^20 are supported";
  PlannedJob job;
  job.groups = assignBroadcastGroups(transfers, network);
  job.transfers = std::move(transfers);
  return job;
}

/// 1-D i64 constant.
static Value indexConstant(OpBuilder &b, Location loc, ArrayRef<int64_t> v) {
  auto type = RankedTensorType::get({static_cast<int64_t>(v.size())},
                                    b.getI64Type());
  return ConstantOp::create(b, loc, DenseIntElementsAttr::get(type, v));
}

/// The box [offsets, offsets + sizes) of `local` (whole: no op).
static Value sliceBox(OpBuilder &b, Location loc, Value local,
                      ArrayRef<int64_t> offsets, ArrayRef<int64_t> sizes) {
  auto type = cast<RankedTensorType>(local.getType());
  if (llvm::all_of(offsets, [](int64_t o) { return o == 0; }) &&
      type.getShape() == sizes)
    return local;
  SmallVector<int64_t> ends, steps, axes;
  for (auto [d, pair] : llvm::enumerate(llvm::zip(offsets, sizes))) {
    auto [offset, size] = pair;
    ends.push_back(offset + size);
    steps.push_back(1);
    axes.push_back(d);
  }
  auto resultType = RankedTensorType::get(sizes, type.getElementType());
  return SliceOp::create(b, loc, resultType, local,
                         indexConstant(b, loc, offsets),
                         indexConstant(b, loc, ends),
                         indexConstant(b, loc, steps),
                         b.getDenseI64ArrayAttr(axes), Value());
}

/// Rebuilds a block from its grid of cells (row-major, last dimension
/// fastest; `intervals[k]` cells along dimension k) by concatenating along
/// the last dimension, then the one before, and so on.
static Value assembleGrid(OpBuilder &b, Location loc,
                          ArrayRef<int64_t> intervals,
                          SmallVector<Value> cells) {
  for (int64_t dim = static_cast<int64_t>(intervals.size()) - 1; dim >= 0;
       --dim) {
    int64_t n = intervals[dim];
    if (n <= 1)
      continue;
    SmallVector<Value> joined;
    for (size_t start = 0; start < cells.size(); start += n) {
      SmallVector<Value> run(cells.begin() + start, cells.begin() + start + n);
      auto first = cast<RankedTensorType>(run.front().getType());
      SmallVector<int64_t> shape(first.getShape());
      shape[dim] = 0;
      for (Value v : run)
        shape[dim] += cast<RankedTensorType>(v.getType()).getDimSize(dim);
      joined.push_back(ConcatOp::create(
          b, loc, RankedTensorType::get(shape, first.getElementType()), run,
          b.getI64IntegerAttr(dim)));
    }
    cells = std::move(joined);
  }
  return cells.front();
}

/// A tensor of `type` with every element zero: the empty block of an
/// uneven split, and the outputs of ranks other than the collector.
static Value zeros(OpBuilder &b, Location loc, RankedTensorType type) {
  return ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(type, b.getZeroAttr(type.getElementType())));
}

/// `box`'s offsets relative to `origin`.
static std::vector<int64_t> relative(const plan::Box &box,
                                     ArrayRef<int64_t> origin) {
  std::vector<int64_t> offsets(box.offsets);
  for (size_t k = 0; k < offsets.size(); ++k)
    offsets[k] -= origin[k];
  return offsets;
}

/// The block of mesh position `position` of `end` for a tensor of `shape`.
static plan::Box blockOf(ArrayRef<int64_t> shape,
                         const TensorSharding &sharding,
                         ArrayRef<int64_t> meshShape, int64_t position) {
  return {plan::localOffsets(shape, sharding, meshShape, position),
          plan::localShape(shape, sharding, meshShape, position)};
}

/// The intersection of two boxes (sizes 0 where they do not meet).
static plan::Box intersect(const plan::Box &a, const plan::Box &c) {
  plan::Box out = a;
  for (size_t k = 0; k < a.offsets.size(); ++k) {
    int64_t lo = std::max(a.offsets[k], c.offsets[k]);
    int64_t hi = std::min(a.offsets[k] + a.sizes[k], c.offsets[k] + c.sizes[k]);
    out.offsets[k] = lo;
    out.sizes[k] = std::max<int64_t>(0, hi - lo);
  }
  return out;
}

namespace {
/// Emits one rank's part of the job's transfers.
class TransferEmitter {
public:
  TransferEmitter(OpBuilder &b, int64_t rank, const TransferNetwork &network)
      : b(b), rank(rank), network(network) {}

  /// This rank's part of transfer `t`: the source's reduction and the
  /// messages it sends when `local` (its block of t.source) is given, the
  /// messages it receives and forwards, and, when it is the destination
  /// position `position` of t.target, its block assembled from what it
  /// keeps and receives (else a null value).
  FailureOr<Value> run(const PlannedTransfer &t, Value local,
                       std::optional<int64_t> position);

private:
  int64_t rankOf(int device) const { return network.rankOf(device); }
  Value reduce(const PlannedTransfer &t, Value local, int64_t position);
  /// This rank's part of the broadcast call `k` of `t` (its messages start
  /// at `first`): the root's send, or a receive into `pieces`.
  LogicalResult broadcast(const PlannedTransfer &t, size_t k, size_t first,
                          Value local, const std::optional<plan::Box> &held,
                          SmallVectorImpl<std::pair<plan::Box, Value>> &pieces);
  FailureOr<Value> assemble(const PlannedTransfer &t, const plan::Box &block,
                            ArrayRef<std::pair<plan::Box, Value>> pieces);

  OpBuilder &b;
  int64_t rank;
  const TransferNetwork &network;
};
} // namespace

/// Resolves the source's pending partial sums as the plan says: an
/// all-reduce, or a reduce-scatter that leaves this rank one block.
Value TransferEmitter::reduce(const PlannedTransfer &t, Value local,
                              int64_t position) {
  const TensorSharding &source = t.source.sharding;
  if (source.partial.empty())
    return local;
  Location loc = t.value.getLoc();
  auto mesh = FlatSymbolRefAttr::get(b.getContext(), source.mesh);
  SmallVector<int16_t> axes(source.partial.begin(), source.partial.end());
  const std::optional<plan::ReshardReduction> &reduction = t.plan.reduction;
  if (!reduction || reduction->kind != plan::ReshardKind::ReduceScatter)
    return AllReduceOp::create(b, loc, local, mesh,
                               b.getDenseI16ArrayAttr(axes));
  int dim = reduction->dim;
  auto type = cast<RankedTensorType>(local.getType());
  std::vector<int64_t> sizes = plan::blockSizes(
      type.getDimSize(dim), plan::groupSize(t.source.meshShape, source.partial));
  int64_t g = plan::groupIndex(t.source.meshShape, source.partial, position);
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] = sizes[g];
  return ReduceScatterOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), local, mesh,
      b.getDenseI16ArrayAttr(axes), b.getI64IntegerAttr(dim),
      b.getDenseI64ArrayAttr(sizes));
}

FailureOr<Value> TransferEmitter::run(const PlannedTransfer &t, Value local,
                                      std::optional<int64_t> position) {
  Location loc = t.value.getLoc();
  ArrayRef<int64_t> shape = t.type.getShape();
  Type element = t.type.getElementType();
  // The block this rank holds once the source is reduced.
  std::optional<plan::Box> held;
  if (local) {
    int64_t at = llvm::find(t.source.ranks, rank) - t.source.ranks.begin();
    local = reduce(t, local, at);
    TensorSharding resolved =
        t.plan.reduction ? t.plan.reduction->after : t.source.sharding;
    resolved.partial.clear();
    held = blockOf(shape, resolved, t.source.meshShape, at);
  }
  // The messages, in the plan's order; a broadcast call's messages are one
  // call, at the place of its first.
  SmallVector<std::pair<plan::Box, Value>> pieces;
  DenseMap<int, Value> got;
  const std::vector<plan::ReshardMessage> &messages = t.plan.messages;
  for (auto [i, m] : llvm::enumerate(messages)) {
    int64_t tag = t.firstTag + static_cast<int64_t>(i);
    if (t.plan.transfers[m.transfer].broadcastCall) {
      if (i > 0 && messages[i - 1].transfer == m.transfer)
        continue;
      if (failed(broadcast(t, m.transfer, i, local, held, pieces)))
        return failure();
      continue;
    }
    if (m.dependsOn >= 0 &&
        t.plan.transfers[messages[m.dependsOn].transfer].broadcastCall)
      return emitError(loc) << "internal: message " << i
                            << " forwards a broadcast call's chunk";
    if (rankOf(m.from) == rank) {
      Value box;
      if (m.dependsOn < 0) {
        if (!held || !held->contains(m.box))
          return emitError(loc) << "internal: rank " << rank
                                << " sends a box it does not hold";
        box = sliceBox(b, loc, local, relative(m.box, held->offsets),
                       m.box.sizes);
      } else {
        const plan::Box &from = messages[m.dependsOn].box;
        box = sliceBox(b, loc, got.lookup(m.dependsOn),
                       relative(m.box, from.offsets), m.box.sizes);
      }
      SendOp::create(b, loc, box, b.getI64IntegerAttr(rankOf(m.to)),
                     b.getI64IntegerAttr(tag), IntegerAttr());
    }
    if (rankOf(m.to) == rank) {
      auto type = RankedTensorType::get(m.box.sizes, element);
      Value value =
          RecvOp::create(b, loc, type, b.getI64IntegerAttr(rankOf(m.from)),
                         b.getI64IntegerAttr(tag), IntegerAttr());
      got[static_cast<int>(i)] = value;
      pieces.push_back({m.box, value});
    }
  }
  if (!position)
    return Value();
  plan::Box block =
      blockOf(shape, t.target.sharding, t.target.meshShape, *position);
  // What it already holds of its block (a device in both meshes).
  if (held) {
    plan::Box kept = intersect(*held, block);
    if (kept.elements() > 0)
      pieces.push_back(
          {kept, sliceBox(b, loc, local, relative(kept, held->offsets),
                          kept.sizes)});
  }
  return assemble(t, block, pieces);
}

LogicalResult TransferEmitter::broadcast(
    const PlannedTransfer &t, size_t k, size_t first, Value local,
    const std::optional<plan::Box> &held,
    SmallVectorImpl<std::pair<plan::Box, Value>> &pieces) {
  const plan::ReshardTransfer &call = t.plan.transfers[k];
  std::vector<int> devices = plan::broadcastChain(call);
  SmallVector<int64_t> chain;
  for (int device : devices)
    chain.push_back(rankOf(device));
  const int64_t *at = llvm::find(chain, rank);
  if (at == chain.end())
    return success();
  Location loc = t.value.getLoc();
  const plan::Box &tile = t.plan.tiles[call.tile].box;
  int64_t tag = t.firstTag + static_cast<int64_t>(first);
  if (at == chain.begin()) {
    if (!held || !held->contains(tile))
      return emitError(loc) << "internal: rank " << rank
                            << " roots a broadcast of a tile it does not hold";
    Value box =
        sliceBox(b, loc, local, relative(tile, held->offsets), tile.sizes);
    BroadcastSendOp::create(b, loc, box, b.getDenseI64ArrayAttr(chain),
                            b.getI64IntegerAttr(call.chunks),
                            b.getI64IntegerAttr(t.callGroups[k]),
                            b.getI64IntegerAttr(tag));
    return success();
  }
  auto type = RankedTensorType::get(tile.sizes, t.type.getElementType());
  Value value = BroadcastRecvOp::create(
      b, loc, type, b.getDenseI64ArrayAttr(chain),
      b.getI64IntegerAttr(call.chunks), b.getI64IntegerAttr(t.callGroups[k]),
      b.getI64IntegerAttr(tag));
  pieces.push_back({tile, value});
  return success();
}

/// The block from its pieces: cut at every piece's edges, each cell sliced
/// from the piece that holds it, the cells concatenated.
FailureOr<Value>
TransferEmitter::assemble(const PlannedTransfer &t, const plan::Box &block,
                          ArrayRef<std::pair<plan::Box, Value>> pieces) {
  Location loc = t.value.getLoc();
  auto blockType = RankedTensorType::get(block.sizes, t.type.getElementType());
  if (block.elements() == 0)
    return zeros(b, loc, blockType);
  size_t rankOfTensor = block.sizes.size();
  std::vector<std::vector<int64_t>> cuts(rankOfTensor);
  for (size_t k = 0; k < rankOfTensor; ++k) {
    std::set<int64_t> points = {block.offsets[k],
                                block.offsets[k] + block.sizes[k]};
    for (const auto &[box, value] : pieces) {
      points.insert(box.offsets[k]);
      points.insert(box.offsets[k] + box.sizes[k]);
    }
    cuts[k].assign(points.begin(), points.end());
  }
  SmallVector<int64_t> intervals;
  for (const std::vector<int64_t> &c : cuts)
    intervals.push_back(static_cast<int64_t>(c.size()) - 1);
  SmallVector<Value> cells;
  for (const plan::Box &cell : plan::gridCells(cuts)) {
    const std::pair<plan::Box, Value> *owner = nullptr;
    for (const auto &piece : pieces)
      if (piece.first.contains(cell)) {
        owner = &piece;
        break;
      }
    if (!owner)
      return emitError(loc) << "internal: rank " << rank
                            << " receives nothing for " << cell.str();
    cells.push_back(sliceBox(b, loc, owner->second,
                             relative(cell, owner->first.offsets),
                             cell.sizes));
  }
  return assembleGrid(b, loc, intervals, std::move(cells));
}

FailureOr<OwningOpRef<ModuleOp>> mlir::weft::buildDeviceProgram(
    ModuleOp pipeline, ArrayRef<OwningOpRef<ModuleOp>> plannedStages,
    int64_t rank, int64_t worldSize, const TransferNetwork &network) {
  func::FuncOp main = getModelFunction(pipeline, "pipeline device program");
  if (!main)
    return failure();
  SmallVector<StageOp> stages = llvm::to_vector(main.getOps<StageOp>());
  int myStage = -1;
  int64_t position = 0;
  for (auto [k, stage] : llvm::enumerate(stages)) {
    auto mesh = pipeline.lookupSymbol<MeshOp>(stage.getMesh());
    ArrayRef<int64_t> ranks = *mesh.getDevices();
    if (const int64_t *at = llvm::find(ranks, rank); at != ranks.end()) {
      myStage = static_cast<int>(k);
      position = at - ranks.begin();
    }
  }
  if (myStage < 0)
    return pipeline.emitError("internal: rank ") << rank << " is in no stage";
  FailureOr<PlannedJob> job = planTransfers(pipeline, network);
  if (failed(job))
    return failure();
  const std::vector<PlannedTransfer> *transfers = &job->transfers;
  int64_t collector = collectorRank(pipeline);

  StageOp stage = stages[myStage];
  OwningOpRef<ModuleOp> device = plannedStages[myStage].get().clone();
  if (failed(spmdPartition(*device, position, stage.getMesh())))
    return failure();
  func::FuncOp body = getModelFunction(*device, "pipeline device program");
  if (!body)
    return failure();
  body.setSymName("weft_stage_body");
  Block &bodyBlock = body.getBody().front();

  // The rank's main: the model's signature.
  OpBuilder b = OpBuilder::atBlockEnd(device->getBody());
  Location loc = main.getLoc();
  auto program =
      func::FuncOp::create(b, loc, main.getSymName(), main.getFunctionType());
  setModelFunction(program);
  program.setAllArgAttrs(main.getAllArgAttrs());
  program.setAllResultAttrs(main.getAllResultAttrs());
  Block *entry = program.addEntryBlock();
  b.setInsertionPointToEnd(entry);
  TransferEmitter emitter(b, rank, network);

  DenseMap<Operation *, Value> received; // weft.transfer -> local block
  SmallVector<Value> stageResults;
  auto compute = [&]() {
    IRMapping mapping;
    for (auto [input, arg] :
         llvm::zip(stage.getInputs(), bodyBlock.getArguments())) {
      if (auto outer = dyn_cast<BlockArgument>(input))
        mapping.map(arg, entry->getArgument(outer.getArgNumber()));
      else
        mapping.map(arg, received.lookup(input.getDefiningOp()));
    }
    for (Operation &op : bodyBlock.without_terminator())
      b.clone(op, mapping);
    for (Value v : bodyBlock.getTerminator()->getOperands())
      stageResults.push_back(mapping.lookup(v));
  };
  bool computed = false;
  SmallVector<Value> outputs(main.getNumResults());
  for (const PlannedTransfer &t : *transfers) {
    if (!computed &&
        std::make_pair(t.source.stage, t.target.stage) >=
            std::make_pair(myStage, myStage)) {
      compute();
      computed = true;
    }
    Value local =
        t.source.stage == myStage ? stageResults[t.sourceResult] : Value();
    bool receives = t.target.stage == myStage ||
                    (t.target.stage == INT_MAX && rank == collector);
    std::optional<int64_t> at;
    if (receives)
      at = t.target.stage == INT_MAX ? 0 : position;
    FailureOr<Value> block = emitter.run(t, local, at);
    if (failed(block))
      return failure();
    if (!receives)
      continue;
    if (t.op)
      received[t.op] = *block;
    else
      outputs[t.outputIndex] = *block;
  }
  if (!computed)
    compute();
  Operation *ret = main.getBody().front().getTerminator();
  for (auto [i, output] : llvm::enumerate(ret->getOperands())) {
    if (auto arg = dyn_cast<BlockArgument>(output))
      outputs[i] = entry->getArgument(arg.getArgNumber());
    else if (!outputs[i])
      outputs[i] = zeros(b, loc, cast<RankedTensorType>(output.getType()));
  }
  func::ReturnOp::create(b, loc, outputs);
  body.erase();
  (*device)->setAttr(kWorldSizeAttr, b.getI64IntegerAttr(worldSize));
  (*device)->setAttr(kCollectorRankAttr, b.getI64IntegerAttr(collector));
  if (!job->groups.empty()) {
    SmallVector<Attribute> groups;
    for (const std::vector<int64_t> &group : job->groups)
      groups.push_back(b.getDenseI64ArrayAttr(group));
    (*device)->setAttr(kBroadcastGroupsAttr, b.getArrayAttr(groups));
  }
  if (failed(mlir::verify(*device)))
    return pipeline.emitError("internal: the program of rank ")
           << rank << " does not verify";
  return device;
}

std::vector<int64_t> mlir::weft::movePeersToTable(ModuleOp program) {
  std::vector<int64_t> table;
  auto toSlot = [&](auto transfer) {
    if (!transfer.getPeer())
      return; // Already a slot.
    table.push_back(static_cast<int64_t>(*transfer.getPeer()));
    table.push_back(static_cast<int64_t>(*transfer.getTag()));
    transfer.removePeerAttr();
    transfer.removeTagAttr();
    transfer.setSlot(table.size() / 2 - 1);
  };
  program.walk([&](Operation *op) {
    if (auto send = dyn_cast<SendOp>(op))
      toSlot(send);
    else if (auto recv = dyn_cast<RecvOp>(op))
      toSlot(recv);
  });
  return table;
}

std::vector<TransferSummary>
mlir::weft::summarizeTransfers(ModuleOp pipeline,
                               const TransferNetwork &network) {
  std::vector<TransferSummary> out;
  FailureOr<PlannedJob> job = planTransfers(pipeline, network);
  if (failed(job))
    return out;
  for (const PlannedTransfer &t : job->transfers) {
    TransferSummary s;
    auto name = [&]() -> std::string {
      if (Operation *producer = t.value.getDefiningOp()) {
        auto stage = cast<StageOp>(producer);
        auto yield = stage.getBodyBlock().getTerminator();
        Value inner = yield->getOperand(t.sourceResult);
        if (Operation *op = inner.getDefiningOp())
          if (NameLoc loc = findNameLoc(op->getLoc()))
            return loc.getName().str();
      }
      return "?";
    };
    s.tensor = name();
    s.fromStage = t.source.stage;
    s.toStage = t.target.stage == INT_MAX ? -1 : t.target.stage;
    int64_t elementBytes =
        std::max<int64_t>(1, t.type.getElementTypeBitWidth() / 8);
    s.bytes = t.type.getNumElements() * elementBytes;
    s.bytesMoved = t.plan.bytesMoved;
    s.tiles = static_cast<int64_t>(t.plan.tiles.size());
    s.messages = static_cast<int64_t>(t.plan.messages.size());
    s.from = t.sourceText;
    s.to = t.targetText;
    s.method = t.plan.inMesh
                   ? "in-mesh"
                   : plan::reshardMethodName(t.plan.method).str();
    s.predictedSeconds = t.plan.predictedSeconds;
    s.lowerBoundSeconds = t.plan.bound.seconds;
    s.sendRecvSeconds = s.predictedSeconds;
    if (network.method != plan::ReshardMethod::SendRecv && !t.plan.inMesh) {
      FailureOr<plan::ReshardPlan> baseline =
          planOne(t, network, plan::ReshardMethod::SendRecv);
      if (succeeded(baseline))
        s.sendRecvSeconds = baseline->predictedSeconds;
    }
    std::map<std::pair<int64_t, int64_t>, int64_t> pairs;
    for (const plan::ReshardMessage &m : t.plan.messages)
      pairs[{network.rankOf(m.from), network.rankOf(m.to)}] += m.bytes;
    for (auto &[pair, bytes] : pairs)
      s.pairBytes.push_back({pair.first, pair.second, bytes});
    for (auto [k, transfer] : llvm::enumerate(t.plan.transfers)) {
      if (!transfer.broadcastCall)
        continue;
      TransferSummary::Broadcast call;
      call.bytes = transfer.bytes;
      for (int device : plan::broadcastChain(transfer))
        call.chain.push_back(network.rankOf(device));
      call.chunks = transfer.chunks;
      call.group = t.callGroups[k];
      s.broadcasts.push_back(std::move(call));
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<std::vector<int64_t>>
mlir::weft::jobBroadcastGroups(ModuleOp pipeline,
                               const TransferNetwork &network) {
  FailureOr<PlannedJob> job = planTransfers(pipeline, network);
  if (failed(job))
    return {};
  return job->groups;
}
