//===- Reshard.h - Cross-mesh resharding plans ------------------*- C++ -*-===//
//
// Plain C++ (no IR): the planner that moves a tensor from one mesh and
// sharding to another (any devices of a cluster: disjoint, overlapping or
// the same mesh) as an ordered list of point-to-point messages. Broadcasts
// are pipelined chains of messages (run as one runtime broadcast call each
// where ReshardOptions::broadcastCalls says so) and local all-gathers are
// rings of messages, so that what the runtime executes is exactly what the
// cost model prices. docs/Resharding.md explains the methods, the search,
// the cost model and the lower bound.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_PLAN_RESHARD_H
#define WEFT_PLAN_RESHARD_H

#include "weft/Plan/Cluster.h"
#include "weft/Plan/CostModel.h"
#include "weft/Plan/Sharding.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace weft::plan {

/// How the planner moves the tiles.
enum class ReshardMethod {
  /// One message per (tile, receiver) from one holder: the naive baseline.
  SendRecv,
  /// Alpa's `use_local_allgather`: the k receivers of a tile on one node
  /// each receive a 1/k slice, then all-gather it inside the node (a ring).
  SendRecvAllGather,
  /// One sender per tile to all its receivers, as a pipelined chain that
  /// enters each node once and fans out over the node's fast link.
  Broadcast,
  /// Senders, chain entry and exit devices (NIC rails) and the order of the
  /// transfers chosen to minimise the predicted finish time.
  Balanced,
};

/// "send-recv", "send-recv-allgather", "broadcast" or "balanced".
llvm::StringRef reshardMethodName(ReshardMethod method);
/// The method named `name`; std::nullopt for an unknown name.
std::optional<ReshardMethod> parseReshardMethod(llvm::StringRef name);

/// One end of a resharding: a mesh of cluster devices and a sharding over it.
struct ReshardSide {
  /// Its `devices` are cluster device indices, row-major over `shape`.
  Mesh mesh;
  /// Names `mesh` (sharding.mesh == mesh.name; verifyReshardProblem checks).
  TensorSharding sharding;
};

/// What to move.
struct ReshardProblem {
  std::vector<int64_t> shape;
  int64_t elementBytes = 4;
  ReshardSide source;
  ReshardSide destination;
};

/// A box [offsets, offsets + sizes) of the whole tensor.
struct Box {
  std::vector<int64_t> offsets;
  std::vector<int64_t> sizes;

  int64_t elements() const;
  /// True when `inner` lies inside this box.
  bool contains(const Box &inner) const;
  /// "[0:512, 0:1024]"
  std::string str() const;
  bool operator==(const Box &other) const {
    return offsets == other.offsets && sizes == other.sizes;
  }
};

/// A cell of the grid the source and destination block boundaries cut the
/// tensor into: every source holder holds all of it, every destination
/// device that needs any of it needs all of it.
struct ReshardTile {
  Box box;
  /// Cluster devices whose source block holds the tile (after the
  /// reduction), increasing.
  std::vector<int> holders;
  /// Destination devices (cluster indices) that need it and do not hold it,
  /// increasing: every one receives it exactly once.
  std::vector<int> receivers;
  /// Destination devices that need it and already hold it (a device in
  /// both meshes keeps what it has).
  std::vector<int> keepers;
};

/// One point-to-point message. A message's sender holds its box before the
/// message starts: in its source block, or from the earlier message
/// `dependsOn` (a hop of a chain, a step of a ring).
struct ReshardMessage {
  int from = 0;
  int to = 0;
  int tile = 0;
  /// Inside the tile's box.
  Box box;
  int64_t bytes = 0;
  /// The message that brought `box` (or a box containing it) to `from`, or
  /// -1 when `from` holds it in its source block.
  int dependsOn = -1;
  /// Index into ReshardPlan::transfers.
  int transfer = 0;
  /// Predicted, in seconds from the start of the resharding (the source's
  /// reduction comes first).
  double start = 0, end = 0;
};

/// What one transfer of the plan is, for reports.
enum class TransferKind { Send, Broadcast, AllGather };
/// "send", "broadcast" or "allgather".
llvm::StringRef transferKindName(TransferKind kind);

/// A transfer: one tile from one source to its destinations, lowered into
/// messages (one for a send, one per hop and chunk for a broadcast chain,
/// the slice sends and ring steps for an all-gather).
struct ReshardTransfer {
  TransferKind kind = TransferKind::Send;
  int tile = 0;
  /// The sender (for an all-gather: -1, every slice has its own holder).
  int source = -1;
  /// In chain order for a broadcast.
  std::vector<int> destinations;
  /// Chunks of a pipelined chain (1 otherwise).
  int chunks = 1;
  int64_t bytes = 0;
  double start = 0, end = 0;
  /// Set for a broadcast chain that runs as one runtime call
  /// (WEFT_RT_BROADCAST, ReshardOptions::broadcastCalls): the source and
  /// every destination enter the call when their earlier messages are done,
  /// inside it a relay receives chunk c + 1 while it forwards chunk c, and
  /// each leaves it when its own hops are done. Its messages are the
  /// chain's hops, chunk by chunk, as for any chain; a runtime runs them
  /// all in the one call instead of one blocking message at a time.
  bool broadcastCall = false;
};

/// The reduction a source with pending partial sums does on its own mesh
/// before its tiles move.
struct ReshardReduction {
  /// AllReduce or ReduceScatter.
  ReshardKind kind = ReshardKind::AllReduce;
  AxisList axes;
  /// The dimension a reduce-scatter splits (-1 for an all-reduce).
  int dim = -1;
  /// The source sharding once it is done.
  TensorSharding after;
  double seconds = 0;
};

/// Which resource the lower bound comes from.
struct ReshardBound {
  double seconds = 0;
  /// e.g. "node 2's NICs receive 64 MiB it lacks", "device 5's link".
  std::string reason;
};

/// A complete plan for one method.
struct ReshardPlan {
  ReshardMethod method = ReshardMethod::SendRecv;
  /// Set when the source mesh is the destination mesh: the move is the
  /// in-mesh resharding of lib/Plan/Sharding.cpp (collectives), and there
  /// are no tiles or messages.
  bool inMesh = false;
  std::vector<ReshardStep> inMeshSteps;
  std::optional<ReshardReduction> reduction;
  std::vector<ReshardTile> tiles;
  std::vector<ReshardTransfer> transfers;
  /// In execution order: each device performs its messages in this order.
  std::vector<ReshardMessage> messages;
  /// Predicted seconds, the reduction included.
  double predictedSeconds = 0;
  /// The physical lower bound (the reduction's time included).
  ReshardBound bound;
  /// Bytes that cross a link, and per cluster device (size: the cluster's
  /// devices) the bytes it sends and receives.
  int64_t bytesMoved = 0;
  std::vector<int64_t> bytesSent, bytesReceived;
  /// Set when a method fell back on a simpler one that is predicted faster
  /// (e.g. broadcast chains slower than plain sends), saying so.
  std::string note;
  /// The device model the plan was made and timed for
  /// (ReshardOptions::fullDuplex).
  bool fullDuplex = true;
};

/// Tuning knobs; the defaults are weft-reshard's (pipelines set their own,
/// see docs/Resharding.md).
struct ReshardOptions {
  /// True: a device sends and receives at the same time (a runtime with
  /// asynchronous grouped sends and receives, as NCCL's). False: a device
  /// performs one message at a time, in plan order, as Weft's runtime runs
  /// a pipeline's blocking sends and receives.
  bool fullDuplex = true;
  /// True: every broadcast chain runs as one runtime call
  /// (ReshardTransfer::broadcastCall), a chunked pipeline even when
  /// `fullDuplex` is false. False: a chain is its messages alone; without
  /// `fullDuplex` it is then not cut into chunks (a relay that performs one
  /// message at a time gains nothing from them).
  bool broadcastCalls = true;
  /// The most chunks a broadcast chain is cut into.
  int maxChunks = 64;
  /// No chunk smaller than this (a chunk pays a message's latency).
  int64_t minChunkBytes = 512 * 1024;
  /// The balanced search stops after this many simulated messages (a work
  /// count, never wall time, so that the plan is deterministic).
  int64_t searchBudget = 2'000'000;
};

/// Checks the problem against the cluster: meshes valid (verifyMesh), each
/// side's sharding on that side's mesh (by name) and fitting its axes and
/// the tensor's rank, no partial sums on the destination, sizes positive.
/// The error says which side and what.
llvm::Error verifyReshardProblem(const Cluster &cluster,
                                 const ReshardProblem &problem);

/// Plans the resharding with `method`. Errors as verifyReshardProblem.
llvm::Expected<ReshardPlan> planResharding(const Cluster &cluster,
                                           const ReshardProblem &problem,
                                           ReshardMethod method,
                                           const ReshardOptions &options = {});

//===----------------------------------------------------------------------===//
// The pieces the planner is built from, public for tests and tools.
//===----------------------------------------------------------------------===//

/// The cells of the grid that `cuts` form (cuts[k]: increasing positions
/// along dimension k, at least two), in row-major order (the last
/// dimension fastest): the tiles' grid, and a receiver's block cut at the
/// edges of the boxes it assembles.
std::vector<Box> gridCells(llvm::ArrayRef<std::vector<int64_t>> cuts);

/// The devices that send or receive anything in `plan`: {device, bytes
/// sent, bytes received}, in device order.
struct DeviceTraffic {
  int device = 0;
  int64_t bytesSent = 0;
  int64_t bytesReceived = 0;
};
std::vector<DeviceTraffic> devicesWithTraffic(const ReshardPlan &plan);

/// The tiles of moving `shape` from `source` (no partial sums) to
/// `destination` (see ReshardTile), in row-major order of the grid.
std::vector<ReshardTile> reshardTiles(llvm::ArrayRef<int64_t> shape,
                                      const ReshardSide &source,
                                      const ReshardSide &destination);

/// The alpha-beta link one message from cluster device `from` to `to`
/// crosses: the node's intra link, or the inter-node link limited by both
/// ends' NIC rails. alpha 0 and beta infinite for from == to.
GroupLink messageLink(const Cluster &cluster, int from, int to);

/// The predicted time of a message of `bytes` over `link`.
double messageSeconds(const GroupLink &link, double bytes);

/// The closed form of a chain broadcast of `bytes` cut into `chunks` over
/// hops with these links, each device forwarding a chunk as soon as it has
/// it: sum over hops of (alpha + c / beta) + (chunks - 1) x the slowest
/// hop's (alpha + c / beta), with c = bytes / chunks.
double chainSeconds(llvm::ArrayRef<GroupLink> hops, double bytes, int chunks);

/// Predicts every message's start and end in order with the plan's
/// resources (each device's send and receive port, one port for both when
/// the plan is not full duplex, each node NIC rail's two directions, one
/// message at a time each) and data dependences, and
/// sets the transfers' times and the plan's predicted time (`offset`, the
/// reduction's seconds, added). Without full duplex, the messages of a
/// broadcast call use the two ports apart, inside the call: each of its
/// devices enters it once done with its earlier messages, and its later
/// messages wait until its part of the call is done. Returns the finish
/// time.
double simulateMessages(const Cluster &cluster, ReshardPlan &plan,
                        double offset = 0);

/// The devices of a broadcast call, source first, then its destinations
/// in chain order (empty for a transfer that is not one).
std::vector<int> broadcastChain(const ReshardTransfer &transfer);

/// The sub-communicators a job's broadcast calls run over, deduplicated by
/// device set and capped in number: a call over a set that has a group uses
/// it; beyond the cap a call runs as the same chunked chain of grouped
/// sends and receives over the world (docs/Resharding.md, "Broadcast
/// calls"). Every rank of a job assigns groups in the same order (the
/// transfers' order, then each plan's), so that all agree on the numbers.
class BroadcastGroups {
public:
  /// At most `cap` groups (0: none).
  explicit BroadcastGroups(int64_t cap) : cap(cap) {}

  /// The group of the set of `devices` (any order, duplicates ignored):
  /// the one made for the same set before, else a new one while fewer than
  /// the cap exist, else -1 (the call runs over the world).
  int64_t groupOf(llvm::ArrayRef<int> devices);
  /// The groups' device sets, increasing, in the order they were made.
  const std::vector<std::vector<int>> &sets() const { return groupSets; }

private:
  int64_t cap;
  std::vector<std::vector<int>> groupSets;
};

/// The lower bound of moving `tiles` (see docs/Resharding.md): every byte a
/// destination node lacks enters through its NICs, every tile held on one
/// node only leaves it once, every byte a device lacks crosses its link.
ReshardBound reshardLowerBound(const Cluster &cluster,
                               llvm::ArrayRef<ReshardTile> tiles,
                               int64_t elementBytes);

} // namespace weft::plan

#endif // WEFT_PLAN_RESHARD_H
