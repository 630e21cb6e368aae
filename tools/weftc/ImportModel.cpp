//===- ImportModel.cpp - The model weftc compiles -------------------------===//

#include "ImportModel.h"
#include "DeviceCompile.h"
#include "ShardingFile.h"

#include "weft/Codegen/ProgramABI.h"
#include "weft/ModelFunction.h"
#include "weft/Transforms/Microbatch.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;
using namespace mlir::weft;

static std::string formatType(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << type;
  return s;
}

/// Reports every input dimension that is still symbolic; true if none.
static bool checkStaticInputs(func::FuncOp func) {
  std::string problems;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto type = dyn_cast<RankedTensorType>(func.getArgument(i).getType());
    if (!type || type.hasStaticShape())
      continue;
    std::string name = "input" + std::to_string(i);
    if (auto attr = func.getArgAttrOfType<StringAttr>(i, "weft.name"))
      name = attr.str();
    std::string dims;
    for (auto [d, size] : llvm::enumerate(type.getShape()))
      if (ShapedType::isDynamic(size))
        dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    problems += "  input '" + name + "' (" + formatType(type) +
                "): dimension(s) " + dims + " are symbolic\n";
  }
  if (problems.empty())
    return true;
  llvm::WithColor::error(llvm::errs(), "weftc")
      << "a package is compiled for fixed shapes; fix these with "
         "--input-shape=NAME=D0xD1x...:\n"
      << problems;
  return false;
}

/// --microbatches=M: checks that the batch of `module` splits into M
/// microbatches and replaces it with the model imported at batch B/M
/// (marked with its microbatch count for the program signature).
static LogicalResult
importMicrobatchModel(MLIRContext &context, StringRef modelPath,
                      int microbatches, const OnnxImportOptions &options,
                      OwningOpRef<ModuleOp> &module, ImportedTensors *tensors) {
  func::FuncOp full = lookupModelFunction(*module);
  FailureOr<BatchDims> dims = analyzeBatchSplit(full, microbatches);
  if (failed(dims))
    return failure();
  OnnxImportOptions microOptions = options;
  microOptions.batchDivisor = microbatches;
  OwningOpRef<ModuleOp> micro =
      importOnnxFile(&context, modelPath, microOptions, tensors);
  if (!micro) {
    emitError(UnknownLoc::get(&context))
        << "--microbatches=" << microbatches
        << ": the model does not import at batch " << dims->batch / microbatches
        << " (above): it bakes in its batch size";
    return failure();
  }
  if (failed(checkMicrobatchModel(full, *dims,
                                  lookupModelFunction(*micro),
                                  microbatches)))
    return failure();
  (*micro)->setAttr(
      kProgramMicrobatchesAttr,
      IntegerAttr::get(IntegerType::get(&context, 64), microbatches));
  module = std::move(micro);
  return success();
}

/// Shapes first: every result must be static once the inputs are. Runs the
/// canonicalizer, checks that the sharding file's `constrained` tensors
/// survived its folding, and refuses a result shape known only at run time.
/// Returns 0, or the exit code of a problem it reported.
static int foldToStaticShapes(MLIRContext &context, ModuleOp module,
                              func::FuncOp func, StringRef shardingFile,
                              ArrayRef<std::string> constrained) {
  PassManager pm(&context);
  pm.addPass(createCanonicalizerPass());
  if (failed(pm.run(module)))
    return stageFailure();
  if (!shardingFile.empty() &&
      failed(checkConstraintsAfterFolding(module, shardingFile, constrained)))
    return kExitBadInput;
  std::string dynamic;
  func.walk([&](Operation *op) {
    for (Value result : op->getResults())
      if (auto t = dyn_cast<RankedTensorType>(result.getType());
          t && !t.hasStaticShape()) {
        op->emitError() << "result shape " << t
                        << " depends on values known only at run time; "
                           "weftc compiles fixed shapes";
        dynamic = "yes";
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  if (!dynamic.empty())
    return kExitBadInput;
  return 0;
}

int mlir::weft::importModel(MLIRContext &context, const WeftcOptions &options,
                            const OnnxImportOptions &importOptions,
                            ArrayRef<int64_t> meshShape,
                            ArrayRef<StageRequest> stageRequests,
                            StageClock &clock, ImportedModel &model) {
  // The importer's names of tensors, for the files that name them.
  ImportedTensors tensors;
  ImportedTensors *namedTensors =
      options.shardingFile.empty() && options.pipelineFile.empty() ? nullptr
                                                                   : &tensors;
  OwningOpRef<ModuleOp> &module = model.module;
  module =
      importOnnxFile(&context, options.modelPath, importOptions, namedTensors);
  if (!module)
    return kExitBadInput;
  clock.lap("import");
  func::FuncOp func = lookupModelFunction(*module);
  if (!func)
    return refuse("the imported model has no model function");
  if (options.microbatches < 1)
    return refuse("--microbatches=" + std::to_string(options.microbatches) +
                  " must be at least 1");
  if (options.microbatches > 1) {
    if (failed(importMicrobatchModel(context, options.modelPath,
                                     options.microbatches, importOptions,
                                     module, namedTensors)))
      return kExitBadInput;
    func = lookupModelFunction(*module);
    clock.lap("import of a microbatch");
  }
  if (!checkStaticInputs(func))
    return kExitBadInput;
  model.inputs = describe(func, false);

  // A sharding file is checked against the mesh.
  std::vector<std::string> constrained;
  if (!options.shardingFile.empty()) {
    // Before the canonicalizer, which folds and replaces the ops the names
    // point to.
    if (failed(applyShardingFile(*module, options.shardingFile, meshShape,
                                 tensors, constrained)))
      return kExitBadInput;
  }

  // The stages' end tensors, while the importer's names point at values.
  if (!options.pipelineFile.empty() &&
      failed(markStageEnds(func, options.pipelineFile, stageRequests, tensors)))
    return kExitBadInput;

  if (int code = foldToStaticShapes(context, *module, func,
                                    options.shardingFile, constrained))
    return code;
  model.outputs = describe(func, true);
  model.name = llvm::sys::path::filename(options.modelPath).str();
  return 0;
}
