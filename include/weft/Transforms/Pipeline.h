//===- Pipeline.h - Stages, transfers and per-device programs ---*- C++ -*-===//
//
// The inter-operator half of Weft: a model cut into stages, each on its own
// mesh, with weft.transfer ops between them (splitIntoStages); each stage
// outlined into a module of its own, which the intra-operator planner plans
// on the stage's mesh (outlineStage); and the program of one rank of the
// job: the stage's partitioned body between the receives and sends of its
// transfers (buildDeviceProgram). weftc drives these; the automatic stage
// planner will produce the same StageAssignment.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TRANSFORMS_PIPELINE_H
#define WEFT_TRANSFORMS_PIPELINE_H

#include "weft/Plan/Cluster.h"
#include "weft/Plan/Reshard.h"
#include "weft/Plan/Sharding.h"
#include "weft/WeftOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace mlir::weft {

/// One stage's mesh: its symbol, shape and the world rank (cluster device
/// index) of each row-major position.
struct StageMesh {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<int64_t> worldRanks;
};

/// Which stage computes each op of main, in body order (weights and
/// constants included, though they are cloned into every stage that uses
/// them instead: their entry is ignored).
struct StageAssignment {
  std::vector<int> stageOfOp;
  int numStages = 0;
};

/// True for ops every stage that uses them gets a copy of (no operands, no
/// communication): weights and constants.
bool isReplicableOp(Operation *op);

/// Rewrites main into stages: one weft.mesh per stage (with its devices),
/// one weft.stage per stage in order, and a weft.transfer for every value a
/// later stage uses (once per value and consuming stage, sent straight from
/// its producer), with replicated shardings until the stages are planned.
/// Fails with a diagnostic when a stage would use a value of a later one,
/// or a stage is empty.
LogicalResult splitIntoStages(ModuleOp module, const StageAssignment &stages,
                              llvm::ArrayRef<StageMesh> meshes);

/// The stage's body as the main function of a module of its own (with the
/// ONNX names of what crosses its boundary), ready for autoShard with the
/// stage's mesh symbol.
OwningOpRef<ModuleOp> outlineStage(StageOp stage);

/// After each stage's module was planned: chooses the sharding in which each
/// value crosses each cut and records it on both sides, on the transfers
/// (source: its producer's sharding with partial sums reduced; target: the
/// sharding its users in the next stage need when they agree, else whole)
/// and as `weft.sharding` on the stage modules' arguments and results.
/// Fails after a diagnostic when a stage's plan names another mesh than the
/// stage's (an internal error: autoShard plans each on its own).
LogicalResult chooseBoundaryShardings(
    ModuleOp pipeline,
    llvm::MutableArrayRef<OwningOpRef<ModuleOp>> plannedStages);

/// Where the job's ranks run and how their transfers are planned: the
/// resharding planner (lib/Plan/Reshard.h) plans every transfer on the
/// cluster, with the ranks' cluster devices.
struct TransferNetwork {
  const ::weft::plan::Cluster *cluster = nullptr;
  /// The cluster device of each world rank.
  std::vector<int64_t> clusterDeviceOfRank;
  ::weft::plan::ReshardMethod method = ::weft::plan::ReshardMethod::Balanced;
  /// The device model: a rank runs its blocking sends and receives one at a
  /// time in program order (not full duplex), each whole; a broadcast chain
  /// runs as one runtime call (weft.broadcast_send/recv), inside which a
  /// relay receives chunk c + 1 while it forwards chunk c, so chains are
  /// cut into chunks (docs/Resharding.md, "Two device models").
  ::weft::plan::ReshardOptions options = [] {
    ::weft::plan::ReshardOptions o;
    o.fullDuplex = false;
    o.broadcastCalls = true;
    return o;
  }();
  /// The most broadcast groups (sub-communicators) the job creates
  /// (--max-broadcast-groups); a call over a device set beyond them runs as
  /// the same chain over the world.
  int64_t maxBroadcastGroups = 16;
  /// The world rank of cluster device `device` (size() when none).
  int64_t rankOf(int64_t device) const {
    return llvm::find(clusterDeviceOfRank, device) -
           clusterDeviceOfRank.begin();
  }
  /// Plans already made, by problem (every rank's program plans every
  /// transfer of the job; the planner is deterministic, so one plan per
  /// problem serves them all). Shared by copies of the network.
  std::shared_ptr<std::map<std::string, ::weft::plan::ReshardPlan>> plans =
      std::make_shared<std::map<std::string, ::weft::plan::ReshardPlan>>();
};

/// The program of world rank `rank`: the planned module of its stage,
/// partitioned for its mesh position, inside a main with the model's
/// inputs and outputs that first receives what the stage needs (in the
/// deadlock-free order of docs/Pipelines.md), then computes, then sends;
/// the collector rank (collectorRank) also collects the model's outputs,
/// which other ranks leave zero (only the collector's outputs are read).
/// Each transfer runs its plan's messages (sends, broadcast chain hops that
/// a receiver forwards, node-local ring steps) in the plan's order, a
/// broadcast call as one weft.broadcast_send or weft.broadcast_recv; the
/// program lists the job's broadcast groups (kBroadcastGroupsAttr).
FailureOr<OwningOpRef<ModuleOp>>
buildDeviceProgram(ModuleOp pipeline,
                   llvm::ArrayRef<OwningOpRef<ModuleOp>> plannedStages,
                   int64_t rank, int64_t worldSize,
                   const TransferNetwork &network);

/// Moves the peer and tag of every weft.send and weft.recv of `program` (a
/// rank's program, in program order) into a peer table of (peer, tag) pairs
/// and names each op's slot instead. Ranks whose programs differ only in
/// whom they talk to then print the same program, which weftc compiles once;
/// each rank's table is data, in its weights file. Returns the table.
std::vector<int64_t> movePeersToTable(ModuleOp program);

/// The world rank that collects the model's outputs whole: the first rank of
/// the last stage. The last stage finishes a request last, so collecting
/// there keeps the first stage free to start the next request (a collector
/// in the first stage would wait for every request to cross the pipeline).
int64_t collectorRank(ModuleOp pipeline);

/// A value crossing a cut, for reports and plan.json.
struct TransferSummary {
  std::string tensor;
  int fromStage = 0;
  /// -1: the model's output, collected on the collector rank.
  int toStage = 0;
  /// The tensor's bytes, and those that cross a link (a device that holds
  /// part of what it needs keeps it; a broadcast moves a tile once per
  /// receiver).
  int64_t bytes = 0;
  int64_t bytesMoved = 0;
  int64_t tiles = 0;
  int64_t messages = 0;
  std::string from, to; // Shardings, as text.
  /// The plan's method ("balanced", ...), or "in-mesh" when the source and
  /// destination are the same device.
  std::string method;
  double predictedSeconds = 0;
  double lowerBoundSeconds = 0;
  /// The send-recv plan's prediction, for comparison.
  double sendRecvSeconds = 0;
  /// Bytes per (source rank, target rank) pair.
  std::vector<std::tuple<int64_t, int64_t, int64_t>> pairBytes;
  /// The plan's broadcast calls: the tile's bytes, the chain of world
  /// ranks (root first), its chunks and its broadcast group (-1: over the
  /// world, beyond the job's cap).
  struct Broadcast {
    int64_t bytes = 0;
    std::vector<int64_t> chain;
    int64_t chunks = 1;
    int64_t group = -1;
  };
  std::vector<Broadcast> broadcasts;
};
/// Every transfer of the job, summarized in key order.
std::vector<TransferSummary> summarizeTransfers(ModuleOp pipeline,
                                                const TransferNetwork &network);
/// The job's broadcast groups: each one's world ranks, increasing, in the
/// order every rank's program lists them (the signature's broadcast-group
/// records).
std::vector<std::vector<int64_t>>
jobBroadcastGroups(ModuleOp pipeline, const TransferNetwork &network);

/// Module attributes of a device program in a pipeline: the job's size
/// (the program signature's `pipeline` record needs it with the mesh's
/// world ranks).
inline constexpr llvm::StringLiteral kWorldSizeAttr = "weft.world_size";
/// ... and the world rank that holds the model's outputs (collectorRank;
/// the signature's `collector` record).
inline constexpr llvm::StringLiteral kCollectorRankAttr =
    "weft.collector_rank";
/// ... and the job's broadcast groups: an ArrayAttr of DenseI64ArrayAttr,
/// each a group's world ranks, increasing, in the order every program of
/// the job gives (the signature's `broadcast-group` records).
inline constexpr llvm::StringLiteral kBroadcastGroupsAttr =
    "weft.broadcast_groups";
/// On a weft.stage once its module is planned: the sharding each result
/// leaves in (an array of #weft.sharding on the stage's mesh).
inline constexpr llvm::StringLiteral kResultShardingsAttr =
    "weft.result_shardings";

} // namespace mlir::weft

#endif // WEFT_TRANSFORMS_PIPELINE_H
