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
#include "llvm/ADT/STLFunctionalExtras.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

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
/// (a weft.shard on a mesh other than options.meshSymbol, an infeasible
/// memory budget, a solver failure) are emitted as diagnostics.
LogicalResult autoShard(ModuleOp module, const AutoShardOptions &options,
                        AutoShardReport &report);

/// Fills `options` from textual flags (a cluster file or preset, "2x2",
/// "auto", "latency", "4GB"); errors go to the module.
LogicalResult buildAutoShardOptions(ModuleOp module, llvm::StringRef cluster,
                                    llvm::StringRef mesh, llvm::StringRef mode,
                                    llvm::StringRef objective,
                                    llvm::StringRef deviceMemory,
                                    AutoShardOptions &options);

/// The planner's form of a sharding attribute, naming the attribute's mesh.
plan::TensorSharding toTensorSharding(ShardingAttr attr);
/// The attribute form of `sharding`, on the mesh the sharding names.
ShardingAttr toShardingAttr(MLIRContext *context,
                            const plan::TensorSharding &sharding);
/// Checks that every sharding in `func` (its ops', its arguments' and its
/// results') names `mesh`, which is `role` ("the partition's mesh"); else
/// emits "has a sharding on mesh @a, not on <role> @b" on the op that has
/// it and fails.
LogicalResult verifyShardingsOnMesh(func::FuncOp func, FlatSymbolRefAttr mesh,
                                    llvm::StringRef role);

/// Parses a --sharding value.
std::optional<ShardingMode> parseShardingMode(llvm::StringRef text);
/// The --sharding value of `mode` ("auto", "dp", "tp", "replicate").
llvm::StringRef shardingModeName(ShardingMode mode);


//===----------------------------------------------------------------------===//
// Strategy graphs of part of a function
//===----------------------------------------------------------------------===//
//
// autoShard plans a whole function; the stage planner prices ranges of one
// on sub-meshes (weft/Transforms/StagePricing.h). Both build their graphs
// with StrategyGraphBuilder, so a range priced alone and the same ops
// planned by autoShard are the same ILP.

/// The ops one plan covers and what crosses its boundary.
struct PlanScope {
  /// Values the ops use but do not make, in graph order: they arrive whole
  /// on every device (autoShard: the function's arguments).
  std::vector<Value> inputs;
  /// Ops of the function's body in body order, the terminator excluded.
  std::vector<Operation *> ops;
  /// Values made by `ops` that must end whole on every device, repeats kept
  /// (autoShard: the returned values). They live to the end of the plan.
  std::vector<Value> outputs;
};

/// autoShard's scope of `func`: every argument, every op of the body, the
/// returned values.
PlanScope wholeFunctionScope(func::FuncOp func);

/// A planned op or input: its strategies and how they read as shardings.
/// Made and owned by StrategyGraphBuilder.
struct PlannedNode;

/// The sharding one plan gives an op: what autoShard writes on it. Every
/// sharding names the mesh of the plan.
struct OpSharding {
  Operation *op = nullptr;
  /// Per result.
  std::vector<plan::TensorSharding> results;
  /// Per operand; nullopt for operands that are not data (a shape, slice
  /// bounds), which stay as they are.
  std::vector<std::optional<plan::TensorSharding>> operands;
  /// The op's time plus that of bringing its operands into shape.
  double seconds = 0;
};

/// Writes `sharding` on `op` as autoShard does (kShardingAttr,
/// kOperandShardingAttr, kPredictedSecondsAttr), each attribute naming its
/// sharding's mesh. `op` may be a copy of sharding.op with the same
/// operands and results.
void writeOpSharding(Operation *op, const OpSharding &sharding);
/// The kShardingAttr and kOperandShardingAttr values writeOpSharding
/// writes for `sharding`.
std::pair<ArrayAttr, ArrayAttr> opShardingAttrs(MLIRContext *context,
                                                const OpSharding &sharding);

/// A scope's strategy graph and how its choices read.
struct ScopeGraph {
  /// Nodes: the scope's inputs, then its ops, then one node the outputs
  /// flow into. Its budget is the mesh's device memory.
  plan::StrategyGraph graph;
  /// Per graph node but the last: what it plans (owned by the builder,
  /// which must outlive this graph).
  std::vector<const PlannedNode *> planned;
  /// Graph node of the scope's first op (= the number of inputs).
  int firstOpNode = 0;

  /// The sharding of every op of the scope for `choice` (a strategy per
  /// graph node), in scope order.
  std::vector<OpSharding> read(llvm::ArrayRef<int> choice) const;
  /// The sharding of the op of graph node `index` (firstOpNode <= index <
  /// planned.size()) under its strategy `strategy`, its seconds left 0.
  OpSharding readNode(int index, int strategy) const;
};

/// Builds the strategy graphs of scopes of one function on one mesh in one
/// mode; every sharding it reads out names the mesh's symbol. Each op's
/// strategies and costs, each edge's resharding prices and each value's
/// resharding plans are worked out once and kept, so graphs of overlapping
/// scopes cost only their assembly after the first. The function must not
/// change while the builder lives.
class StrategyGraphBuilder {
public:
  /// `mesh` must satisfy plan::verifyMesh for `cluster`; the plans name it
  /// `meshSymbol` (the weft.mesh they are written for, which need not be
  /// the cluster's name of the mesh). A weft.shard pin is laid on this mesh
  /// whatever mesh it names: autoShard refuses pins on another mesh, and
  /// the stage planner prices the pins weftc re-targets to each stage's
  /// mesh.
  StrategyGraphBuilder(const plan::Cluster &cluster, const plan::Mesh &mesh,
                       llvm::StringRef meshSymbol, ShardingMode mode,
                       Objective objective);
  ~StrategyGraphBuilder();
  StrategyGraphBuilder(const StrategyGraphBuilder &) = delete;
  StrategyGraphBuilder &operator=(const StrategyGraphBuilder &) = delete;

  ScopeGraph build(const PlanScope &scope);

  /// What the kept work saved.
  struct Stats {
    /// Ops and edges priced, and taken from what an earlier build priced.
    int64_t opsPriced = 0, opsReused = 0;
    int64_t edgesPriced = 0, edgesReused = 0;
  };
  const Stats &stats() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// The ILP prices each op's results, not the buffers resharding adds (they
/// depend on two ops' choices). Counts `solution`'s memory with
/// `countMemory` (ShardedMemory's count of a choice per graph node), and
/// while it is over `graph`'s budget solves again with the ILP's budget
/// lowered by the excess, a bounded number of times. On success `solution`
/// and `memory` are a plan within the budget; otherwise the error says what
/// the last plan needs, and they are that plan's. `tightenings` counts the
/// solves that gave a tighter plan.
llvm::Error fitPlanToBudget(
    const plan::StrategyGraph &graph, const plan::SolveOptions &options,
    llvm::function_ref<ShardedMemory(llvm::ArrayRef<int>)> countMemory,
    plan::Solution &solution, ShardedMemory &memory, int &tightenings);

} // namespace mlir::weft

#endif // WEFT_TRANSFORMS_AUTOSHARD_H
