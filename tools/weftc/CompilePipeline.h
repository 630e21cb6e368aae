//===- CompilePipeline.h - weftc --stages and --pipeline-file ---*- C++ -*-===//
//
// A pipeline: the model cut into stages, each planned on its own sub-mesh
// of the cluster's devices, and one program per rank (the stages' devices
// in cluster order), with the transfers between stages; written as a
// package, plan.json, or each rank's program (docs/Pipelines.md).
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TOOLS_WEFTC_COMPILEPIPELINE_H
#define WEFT_TOOLS_WEFTC_COMPILEPIPELINE_H

#include "Driver.h"
#include "ImportModel.h"
#include "Options.h"
#include "Stages.h"

#include "weft/Transforms/AutoShard.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Target/TargetMachine.h"

#include <vector>

namespace mlir::weft {

/// --stages or --pipeline-file: cuts the model into stages on sub-meshes,
/// plans each stage on its mesh, and compiles one program per rank (ranks
/// are the stages' devices in cluster order). `stages` holds the pipeline
/// file's stages, or is filled by the balanced rule. Returns 0, or the exit
/// code of a failure it reported.
int compilePipeline(MLIRContext &context, const WeftcOptions &options,
                    ImportedModel &model, std::vector<StageRequest> stages,
                    const AutoShardOptions &shardOptions,
                    llvm::TargetMachine &machine, StageClock &clock,
                    const char *argv0);

/// --microbatches=auto (with --stages=auto): imports the model at every
/// divisor M of its batch up to --max-microbatches, plans its stages for
/// each, prints one line per M, and sets `options.microbatches` to the M
/// whose plan is best per request (ties to fewer microbatches). An M the
/// model does not split into is skipped with its reason. Returns 0, or the
/// exit code of a failure it reported.
int chooseMicrobatches(MLIRContext &context, WeftcOptions &options,
                       const OnnxImportOptions &importOptions,
                       const AutoShardOptions &shardOptions,
                       llvm::ArrayRef<StageRequest> stageRequests);

} // namespace mlir::weft

#endif // WEFT_TOOLS_WEFTC_COMPILEPIPELINE_H
