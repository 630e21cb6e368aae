//===- Stages.h - Which ops and devices each pipeline stage gets -*- C++ -*-===//
//
// The two ways weftc is told to build a pipeline: --stages=N (the balanced
// rule of weft/Plan/StageCut.h over the cost model's op times) and
// --pipeline-file=F.json (the user's cuts, devices, mesh shapes and
// sharding modes; format in docs/Pipelines.md). Both end in a
// StageAssignment and one StageMesh per stage.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TOOLS_WEFTC_STAGES_H
#define WEFT_TOOLS_WEFTC_STAGES_H

#include "weft/Import/ONNX/Importer.h"
#include "weft/Plan/Cluster.h"
#include "weft/Transforms/AutoShard.h"
#include "weft/Transforms/Pipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::weft {

/// One stage as the user or the balanced rule gives it.
struct StageRequest {
  /// Cluster device indices, in mesh order.
  std::vector<int64_t> devices;
  std::vector<int64_t> meshShape;
  /// --sharding for this stage; the command line's when absent.
  std::optional<ShardingMode> mode;
  /// ONNX tensor names where the stage ends (none for the last stage).
  std::vector<std::string> ends;
};

/// Reads and checks a pipeline file against a cluster of `numDevices`
/// devices; errors name the file, the JSON path and the problem.
llvm::Expected<std::vector<StageRequest>>
readPipelineFile(llvm::StringRef path, int64_t numDevices);

/// Marks the ops that compute each stage's end tensors (before the
/// canonicalizer, while the importer's names still point at values).
LogicalResult markStageEnds(func::FuncOp func, llvm::StringRef path,
                            llvm::ArrayRef<StageRequest> stages,
                            const ImportedTensors &tensors);

/// Stage k takes every op (not yet in an earlier stage) that its end
/// tensors depend on; the last stage takes the rest. Reads the marks of
/// markStageEnds after canonicalization.
FailureOr<StageAssignment> assignStagesByEnds(func::FuncOp func,
                                              llvm::StringRef path,
                                              llvm::ArrayRef<StageRequest>
                                                  stages);

/// --stages=N: cuts main's ops (in order) into N runs of balanced predicted
/// time on one device of the cluster, and deals out `devices` (cluster
/// indices, in order) to them in proportion to their work, as contiguous
/// 1-D meshes. `work` gets each stage's predicted seconds on one device.
FailureOr<StageAssignment>
assignBalancedStages(func::FuncOp func, int64_t numStages,
                     const ::weft::plan::Cluster &cluster,
                     llvm::ArrayRef<int> devices,
                     std::vector<StageRequest> &stages,
                     std::vector<double> &work);

/// --stages=auto: what the stage planner optimizes, and its limits.
struct AutoStageOptions {
  Objective objective = Objective::Latency;
  /// Microbatches per batch (the model is already imported at B/M).
  int64_t microbatches = 1;
  /// At most this many stages (0: no limit).
  int64_t maxStages = 0;
  /// The model's ops are clustered into at most this many layers (0: as
  /// many as keep the stage prices to about 320, between 4 and 16: 16 for
  /// 2 sub-mesh shapes, 8 for 9).
  int64_t maxLayers = 0;
  ShardingMode mode = ShardingMode::Auto;
  /// How the pipeline's transfers will be planned (--reshard-method): the
  /// DP prices the tensors between stages with it.
  ::weft::plan::ReshardMethod reshardMethod =
      ::weft::plan::ReshardMethod::Balanced;
};

/// --stages=auto: clusters main's ops into a chain of layers, prices runs
/// of them on every sub-mesh of `devices` (cluster indices) with the
/// intra-operator planner, and lets the stage DP (weft/Plan/StagePlanner.h)
/// choose the stages, their sub-meshes and their placement, the transfers
/// between stages included. `report` gets the plan and its lower bound;
/// `requestSeconds`, when given, the plan's objective per request (a batch
/// of `options.microbatches` microbatches): its latency, or for throughput
/// the microbatches times the slowest cycle (the pipeline full), so that
/// plans of different microbatch counts compare.
FailureOr<StageAssignment>
assignAutoStages(func::FuncOp func, const ::weft::plan::Cluster &cluster,
                 llvm::ArrayRef<int> devices, const AutoStageOptions &options,
                 std::vector<StageRequest> &stages, std::string &report,
                 double *requestSeconds = nullptr);

/// The bytes of a static tensor type (a byte per element at least), 0 for
/// anything else.
double tensorBytes(Type type);

/// The predicted seconds of `op` on cluster device `device` alone.
double opSecondsOnOneDevice(Operation *op, const ::weft::plan::Cluster &cluster,
                            int device);

} // namespace mlir::weft

#endif // WEFT_TOOLS_WEFTC_STAGES_H
