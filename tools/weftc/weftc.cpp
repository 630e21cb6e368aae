//===- weftc.cpp - The Weft compiler driver -------------------------------===//
//
// weftc MODEL -o OUT/ [--input-shape=NAME=D0xD1x...]... [--target=cpu]
//       [--mcpu=CPU] [--mattr=FEATURES] [--emit=mlir|llvm|obj|exe|lib|plan]
//       [--cluster=SPEC] [--mesh=AxB] [--sharding=auto|dp|tp|replicate]
//       [--sharding-file=F.json] [--report]
//
// Imports an ONNX model, lowers it to a device program, emits native code in
// process and links a package. Exit codes follow Weft's command-line
// contract: 0 success, 1 bad model or options, 70 internal error.
//
//===----------------------------------------------------------------------===//

#include "PipelineReport.h"
#include "PlanReport.h"
#include "ShardingFile.h"
#include "Stages.h"

#include "weft/Codegen/DeviceMemory.h"
#include "weft/Codegen/ObjectEmitter.h"
#include "weft/Codegen/Package.h"
#include "weft/Codegen/Passes.h"
#include "weft/Codegen/ProgramABI.h"
#include "weft/Codegen/WeightsFile.h"
#include "weft/Plan/CostModel.h"
#include "weft/Import/ONNX/Importer.h"
#include "weft/Support/OutputPath.h"
#include "weft/Support/TempFolder.h"
#include "weft/Transforms/AutoShard.h"
#include "weft/Transforms/Microbatch.h"
#include "weft/Transforms/Pipeline.h"
#include "weft/Transforms/ShardingRules.h"
#include "weft/Transforms/SpmdPartition.h"
#include "weft/Version.h"
#include "weft/WeftDialect.h"
#include "weft/WeftOps.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Transforms/Passes.h"
#include "weft/Codegen/RuntimeConfig.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/InterleavedRange.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Timer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/xxhash.h"

#include <chrono>
#include <map>

using namespace mlir;
using namespace mlir::weft;
namespace cl = llvm::cl;

static cl::OptionCategory category("weftc options");

static cl::opt<std::string> modelPath(cl::Positional, cl::desc("<model.onnx>"),
                                      cl::cat(category));
static cl::opt<std::string>
    outputPath("o",
               cl::desc("Output: the package folder for --emit=exe|lib, the "
                        "file for --emit=mlir|llvm|obj ('-' is stdout for "
                        "text)"),
               cl::value_desc("path"), cl::cat(category));
static cl::list<std::string> inputShapes(
    "input-shape",
    cl::desc("Fix the shape of a graph input: NAME=D0xD1x... (repeatable); "
             "every symbolic dimension must be fixed"),
    cl::value_desc("NAME=D0xD1x..."), cl::cat(category));
static cl::opt<std::string> targetName(
    "target",
    cl::desc("Device kind to compile for: cpu, or cuda (NVIDIA GPUs; needs "
             "the CUDA toolkit's ptxas and fatbinary)"),
    cl::init("cpu"), cl::cat(category));
static cl::opt<bool> gpuEmulate(
    "gpu-emulate",
    cl::desc("Testing aid for --target=cuda: build the GPU program's host "
             "side and kernels, but run the kernels as CPU loops and the "
             "heavy ops on the CPU runtime, so that the package runs and can "
             "be checked without a GPU"),
    cl::Hidden, cl::init(false), cl::cat(category));
static cl::opt<std::string> gpuArchFlag(
    "gpu-arch",
    cl::desc("--target=cuda: the GPU architectures to build for, e.g. "
             "sm_90 or sm_80,sm_90 (default sm_80,sm_90; PTX of the newest "
             "is included for later GPUs)"),
    cl::init("sm_80,sm_90"), cl::cat(category));
static cl::opt<std::string> precision(
    "precision",
    cl::desc("Arithmetic of the compiled program: f32 (bf16 and f16 are "
             "meant for GPU targets and not implemented yet)"),
    cl::init("f32"), cl::cat(category));
static cl::opt<std::string>
    mcpu("mcpu",
         cl::desc("CPU to generate code for: an LLVM CPU name or 'native' "
                  "(default x86-64-v3: any x86-64 with AVX2 and FMA)"),
         cl::init("x86-64-v3"), cl::cat(category));
static cl::opt<std::string>
    mattr("mattr", cl::desc("Extra LLVM target features (+avx512f,-fma)"),
          cl::init(""), cl::cat(category));
static cl::opt<std::string> clusterName(
    "cluster",
    cl::desc("The machines: a cluster spec file (docs/ClusterSpec.md) or a "
             "preset: cpu:N, dgx-h100x8, p3.16xlarge:K, hetero-a100-v100 "
             "(default cpu:1)"),
    cl::init("cpu:1"), cl::cat(category));
static cl::opt<std::string>
    meshFlag("mesh",
             cl::desc("The logical mesh shape, e.g. 2x2 (default: "
                      "all devices of the cluster in one axis)"),
             cl::init(""), cl::cat(category));
static cl::opt<std::string> shardingFlag(
    "sharding",
    cl::desc("How to split the model: auto (the ILP decides), dp (weights "
             "replicated), tp (weights split over all devices), replicate"),
    cl::init("auto"), cl::cat(category));
static cl::opt<std::string> shardingFile(
    "sharding-file",
    cl::desc("Constraints on single tensors, added to --sharding's: a JSON "
             "file {\"ONNX tensor name\": {\"dims\": [[mesh axes] per "
             "dimension]}, ...} (docs/Sharding.md)"),
    cl::value_desc("file.json"), cl::init(""), cl::cat(category));
static cl::opt<int> stagesFlag(
    "stages",
    cl::desc("Cut the model into N pipeline stages of balanced predicted "
             "time, each on its own sub-mesh of the cluster's devices "
             "(contiguous, sized by work); --sharding applies inside each "
             "stage (docs/Pipelines.md)"),
    cl::value_desc("N"), cl::init(0), cl::cat(category));
static cl::opt<std::string> pipelineFile(
    "pipeline-file",
    cl::desc("State the pipeline instead: a JSON file {\"stages\": [{\"devices\": "
             "[...], \"mesh_shape\": [...], \"sharding\": \"tp\", \"ends\": "
             "[ONNX tensor names]}, ...]} (docs/Pipelines.md)"),
    cl::value_desc("file.json"), cl::init(""), cl::cat(category));
static cl::opt<int> microbatchesFlag(
    "microbatches",
    cl::desc("Split the batch (dimension 0 of every input) into M "
             "microbatches that follow each other through the pipeline's "
             "stages; refused, naming the op, where an op mixes batch rows "
             "(docs/Pipelines.md)"),
    cl::value_desc("M"), cl::init(1), cl::cat(category));
static cl::opt<std::string> objectiveFlag("objective",
                                          cl::desc("latency or throughput"),
                                          cl::init("latency"),
                                          cl::cat(category));
static cl::opt<std::string> deviceMemoryFlag(
    "device-memory",
    cl::desc("Override every device's memory, e.g. 2GB or 500000"),
    cl::init(""), cl::cat(category));
enum class EmitKind { Mlir, Llvm, Obj, Exe, Lib, Plan };
static cl::opt<EmitKind> emitKind(
    "emit", cl::desc("What to produce"), cl::init(EmitKind::Exe),
    cl::values(clEnumValN(EmitKind::Mlir, "mlir",
                          "the device program after bufferization and memory "
                          "planning (MLIR); for a mesh, a folder with "
                          "plan.json and each device's partitioned program "
                          "(dev<k>.mlir)"),
               clEnumValN(EmitKind::Llvm, "llvm", "optimized LLVM IR"),
               clEnumValN(EmitKind::Obj, "obj", "the object file"),
               clEnumValN(EmitKind::Exe, "exe", "a package with executables"),
               clEnumValN(EmitKind::Lib, "lib",
                          "a package with a shared library and C headers"),
               clEnumValN(EmitKind::Plan, "plan",
                          "only the sharding plan (plan.json)")),
    cl::cat(category));
/// The --emit value that selects `kind`, for messages.
static StringRef emitName(EmitKind kind) {
  switch (kind) {
  case EmitKind::Mlir:
    return "mlir";
  case EmitKind::Llvm:
    return "llvm";
  case EmitKind::Obj:
    return "obj";
  case EmitKind::Exe:
    return "exe";
  case EmitKind::Lib:
    return "lib";
  case EmitKind::Plan:
    return "plan";
  }
  return "exe";
}

static cl::opt<bool> reportMemory(
    "report-memory",
    cl::desc("Print the memory plan: buffers, their bytes, the arena's "
             "planned peak"),
    cl::cat(category));
static cl::opt<bool> reportPlan(
    "report",
    cl::desc("Print the sharding plan as a table: each op's shape, sharding, "
             "collectives and predicted time, then devices, totals and the "
             "ILP; for a pipeline the stage table, also with --quiet "
             "(stdout; stderr when -o - writes there)"),
    cl::cat(category));
static cl::opt<bool> quiet("quiet", cl::desc("Print nothing but errors"),
                           cl::cat(category));

static constexpr int kExitBadInput = 1;
static constexpr int kExitInternal = 70;

/// Set when an error says "internal: ...": a bug in Weft, not in the input.
static bool sawInternalError = false;

/// The exit code after a failed stage: 70 when an internal error was
/// reported, else 1 (the model or options were refused).
static int stageFailure() {
  return sawInternalError ? kExitInternal : kExitBadInput;
}

/// Prints diagnostics as "FILE: error: MESSAGE" (ONNX locations have no
/// line numbers; messages name the node).
static void printDiagnostic(Diagnostic &diag) {
  llvm::raw_ostream &os = llvm::errs();
  os << "weftc: ";
  switch (diag.getSeverity()) {
  case DiagnosticSeverity::Error:
    llvm::WithColor(os, llvm::HighlightColor::Error) << "error: ";
    break;
  case DiagnosticSeverity::Warning:
    llvm::WithColor(os, llvm::HighlightColor::Warning) << "warning: ";
    break;
  default:
    llvm::WithColor(os, llvm::HighlightColor::Note) << "note: ";
    break;
  }
  std::string where;
  diag.getLocation()->walk([&](Location loc) {
    if (auto named = dyn_cast<NameLoc>(loc)) {
      where = named.getName().str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  // Importer messages already start with the node; codegen ones do not.
  std::string message = diag.str();
  if (diag.getSeverity() == DiagnosticSeverity::Error &&
      StringRef(message).starts_with("internal:"))
    sawInternalError = true;
  if (!where.empty() && !StringRef(message).starts_with("node '"))
    os << "node '" << where << "': ";
  os << message << "\n";
  for (Diagnostic &note : diag.getNotes())
    os << "  note: " << note << "\n";
}

static std::string dtypeName(Type t) {
  if (t.isUnsignedInteger(8))
    return "u8";
  if (t.isSignlessInteger(1))
    return "bool";
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

static std::string formatType(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << type;
  return s;
}

/// Reports every input dimension that is still symbolic; true if none.
/// Parses --gpu-arch's "sm_80,sm_90" into sorted, distinct compute
/// capabilities (80, 90).
static LogicalResult parseGpuArchs(StringRef text, std::vector<int> &archs,
                                   std::string &error) {
  SmallVector<StringRef> parts;
  text.split(parts, ',', -1, /*KeepEmpty=*/true);
  for (StringRef part : parts) {
    StringRef trimmed = part.trim();
    int arch = 0;
    StringRef digits = trimmed;
    if (!digits.consume_front("sm_") || digits.getAsInteger(10, arch) ||
        arch < 10) {
      error = "'" + trimmed.str() +
              "' is not a GPU architecture; write sm_<compute capability> "
              "as in sm_80,sm_90";
      return failure();
    }
    if (arch < 75) {
      error = trimmed.str() +
              " is older than CUDA 13 can target (sm_75 and newer; V100 is "
              "sm_70)";
      return failure();
    }
    archs.push_back(arch);
  }
  llvm::sort(archs);
  archs.erase(std::unique(archs.begin(), archs.end()), archs.end());
  return success();
}

/// The memory a device program must fit, and where the figure is from.
struct DeviceMemory {
  int64_t bytes = 0;
  std::string source;
};

/// The memory of mesh position `position`: --device-memory when given (the
/// planner's options already hold it), else the cluster's device memory when
/// there is a cluster (--cluster, or several devices), else for one device
/// this machine's memory (CPU) or an 80 GB GPU's (an H100's; CUDA).
static DeviceMemory deviceMemoryOf(const plan::Cluster &cluster,
                                   const plan::Mesh &mesh, int64_t position) {
  const plan::DeviceKind &kind =
      cluster.kinds[cluster.devices[mesh.devices[position]].kind];
  DeviceMemory memory;
  // Any finite figure is accepted; past 2^62 bytes nothing is refused.
  memory.bytes = static_cast<int64_t>(std::min(kind.memoryBytes, 0x1p62));
  if (deviceMemoryFlag.getNumOccurrences()) {
    memory.source = "--device-memory";
    return memory;
  }
  if (clusterName.getNumOccurrences() || mesh.size() > 1) {
    memory.source = "cluster '" + cluster.name + "'";
    return memory;
  }
  if (targetName == "cuda") {
    memory.bytes = 80'000'000'000;
    memory.source = "the default for one GPU, an H100's; --device-memory "
                    "or --cluster sets another";
    return memory;
  }
  if (double host = plan::hostMemoryBytes(); host > 0) {
    memory.bytes = static_cast<int64_t>(host);
    memory.source = "this machine's memory; --device-memory sets another";
    return memory;
  }
  memory.source = "the cpu:1 preset's, as this machine's memory is "
                  "unknown; --device-memory sets another";
  return memory;
}

/// Refuses a program input or output larger than the device's memory,
/// naming it: the arena holds them all.
static bool checkIOFits(ArrayRef<TensorDescription> tensors, StringRef what,
                        const DeviceMemory &memory) {
  for (const TensorDescription &t : tensors) {
    double bytes = 1;
    std::string shape;
    for (int64_t d : t.shape) {
      bytes *= static_cast<double>(d);
      shape += std::to_string(d) + "x";
    }
    int64_t element = t.dtype == "f64" || t.dtype == "i64"    ? 8
                      : t.dtype == "f32" || t.dtype == "i32"  ? 4
                      : t.dtype == "f16" || t.dtype == "bf16" ? 2
                                                              : 1;
    bytes *= static_cast<double>(element);
    if (bytes <= static_cast<double>(memory.bytes))
      continue;
    llvm::WithColor::error(llvm::errs(), "weftc")
        << what << " '" << t.name << "' (" << shape << t.dtype << ", "
        << llvm::formatv("{0:F0}", bytes) << " bytes) does not fit in the "
        << "device's memory, " << memory.bytes << " bytes (" << memory.source
        << ")\n";
    return false;
  }
  return true;
}

/// Fills `pm` with the code generation pipeline of --target for one device
/// program; for cuda, first records on `device` the weights' size (GPU
/// constants go after them, into `constantsPath`) and the architectures.
/// `stopAtBuffers` stops after memory planning (CPU) or at gpu.launch ops
/// (cuda), what --emit=mlir shows.
static void buildDevicePipeline(PassManager &pm, ModuleOp device,
                                int64_t weightsBytes,
                                const std::vector<int> &gpuArchs,
                                StringRef constantsPath, bool stopAtBuffers,
                                const DeviceMemory &memory) {
  // What weft-plan-memory checks the program against.
  Builder attrs(device.getContext());
  device->setAttr(kWeightsBytesAttr, attrs.getI64IntegerAttr(weightsBytes));
  device->setAttr(kDeviceMemoryBytesAttr,
                  attrs.getI64IntegerAttr(memory.bytes));
  device->setAttr(kDeviceMemorySourceAttr, attrs.getStringAttr(memory.source));
  if (targetName != "cuda") {
    CpuCodegenPipelineOptions options;
    options.reportMemory = reportMemory;
    if (stopAtBuffers)
      buildCpuBufferizationPipeline(pm, options);
    else
      buildCpuCodegenPipeline(pm, options);
    return;
  }
  if (!gpuEmulate)
    device->setAttr(kGpuArchsAttr,
                    attrs.getDenseI32ArrayAttr(SmallVector<int32_t>(
                        gpuArchs.begin(), gpuArchs.end())));
  CudaCodegenPipelineOptions options;
  options.emulateOnCpu = gpuEmulate;
  options.reportMemory = reportMemory;
  options.constantsFile = constantsPath.str();
  options.gpuArchs = gpuArchs;
  if (stopAtBuffers)
    buildCudaKernelPipeline(pm, options);
  else
    buildCudaCodegenPipeline(pm, options);
}

/// Adds the raw GPU constants file weft-device-constants-to-weights wrote
/// to the device's weights layout, after the weights it already holds.
static LogicalResult appendDeviceConstants(ModuleOp module, StringRef file,
                                           WeightsFileLayout &weights) {
  auto attr = module->getAttrOfType<IntegerAttr>(kDeviceConstantsBytesAttr);
  if (!attr || attr.getInt() == 0)
    return success();
  auto buffer = llvm::MemoryBuffer::getFile(file, /*IsText=*/false);
  if (!buffer ||
      (*buffer)->getBufferSize() != static_cast<size_t>(attr.getInt()))
    return module.emitError() << "the GPU constants file " << file
                              << " is missing or of the wrong size";
  WeightCopy copy;
  copy.name = "(constants read by GPU kernels)";
  copy.sourcePath = file.str();
  copy.sourceOffset = 0;
  copy.size = attr.getInt();
  copy.checksum = llvm::utohexstr(
      llvm::xxh3_64bits(llvm::arrayRefFromStringRef((*buffer)->getBuffer())),
      /*LowerCase=*/true, /*Width=*/16);
  copy.offset = weights.bytes;
  weights.bytes = alignTo64(weights.bytes + copy.size);
  weights.copies.push_back(copy);
  return success();
}

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

static std::vector<TensorDescription> describe(func::FuncOp func,
                                               bool results) {
  std::vector<TensorDescription> out;
  unsigned n = results ? func.getNumResults() : func.getNumArguments();
  for (unsigned i = 0; i < n; ++i) {
    auto type = cast<RankedTensorType>(results ? func.getResultTypes()[i]
                                               : func.getArgumentTypes()[i]);
    StringAttr name = results
                          ? func.getResultAttrOfType<StringAttr>(i, "weft.name")
                          : func.getArgAttrOfType<StringAttr>(i, "weft.name");
    TensorDescription t;
    t.name =
        name ? name.str() : (results ? "output" : "input") + std::to_string(i);
    t.dtype = dtypeName(type.getElementType());
    t.shape.assign(type.getShape().begin(), type.getShape().end());
    out.push_back(t);
  }
  return out;
}

/// Times the stages for the closing summary.
struct StageClock {
  std::chrono::steady_clock::time_point start =
      std::chrono::steady_clock::now();
  std::string lines;
  void lap(StringRef stage) {
    auto now = std::chrono::steady_clock::now();
    double s = std::chrono::duration<double>(now - start).count();
    lines += llvm::formatv("  {0,-10} {1:f2} s\n", stage, s).str();
    start = now;
  }
};

/// The work of a device program, from the ops' sharding rules.
static double programFlops(ModuleOp module) {
  double flops = 0;
  module.walk([&](Operation *op) {
    if (std::optional<LoopSpace> space = getLoopSpace(op))
      flops += space->flops;
  });
  return flops;
}

/// Options that contradict each other, found from the options alone (and
/// the cluster's device kinds): before any toolkit is looked for or any
/// model read, so that the message names the options, not a symptom.
static llvm::Error checkOptionsAgree(bool cuda) {
  auto conflict = [](const Twine &message) {
    return llvm::createStringError(message);
  };
  if (outputPath == "-" &&
      (emitKind == EmitKind::Exe || emitKind == EmitKind::Lib))
    return conflict("-o - writes to stdout, but --emit=" + emitName(emitKind) +
                    " writes a package folder: give a folder, or -o - with "
                    "--emit=mlir, --emit=llvm or --emit=plan");
  bool clusterGiven = clusterName.getNumOccurrences() > 0;
  if (!clusterGiven && !meshFlag.empty()) {
    // A shape the parser refuses is reported with the cluster's options.
    llvm::Expected<std::vector<int64_t>> shape = plan::parseMeshShape(meshFlag);
    if (!shape) {
      llvm::consumeError(shape.takeError());
    } else {
      int64_t devices = 1;
      for (int64_t dim : *shape)
        devices = dim > 0 && devices <= (int64_t(1) << 40) / dim
                      ? devices * dim
                      : int64_t(1) << 40;
      if (devices > 1)
        return conflict("--mesh " + meshFlag + " needs " + Twine(devices) +
                        " devices, but no --cluster was given (the default, "
                        "cpu:1, has one): add --cluster, e.g. --cluster cpu:" +
                        Twine(devices));
    }
  }
  if (!clusterGiven && !shardingFile.empty())
    return conflict("--sharding-file says how tensors are split over "
                    "devices, but no --cluster was given (the default, "
                    "cpu:1, has one device): add --cluster, e.g. --cluster "
                    "cpu:4");
  // A plan alone is the same for any target; code is compiled for one
  // device kind, and planned with that kind's figures.
  if (!clusterGiven || emitKind == EmitKind::Plan)
    return llvm::Error::success();
  llvm::Expected<plan::Cluster> cluster = plan::loadCluster(clusterName);
  if (!cluster)
    return conflict("cluster '" + clusterName +
                    "': " + toString(cluster.takeError()));
  StringRef wanted = cuda ? "cuda" : "cpu";
  for (const plan::Device &device : cluster->devices) {
    StringRef backend = cluster->kinds[device.kind].backend;
    if (backend == wanted)
      continue;
    if (cuda)
      return conflict("--target=cuda compiles for GPUs, but --cluster " +
                      clusterName + " holds " + backend +
                      " devices: give a GPU cluster (e.g. --cluster "
                      "dgx-h100x8) or --target=cpu");
    return conflict(
        Twine("--target=cpu") +
        (targetName.getNumOccurrences() ? "" : " (the default)") +
        " compiles for CPUs, but --cluster " + clusterName + " holds " +
        backend +
        " devices: add --target=cuda, or give a CPU cluster (e.g. --cluster "
        "cpu:" +
        Twine(cluster->devices.size()) + ")");
  }
  return llvm::Error::success();
}

/// Options that need several devices, or one, checked once the mesh is
/// known.
static llvm::Error checkMeshOptions(int64_t numDevices,
                                    StringRef clusterLabel) {
  auto conflict = [](const Twine &message) {
    return llvm::createStringError(message);
  };
  if (numDevices == 1) {
    if (reportPlan && emitKind != EmitKind::Plan)
      return conflict("--report prints a multi-device plan; with one device "
                      "add --emit=plan to see it (--report-memory prints the "
                      "memory plan)");
    if (!shardingFile.empty())
      return conflict("--sharding-file says how tensors are split over "
                      "devices, but cluster '" +
                      clusterLabel +
                      "' gives a mesh of one device; give more, e.g. "
                      "--cluster cpu:4");
    return llvm::Error::success();
  }
  if (emitKind == EmitKind::Lib)
    return conflict("--emit=lib is single-device (the embedding API runs one "
                    "device); use --emit=exe for a mesh");
  if (emitKind == EmitKind::Llvm || emitKind == EmitKind::Obj)
    return conflict("--emit=llvm|obj are single-device; a mesh gives one "
                    "program per device: use --emit=exe, --emit=mlir (each "
                    "device's partitioned program) or --emit=plan");
  if (emitKind == EmitKind::Mlir && outputPath == "-")
    return conflict("--emit=mlir for a mesh writes one file per device: give "
                    "a folder with -o");
  return llvm::Error::success();
}

/// Options that cannot go with a pipeline (--stages, --pipeline-file).
static llvm::Error checkPipelineOptions(int64_t meshDevices) {
  auto conflict = [](const Twine &message) {
    return llvm::createStringError(message);
  };
  if (stagesFlag.getNumOccurrences() && !pipelineFile.empty())
    return conflict("--stages and --pipeline-file both say how to cut the "
                    "model: give one");
  if (stagesFlag.getNumOccurrences() && stagesFlag < 1)
    return conflict("--stages=" + Twine(stagesFlag.getValue()) +
                    ": a pipeline has at least 1 stage");
  if (stagesFlag > meshDevices)
    return conflict("--stages=" + Twine(stagesFlag.getValue()) + " needs " +
                    Twine(stagesFlag.getValue()) +
                    " devices (one per stage at least), but the cluster "
                    "gives " +
                    Twine(meshDevices) + "; add devices, e.g. --cluster cpu:" +
                    Twine(stagesFlag.getValue()));
  if (!pipelineFile.empty() && !meshFlag.empty())
    return conflict("--mesh shapes one mesh, but --pipeline-file gives each "
                    "stage's mesh (\"mesh_shape\"): drop --mesh");
  if (emitKind == EmitKind::Lib || emitKind == EmitKind::Llvm ||
      emitKind == EmitKind::Obj)
    return conflict("--emit=" + emitName(emitKind) +
                    " is single-device; a pipeline gives one program per "
                    "device: use --emit=exe, --emit=mlir or --emit=plan");
  if (emitKind == EmitKind::Mlir && outputPath == "-")
    return conflict("--emit=mlir for a pipeline writes one file per device: "
                    "give a folder with -o");
  return llvm::Error::success();
}

/// What -o must be for --emit on `numDevices` devices.
static ::weft::OutputPathRule outputRule(int64_t numDevices) {
  ::weft::OutputPathRule rule;
  std::string emit = ("--emit=" + emitName(emitKind)).str();
  switch (emitKind) {
  case EmitKind::Exe:
  case EmitKind::Lib:
    rule.folder = true;
    rule.purpose = emit + " writes a package folder";
    // writePackage replaces an old package whole, and nothing else.
    rule.replaceableIf = "manifest.json";
    break;
  case EmitKind::Mlir:
    rule.folder = numDevices > 1;
    rule.purpose = rule.folder ? emit + " for a mesh writes a folder of "
                                        "plan.json and dev<k>.mlir"
                               : emit + " writes a file";
    break;
  case EmitKind::Plan:
    rule.folder = !StringRef(outputPath).ends_with(".json");
    rule.purpose = rule.folder ? emit + " writes a folder with plan.json "
                                        "(or give a path ending in .json)"
                               : emit + " writes a file";
    break;
  case EmitKind::Llvm:
  case EmitKind::Obj:
    rule.purpose = emit + " writes a file";
    break;
  }
  return rule;
}

/// --emit=mlir for several devices: writes each (file name, text) into
/// the folder -o names. Returns 0, or 1 after reporting why it could not.
static int writeFolder(ArrayRef<std::pair<std::string, std::string>> files) {
  auto fail = [](const Twine &msg) {
    llvm::WithColor::error(llvm::errs(), "weftc") << msg << "\n";
    return kExitBadInput;
  };
  if (std::error_code ec = llvm::sys::fs::create_directories(outputPath))
    return fail("cannot create " + outputPath + ": " + ec.message());
  std::string error;
  for (const auto &[name, text] : files) {
    SmallString<256> path(outputPath);
    llvm::sys::path::append(path, name);
    auto out = openOutputFile(path, &error);
    if (!out)
      return fail("cannot open " + path.str() + ": " + error);
    out->os() << text;
    out->keep();
  }
  return 0;
}

/// --emit=plan: plan.json into the folder -o names, or into the .json file
/// (or stdout) it names. Returns 0, or 1 after reporting why it could not.
static int writePlanOutput(StringRef planJson) {
  auto fail = [](const Twine &msg) {
    llvm::WithColor::error(llvm::errs(), "weftc") << msg << "\n";
    return kExitBadInput;
  };
  SmallString<256> planPath(outputPath);
  if (outputPath != "-" && !StringRef(outputPath).ends_with(".json")) {
    if (std::error_code ec = llvm::sys::fs::create_directories(planPath))
      return fail("cannot create " + outputPath + ": " + ec.message());
    llvm::sys::path::append(planPath, "plan.json");
  }
  std::string error;
  auto out = openOutputFile(planPath, &error);
  if (!out)
    return fail("cannot open " + planPath.str() + ": " + error);
  out->os() << planJson;
  out->keep();
  return 0;
}

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
static int compileDeviceProgram(MLIRContext &context, ModuleOp device,
                                int64_t k, const DeviceMemory &memory,
                                const std::vector<int> &gpuArchs,
                                StringRef scratch,
                                llvm::TargetMachine &machine,
                                ProgramCache &cache,
                                PackageContents &contents,
                                DeviceSummary &summary) {
  bool cuda = targetName == "cuda";
  std::string error;
  // One file name for every device, so that equal programs compare equal.
  WeightsFileLayout weights = layoutWeights(device, "weights.bin");
  std::string key = std::to_string(memory.bytes) + " " + memory.source + "\n";
  {
    llvm::raw_string_ostream printed(key);
    device->print(printed);
  }
  auto found = cache.programs.find(key);
  if (found == cache.programs.end()) {
    int index = static_cast<int>(contents.programs.size());
    PassManager pm(&context);
    SmallString<256> constantsPath(scratch);
    llvm::sys::path::append(constantsPath,
                            "gpu-constants" + std::to_string(index) + ".bin");
    buildDevicePipeline(pm, device, weights.bytes, gpuArchs, constantsPath,
                        /*stopAtBuffers=*/false, memory);
    if (failed(pm.run(device)))
      return stageFailure();
    CompiledProgram program;
    program.index = index;
    size_t copiesBefore = weights.copies.size();
    if (cuda && failed(appendDeviceConstants(device, constantsPath, weights)))
      return kExitInternal;
    if (weights.copies.size() > copiesBefore)
      program.constants = weights.copies.back();
    if (auto attr = device->getAttrOfType<IntegerAttr>(kArenaBytesAttr))
      program.arenaBytes = attr.getInt();
    std::string signature = buildProgramSignature(device, weights.bytes);
    llvm::LLVMContext llvmContext;
    std::unique_ptr<llvm::Module> llvmModule =
        translateProgram(device, llvmContext, machine, signature);
    if (!llvmModule) {
      llvm::WithColor::error(llvm::errs(), "weftc")
          << "translation of device " << k
          << "'s program to LLVM IR failed; this is a bug in Weft\n";
      return kExitInternal;
    }
    SmallString<256> objectPath(scratch);
    llvm::sys::path::append(objectPath,
                            "prog" + std::to_string(index) + ".o");
    if (!emitObjectFile(*llvmModule, machine, objectPath, error)) {
      llvm::WithColor::error(llvm::errs(), "weftc") << error << "\n";
      return kExitBadInput;
    }
    contents.programs.push_back(
        {objectPath.str().str(), program.arenaBytes, signature});
    found = cache.programs.emplace(std::move(key), program).first;
  } else if (found->second.constants) {
    // The same GPU constants, after this device's own weights.
    WeightCopy copy = *found->second.constants;
    copy.offset = weights.bytes;
    weights.bytes = alignTo64(weights.bytes + copy.size);
    weights.copies.push_back(copy);
  }
  const CompiledProgram &program = found->second;
  summary.weightBytes = weights.bytes;
  summary.arenaBytes = program.arenaBytes;
  summary.program = program.index;
  SmallString<256> weightsPath(scratch);
  llvm::sys::path::append(weightsPath, "dev" + std::to_string(k) + ".bin");
  std::string sha256;
  if (failed(writeWeightsFile(weights, weightsPath, device.getLoc(), sha256,
                              &cache.weights)))
    return kExitBadInput;
  contents.devices.push_back(
      {program.index, weightsPath.str().str(), weights.bytes, sha256});
  return 0;
}

/// Time of the transfer `t` on the cluster: each receiving rank takes its
/// pieces one after another over the link from their senders (alpha-beta,
/// the cost model's links); the slowest receiver counts.
static double transferSeconds(const TransferSummary &t,
                              const plan::Cluster &cluster,
                              ArrayRef<int64_t> clusterDeviceOfRank) {
  std::map<int64_t, double> byReceiver;
  for (auto [from, to, bytes] : t.pairBytes) {
    plan::Mesh pair;
    pair.name = "pair";
    pair.shape = {2};
    pair.devices = {static_cast<int>(clusterDeviceOfRank[from]),
                    static_cast<int>(clusterDeviceOfRank[to])};
    plan::CostModel costs(cluster, pair);
    std::vector<plan::GroupLink> links = costs.groupLinks({0});
    double seconds = 0;
    if (!links.empty() && links.front().beta > 0)
      seconds = links.front().alpha +
                static_cast<double>(bytes) / links.front().beta;
    byReceiver[to] += seconds;
  }
  double slowest = 0;
  for (auto &[rank, seconds] : byReceiver)
    slowest = std::max(slowest, seconds);
  return slowest;
}

/// The name of the first and last op of a stage, for the stage table.
static std::pair<std::string, std::string> stageNodeRange(StageOp stage) {
  std::string first, last;
  for (Operation &op : stage.getBodyBlock().without_terminator()) {
    if (isReplicableOp(&op))
      continue;
    std::string name = "?";
    if (NameLoc loc = findNameLoc(op.getLoc()))
      name = loc.getName().str();
    if (first.empty())
      first = name;
    last = name;
  }
  return {first, last};
}

/// Points the weft.shard constraints (from --sharding-file, on the command
/// line's mesh) at the mesh of the stage they are in, whose axes they must
/// fit.
static LogicalResult retargetConstraints(func::FuncOp func,
                                         const StageAssignment &assignment,
                                         ArrayRef<StageMesh> meshes) {
  for (auto [op, stage] : llvm::zip(
           llvm::make_pointer_range(func.getBody().front().without_terminator()),
           assignment.stageOfOp)) {
    auto shard = dyn_cast<ShardOp>(op);
    if (!shard)
      continue;
    const StageMesh &mesh = meshes[stage];
    ShardingAttr old = shard.getSharding();
    for (int16_t axis : old.getUsedAxes())
      if (axis >= static_cast<int64_t>(mesh.shape.size()))
        return shard.emitError()
               << "--sharding-file splits this tensor over mesh axis " << axis
               << ", but it is in stage " << stage << ", whose mesh ["
               << llvm::interleaved(mesh.shape) << "] has " << mesh.shape.size()
               << " axes";
    shard.setShardingAttr(ShardingAttr::get(
        shard.getContext(), FlatSymbolRefAttr::get(shard.getContext(), mesh.name),
        old.getDims(), old.getPartial()));
  }
  return success();
}

/// --stages or --pipeline-file: cuts the model into stages on sub-meshes,
/// plans each stage on its mesh, and compiles one program per rank (ranks
/// are the stages' devices in cluster order). `stages` holds the pipeline
/// file's stages, or is filled by the balanced rule.
static int compilePipeline(MLIRContext &context, ModuleOp module,
                           std::vector<StageRequest> stages,
                           const AutoShardOptions &shardOptions,
                           PackageContents contents, StringRef modelName,
                           const std::vector<int> &gpuArchs,
                           llvm::TargetMachine &machine, StageClock &clock,
                           const char *argv0) {
  auto fail = [](const Twine &msg) {
    llvm::WithColor::error(llvm::errs(), "weftc") << msg << "\n";
    return kExitBadInput;
  };
  plan::Cluster cluster = shardOptions.cluster;
  const plan::Mesh &whole = cluster.meshes[shardOptions.mesh];
  auto func = module.lookupSymbol<func::FuncOp>("main");
  std::vector<double> work;
  FailureOr<StageAssignment> assignment =
      pipelineFile.empty()
          ? assignBalancedStages(func, stagesFlag, cluster, whole.devices,
                                 stages, work)
          : assignStagesByEnds(func, pipelineFile, stages);
  if (failed(assignment))
    return kExitBadInput;

  // Ranks: the stages' cluster devices in cluster order.
  std::vector<int64_t> clusterDeviceOfRank;
  for (const StageRequest &stage : stages)
    llvm::append_range(clusterDeviceOfRank, stage.devices);
  llvm::sort(clusterDeviceOfRank);
  auto rankOf = [&](int64_t device) {
    return llvm::find(clusterDeviceOfRank, device) -
           clusterDeviceOfRank.begin();
  };
  int64_t worldSize = clusterDeviceOfRank.size();
  std::vector<StageMesh> meshes;
  std::vector<int> stageOfRank(worldSize, 0);
  for (auto [k, stage] : llvm::enumerate(stages)) {
    StageMesh mesh;
    mesh.name = "stage" + std::to_string(k);
    mesh.shape = stage.meshShape;
    for (int64_t device : stage.devices) {
      mesh.worldRanks.push_back(rankOf(device));
      stageOfRank[rankOf(device)] = static_cast<int>(k);
    }
    meshes.push_back(mesh);
    plan::Mesh planned;
    planned.name = mesh.name;
    planned.shape = stage.meshShape;
    for (int64_t device : stage.devices)
      planned.devices.push_back(static_cast<int>(device));
    if (llvm::Error error = plan::verifyMesh(cluster, planned))
      return fail("stage " + Twine(k) + ": " + toString(std::move(error)));
    cluster.meshes.push_back(planned);
  }
  // The sharding file's constraints name the command line's mesh, which
  // the stages' meshes replace.
  if (failed(retargetConstraints(func, *assignment, meshes)))
    return kExitBadInput;
  if (auto old = module.lookupSymbol<MeshOp>(kMeshName))
    old.erase();
  if (failed(splitIntoStages(module, *assignment, meshes)))
    return stageFailure();

  // Each stage planned on its own mesh and memory.
  auto main = module.lookupSymbol<func::FuncOp>("main");
  SmallVector<StageOp> stageOps = llvm::to_vector(main.getOps<StageOp>());
  std::vector<OwningOpRef<ModuleOp>> planned;
  PipelineSummary summary;
  summary.modelName = modelName.str();
  summary.clusterName = cluster.name;
  for (auto [k, stageOp] : llvm::enumerate(stageOps)) {
    AutoShardOptions options = shardOptions;
    options.cluster = cluster;
    options.mesh = static_cast<int>(cluster.meshes.size() - stages.size() + k);
    options.meshSymbol = meshes[k].name;
    options.meshWorldRanks = meshes[k].worldRanks;
    options.planLabel = "stage " + std::to_string(k);
    if (stages[k].mode)
      options.mode = *stages[k].mode;
    OwningOpRef<ModuleOp> stageModule = outlineStage(stageOp);
    StageSummary stage;
    if (failed(autoShard(*stageModule, options, stage.report)))
      return stageFailure();
    stage.devices = stages[k].devices;
    stage.meshShape = stages[k].meshShape;
    stage.mode = shardingModeName(options.mode).str();
    std::tie(stage.firstNode, stage.lastNode) = stageNodeRange(stageOp);
    for (Operation &op : stageOp.getBodyBlock().without_terminator())
      stage.ops += !isReplicableOp(&op);
    stage.predictedSeconds = stage.report.solution.objective;
    stage.peakMemoryBytesPerDevice =
        static_cast<int64_t>(stage.report.memory.peakBytes);
    summary.stages.push_back(std::move(stage));
    planned.push_back(std::move(stageModule));
  }
  chooseBoundaryShardings(module, planned);
  clock.lap("plan");

  llvm::Expected<std::unique_ptr<::weft::TempFolder>> scratchFolder =
      ::weft::TempFolder::create("weftc");
  if (!scratchFolder)
    return fail(toString(scratchFolder.takeError()));
  SmallString<128> scratch((*scratchFolder)->path());
  bool compile = emitKind == EmitKind::Exe;
  summary.compiled = compile;
  summary.clusterDeviceOfRank = clusterDeviceOfRank;
  summary.stageOfRank = stageOfRank;
  summary.devices.resize(worldSize);
  ProgramCache programIndex;
  std::vector<std::string> printed(worldSize);
  for (int64_t rank = 0; rank < worldSize; ++rank) {
    FailureOr<OwningOpRef<ModuleOp>> device =
        buildDeviceProgram(module, planned, rank, worldSize);
    if (failed(device))
      return stageFailure();
    summary.devices[rank].flops = programFlops(**device);
    if (emitKind == EmitKind::Mlir) {
      llvm::raw_string_ostream os(printed[rank]);
      (*device)->print(os);
    }
    if (!compile) {
      summary.devices[rank].weightBytes =
          layoutWeights(**device, "weights.bin").bytes;
      continue;
    }
    int stage = stageOfRank[rank];
    plan::Mesh &stageMesh =
        cluster.meshes[cluster.meshes.size() - stages.size() + stage];
    int64_t position =
        llvm::find(meshes[stage].worldRanks, rank) -
        meshes[stage].worldRanks.begin();
    if (int code = compileDeviceProgram(
            context, **device, rank,
            deviceMemoryOf(cluster, stageMesh, position), gpuArchs, scratch,
            machine, programIndex, contents, summary.devices[rank]))
      return code;
    contents.devices.back().mesh = stage;
  }
  clock.lap("codegen");

  // The table: per stage its devices' largest weights and peak memory.
  for (auto [k, stage] : llvm::enumerate(summary.stages)) {
    stage.weightsBytesPerDevice = 0;
    for (int64_t device : stage.devices) {
      const DeviceSummary &d = summary.devices[rankOf(device)];
      stage.weightsBytesPerDevice =
          std::max(stage.weightsBytesPerDevice, d.weightBytes);
      if (compile)
        stage.peakMemoryBytesPerDevice =
            std::max(stage.weightsBytesPerDevice,
                     std::max<int64_t>(stage.peakMemoryBytesPerDevice,
                                       d.weightBytes + d.arenaBytes));
    }
  }
  summary.totalSeconds = 0;
  for (const StageSummary &stage : summary.stages)
    summary.totalSeconds += stage.predictedSeconds;
  for (TransferSummary &t : summarizeTransfers(module)) {
    TransferReport report;
    report.predictedSeconds =
        transferSeconds(t, cluster, clusterDeviceOfRank);
    report.transfer = std::move(t);
    summary.totalSeconds += report.predictedSeconds;
    summary.transfers.push_back(std::move(report));
  }
  ::weft::plan::PipelineTimes times;
  for (const StageSummary &stage : summary.stages)
    times.stageSeconds.push_back(stage.predictedSeconds);
  for (const TransferReport &r : summary.transfers)
    times.transfers.push_back(
        {r.transfer.fromStage, r.transfer.toStage, r.predictedSeconds});
  summary.schedule = ::weft::plan::estimateGPipe(times, microbatchesFlag);
  contents.planJson = pipelinePlanJson(summary);
  for (auto [k, mesh] : llvm::enumerate(meshes))
    contents.meshes.push_back(
        {mesh.name, mesh.shape,
         std::vector<int64_t>(mesh.worldRanks.begin(), mesh.worldRanks.end())});
  contents.meshShape = {worldSize};

  std::string error;
  llvm::raw_ostream &info = outputPath == "-" ? llvm::errs() : llvm::outs();
  if (emitKind == EmitKind::Mlir) {
    // OUT/dev<k>.mlir (each rank's program before codegen),
    // OUT/pipeline.mlir (stages and transfers) and OUT/plan.json.
    std::vector<std::pair<std::string, std::string>> files;
    for (auto [rank, text] : llvm::enumerate(printed))
      files.push_back({"dev" + std::to_string(rank) + ".mlir", text});
    std::string pipelineText;
    llvm::raw_string_ostream os(pipelineText);
    module.print(os);
    files.push_back({"pipeline.mlir", pipelineText});
    files.push_back({"plan.json", contents.planJson});
    if (int code = writeFolder(files))
      return code;
  } else if (emitKind == EmitKind::Plan) {
    if (int code = writePlanOutput(contents.planJson))
      return code;
  } else {
    RuntimeLocation runtime = findRuntime(argv0);
    if (failed(writePackage(contents, runtime, outputPath,
                            /*asLibrary=*/false, module.getLoc())))
      return kExitInternal;
    clock.lap("link");
  }
  if (quiet && reportPlan) {
    printStageTable(summary, info);
  } else if (!quiet) {
    info << "weftc: pipelined " << modelName << " for " << cluster.name
         << " as " << stages.size() << " stage(s) on " << worldSize
         << " device(s) into " << outputPath << "\n";
    printStageTable(summary, info);
    if (compile)
      info << "  programs: " << contents.programs.size() << " for "
           << worldSize << " ranks\n";
    info << clock.lines;
  }
  return 0;
}

/// --microbatches=M: checks that the batch of `module` splits into M
/// microbatches and replaces it with the model imported at batch B/M
/// (marked with its microbatch count for the program signature).
static LogicalResult importMicrobatchModel(MLIRContext &context,
                                           const OnnxImportOptions &options,
                                           OwningOpRef<ModuleOp> &module,
                                           ImportedTensors *tensors) {
  auto full = module->lookupSymbol<func::FuncOp>("main");
  FailureOr<BatchDims> dims = analyzeBatchSplit(full, microbatchesFlag);
  if (failed(dims))
    return failure();
  OnnxImportOptions microOptions = options;
  microOptions.batchDivisor = microbatchesFlag;
  OwningOpRef<ModuleOp> micro =
      importOnnxFile(&context, modelPath, microOptions, tensors);
  if (!micro) {
    llvm::WithColor::error(llvm::errs(), "weftc")
        << "--microbatches=" << microbatchesFlag
        << ": the model does not import at batch "
        << dims->batch / microbatchesFlag
        << " (above): it bakes in its batch size\n";
    return failure();
  }
  if (failed(checkMicrobatchModel(full, *dims,
                                  micro->lookupSymbol<func::FuncOp>("main"),
                                  microbatchesFlag)))
    return failure();
  (*micro)->setAttr(kProgramMicrobatchesAttr,
                    IntegerAttr::get(IntegerType::get(&context, 64),
                                     microbatchesFlag));
  module = std::move(micro);
  return success();
}

int main(int argc, char **argv) {
  // Read before InitLLVM, which puts LLVM's handlers over signals inherited
  // as ignored.
  ::weft::InheritedSignals inheritedSignals = ::weft::readInheritedSignals();
  llvm::InitLLVM y(argc, argv);
  // An interrupted compile leaves no scratch folder in $TMPDIR.
  ::weft::removeTempFoldersOnSignals(inheritedSignals);
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "weftc (Weft) " << WEFT_VERSION_STRING << "\n"
       << "  built on LLVM/MLIR " << LLVM_VERSION_STRING << "\n";
  });
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "Weft compiler: ONNX model -> native package\n\n"
      "Examples:\n"
      "  weftc model.onnx -o out/                      # package for this "
      "model\n"
      "  weft-run out/ --inputs test_data_set_0 --check test_data_set_0\n"
      "  weftc bert.onnx -o out/ --input-shape=input_ids=1x128 \\\n"
      "        --input-shape=attention_mask=1x128       # fix symbolic dims\n"
      "  weftc model.onnx -o out/ --mcpu=native         # this machine's "
      "CPU\n"
      "  weftc model.onnx -o lib/ --emit=lib            # shared library + "
      "C header\n"
      "  weftc model.onnx -o model.ll --emit=llvm       # stop at LLVM IR\n"
      "\nNVIDIA GPUs (docs/Codegen.md, \"GPU programs\"):\n"
      "  weftc model.onnx -o out/ --target=cuda         # sm_80, sm_90 + PTX\n"
      "  weftc model.onnx -o out/ --target=cuda --gpu-arch=sm_90\n"
      "  weftc model.onnx -o out/ --target=cuda --cluster dgx-h100x8 \\\n"
      "        --mesh 2x4                               # 8 GPUs, NCCL\n"
      "\nSeveral devices (docs/Sharding.md):\n"
      "  weftc model.onnx -o out/ --cluster cpu:4 --mesh 2x2 --sharding tp\n"
      "  weftc model.onnx -o plan/ --emit=plan --cluster cpu:4 --report\n"
      "                                                 # print the plan\n"
      "  weftc model.onnx -o out/ --cluster cpu:4 --mesh 2x2 \\\n"
      "        --sharding-file=shard.json               # pin some tensors\n"
      "  where shard.json holds, for each ONNX tensor to pin, the mesh axes\n"
      "  each of its dimensions is split over ([] keeps it whole):\n"
      "    {\"input\": {\"dims\": [[0], []]}, \"fc1.weight\": {\"dims\": "
      "[[], [1]]}}\n"
      "\nPipelines (docs/Pipelines.md):\n"
      "  weftc model.onnx -o out/ --cluster cpu:4 --stages=2 --sharding tp\n"
      "                                                 # 2 stages of 2 devices\n"
      "  weftc model.onnx -o out/ --cluster cpu:5 --pipeline-file=p.json\n"
      "  where p.json gives each stage's devices, mesh shape, sharding and\n"
      "  the ONNX tensors where it ends (the last stage takes the rest):\n"
      "    {\"stages\": [{\"devices\": [0, 1], \"mesh_shape\": [2], "
      "\"ends\": [\"h\"]},\n"
      "                {\"devices\": [2, 3, 4], \"sharding\": \"dp\"}]}\n"
      "\nOptions, and whether -o can be written, are checked before the "
      "model is read.\n"
      "Exit codes: 0 success, 1 bad model or options (or no CUDA toolkit "
      "for --target=cuda), 70 internal error; stopped by a signal, 128 + "
      "the signal\n(130 for Ctrl-C), with no scratch files left.\n");

  auto fail = [](const Twine &msg) {
    llvm::WithColor::error(llvm::errs(), "weftc") << msg << "\n";
    return kExitBadInput;
  };
  std::string error;
  if (modelPath.empty())
    return fail("no model given (see --help)");
  if (outputPath.empty())
    return fail("no output given: -o OUT/ (see --help)");
  bool cuda = targetName == "cuda";
  if (targetName != "cpu" && !cuda)
    return fail("--target=" + targetName + " is not a target: cpu or cuda");
  if (llvm::Error error = checkOptionsAgree(cuda))
    return fail(toString(std::move(error)));
  std::vector<int> gpuArchs;
  if (gpuEmulate && !cuda)
    return fail("--gpu-emulate is for --target=cuda");
  if (cuda) {
    if (failed(parseGpuArchs(gpuArchFlag, gpuArchs, error)))
      return fail("--gpu-arch: " + error);
    if (findCudaBinDir().empty())
      return fail("--target=cuda needs the CUDA toolkit (ptxas and "
                  "fatbinary), found in neither $CUDA_HOME/bin nor "
                  "/usr/local/cuda/bin; install it or set CUDA_HOME");
    if (WEFT_CUDA_SYSTEM_LIBRARIES[0] == '\0' &&
        (emitKind == EmitKind::Exe || emitKind == EmitKind::Lib))
      return fail("--target=cuda: this weftc was built without the CUDA "
                  "runtime (Weft's CMake found no CUDA toolkit), so it "
                  "cannot link GPU packages; --emit=mlir|llvm|obj work");
    if (emitKind == EmitKind::Lib)
      return fail("--emit=lib is for the CPU target; a CUDA package is "
                  "executables (--emit=exe)");
  } else if (gpuArchFlag.getNumOccurrences()) {
    return fail("--gpu-arch is for --target=cuda");
  }
  if (cuda && precision != "f32") {
    if (precision == "bf16" || precision == "f16")
      return fail("--precision=" + precision +
                  " is not implemented yet for --target=cuda: GPU programs "
                  "compute in f32 for now");
    return fail("--precision=" + precision +
                " is not a precision: f32, bf16 or f16");
  }
  if (!cuda && precision != "f32") {
    if (precision == "bf16" || precision == "f16")
      return fail("--precision=" + precision +
                  " is for GPU targets; the CPU target computes in f32");
    return fail("--precision=" + precision +
                " is not a precision: f32 (or bf16, f16 on GPU targets)");
  }

  OnnxImportOptions importOptions;
  for (const std::string &spec : inputShapes) {
    std::string name, error;
    SmallVector<int64_t> shape;
    if (!parseInputShapeSpec(spec, name, shape, error))
      return fail("--input-shape: " + error);
    if (!importOptions.inputShapes.try_emplace(name, shape).second)
      return fail("--input-shape given twice for '" + name + "'");
  }
  TargetOptions targetOptions;
  targetOptions.cpu = mcpu;
  targetOptions.features = mattr;
  std::unique_ptr<llvm::TargetMachine> machine =
      createTargetMachine(targetOptions, error);
  if (!machine)
    return fail("--mcpu/--mattr: " + error);

  DialectRegistry registry;
  registerOnnxImportDialects(registry);
  registerCodegenDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  context.printOpOnDiagnostic(false);
  context.getDiagEngine().registerHandler(printDiagnostic);
  // The planner's options, what depends on the mesh and the output path,
  // all before the model is read: wrong options fail at once. The options
  // need no model; the empty module only carries their diagnostics.
  OwningOpRef<ModuleOp> optionsScope =
      ModuleOp::create(UnknownLoc::get(&context));
  AutoShardOptions shardOptions;
  if (failed(buildAutoShardOptions(*optionsScope, clusterName, meshFlag,
                                   shardingFlag, objectiveFlag,
                                   deviceMemoryFlag, shardOptions)))
    return kExitBadInput;
  const plan::Mesh &mesh = shardOptions.cluster.meshes[shardOptions.mesh];
  int64_t numDevices = mesh.size();
  // A pipeline: the checks that need the cluster, and the pipeline file,
  // before the model is read.
  bool pipeline = stagesFlag.getNumOccurrences() || !pipelineFile.empty();
  std::vector<StageRequest> stageRequests;
  if (pipeline) {
    if (llvm::Error error = checkPipelineOptions(numDevices))
      return fail(toString(std::move(error)));
    if (!pipelineFile.empty()) {
      llvm::Expected<std::vector<StageRequest>> read = readPipelineFile(
          pipelineFile,
          static_cast<int64_t>(shardOptions.cluster.devices.size()));
      if (!read)
        return fail(toString(read.takeError()));
      stageRequests = std::move(*read);
      numDevices = 0;
      for (const StageRequest &stage : stageRequests)
        numDevices += stage.devices.size();
    }
    // Every rank is a device of the package, even a one-device pipeline.
    numDevices = std::max<int64_t>(numDevices, 2);
  }
  if (llvm::Error error =
          checkMeshOptions(numDevices, shardOptions.cluster.name))
    return fail(toString(std::move(error)));
  // Harmless, so not refused (a sweep over mesh shapes may pass it), but
  // said: nothing will be split.
  if (numDevices == 1 && shardingFlag.getNumOccurrences() &&
      shardingFlag != "auto" && !quiet)
    llvm::WithColor::note(llvm::errs(), "weftc")
        << "--sharding=" << shardingFlag << " has nothing to split: cluster '"
        << shardOptions.cluster.name
        << "' gives a mesh of one device (give more with --cluster, e.g. "
           "--cluster cpu:4)\n";
  if (outputPath != "-") {
    if (llvm::Error error =
            ::weft::checkOutputPath(outputPath, outputRule(numDevices)))
      return fail("-o '" + outputPath + "': " + toString(std::move(error)));
  }
  StageClock clock;

  ImportedTensors tensors;
  OwningOpRef<ModuleOp> module =
      importOnnxFile(&context, modelPath, importOptions,
                     shardingFile.empty() && pipelineFile.empty() ? nullptr
                                                                 : &tensors);
  if (!module)
    return kExitBadInput;
  clock.lap("import");
  auto func = module->lookupSymbol<func::FuncOp>("main");
  if (!func)
    return fail("the imported model has no main function");
  if (microbatchesFlag < 1)
    return fail("--microbatches=" + std::to_string(microbatchesFlag) +
                " must be at least 1");
  if (microbatchesFlag > 1) {
    if (failed(importMicrobatchModel(context, importOptions, module,
                                     shardingFile.empty() && pipelineFile.empty()
                                         ? nullptr
                                         : &tensors)))
      return kExitBadInput;
    func = module->lookupSymbol<func::FuncOp>("main");
    clock.lap("import of a microbatch");
  }
  if (!checkStaticInputs(func))
    return kExitBadInput;
  std::vector<TensorDescription> inputs = describe(func, false);

  // A sharding file is checked against the mesh.
  std::vector<std::string> constrained;
  if (!shardingFile.empty()) {
    // Before the canonicalizer, which folds and replaces the ops the names
    // point to.
    if (failed(applyShardingFile(*module, shardingFile, mesh.shape, tensors,
                                 constrained)))
      return kExitBadInput;
  }

  // The stages' end tensors, while the importer's names point at values.
  if (!pipelineFile.empty() &&
      failed(markStageEnds(func, pipelineFile, stageRequests, tensors)))
    return kExitBadInput;

  // Shapes first: every result must be static once the inputs are.
  {
    PassManager pm(&context);
    pm.addPass(createCanonicalizerPass());
    if (failed(pm.run(*module)))
      return stageFailure();
    if (!shardingFile.empty() && failed(checkConstraintsAfterFolding(
                                     *module, shardingFile, constrained)))
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
  }
  std::vector<TensorDescription> outputs = describe(func, true);
  std::string modelName = llvm::sys::path::filename(modelPath).str();

  if (pipeline) {
    PackageContents contents;
    contents.modelName = modelName;
    contents.backend = targetName.getValue();
    contents.cpu = mcpu;
    contents.features = mattr;
    contents.inputs = inputs;
    contents.outputs = outputs;
    int code = compilePipeline(context, *module, std::move(stageRequests),
                               shardOptions, std::move(contents), modelName,
                               gpuArchs, *machine, clock, argv[0]);
    return code;
  }

  // Multi-device: plan, then partition and compile each device's program.
  if (numDevices > 1 || emitKind == EmitKind::Plan) {
    // Planning and partitioning only: no device program is compiled.
    bool stopAfterPartition =
        emitKind == EmitKind::Plan || emitKind == EmitKind::Mlir;
    AutoShardReport report;
    if (failed(autoShard(*module, shardOptions, report)))
      return stageFailure();
    clock.lap("plan");
    std::string note = plan::planningNote(shardOptions.cluster);
    if (!quiet && !note.empty())
      llvm::errs() << "weftc: note: " << note << "\n";

    llvm::Expected<std::unique_ptr<::weft::TempFolder>> scratchFolder =
        ::weft::TempFolder::create("weftc");
    if (!scratchFolder)
      return fail(toString(scratchFolder.takeError()));
    SmallString<128> scratch((*scratchFolder)->path());

    PackageContents contents;
    contents.modelName = modelName;
    contents.backend = gpuEmulate ? std::string("cpu") : targetName.getValue();
    contents.gpuArchs = gpuArchs;
    contents.cpu = mcpu;
    contents.features = mattr;
    contents.inputs = inputs;
    contents.outputs = outputs;
    contents.meshShape = mesh.shape;
    std::vector<DeviceSummary> summaries(numDevices);
    ProgramCache programIndex;
    OwningOpRef<ModuleOp> device0;
    std::vector<std::string> partitioned; // --emit=mlir: per device
    // Devices whose blocks have the same shapes differ only in which block
    // of each weight they hold: the first of them is partitioned, the
    // others get a copy with their weights' blocks moved.
    std::map<std::string, OwningOpRef<ModuleOp>> partitionedByKey;
    std::vector<std::string> keyOfDevice;
    for (int64_t k = 0; k < numDevices; ++k) {
      FailureOr<std::string> key = blockShapeKey(*module, k, kMeshName);
      if (failed(key))
        return kExitInternal;
      OwningOpRef<ModuleOp> device;
      keyOfDevice.push_back(*key);
      if (auto it = partitionedByKey.find(*key); it != partitionedByKey.end()) {
        device = it->second->clone();
        if (failed(retargetPartition(*module, *device, k, kMeshName)))
          return kExitInternal;
      } else {
        device = module->clone();
        if (failed(spmdPartition(*device, k, kMeshName)))
          return kExitInternal;
        partitionedByKey.emplace(*key, device->clone());
      }
      summaries[k].flops = programFlops(*device);
      if (k == 0)
        device0 = device->clone();
      if (emitKind == EmitKind::Mlir) {
        llvm::raw_string_ostream printed(partitioned.emplace_back());
        device->print(printed);
      }
      if (stopAfterPartition) {
        summaries[k].weightBytes = layoutWeights(*device, "weights.bin").bytes;
        continue;
      }
      if (int code = compileDeviceProgram(
              context, *device, k, deviceMemoryOf(shardOptions.cluster, mesh, k),
              gpuArchs, scratch, *machine, programIndex, contents,
              summaries[k]))
        return code;
    }
    clock.lap("codegen");
    PlanSummary planSummary =
        summarizePlan(*module, *device0, shardOptions, report, summaries,
                      /*compiled=*/!stopAfterPartition, modelName);
    planSummary.microbatches = microbatchesFlag;
    // The distinct programs: compiled ones as codegen merged them, else one
    // per distinct partitioning (block shapes).
    {
      std::map<std::string, std::vector<int64_t>> devicesOfProgram;
      std::map<std::string, std::string> representative;
      for (int64_t k = 0; k < numDevices; ++k) {
        std::string id = stopAfterPartition
                             ? keyOfDevice[k]
                             : std::to_string(summaries[k].program);
        devicesOfProgram[id].push_back(k);
        representative.try_emplace(id, keyOfDevice[k]);
      }
      std::vector<std::pair<int64_t, std::string>> order;
      for (auto &[id, devices] : devicesOfProgram)
        order.push_back({devices.front(), id});
      llvm::sort(order);
      for (auto &[first, id] : order)
        addProgram(planSummary, *partitionedByKey[representative[id]],
                   devicesOfProgram[id]);
    }
    contents.planJson = planJson(planSummary);
    // Text for people goes where the plan does not.
    llvm::raw_ostream &info = outputPath == "-" ? llvm::errs() : llvm::outs();
    if (emitKind == EmitKind::Mlir) {
      // OUT/plan.json and OUT/dev<k>.mlir: what each device runs, before
      // codegen (collectives and weight blocks as weft ops).
      std::vector<std::pair<std::string, std::string>> files;
      for (auto [k, text] : llvm::enumerate(partitioned))
        files.push_back({"dev" + std::to_string(k) + ".mlir", text});
      files.push_back({"plan.json", contents.planJson});
      if (int code = writeFolder(files))
        return code;
    } else if (emitKind == EmitKind::Plan) {
      if (int code = writePlanOutput(contents.planJson))
        return code;
    } else {
      RuntimeLocation runtime = findRuntime(argv[0]);
      if (failed(writePackage(contents, runtime, outputPath,
                              /*asLibrary=*/false, module->getLoc())))
        return kExitInternal;
      clock.lap("link");
    }
    if (reportPlan)
      printPlanReport(planSummary, info);
    if (!quiet) {
      const plan::Solution &sol = report.solution;
      info << "weftc: planned " << modelName << " for "
           << shardOptions.cluster.name << ", mesh "
           << llvm::interleaved(contents.meshShape, "x") << " into "
           << outputPath << "\n"
           << llvm::formatv("  ilp: {0} nodes, {1} variables, {2} "
                            "constraints, solved in {3:f2} s{4}\n",
                            report.graphNodes, sol.numVariables,
                            sol.numConstraints, sol.solveSeconds,
                            sol.optimal ? " (optimal)" : "")
           << llvm::formatv("  predicted: {0:f3} ms per run, peak "
                            "{1:f1} MB per device\n",
                            sol.objective * 1e3, report.memory.peakBytes / 1e6);
      for (auto [k, d] : llvm::enumerate(summaries))
        info << llvm::formatv(
            "  device {0}: program {1}, weights {2} bytes, arena {3} bytes, "
            "{4:e2} FLOPs\n",
            k, d.program, d.weightBytes, d.arenaBytes, d.flops);
      info << clock.lines;
    }
    return 0;
  }

  // Weights move into the device's file; their ops point there.
  WeightsFileLayout weights = layoutWeights(*module, "dev0.bin");

  // Files made on the way (objects, weights, GPU constants) go to a scratch
  // folder that is removed at the end.
  llvm::Expected<std::unique_ptr<::weft::TempFolder>> scratchFolder =
      ::weft::TempFolder::create("weftc");
  if (!scratchFolder)
    return fail(toString(scratchFolder.takeError()));
  SmallString<128> scratch((*scratchFolder)->path());
  SmallString<256> constantsPath(scratch);
  llvm::sys::path::append(constantsPath, "gpu-constants.bin");

  {
    DeviceMemory memory = deviceMemoryOf(shardOptions.cluster, mesh, 0);
    if (!checkIOFits(inputs, "input", memory) ||
        !checkIOFits(outputs, "output", memory))
      return kExitBadInput;
    PassManager pm(&context);
    buildDevicePipeline(pm, *module, weights.bytes, gpuArchs, constantsPath,
                        /*stopAtBuffers=*/emitKind == EmitKind::Mlir, memory);
    if (failed(pm.run(*module)))
      return stageFailure();
  }
  if (cuda && failed(appendDeviceConstants(*module, constantsPath, weights)))
    return kExitInternal;
  clock.lap("lower");
  int64_t arenaBytes = 0;
  if (auto attr = (*module)->getAttrOfType<IntegerAttr>(kArenaBytesAttr))
    arenaBytes = attr.getInt();

  if (emitKind == EmitKind::Mlir) {
    auto out = openOutputFile(outputPath, &error);
    if (!out)
      return fail("cannot open " + outputPath + ": " + error);
    module->print(out->os());
    out->os() << "\n";
    out->keep();
    return 0;
  }

  std::string signature = buildProgramSignature(*module, weights.bytes);
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateProgram(*module, llvmContext, *machine, signature);
  if (!llvmModule) {
    llvm::WithColor::error(llvm::errs(), "weftc")
        << "translation to LLVM IR failed; this is a bug in Weft, please "
           "report it with the model\n";
    return kExitInternal;
  }
  clock.lap("optimize");
  if (emitKind == EmitKind::Llvm) {
    auto out = openOutputFile(outputPath, &error);
    if (!out)
      return fail("cannot open " + outputPath + ": " + error);
    llvmModule->print(out->os(), nullptr);
    out->keep();
    return 0;
  }
  if (emitKind == EmitKind::Obj) {
    if (!emitObjectFile(*llvmModule, *machine, outputPath, error))
      return fail(error);
    return 0;
  }

  // A package: object and weights into the scratch folder, then link.
  SmallString<256> objectPath(scratch), weightsPath(scratch);
  llvm::sys::path::append(objectPath, "dev0.o");
  llvm::sys::path::append(weightsPath, "dev0.bin");
  if (!emitObjectFile(*llvmModule, *machine, objectPath, error))
    return fail(error);
  clock.lap("codegen");
  std::string sha256;
  if (failed(writeWeightsFile(weights, weightsPath, module->getLoc(), sha256)))
    return kExitBadInput;

  PackageContents contents;
  contents.modelName = modelName;
  contents.backend = gpuEmulate ? std::string("cpu") : targetName.getValue();
  contents.gpuArchs = gpuArchs;
  contents.cpu = mcpu;
  contents.features = mattr;
  contents.inputs = inputs;
  contents.outputs = outputs;
  contents.programs.push_back({objectPath.str().str(), arenaBytes, signature});
  contents.devices.push_back(
      {/*program=*/0, weightsPath.str().str(), weights.bytes, sha256});
  RuntimeLocation runtime = findRuntime(argv[0]);
  if (failed(writePackage(contents, runtime, outputPath,
                          emitKind == EmitKind::Lib, module->getLoc())))
    return kExitInternal;
  clock.lap("link");

  if (!quiet) {
    int64_t kernels = 0, loops = 0;
    StringRef ops = signature;
    while (!ops.empty()) {
      auto [line, rest] = ops.split('\n');
      ops = rest;
      if (line.starts_with("op "))
        (line.contains(" loops ") ? loops : kernels)++;
    }
    std::string target = "cpu (" + mcpu + ")";
    if (cuda) {
      target = "cuda (";
      for (auto [i, arch] : llvm::enumerate(gpuArchs))
        target += (i ? "," : "") + std::string("sm_") + std::to_string(arch);
      target += ")";
    }
    llvm::outs() << "weftc: compiled " << modelName << " for " << target
                 << " into " << outputPath << "\n"
                 << "  plan: 1 device; " << kernels << " kernel calls, "
                 << loops
                 << (cuda && !gpuEmulate ? " generated GPU kernels\n"
                                         : " generated loop nests\n")
                 << "  memory: arena " << arenaBytes << " bytes (planned "
                 << "peak), weights " << weights.bytes << " bytes\n"
                 << clock.lines;
  }
  return 0;
}
