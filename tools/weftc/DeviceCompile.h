//===- DeviceCompile.h - Compiling one device program -----------*- C++ -*-===//
//
// From one device's program (the whole model on one device, or a device's
// partitioned part of it) to what its package holds: the memory it must fit,
// the code generation pipeline of --target, the GPU constants appended to
// its weights, and a cache so that devices whose programs print the same
// share one compile.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TOOLS_WEFTC_DEVICECOMPILE_H
#define WEFT_TOOLS_WEFTC_DEVICECOMPILE_H

#include "Options.h"
#include "PlanReport.h"

#include "weft/Codegen/Package.h"
#include "weft/Codegen/WeightsFile.h"
#include "weft/Plan/Cluster.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Target/TargetMachine.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlir::weft {

/// The memory a device program must fit, and where the figure is from.
struct DeviceMemory {
  int64_t bytes = 0;
  std::string source;
};

/// The memory of mesh position `position`: --device-memory when given (the
/// planner's options already hold it), else the cluster's device memory when
/// there is a cluster (--cluster, or several devices), else for one device
/// this machine's memory (CPU) or an 80 GB GPU's (an H100's; CUDA).
DeviceMemory deviceMemoryOf(const WeftcOptions &options,
                            const ::weft::plan::Cluster &cluster,
                            const ::weft::plan::Mesh &mesh, int64_t position);

/// Refuses a program input or output larger than the device's memory,
/// naming it: the arena holds them all.
bool checkIOFits(llvm::ArrayRef<TensorDescription> tensors,
                 llvm::StringRef what, const DeviceMemory &memory);

/// Fills `pm` with the code generation pipeline of --target for one device
/// program; for cuda, first records on `device` the weights' size (GPU
/// constants go after them, into `constantsPath`) and the architectures.
/// `stopAtBuffers` stops after memory planning (CPU) or at gpu.launch ops
/// (cuda), what --emit=mlir shows.
void buildDevicePipeline(PassManager &pm, const WeftcOptions &options,
                         ModuleOp device, int64_t weightsBytes,
                         llvm::StringRef constantsPath, bool stopAtBuffers,
                         const DeviceMemory &memory);

/// Gives the CPU kernels' ops their forms (buildCpuKernelFormsPipeline)
/// before the device's weights are laid out: a convolution that goes
/// channels-last has its weight stored permuted. Nothing for --target=cuda.
/// Returns an exit code (0: done).
int prepareKernelForms(MLIRContext &context, const WeftcOptions &options,
                       ModuleOp device);

/// Adds the raw GPU constants file weft-device-constants-to-weights wrote
/// to the device's weights layout, after the weights it already holds.
LogicalResult appendDeviceConstants(ModuleOp module, llvm::StringRef file,
                                    WeightsFileLayout &weights);

/// The inputs (or, with `results`, the outputs) of `func` as the manifest
/// names them.
std::vector<TensorDescription> describe(func::FuncOp func, bool results);

/// The work of a device program, from the ops' sharding rules.
double programFlops(ModuleOp module);

/// A device program compiled once, shared by every device whose
/// partitioned program (weights laid out) prints the same.
struct CompiledProgram {
  int index = 0;
  int64_t arenaBytes = 0;
  /// The GPU constants appended to the weights (--target=cuda).
  std::optional<WeightCopy> constants;
};
struct ProgramCache {
  std::map<std::string, CompiledProgram> programs;
  /// The model's weights, read and checked once for every device's file.
  WeightSources weights;
};

/// Compiles device `k`'s partitioned program (a module that is consumed)
/// and adds it to `contents`: its weights file, and its program unless an
/// equal one was compiled before. Devices differ in which blocks of the
/// weights they hold, which is data (their weights files); once the weights
/// are laid out, devices with equal blocks print the same program, so the
/// device pipeline, LLVM and the object file run once per distinct program
/// (`cache`, by printed text and device memory). Returns 0, or the exit code
/// of a failure it reported.
int compileDeviceProgram(MLIRContext &context, const WeftcOptions &options,
                         ModuleOp device, int64_t k, const DeviceMemory &memory,
                         llvm::StringRef scratch, llvm::TargetMachine &machine,
                         ProgramCache &cache, PackageContents &contents,
                         DeviceSummary &summary);

} // namespace mlir::weft

#endif // WEFT_TOOLS_WEFTC_DEVICECOMPILE_H
