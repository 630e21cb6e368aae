//===- Options.h - The command-line values weftc compiles with --*- C++ -*-===//
//
// The options are parsed and checked in weftc.cpp, which alone holds the
// cl::opt globals; it copies what the import and the compile paths read
// into one WeftcOptions, so that the files that import the model and
// compile a device program, a mesh or a pipeline take their options as an
// argument.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TOOLS_WEFTC_OPTIONS_H
#define WEFT_TOOLS_WEFTC_OPTIONS_H

#include "weft/Plan/Reshard.h"

#include <string>
#include <vector>

namespace mlir::weft {

/// What --emit asks for.
enum class EmitKind { Mlir, Llvm, Obj, Exe, Lib, Plan };

struct WeftcOptions {
  /// The ONNX model's path.
  std::string modelPath;
  /// -o: a package folder, a file, a folder of files, or '-' for stdout.
  std::string outputPath;
  EmitKind emit = EmitKind::Exe;
  /// --target: "cpu" or "cuda".
  std::string target = "cpu";
  /// --gpu-emulate.
  bool gpuEmulate = false;
  /// --gpu-arch as sorted, distinct compute capabilities (80 = sm_80);
  /// empty unless --target=cuda.
  std::vector<int> gpuArchs;
  /// --mcpu and --mattr.
  std::string cpu, features;
  /// Whether --device-memory and --cluster were given: they decide where a
  /// device's memory figure comes from.
  bool deviceMemoryGiven = false;
  bool clusterGiven = false;
  /// --sharding-file, --stages (0 when not given) and --pipeline-file
  /// (empty when not given).
  std::string shardingFile;
  int stages = 0;
  /// --stages=auto, and --max-stages (0: no limit).
  bool autoStages = false;
  int maxStages = 0;
  std::string pipelineFile;
  /// --microbatches (1 with auto), --microbatches=auto and
  /// --max-microbatches.
  int microbatches = 1;
  bool autoMicrobatches = false;
  int maxMicrobatches = 16;
  /// --reshard-method: how a pipeline's transfers are planned.
  ::weft::plan::ReshardMethod reshardMethod =
      ::weft::plan::ReshardMethod::Balanced;
  /// --max-broadcast-groups: the most sub-communicators of broadcasts.
  int maxBroadcastGroups = 16;
  /// --report-memory, --report and --quiet.
  bool reportMemory = false;
  bool reportPlan = false;
  bool quiet = false;

  bool isCuda() const { return target == "cuda"; }
  /// The runtime backend the package's programs link: an emulated GPU
  /// program (--gpu-emulate) runs its kernels as CPU loops.
  std::string packageBackend() const { return gpuEmulate ? "cpu" : target; }
};

} // namespace mlir::weft

#endif // WEFT_TOOLS_WEFTC_OPTIONS_H
