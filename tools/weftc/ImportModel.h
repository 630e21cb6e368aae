//===- ImportModel.h - The model weftc compiles -----------------*- C++ -*-===//
//
// The ONNX model read for compiling: imported at batch B/M for
// --microbatches=M, its inputs fixed, the sharding file's constraints and
// the pipeline file's stage ends marked while the importer's names still
// point at values, then folded until every shape is static.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TOOLS_WEFTC_IMPORTMODEL_H
#define WEFT_TOOLS_WEFTC_IMPORTMODEL_H

#include "Driver.h"
#include "Options.h"
#include "Stages.h"

#include "weft/Codegen/Package.h"
#include "weft/Import/ONNX/Importer.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>
#include <vector>

namespace mlir::weft {

/// The model as imported, with its static shapes checked: ready to compile.
struct ImportedModel {
  OwningOpRef<ModuleOp> module;
  std::vector<TensorDescription> inputs, outputs;
  /// The model file's name, for the manifest and messages.
  std::string name;
};

/// Imports the model (at batch B/M for --microbatches=M), checks that its
/// inputs are fixed, adds the sharding file's constraints on a mesh of
/// `meshShape` and marks the ends of the pipeline file's `stageRequests`,
/// then folds it to static shapes. Returns 0, or the exit code of a problem
/// it reported.
int importModel(MLIRContext &context, const WeftcOptions &options,
                const OnnxImportOptions &importOptions,
                llvm::ArrayRef<int64_t> meshShape,
                llvm::ArrayRef<StageRequest> stageRequests, StageClock &clock,
                ImportedModel &model);

} // namespace mlir::weft

#endif // WEFT_TOOLS_WEFTC_IMPORTMODEL_H
