//===- Simulator.h - Event simulation of per-device programs ----*- C++ -*-===//
//
// Plain C++ (no IR): predicts the timeline of what really runs, each
// device's ordered ops (compute with its predicted time, collectives,
// blocking point-to-point transfers) on a cluster. A device runs its ops in
// program order; a collective or transfer starts when all its participants
// have reached it and takes the cost model's alpha-beta time, slowed where
// it shares a NIC rail with other transfers running at the same time. The
// result is a timeline per device, the step latency, the throughput of a
// stream, the bubble fraction per device, the critical path and what bounds
// throughput. docs/Simulator.md describes the model and its limits.
//
// The input is neutral on purpose: a pass can fill a SimProgram from
// codegen's per-device programs, a test or a report from a plan
// (buildGPipeProgram).
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_PLAN_SIMULATOR_H
#define WEFT_PLAN_SIMULATOR_H

#include "weft/Plan/Cluster.h"
#include "weft/Plan/CostModel.h"
#include "weft/Plan/Timeline.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace weft::plan {

//===----------------------------------------------------------------------===//
// Input
//===----------------------------------------------------------------------===//

/// What one op of a device program does.
enum class SimOpKind { Compute, Collective, Send, Recv };

/// "compute", "collective", "send" or "recv".
llvm::StringRef simOpKindName(SimOpKind kind);

/// One op of a device program. Build with the factories below; the fields
/// a kind does not use are ignored.
struct SimOp {
  SimOpKind kind = SimOpKind::Compute;
  /// Compute: its predicted seconds (>= 0), already including whatever the
  /// cost model charges for sharing the node's cores and memory bandwidth.
  double seconds = 0;
  /// Collective: the FULL buffer as CostModel::collectiveSeconds takes it.
  /// Send/Recv: the message (the two ends must agree). >= 0.
  double bytes = 0;
  /// Collective: which one.
  CollectiveKind collective = CollectiveKind::AllReduce;
  /// Collective: the cluster devices taking part, in group-rank order, this
  /// device among them; every participant lists the same devices.
  std::vector<int> participants;
  /// Collective: > 0 for a pipelined chain broadcast of `bytes` in this
  /// many chunks (weft.broadcast_send/recv), whose participants are the
  /// chain in order, the root first; it takes the resharding planner's
  /// chain formula (chainSeconds over the hops' links) instead of the cost
  /// model's collective formulas.
  int chainChunks = 0;
  /// Collective: the k-th op with this id on one participant meets the k-th
  /// op with this id on every other participant.
  int64_t id = 0;
  /// Send: the receiving device; Recv: the sending device.
  int peer = -1;
  /// Send/Recv: the k-th send from A to B with tag t meets the k-th receive
  /// on B from A with tag t.
  int64_t tag = 0;
  /// Shown in the timeline; a default is made from the op when empty.
  std::string label;
  /// The pipeline stage and microbatch the op belongs to (-1: none). The
  /// microbatch also tells which request of a stream the op serves.
  int stage = -1;
  int64_t microbatch = -1;
  /// Compute, optional: the ops it runs (their seconds summing to
  /// `seconds`), which the timeline's trace names one by one.
  TimelineOps ops;

  /// A kernel (or several) taking `seconds`.
  static SimOp compute(double seconds, llvm::StringRef label = "");
  /// A collective over `participants` (cluster devices).
  static SimOp collectiveOp(CollectiveKind kind, double bytes,
                            std::vector<int> participants, int64_t id,
                            llvm::StringRef label = "");
  /// A chain broadcast of `bytes` along `chain` (cluster devices, the root
  /// first) in `chunks` chunks: a collective every device of the chain
  /// takes part in.
  static SimOp broadcast(std::vector<int> chain, double bytes, int chunks,
                         int64_t id, llvm::StringRef label = "");
  /// A blocking send of `bytes` to device `to`.
  static SimOp send(int to, double bytes, int64_t tag = 0,
                    llvm::StringRef label = "");
  /// A blocking receive of `bytes` from device `from`.
  static SimOp recv(int from, double bytes, int64_t tag = 0,
                    llvm::StringRef label = "");
  /// Sets the stage and microbatch; returns *this for chaining.
  SimOp &at(int stage, int64_t microbatch);
};

/// Every device's program, and how its microbatches make requests.
struct SimProgram {
  /// Indexed by cluster device: that device's ops in program order. May be
  /// shorter than the cluster's device list; the other devices run nothing
  /// and get no row in the timeline, nor does a device with no ops.
  std::vector<std::vector<SimOp>> devices;
  /// A stream of `requests` requests, each of `microbatchesPerRequest`
  /// microbatches: microbatch m serves request m / microbatchesPerRequest.
  /// Ops must name microbatches below requests x microbatchesPerRequest.
  int64_t requests = 1;
  int64_t microbatchesPerRequest = 1;
  /// The timeline's title.
  std::string title;
};

/// Tuning knobs of the simulation.
struct SimOptions {
  /// False: every transfer runs at its link's full speed, as the closed
  /// forms assume (to compare with them, or to see what contention costs).
  bool contention = true;
  /// The simulation stops with an error after this many events (a work
  /// count, never wall time, so the outcome is deterministic).
  int64_t maxEvents = 50'000'000;
};

/// Checks `program` against `cluster` and pairs its communication: devices
/// in range, seconds and bytes finite and non-negative, collectives whose
/// k-th occurrence of an id exists on every participant with the same
/// participants, kind and bytes, sends and receives that pair up with the
/// same bytes, stages and microbatches in range. The error names the device
/// (index and name), the op's index and what is wrong.
llvm::Error verifySimProgram(const Cluster &cluster, const SimProgram &program);

//===----------------------------------------------------------------------===//
// Output
//===----------------------------------------------------------------------===//

/// When one op of one device ran.
struct SimOpTiming {
  /// When the device reached the op (the end of its previous op).
  double arrive = 0;
  /// When it started: arrive for compute; when the last participant
  /// arrived for communication.
  double start = 0;
  double end = 0;
  /// Communication: the device whose arrival started it (the last to
  /// arrive; the lowest index on a tie) and that device's op; -1 for
  /// compute.
  int startedBy = -1;
  int startedByOp = -1;
};

/// How one device spent the step.
struct SimDeviceSummary {
  /// The cluster device.
  int device = 0;
  /// Its stage (most of its compute ops'; -1 for none).
  int stage = -1;
  double computeSeconds = 0, communicationSeconds = 0, waitSeconds = 0;
  /// Time after its last op (and any gap) until the makespan.
  double idleSeconds = 0;
  /// (wait + idle) / makespan; 0 for an empty run.
  double bubbleFraction = 0;
  /// Seconds its transfers lost to sharing a NIC rail.
  double contentionSeconds = 0;
};

/// One op on the critical path.
struct SimCriticalStep {
  int device = 0;
  /// Index into the device's program.
  int op = 0;
  double start = 0, end = 0;
  /// Compute or Communication, and the op's stage (-1: none).
  TimelineKind kind = TimelineKind::Compute;
  int stage = -1;
};

/// What bounds throughput.
enum class SimBottleneckKind {
  /// Nothing ran.
  None,
  /// A device's compute (its stage).
  Compute,
  /// A device's own link (its transfers and collectives, uncontended).
  Communication,
  /// A NIC rail shared by transfers running at once.
  Rail,
};

/// The resource that bounds throughput: the busiest device in the steady
/// state, or the rail that slowed its communication.
struct SimBottleneck {
  SimBottleneckKind kind = SimBottleneckKind::None;
  /// The busiest device and its stage.
  int device = -1;
  int stage = -1;
  /// For a rail: its node, index and direction.
  int node = -1, rail = -1;
  bool outbound = true;
  /// The device's busy fraction (compute + communication) in the window.
  double utilization = 0;
  /// A sentence, e.g. "stage 2 (gpu5): compute, busy 97% of the steady
  /// state".
  std::string description;
};

/// The predicted run.
struct SimResult {
  /// One track per device that has ops, in device order.
  Timeline timeline;
  /// Per track, in the same order.
  std::vector<SimDeviceSummary> devices;
  /// Indexed like SimProgram::devices: per op, when it ran.
  std::vector<std::vector<SimOpTiming>> timings;
  /// When the last op ends: the step latency (all requests).
  double makespanSeconds = 0;
  /// Per request, when its last op ends (-1 for a request without ops).
  std::vector<double> requestDoneSeconds;
  /// Requests per second: (R - 1) / (the last request's completion - the
  /// first's) for R >= 2 completed requests, 1 / makespan for one.
  double throughputPerSecond = 0;
  /// The busiest device's share of the time between the first and the last
  /// request's completion ([0, makespan] for one request) is measured here.
  double windowStart = 0, windowEnd = 0;
  /// The mean bubble fraction of the devices.
  double bubbleFraction = 0;
  /// The chain of ops that ends last, each started by the one before it,
  /// from the first to the last.
  std::vector<SimCriticalStep> criticalPath;
  SimBottleneck bottleneck;
  /// Events processed (a work count).
  int64_t events = 0;
};

/// Simulates `program` on `cluster`. Errors: those of verifySimProgram; a
/// deadlock (no device can make progress), naming each blocked device and
/// the op it waits in; a transfer over a link of no bandwidth; more than
/// options.maxEvents events. Deterministic.
llvm::Expected<SimResult> simulate(const Cluster &cluster,
                                   const SimProgram &program,
                                   const SimOptions &options = {});

/// A few readable lines: latency, throughput, bubble fraction, the
/// bottleneck and the critical path's make-up (for --report).
std::string describeSimResult(const SimResult &result);

//===----------------------------------------------------------------------===//
// Programs from pipeline plans
//===----------------------------------------------------------------------===//

/// One stage of a pipeline, per microbatch.
struct SimPipelineStage {
  /// Cluster devices of the stage's sub-mesh (SPMD: all run the same ops).
  std::vector<int> devices;
  /// Compute seconds of one microbatch on each device.
  double computeSeconds = 0;
  /// An all-reduce over the stage's devices after the compute (tensor
  /// parallelism); 0 for none.
  double allReduceBytes = 0;
  /// The activations sent to the next stage per microbatch (ignored on the
  /// last stage).
  double bytesToNext = 0;
};

/// A forward-only GPipe pipeline and the stream it serves.
struct SimPipeline {
  std::vector<SimPipelineStage> stages;
  int64_t microbatchesPerRequest = 1;
  int64_t requests = 1;
  std::string title;
};

/// The device programs of `pipeline`: for every microbatch in order, each
/// stage receives its input, computes, all-reduces and sends its output.
/// Between stages with s senders and r receivers, max(s, r) messages of
/// bytesToNext / max(s, r) bytes go from sender i mod s to receiver i mod r,
/// in order of i. Stages, then microbatches, are labelled on every op. The
/// caller checks the devices (simulate does).
SimProgram buildGPipeProgram(const SimPipeline &pipeline);

} // namespace weft::plan

#endif // WEFT_PLAN_SIMULATOR_H
