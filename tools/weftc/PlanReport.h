//===- PlanReport.h - plan.json and weftc --report --------------*- C++ -*-===//
//
// One summary of a sharding plan, read once from the planned module and
// device 0's partitioned program, then written as plan.json and printed as
// weftc --report's table, so that the two cannot disagree.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TOOLS_WEFTC_PLANREPORT_H
#define WEFT_TOOLS_WEFTC_PLANREPORT_H

#include "weft/Transforms/AutoShard.h"
#include "weft/WeftOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace mlir::weft {

/// What weftc knows of one device's program.
struct DeviceSummary {
  int64_t weightBytes = 0, arenaBytes = 0;
  double flops = 0;
  /// Index of the device's program (devices with equal programs share one).
  int program = 0;
};

/// One op of the planned function.
struct PlannedOp {
  /// The ONNX node's name (a constrained tensor's name for weft.shard).
  std::string name;
  /// The op's name, e.g. "weft.matmul".
  std::string kind;
  /// Per result: its type and the sharding the plan chose.
  std::vector<RankedTensorType> types;
  std::vector<ShardingAttr> shardings;
  /// The op's predicted time, with the resharding of its operands.
  double seconds = 0;
};

/// One collective of device 0's program.
struct PlannedCollective {
  /// "all_gather", "reduce_scatter", ...
  std::string kind;
  /// The name of the op it was made for (its location).
  std::string forName;
  std::vector<int16_t> axes;
  double inputBytes = 0, outputBytes = 0;
  /// Index into PlanSummary::ops of the op whose operand it brings into
  /// shape; -1 for the graph outputs, which leave whole.
  int op = -1;
};

/// One distinct partitioned program: the devices that run it and its
/// collectives.
struct ProgramSummary {
  int id = 0;
  std::vector<int64_t> devices;
  std::vector<PlannedCollective> collectives;
};

/// Everything plan.json and --report say.
/// The event simulation of the devices' programs (plan.json's `simulated`),
/// for a mesh and for a pipeline.
struct SimulatedSummary {
  /// Whether it ran (false: no `simulated` object).
  bool ran = false;
  /// One request's makespan and the throughput of a stream of
  /// `streamRequests` requests.
  double latencySeconds = 0;
  double throughputPerSecond = 0;
  int64_t streamRequests = 0;
  /// The mean bubble fraction of one request's devices.
  double bubbleFraction = 0;
  /// What bounds the stream's throughput, as a sentence.
  std::string bottleneck;
  /// The compute intervals of one request's timeline.
  int64_t computeIntervals = 0;
  /// describeSimResult's lines for one request, then the stream's.
  std::string lines;
};

/// plan.json's `simulated` object, when the simulation ran.
void writeSimulatedJson(llvm::json::OStream &json,
                        const SimulatedSummary &simulated);

/// The simulation's lines, indented as the tables are.
void printSimulatedLines(const SimulatedSummary &simulated,
                         llvm::raw_ostream &os);

struct PlanSummary {
  std::string modelName, clusterName;
  std::vector<int64_t> mesh;
  /// The mesh's cluster device indices, in mesh order.
  std::vector<int64_t> meshDevices;
  ShardingMode mode = ShardingMode::Auto;
  Objective objective = Objective::Latency;
  AutoShardReport report;
  std::vector<PlannedOp> ops;
  std::vector<PlannedCollective> collectives;
  /// Every distinct partitioned program (addProgram).
  std::vector<ProgramSummary> programs;
  /// The planned ops in order, which collectives' "op" indexes.
  std::vector<Operation *> plannedOps;
  std::vector<DeviceSummary> devices;
  /// False for --emit=plan: no program was compiled, arenas are unknown.
  bool compiled = false;
  /// The sum of the ops' predicted seconds.
  double totalSeconds = 0;
  /// --microbatches: the batch runs as this many passes of the program.
  int64_t microbatches = 1;
  SimulatedSummary simulated;
};

/// Reads the plan: `planned` is the module autoShard annotated, `device0`
/// device 0's program straight after SPMD partitioning.
PlanSummary summarizePlan(ModuleOp planned, ModuleOp device0,
                          const AutoShardOptions &options,
                          const AutoShardReport &report,
                          std::vector<DeviceSummary> devices, bool compiled,
                          StringRef modelName);

/// Adds a distinct partitioned program run by `devices` (before codegen).
void addProgram(PlanSummary &plan, ModuleOp device,
                std::vector<int64_t> devices);

/// plan.json's text (docs/Sharding.md).
std::string planJson(const PlanSummary &plan);

/// Prints the plan as tables: ops in program order with their shapes,
/// shardings, collectives and predicted times; then devices, totals and the
/// ILP's figures.
void printPlanReport(const PlanSummary &plan, llvm::raw_ostream &os);

/// A sharding in short form: per dimension S(axes) or R, joined by 'x',
/// then "+P(axes)" for pending partial sums, e.g. "S(0)xR", "RxS(0,1)+P(1)".
std::string shortSharding(ShardingAttr sharding);

} // namespace mlir::weft

#endif // WEFT_TOOLS_WEFTC_PLANREPORT_H
