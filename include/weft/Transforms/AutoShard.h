//===- AutoShard.h - Choosing a sharding for every op -----------*- C++ -*-===//
//
// Builds Alpa's strategy graph of a weft function (strategies from the ops'
// sharding rules, costs from the cluster's cost model, resharding costs from
// the resharding planner), solves the ILP and writes the chosen shardings
// onto the ops. weftc calls it directly; the weft-auto-shard pass wraps it.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TRANSFORMS_AUTOSHARD_H
#define WEFT_TRANSFORMS_AUTOSHARD_H

#include "weft/Plan/Cluster.h"
#include "weft/Plan/Sharding.h"
#include "weft/Plan/ShardingILP.h"
#include "weft/Transforms/ShardedMemory.h"
#include "weft/WeftOps.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace mlir::weft {

namespace plan = ::weft::plan;

/// Whole-plan constraints a user can ask for (GSPMD-style: they restrict
/// the strategies; the ILP chooses among what is left).
enum class ShardingMode {
  /// Everything free.
  Auto,
  /// Weights replicated; every op splits its work over all mesh axes where
  /// it can (batch, sequence).
  DataParallel,
  /// Every weight of rank >= 2 split over all mesh axes.
  TensorParallel,
  /// Every device computes everything (the one-device program N times).
  Replicate,
};

enum class Objective {
  /// One batch's time through the mesh: compute plus communication.
  Latency,
  /// Batches streaming through: the same sum, but outputs may stay split
  /// (each device answers for its part of the batch), so gathering them is
  /// not charged.
  Throughput,
};

/// The mesh symbol of a one-mesh plan.
inline constexpr llvm::StringLiteral kMeshName = "mesh";

struct AutoShardOptions {
  plan::Cluster cluster;
  /// Index into cluster.meshes.
  int mesh = 0;
  /// The weft.mesh symbol the plan's shardings name (declared by autoShard):
  /// one mesh per pipeline stage lives in one module.
  std::string meshSymbol = kMeshName.str();
  /// World ranks of the mesh's positions, recorded on the weft.mesh op when
  /// the mesh is one stage of a pipeline (empty: the mesh is the world).
  std::vector<int64_t> meshWorldRanks;
  /// Names the plan in its errors ("stage 1"); empty for a one-mesh plan.
  std::string planLabel;
  ShardingMode mode = ShardingMode::Auto;
  Objective objective = Objective::Latency;
  plan::SolveOptions solve;
};

/// What the planner did, for reports and plan.json.
struct AutoShardReport {
  plan::Solution solution;
  int64_t graphNodes = 0, graphEdges = 0, liveSets = 0;
  int64_t strategies = 0;
  double buildSeconds = 0;
  double memoryBudgetBytes = 0;
  /// The plan's memory per device, resharding buffers included (the ILP's
  /// own figure, solution.peakMemoryBytes, counts op results only).
  ShardedMemory memory;
  /// Times the ILP was solved again with a tighter budget because the
  /// buffers resharding adds took the plan over the budget.
  int budgetTightenings = 0;
};

/// Module attribute names the planner writes.
inline constexpr llvm::StringLiteral kShardingAttr = "weft.sharding";
inline constexpr llvm::StringLiteral kOperandShardingAttr =
    "weft.operand_sharding";
inline constexpr llvm::StringLiteral kPredictedSecondsAttr =
    "weft.predicted_seconds";
inline constexpr llvm::StringLiteral kStrategyAttr = "weft.strategy";

/// Plans `module`'s main function: declares the mesh, annotates every op
/// with its result and operand shardings and its predicted time. Errors
/// (an infeasible memory budget, a solver failure) are emitted as
/// diagnostics on the module.
LogicalResult autoShard(ModuleOp module, const AutoShardOptions &options,
                        AutoShardReport &report);

/// Fills `options` from textual flags (a cluster file or preset, "2x2",
/// "auto", "latency", "4GB"); errors go to the module.
LogicalResult buildAutoShardOptions(ModuleOp module, llvm::StringRef cluster,
                                    llvm::StringRef mesh, llvm::StringRef mode,
                                    llvm::StringRef objective,
                                    llvm::StringRef deviceMemory,
                                    AutoShardOptions &options);

/// The planner's form of a sharding attribute (the mesh is implied).
plan::TensorSharding toTensorSharding(ShardingAttr attr);
/// The attribute form of `sharding` on `mesh`.
ShardingAttr toShardingAttr(FlatSymbolRefAttr mesh,
                            const plan::TensorSharding &sharding);

/// Parses a --sharding value.
std::optional<ShardingMode> parseShardingMode(llvm::StringRef text);
/// The --sharding value of `mode` ("auto", "dp", "tp", "replicate").
llvm::StringRef shardingModeName(ShardingMode mode);

} // namespace mlir::weft

#endif // WEFT_TRANSFORMS_AUTOSHARD_H
