//===- SimulateProgram.cpp - Simulator input from rank programs -----------===//
//
// Reads one rank's program op by op and appends the simulator's ops for it:
// communication as it is (a broadcast call as a chain broadcast every rank
// of it meets at), compute priced by the cost model.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/SimulateProgram.h"
#include "weft/ModelFunction.h"
#include "weft/Plan/CostModel.h"
#include "weft/Transforms/ShardingRules.h"
#include "weft/WeftOps.h"
#include "weft/WeftTypeUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"

#include <memory>
#include <optional>
#include <vector>

using namespace mlir;
using namespace mlir::weft;
namespace plan = ::weft::plan;

/// The bytes of a static tensor type (0 for anything else).
static double bytesOf(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  Type element = tensor.getElementType();
  unsigned bits = element.isIntOrFloat() ? element.getIntOrFloatBitWidth() : 64;
  return static_cast<double>(tensor.getNumElements()) *
         static_cast<double>((bits + 7) / 8);
}

/// The FLOPs of `op` as programFlops counts them (the loop space's work),
/// including the ops nested in its regions.
static double flopsOf(Operation *op) {
  double flops = 0;
  op->walk([&](Operation *nested) {
    if (std::optional<LoopSpace> space = getLoopSpace(nested))
      flops += space->flops;
  });
  return flops;
}

/// The roofline seconds of one local op on the stage's mesh, as the
/// intra-operator planner prices it (AutoShard.cpp): its work and the bytes
/// of its operands and results that reach memory (an operand read in part
/// counts as much as the results; fused elementwise values do not count);
/// weights, constants and views cost nothing.
static double computeSecondsOf(Operation *op, const plan::CostModel &costs) {
  if (isa<WeightOp, ConstantOp, ShardOp, func::ReturnOp>(op) ||
      isCostFreeView(op) || (isClampFusedIntoConv(op) && costs.allDevicesCpu()))
    return 0;
  plan::DType dtype = op->getNumResults()
                          ? costDTypeOf(op->getResult(0).getType())
                          : plan::DType::F32;
  double resultBytes = 0, bytes = 0;
  for (Value result : op->getResults()) {
    resultBytes += bytesOf(result.getType());
    if (!resultStaysInRegisters(result))
      bytes += bytesOf(result.getType());
  }
  if (isa<LocalSliceOp>(op))
    return costs.computeSeconds(0, 2 * resultBytes, dtype);
  std::optional<LoopSpace> space = getLoopSpace(op);
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    if (operandStaysInRegisters(op, i))
      continue;
    double operandBytes = bytesOf(operand.getType());
    if (space && i < space->operandReadInPart.size() &&
        space->operandReadInPart[i])
      operandBytes = std::min(operandBytes, resultBytes);
    bytes += operandBytes;
  }
  return costs.computeSeconds(flopsOf(op), bytes, dtype, kernelClassOf(op));
}

/// The cluster device of world rank `rank`, or -1.
static int deviceOfRank(const RankSimInfo &info, int64_t rank) {
  if (rank < 0 || rank >= static_cast<int64_t>(info.clusterDeviceOfRank.size()))
    return -1;
  return static_cast<int>(info.clusterDeviceOfRank[rank]);
}

/// The cost model's mesh of `mesh` (its positions' cluster devices) and the
/// rank's position in it (-1 when the rank is not in it).
static std::pair<plan::Mesh, int64_t> planMeshOf(MeshOp mesh,
                                                 const RankSimInfo &info) {
  plan::Mesh planned;
  planned.name = mesh.getSymName().str();
  llvm::append_range(planned.shape, mesh.getShape());
  int64_t position = -1;
  std::optional<ArrayRef<int64_t>> ranks = mesh.getDevices();
  for (int64_t p = 0; p < mesh.getNumDevices(); ++p) {
    // Without `devices`, mesh position p is world rank p.
    int64_t rank =
        ranks && p < static_cast<int64_t>(ranks->size()) ? (*ranks)[p] : p;
    planned.devices.push_back(deviceOfRank(info, rank));
    if (rank == info.rank)
      position = p;
  }
  return {planned, position};
}

/// The simulator's collective of `op` on rank `info.rank`: the cluster
/// devices of the rank's group, the full buffer's bytes and the group's id.
template <typename CollectiveOp>
static FailureOr<plan::SimOp>
collectiveOf(CollectiveOp op, plan::CollectiveKind kind, double bytes,
             ModuleOp module, const RankSimInfo &info, SimCollectiveIds &ids) {
  auto mesh = module.lookupSymbol<MeshOp>(op.getMesh());
  if (!mesh)
    return op.emitOpError("names no mesh of the program: @") << op.getMesh();
  auto [planned, position] = planMeshOf(mesh, info);
  if (position < 0)
    return op.emitOpError("runs on rank ")
           << info.rank << ", which is not in mesh @" << op.getMesh();
  std::vector<int> axes(op.getAxes().begin(), op.getAxes().end());
  std::vector<int> participants;
  for (const std::vector<int64_t> &group : plan::meshGroups(planned, axes)) {
    if (!llvm::is_contained(group, position))
      continue;
    for (int64_t p : group)
      participants.push_back(planned.devices[p]);
  }
  if (participants.empty())
    return op.emitOpError("has no group holding rank ") << info.rank;
  std::string key = op.getMesh().str() + " [";
  for (int axis : axes)
    key += std::to_string(axis) + ",";
  key += "] {";
  for (int device : participants)
    key += std::to_string(device) + ",";
  key += "}";
  int64_t id =
      ids.try_emplace(key, static_cast<int64_t>(ids.size())).first->second;
  return plan::SimOp::collectiveOp(kind, bytes, std::move(participants), id);
}

/// The simulator's chain broadcast of weft.broadcast_send or
/// weft.broadcast_recv on rank `info.rank`: every rank of the chain meets
/// at the broadcast of its tag.
template <typename BroadcastOp>
static FailureOr<plan::SimOp> broadcastOf(BroadcastOp op, double bytes,
                                          const RankSimInfo &info,
                                          SimCollectiveIds &ids) {
  std::vector<int> chain;
  for (int64_t rank : op.getChain()) {
    int device = deviceOfRank(info, rank);
    if (device < 0)
      return op.emitOpError("names rank ") << rank << ", outside the job";
    chain.push_back(device);
  }
  std::string key = "broadcast tag " + std::to_string(op.getTag());
  int64_t id =
      ids.try_emplace(key, static_cast<int64_t>(ids.size())).first->second;
  return plan::SimOp::broadcast(std::move(chain), bytes,
                                static_cast<int>(op.getChunks()), id);
}

/// The full buffer of an all-to-all (CostModel's "n-byte buffer"): the
/// local input times the group's share along the gathered dimension.
static double allToAllBytes(AllToAllOp op) {
  double local = bytesOf(op.getInput().getType());
  auto type = cast<RankedTensorType>(op.getInput().getType());
  int64_t dim = op.getGatherDim();
  int64_t whole = 0;
  for (int64_t size : op.getGatherSizes())
    whole += size;
  if (dim < 0 || dim >= type.getRank() || type.getDimSize(dim) <= 0)
    return local;
  return local / static_cast<double>(type.getDimSize(dim)) *
         static_cast<double>(whole);
}

/// The communication op of `op`, nullopt for an op that computes, or
/// failure after a diagnostic.
static FailureOr<std::optional<plan::SimOp>>
communicationOf(Operation *op, ModuleOp module, const RankSimInfo &info,
                SimCollectiveIds &ids) {
  using Kind = plan::CollectiveKind;
  FailureOr<plan::SimOp> simOp = failure();
  // The simulator reads a rank's program before its peers move to the peer
  // table (slots), so every transfer names its peer.
  auto send = dyn_cast<SendOp>(op);
  auto recv = dyn_cast<RecvOp>(op);
  if ((send && send.getSlot()) || (recv && recv.getSlot()))
    return op->emitOpError("internal: the simulator needs the transfer's "
                           "peer, not a peer table slot");
  if (send) {
    int peer = deviceOfRank(info, *send.getPeer());
    if (peer < 0)
      return send.emitOpError("sends to rank ")
             << *send.getPeer() << ", outside the job";
    simOp = plan::SimOp::send(peer, bytesOf(send.getInput().getType()),
                              *send.getTag());
  } else if (recv) {
    int peer = deviceOfRank(info, *recv.getPeer());
    if (peer < 0)
      return recv.emitOpError("receives from rank ")
             << *recv.getPeer() << ", outside the job";
    simOp = plan::SimOp::recv(peer, bytesOf(recv.getType()), *recv.getTag());
  } else if (auto root = dyn_cast<BroadcastSendOp>(op)) {
    simOp = broadcastOf(root, bytesOf(root.getInput().getType()), info, ids);
  } else if (auto member = dyn_cast<BroadcastRecvOp>(op)) {
    simOp = broadcastOf(member, bytesOf(member.getType()), info, ids);
  } else if (auto reduce = dyn_cast<AllReduceOp>(op)) {
    simOp =
        collectiveOf(reduce, Kind::AllReduce,
                     bytesOf(reduce.getInput().getType()), module, info, ids);
  } else if (auto gather = dyn_cast<AllGatherOp>(op)) {
    simOp = collectiveOf(gather, Kind::AllGather, bytesOf(gather.getType()),
                         module, info, ids);
  } else if (auto scatter = dyn_cast<ReduceScatterOp>(op)) {
    simOp =
        collectiveOf(scatter, Kind::ReduceScatter,
                     bytesOf(scatter.getInput().getType()), module, info, ids);
  } else if (auto toAll = dyn_cast<AllToAllOp>(op)) {
    simOp = collectiveOf(toAll, Kind::AllToAll, allToAllBytes(toAll), module,
                         info, ids);
  } else {
    return std::optional<plan::SimOp>();
  }
  if (failed(simOp))
    return failure();
  return std::optional<plan::SimOp>(std::move(*simOp));
}

/// The ops of `block` that run: those with side effects (communication,
/// the terminator) and those whose results they use, directly or not.
/// Codegen erases the rest, e.g. the stage's computation on a rank that
/// returns zeros for an output another rank of its mesh returns.
static llvm::DenseSet<Operation *> liveOps(Block &block) {
  llvm::DenseSet<Operation *> live;
  for (Operation &op : llvm::reverse(block)) {
    bool used = !isMemoryEffectFree(&op) ||
                op.hasTrait<OpTrait::IsTerminator>() ||
                llvm::any_of(op.getUsers(), [&](Operation *user) {
                  return live.contains(block.findAncestorOpInBlock(*user));
                });
    if (used)
      live.insert(&op);
  }
  return live;
}

/// The name a profiled run gives `op`: its ONNX node's name, else its kind
/// (weft-insert-status-checks).
static std::string profileNameOf(Operation *op) {
  if (NameLoc named = findNameLoc(op->getLoc()))
    return named.getName().str();
  return op->getName().stripDialect().str();
}

/// The cost model of the stage's mesh: the program's mesh that holds the
/// rank, else the rank's own device alone.
static plan::CostModel stageCosts(ModuleOp program, const RankSimInfo &info,
                                  const plan::Cluster &cluster) {
  for (MeshOp mesh : program.getOps<MeshOp>()) {
    auto [planned, position] = planMeshOf(mesh, info);
    if (position >= 0)
      return plan::CostModel(cluster, planned);
  }
  plan::Mesh alone;
  alone.name = "rank" + std::to_string(info.rank);
  alone.shape = {1};
  alone.devices = {deviceOfRank(info, info.rank)};
  return plan::CostModel(cluster, alone);
}

LogicalResult mlir::weft::appendRankSimOps(ModuleOp program,
                                           const RankSimInfo &info,
                                           const plan::Cluster &cluster,
                                           SimCollectiveIds &ids,
                                           plan::SimProgram &out) {
  func::FuncOp main = getModelFunction(program, "simulating a rank");
  if (!main)
    return failure();
  int device = deviceOfRank(info, info.rank);
  if (device < 0)
    return program.emitError("rank ")
           << info.rank << " has no cluster device to simulate on";
  plan::CostModel costs = stageCosts(program, info, cluster);
  std::string label = "stage " + std::to_string(info.stage);

  // One microbatch: runs of compute between communication ops, each merged
  // into one compute op. Approximations: each op is priced alone by the
  // roofline of its FLOPs and the bytes of its operands and results on the
  // stage's mesh (the planner's price; fusion, caches and the runtime's
  // per-op overhead are not modelled), and ops are summed in program order.
  std::vector<plan::SimOp> ops;
  double pending = 0;
  // The run's ops by the names a profiled run gives them (the ONNX node, as
  // weft-insert-status-checks names them), so that predicted and measured
  // traces line up op by op.
  std::vector<plan::TimelineOp> pendingOps;
  auto flush = [&] {
    if (pending > 0) {
      ops.push_back(plan::SimOp::compute(pending, label));
      ops.back().ops = std::make_shared<const std::vector<plan::TimelineOp>>(
          std::move(pendingOps));
    }
    pending = 0;
    pendingOps.clear();
  };
  llvm::DenseSet<Operation *> live = liveOps(main.getBody().front());
  for (Operation &op : main.getBody().front()) {
    FailureOr<std::optional<plan::SimOp>> communication =
        communicationOf(&op, program, info, ids);
    if (failed(communication))
      return failure();
    if (!*communication) {
      double seconds = live.contains(&op) ? computeSecondsOf(&op, costs) : 0;
      if (seconds > 0)
        pendingOps.push_back({profileNameOf(&op),
                              op.getName().stripDialect().str(), seconds});
      pending += seconds;
      continue;
    }
    flush();
    ops.push_back(std::move(**communication));
  }
  flush();

  // Every microbatch of every request, in order.
  if (static_cast<int>(out.devices.size()) <= device)
    out.devices.resize(device + 1);
  std::vector<plan::SimOp> &row = out.devices[device];
  int64_t microbatches = std::max<int64_t>(out.requests, 1) *
                         std::max<int64_t>(out.microbatchesPerRequest, 1);
  for (int64_t m = 0; m < microbatches; ++m)
    for (const plan::SimOp &op : ops) {
      row.push_back(op);
      row.back().at(info.stage, m);
    }
  return success();
}
