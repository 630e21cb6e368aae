//===- Passes.h - Weft code generation passes ------------------*- C++ -*-===//
//
// Declarations and registration of the passes that turn a weft function into
// a device program, and the pipelines that chain them.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_CODEGEN_PASSES_H
#define WEFT_CODEGEN_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::weft {

#define GEN_PASS_DECL
#include "weft/Codegen/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "weft/Codegen/Passes.h.inc"

/// Attaches the BufferizableOpInterface models that weft-bufferize uses
/// (weft's kernel ops and weights, plus upstream arith, linalg and tensor).
void registerWeftBufferizationModels(DialectRegistry &registry);

/// Registers every dialect and interface model code generation needs, for
/// tools that run the pipeline.
void registerCodegenDialects(DialectRegistry &registry);

/// Options of the CPU code generation pipeline.
struct CpuCodegenPipelineOptions
    : public PassPipelineOptions<CpuCodegenPipelineOptions> {
  PassOptions::Option<std::string> entry{
      *this, "entry",
      llvm::cl::desc("Name of the model function (default: the one the "
                     "module's weft.model attribute names, else its only "
                     "public function)"),
      llvm::cl::init("")};
  PassOptions::Option<bool> reportMemory{
      *this, "report-memory",
      llvm::cl::desc("Print the memory plan (buffers, offsets, peak)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> stageReceives{
      *this, "stage-receives",
      llvm::cl::desc("Give each receive a staging buffer, so that the next "
                     "run's message arrives while this one computes "
                     "(weft-stage-receives)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> fuseConvClamp{
      *this, "fuse-conv-clamp",
      llvm::cl::desc("Fuse residual Adds, Relu and Clip into the "
                     "convolution before them (weft-fuse-conv-clamp; the CPU "
                     "kernels only)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> convChannelsLast{
      *this, "conv-channels-last",
      llvm::cl::desc("Store the tensors between MobileNet-style convolutions "
                     "channels-last (weft-conv-channels-last; the CPU "
                     "kernels only)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> packConvWeights{
      *this, "pack-conv-weights",
      llvm::cl::desc("Store the model weights of channels-last 1x1 "
                     "convolutions in 32-column panels "
                     "(weft-pack-conv-weights; the CPU kernels only)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> convBlocked{
      *this, "conv-blocked",
      llvm::cl::desc("Store the tensors between convolutions that run on "
                     "oneDNN channel-blocked, N x C/16 x H x W x 16 "
                     "(weft-conv-blocked; the CPU kernels only)"),
      llvm::cl::init(true)};
};

/// The weft-to-weft start of the CPU pipeline: canonicalization and the
/// fusions and layouts that give ops the forms the CPU kernels run
/// (LayerNorm, clamps and residual Adds into convolutions, channels-last
/// tensors between them). weftc runs it before it lays out a device's
/// weights, since a channels-last convolution's weight is stored permuted;
/// running it again changes nothing.
void buildCpuKernelFormsPipeline(OpPassManager &pm,
                                 const CpuCodegenPipelineOptions &options);

/// weft (static shapes) -> linalg + kernel calls -> buffers in one arena.
/// Stops before LLVM, at memrefs, so that the memory plan can be tested.
void buildCpuBufferizationPipeline(OpPassManager &pm,
                                   const CpuCodegenPipelineOptions &options);

/// The whole CPU pipeline down to the LLVM dialect.
void buildCpuCodegenPipeline(OpPassManager &pm,
                             const CpuCodegenPipelineOptions &options);

/// Options of the CUDA code generation pipeline.
struct CudaCodegenPipelineOptions
    : public PassPipelineOptions<CudaCodegenPipelineOptions> {
  PassOptions::Option<std::string> entry{
      *this, "entry",
      llvm::cl::desc("Name of the model function (default: the one the "
                     "module's weft.model attribute names, else its only "
                     "public function)"),
      llvm::cl::init("")};
  PassOptions::ListOption<int> gpuArchs{
      *this, "gpu-archs",
      llvm::cl::desc("GPU architectures as compute capability x10 (80,90)")};
  PassOptions::Option<std::string> constantsFile{
      *this, "constants-file",
      llvm::cl::desc("Where weft-device-constants-to-weights writes the "
                     "constant data the GPU reads")};
  PassOptions::Option<std::string> cudaBin{
      *this, "cuda-bin",
      llvm::cl::desc("Folder with ptxas and fatbinary (default: found)")};
  PassOptions::Option<bool> reportMemory{
      *this, "report-memory",
      llvm::cl::desc("Print the memory plan (buffers, offsets, peak)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> emulateOnCpu{
      *this, "emulate-on-cpu",
      llvm::cl::desc("Testing aid: run the GPU kernels as host loops and "
                     "keep the CPU runtime's kernels, so that the program "
                     "runs on a CPU"),
      llvm::cl::init(false)};
};
/// The host program with its kernels as gpu.launch ops (after bufferization
/// and memory planning): what --emit=mlir shows for --target=cuda.
void buildCudaKernelPipeline(OpPassManager &pm,
                             const CudaCodegenPipelineOptions &options);
/// The whole CUDA pipeline: host code in the LLVM dialect with one embedded
/// fatbin per GPU module.
void buildCudaCodegenPipeline(OpPassManager &pm,
                              const CudaCodegenPipelineOptions &options);
/// The folder with CUDA's ptxas and fatbinary: `preferred` if it has them
/// (else ""), or the first of $CUDA_HOME/bin, $CUDA_PATH/bin, the toolkit
/// found when Weft was built and /usr/local/cuda/bin that has them; "" when
/// none does.
std::string findCudaBinDir(llvm::StringRef preferred = "");

/// Registers `weft-cpu-bufferize` and `weft-cpu-codegen` with weft-opt.
void registerCodegenPipelines();

} // namespace mlir::weft

#endif // WEFT_CODEGEN_PASSES_H
