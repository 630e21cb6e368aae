//===- Pipeline.cpp - The CPU code generation pipelines -------------------===//
//
// Chains weft's code generation passes with upstream lowering, from weft ops
// with static shapes down to the LLVM dialect.
//
//===----------------------------------------------------------------------===//

#include "weft/Codegen/Passes.h"
#include "weft/WeftDialect.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::weft;

void mlir::weft::buildCpuBufferizationPipeline(
    OpPassManager &pm, const CpuCodegenPipelineOptions &options) {
  // Fold what static shapes make constant (shape arithmetic, auto_pad).
  pm.addPass(createCanonicalizerPass());
  // Elementwise math to linalg.generic, then merge producer-consumer chains
  // into single loop nests.
  pm.addNestedPass<func::FuncOp>(createWeftLowerToLinalg());
  pm.addNestedPass<func::FuncOp>(createLinalgElementwiseOpFusionPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // The model function becomes the runtime's program entry point.
  WeftExposeProgramABIOptions abi;
  abi.entry = options.entry;
  pm.addPass(createWeftExposeProgramABI(abi));
  // Heavy ops become kernel calls on static buffers.
  pm.addPass(createWeftBufferize());
  pm.addPass(createCanonicalizerPass());
  // Every buffer gets its place in the arena.
  WeftPlanMemoryOptions plan;
  plan.report = options.reportMemory;
  pm.addPass(createWeftPlanMemory(plan));
}

void mlir::weft::buildCpuCodegenPipeline(
    OpPassManager &pm, const CpuCodegenPipelineOptions &options) {
  buildCpuBufferizationPipeline(pm, options);
  // Kernel failures end the run; ops get profiling hooks.
  pm.addPass(createWeftInsertStatusChecks());
  // Vectorizable exp, tanh, erf, ... instead of scalar libm calls.
  pm.addPass(createWeftApproximateMath());
  // Loop nests, then everything to the LLVM dialect.
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  // Math with an LLVM intrinsic (exp, log, sqrt, ...) uses it; the rest
  // (tanh, erf, ...) calls libm.
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  // bf16 conversions as integer arithmetic: LLVM would call __truncsfbf2,
  // which libgcc lacks.
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

void mlir::weft::registerCodegenDialects(DialectRegistry &registry) {
  registry.insert<WeftDialect, func::FuncDialect, tensor::TensorDialect,
                  linalg::LinalgDialect, arith::ArithDialect, math::MathDialect,
                  memref::MemRefDialect, bufferization::BufferizationDialect,
                  scf::SCFDialect, affine::AffineDialect,
                  cf::ControlFlowDialect, LLVM::LLVMDialect>();
  registerWeftBufferizationModels(registry);
  // The LLVM conversions find their patterns through these interfaces.
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
}

void mlir::weft::registerCodegenPipelines() {
  PassPipelineRegistration<CpuCodegenPipelineOptions>(
      "weft-cpu-bufferize",
      "Lower static weft functions to a device program on planned buffers",
      buildCpuBufferizationPipeline);
  PassPipelineRegistration<CpuCodegenPipelineOptions>(
      "weft-cpu-codegen",
      "Lower static weft functions to a device program in the LLVM dialect",
      buildCpuCodegenPipeline);
}
