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
#include "mlir/Conversion/GPUCommon/GPUCommonPass.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/LLVMIR/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mlir::weft;

static void addHostLoweringToLLVM(OpPassManager &pm, bool withGpuLaunches);

void mlir::weft::buildCpuKernelFormsPipeline(
    OpPassManager &pm, const CpuCodegenPipelineOptions &options) {
  // Fold what static shapes make constant (shape arithmetic, auto_pad).
  pm.addPass(createCanonicalizerPass());
  // LayerNorm written out op by op becomes one normalization kernel.
  pm.addNestedPass<func::FuncOp>(createWeftFuseLayerNorm());
  pm.addPass(createCanonicalizerPass());
  // A Relu or Clip after a convolution becomes the kernel's clamp.
  if (options.fuseConvClamp)
    pm.addNestedPass<func::FuncOp>(createWeftFuseConvClamp());
  // Tensors that only pass between convolutions (MobileNet's blocks) go
  // channels-last, where the kernels need no transposes.
  if (options.convChannelsLast)
    pm.addNestedPass<func::FuncOp>(createWeftConvChannelsLast());
  // Their 1x1 convolutions' model weights go into the weights file in the
  // panels the kernel reads.
  if (options.convChannelsLast && options.packConvWeights)
    pm.addNestedPass<func::FuncOp>(createWeftPackConvWeights());
  // Tensors that only pass between convolutions oneDNN runs (ResNet's)
  // go channel-blocked, its layout, and need no reorders.
  if (options.convBlocked)
    pm.addNestedPass<func::FuncOp>(createWeftConvBlocked());
}

void mlir::weft::buildCpuBufferizationPipeline(
    OpPassManager &pm, const CpuCodegenPipelineOptions &options) {
  buildCpuKernelFormsPipeline(pm, options);
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
  // Receives get buffers where the next run's messages arrive early.
  if (options.stageReceives)
    pm.addPass(createWeftStageReceives());
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
  // Loop nests; the large parallel ones run on the runtime's threads.
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  pm.addPass(createWeftParallelizeLoops());
  // Then everything to the LLVM dialect.
  addHostLoweringToLLVM(pm, /*withGpuLaunches=*/false);
}

/// Host code down to the LLVM dialect: the tail both targets share.
static void addHostLoweringToLLVM(OpPassManager &pm, bool withGpuLaunches) {
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
  // gpu.launch_func -> mgpu* runtime calls (runtime/cuda/GpuLauncher.cpp).
  if (withGpuLaunches)
    pm.addPass(createGpuToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

void mlir::weft::buildCudaKernelPipeline(
    OpPassManager &pm, const CudaCodegenPipelineOptions &options) {
  CpuCodegenPipelineOptions common;
  common.entry = options.entry;
  common.reportMemory = options.reportMemory;
  // NCCL's receives are queued on the device's stream already; emulated on
  // the CPU, they are MPI's.
  common.stageReceives = options.emulateOnCpu;
  // cuDNN's path has no fused clamp (runtime/cuda/kernels/Conv.cpp).
  common.fuseConvClamp = false;
  common.convChannelsLast = false;
  common.packConvWeights = false;
  common.convBlocked = false;
  buildCpuBufferizationPipeline(pm, common);
  // Constant data moves to the device's weights before anything reads it.
  WeftDeviceConstantsToWeightsOptions constants;
  constants.file = options.constantsFile;
  pm.addPass(createWeftDeviceConstantsToWeights(constants));
  pm.addPass(createWeftInsertStatusChecks());
  if (!options.emulateOnCpu)
    pm.addPass(createWeftRetargetKernelsToCuda());
  pm.addNestedPass<func::FuncOp>(createLinalgGeneralizeNamedOpsPass());
  pm.addNestedPass<func::FuncOp>(createWeftLinalgToGpu());
  pm.addPass(createCanonicalizerPass());
}

void mlir::weft::buildCudaCodegenPipeline(
    OpPassManager &pm, const CudaCodegenPipelineOptions &options) {
  buildCudaKernelPipeline(pm, options);
  if (options.emulateOnCpu) {
    pm.addNestedPass<func::FuncOp>(createWeftGpuLaunchToLoops());
    addHostLoweringToLLVM(pm, /*withGpuLaunches=*/false);
    return;
  }
  pm.addPass(createGpuKernelOutliningPass());
  // One NVVM target per architecture; gpu-module-to-binary then makes PTX
  // for each, and weft-build-gpu-fatbin assembles them into one fatbin.
  // PTX ISA 8.6 is CUDA 12.8's: CUDA 13 rejects the default PTX 6.0.
  for (int arch : options.gpuArchs) {
    GpuNVVMAttachTargetOptions target;
    target.chip = "sm_" + std::to_string(arch);
    target.features = "+ptx86";
    target.optLevel = 3;
    pm.addPass(createGpuNVVMAttachTarget(target));
  }
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createLowerAffinePass());
  kernels.addPass(createSCFToControlFlowPass());
  kernels.addPass(createConvertGpuOpsToNVVMOps());
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createReconcileUnrealizedCastsPass());
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa";
  // Where libdevice (math functions: __nv_expf, ...) is; MLIR would
  // otherwise look only where CUDA_HOME points.
  std::string cudaBin = findCudaBinDir(options.cudaBin);
  if (!cudaBin.empty())
    binary.toolkitPath = llvm::sys::path::parent_path(cudaBin).str();
  pm.addPass(createGpuModuleToBinaryPass(binary));
  WeftBuildGpuFatbinOptions fatbin;
  fatbin.cudaBin = options.cudaBin;
  pm.addPass(createWeftBuildGpuFatbin(fatbin));
  addHostLoweringToLLVM(pm, /*withGpuLaunches=*/true);
}

void mlir::weft::registerCodegenDialects(DialectRegistry &registry) {
  registry
      .insert<WeftDialect, func::FuncDialect, tensor::TensorDialect,
              linalg::LinalgDialect, arith::ArithDialect, math::MathDialect,
              memref::MemRefDialect, bufferization::BufferizationDialect,
              scf::SCFDialect, affine::AffineDialect, cf::ControlFlowDialect,
              LLVM::LLVMDialect, gpu::GPUDialect, NVVM::NVVMDialect>();
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
  // --target=cuda: NVVM targets serialize GPU modules; #gpu.select_object
  // embeds the fatbin and lowers launches when translating the host code.
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerGPUDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
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
  PassPipelineRegistration<CudaCodegenPipelineOptions>(
      "weft-cuda-kernels",
      "Lower static weft functions to a host program with gpu.launch kernels",
      buildCudaKernelPipeline);
  PassPipelineRegistration<CudaCodegenPipelineOptions>(
      "weft-cuda-codegen",
      "Lower static weft functions to host code in the LLVM dialect with "
      "embedded GPU fatbins",
      buildCudaCodegenPipeline);
}
