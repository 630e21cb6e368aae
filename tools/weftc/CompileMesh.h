//===- CompileMesh.h - Compiling the model on one mesh ----------*- C++ -*-===//
//
// weftc without --stages or --pipeline-file: the model on one device,
// lowered and written as MLIR, LLVM IR, an object file or a package; or
// planned over a mesh of several devices (or for --emit=plan), each device's
// partitioned program compiled, and written as a package, plan.json or the
// partitioned programs.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TOOLS_WEFTC_COMPILEMESH_H
#define WEFT_TOOLS_WEFTC_COMPILEMESH_H

#include "Driver.h"
#include "ImportModel.h"
#include "Options.h"

#include "weft/Transforms/AutoShard.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Target/TargetMachine.h"

namespace mlir::weft {

/// Plans the model over the mesh of `shardOptions`, partitions it into one
/// program per device and, unless --emit=plan|mlir, compiles each. Returns
/// 0, or the exit code of a failure it reported.
int compileMesh(MLIRContext &context, const WeftcOptions &options,
                ImportedModel &model, const AutoShardOptions &shardOptions,
                llvm::TargetMachine &machine, StageClock &clock,
                const char *argv0);

/// Compiles the model for the one device of the mesh of `shardOptions`, as
/// far as --emit asks. Returns 0, or the exit code of a failure it reported.
int compileOneDevice(MLIRContext &context, const WeftcOptions &options,
                     ImportedModel &model, const AutoShardOptions &shardOptions,
                     llvm::TargetMachine &machine, StageClock &clock,
                     const char *argv0);

} // namespace mlir::weft

#endif // WEFT_TOOLS_WEFTC_COMPILEMESH_H
