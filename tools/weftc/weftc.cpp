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
// This file holds the options, their checks, the diagnostics and main: the
// model is read by ImportModel.cpp and compiled by CompileMesh.cpp (one
// mesh) or CompilePipeline.cpp (--stages, --pipeline-file).
//
//===----------------------------------------------------------------------===//

#include "CompileMesh.h"
#include "CompilePipeline.h"
#include "Driver.h"
#include "ImportModel.h"
#include "Options.h"
#include "Stages.h"

#include "weft/Codegen/ObjectEmitter.h"
#include "weft/Codegen/Passes.h"
#include "weft/Codegen/RuntimeConfig.h"
#include "weft/Import/ONNX/Importer.h"
#include "weft/Plan/Cluster.h"
#include "weft/Support/OutputPath.h"
#include "weft/Support/TempFolder.h"
#include "weft/Transforms/AutoShard.h"
#include "weft/Version.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"

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
static cl::opt<std::string> stagesFlag(
    "stages",
    cl::desc("Cut the model into N pipeline stages of balanced predicted "
             "time, each on its own sub-mesh of the cluster's devices "
             "(contiguous, sized by work); auto: the stage planner chooses "
             "the stages, their sub-meshes and placement for --objective; "
             "--sharding applies inside each stage (docs/Pipelines.md)"),
    cl::value_desc("N|auto"), cl::init(""), cl::cat(category));
static cl::opt<int> maxStagesFlag(
    "max-stages",
    cl::desc("With --stages=auto: at most this many stages (default: no "
             "limit)"),
    cl::value_desc("N"), cl::init(0), cl::cat(category));
static cl::opt<std::string> pipelineFile(
    "pipeline-file",
    cl::desc("State the pipeline instead: a JSON file {\"stages\": [{\"devices\": "
             "[...], \"mesh_shape\": [...], \"sharding\": \"tp\", \"ends\": "
             "[ONNX tensor names]}, ...]} (docs/Pipelines.md)"),
    cl::value_desc("file.json"), cl::init(""), cl::cat(category));
static cl::opt<std::string> microbatchesFlag(
    "microbatches",
    cl::desc("Split the batch (dimension 0 of every input) into M "
             "microbatches that follow each other through the pipeline's "
             "stages; refused, naming the op, where an op mixes batch rows; "
             "auto (with --stages=auto): the stage planner tries every "
             "divisor of the batch up to --max-microbatches "
             "(docs/Pipelines.md)"),
    cl::value_desc("M|auto"), cl::init("1"), cl::cat(category));
static cl::opt<int> maxMicrobatchesFlag(
    "max-microbatches",
    cl::desc("With --microbatches=auto: the most microbatches tried "
             "(default 16)"),
    cl::value_desc("M"), cl::init(16), cl::cat(category));
static cl::opt<std::string> objectiveFlag("objective",
                                          cl::desc("latency or throughput"),
                                          cl::init("latency"),
                                          cl::cat(category));
static cl::opt<plan::ReshardMethod> reshardMethodFlag(
    "reshard-method",
    cl::desc("How a pipeline's transfers between meshes are planned "
             "(docs/Resharding.md)"),
    cl::init(plan::ReshardMethod::Balanced),
    cl::values(
        clEnumValN(plan::ReshardMethod::Balanced, "balanced",
                   "senders, broadcast chains and order chosen for the "
                   "earliest finish (default)"),
        clEnumValN(plan::ReshardMethod::Broadcast, "broadcast",
                   "one broadcast chain per tile"),
        clEnumValN(plan::ReshardMethod::SendRecvAllGather,
                   "send-recv-allgather",
                   "slices per receiver, then an all-gather inside each "
                   "node"),
        clEnumValN(plan::ReshardMethod::SendRecv, "send-recv",
                   "one send per tile and receiver")),
    cl::cat(category));
static cl::opt<int> maxBroadcastGroupsFlag(
    "max-broadcast-groups",
    cl::desc("The most sub-communicators a pipeline's broadcasts create at "
             "start-up (default 16); broadcasts over other device sets run "
             "as the same chain over the world (docs/Resharding.md)"),
    cl::value_desc("N"), cl::init(16), cl::cat(category));
static cl::opt<std::string> deviceMemoryFlag(
    "device-memory",
    cl::desc("Override every device's memory, e.g. 2GB or 500000"),
    cl::init(""), cl::cat(category));
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
    recordInternalError();
  if (!where.empty() && !StringRef(message).starts_with("node '"))
    os << "node '" << where << "': ";
  os << message << "\n";
  for (Diagnostic &note : diag.getNotes())
    os << "  note: " << note << "\n";
}

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

/// --microbatches: M >= 1 (`microbatches`), or auto (`microbatches` 1 and
/// `autoMicrobatches`).
static llvm::Error parseMicrobatchesFlag(int &microbatches,
                                         bool &autoMicrobatches) {
  microbatches = 1;
  autoMicrobatches = false;
  StringRef text = microbatchesFlag.getValue();
  if (text == "auto") {
    autoMicrobatches = true;
    return llvm::Error::success();
  }
  if (text.getAsInteger(10, microbatches) || microbatches < 1)
    return llvm::createStringError(
        "--microbatches=" + text +
        ": give a number of microbatches (1 or more) or auto");
  return llvm::Error::success();
}

/// --microbatches and --max-microbatches. Returns 0, or 1 after reporting
/// the first problem.
static int checkMicrobatchOptions() {
  int microbatches = 1;
  bool autoMicrobatches = false;
  if (llvm::Error error = parseMicrobatchesFlag(microbatches, autoMicrobatches))
    return refuse(toString(std::move(error)));
  if (autoMicrobatches && stagesFlag.getValue() != "auto")
    return refuse("--microbatches=auto is chosen with the stages; give "
                  "--stages=auto");
  if (maxMicrobatchesFlag.getNumOccurrences() && !autoMicrobatches)
    return refuse("--max-microbatches bounds --microbatches=auto; give "
                  "--microbatches=auto");
  if (maxMicrobatchesFlag < 1)
    return refuse("--max-microbatches=" +
                  std::to_string(maxMicrobatchesFlag.getValue()) +
                  " must be at least 1");
  return 0;
}

/// Options that cannot go with a pipeline (--stages, --pipeline-file).
/// --stages: N >= 1 (`stages`), or auto (`stages` 0 and `autoStages`).
static llvm::Error parseStagesFlag(int &stages, bool &autoStages) {
  stages = 0;
  autoStages = false;
  if (!stagesFlag.getNumOccurrences())
    return llvm::Error::success();
  StringRef text = stagesFlag.getValue();
  if (text == "auto") {
    autoStages = true;
    return llvm::Error::success();
  }
  if (text.getAsInteger(10, stages) || stages < 1)
    return llvm::createStringError(
        "--stages=" + text +
        ": give a number of stages (1 or more) or auto");
  return llvm::Error::success();
}

static llvm::Error checkPipelineOptions(int64_t meshDevices) {
  auto conflict = [](const Twine &message) {
    return llvm::createStringError(message);
  };
  if (stagesFlag.getNumOccurrences() && !pipelineFile.empty())
    return conflict("--stages and --pipeline-file both say how to cut the "
                    "model: give one");
  int stages = 0;
  bool autoStages = false;
  if (llvm::Error error = parseStagesFlag(stages, autoStages))
    return error;
  if (maxStagesFlag.getNumOccurrences() && !autoStages)
    return conflict("--max-stages bounds --stages=auto; give --stages=auto");
  if (maxStagesFlag < 0)
    return conflict("--max-stages=" + Twine(maxStagesFlag.getValue()) +
                    " is negative");
  if (stages > meshDevices)
    return conflict("--stages=" + Twine(stages) + " needs " + Twine(stages) +
                    " devices (one per stage at least), but the cluster "
                    "gives " +
                    Twine(meshDevices) + "; add devices, e.g. --cluster cpu:" +
                    Twine(stages));
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

/// The values of the options that the import and the compile paths read;
/// --gpu-arch's architectures come from checkOptions.
static WeftcOptions readOptions() {
  WeftcOptions options;
  options.modelPath = modelPath;
  options.outputPath = outputPath;
  options.emit = emitKind;
  options.target = targetName;
  options.gpuEmulate = gpuEmulate;
  options.cpu = mcpu;
  options.features = mattr;
  options.deviceMemoryGiven = deviceMemoryFlag.getNumOccurrences() > 0;
  options.clusterGiven = clusterName.getNumOccurrences() > 0;
  options.shardingFile = shardingFile;
  // Checked before (checkPipelineOptions): a bad value never gets here.
  llvm::consumeError(parseStagesFlag(options.stages, options.autoStages));
  options.maxStages = maxStagesFlag;
  options.pipelineFile = pipelineFile;
  llvm::consumeError(
      parseMicrobatchesFlag(options.microbatches, options.autoMicrobatches));
  options.maxMicrobatches = maxMicrobatchesFlag;
  options.reshardMethod = reshardMethodFlag;
  options.maxBroadcastGroups = maxBroadcastGroupsFlag;
  options.reportMemory = reportMemory;
  options.reportPlan = reportPlan;
  options.quiet = quiet;
  return options;
}

/// The checks of the options alone, the first of them before any toolkit
/// is looked for; fills `gpuArchs` from --gpu-arch for --target=cuda.
/// Returns 0, or 1 after reporting the first problem.
static int checkOptions(std::vector<int> &gpuArchs) {
  std::string error;
  if (modelPath.empty())
    return refuse("no model given (see --help)");
  if (maxBroadcastGroupsFlag < 0 || maxBroadcastGroupsFlag > 1024)
    return refuse("--max-broadcast-groups=" +
                  std::to_string(maxBroadcastGroupsFlag.getValue()) +
                  " must be from 0 to 1024");
  if (int code = checkMicrobatchOptions())
    return code;
  if (outputPath.empty())
    return refuse("no output given: -o OUT/ (see --help)");
  bool cuda = targetName == "cuda";
  if (targetName != "cpu" && !cuda)
    return refuse("--target=" + targetName + " is not a target: cpu or cuda");
  if (llvm::Error error = checkOptionsAgree(cuda))
    return refuse(toString(std::move(error)));
  if (gpuEmulate && !cuda)
    return refuse("--gpu-emulate is for --target=cuda");
  if (cuda) {
    if (failed(parseGpuArchs(gpuArchFlag, gpuArchs, error)))
      return refuse("--gpu-arch: " + error);
    if (findCudaBinDir().empty())
      return refuse("--target=cuda needs the CUDA toolkit (ptxas and "
                    "fatbinary), found in neither $CUDA_HOME/bin nor "
                    "/usr/local/cuda/bin; install it or set CUDA_HOME");
    if (WEFT_CUDA_SYSTEM_LIBRARIES[0] == '\0' &&
        (emitKind == EmitKind::Exe || emitKind == EmitKind::Lib))
      return refuse("--target=cuda: this weftc was built without the CUDA "
                    "runtime (Weft's CMake found no CUDA toolkit), so it "
                    "cannot link GPU packages; --emit=mlir|llvm|obj work");
    if (emitKind == EmitKind::Lib)
      return refuse("--emit=lib is for the CPU target; a CUDA package is "
                    "executables (--emit=exe)");
  } else if (gpuArchFlag.getNumOccurrences()) {
    return refuse("--gpu-arch is for --target=cuda");
  }
  if (cuda && precision != "f32") {
    if (precision == "bf16" || precision == "f16")
      return refuse("--precision=" + precision +
                    " is not implemented yet for --target=cuda: GPU programs "
                    "compute in f32 for now");
    return refuse("--precision=" + precision +
                  " is not a precision: f32, bf16 or f16");
  }
  if (!cuda && precision != "f32") {
    if (precision == "bf16" || precision == "f16")
      return refuse("--precision=" + precision +
                    " is for GPU targets; the CPU target computes in f32");
    return refuse("--precision=" + precision +
                  " is not a precision: f32 (or bf16, f16 on GPU targets)");
  }
  return 0;
}

/// --input-shape's shapes into `importOptions`. Returns 0, or 1 after
/// reporting a malformed or repeated one.
static int readInputShapes(OnnxImportOptions &importOptions) {
  for (const std::string &spec : inputShapes) {
    std::string name, error;
    SmallVector<int64_t> shape;
    if (!parseInputShapeSpec(spec, name, shape, error))
      return refuse("--input-shape: " + error);
    if (!importOptions.inputShapes.try_emplace(name, shape).second)
      return refuse("--input-shape given twice for '" + name + "'");
  }
  return 0;
}

namespace {
/// Where the model is to run, settled before it is read.
struct Placement {
  AutoShardOptions shardOptions;
  /// --stages or --pipeline-file.
  bool pipeline = false;
  /// --pipeline-file's stages; for --stages the balanced rule fills them.
  std::vector<StageRequest> stageRequests;
  /// The package's devices: the mesh's, or a pipeline's ranks.
  int64_t numDevices = 1;
};
} // namespace

/// The planner's options, what depends on the mesh and the output path,
/// all before the model is read: wrong options fail at once. Returns 0, or
/// the exit code of a problem it reported.
static int placeModel(MLIRContext &context, Placement &placement) {
  // The options need no model; the empty module only carries their
  // diagnostics.
  OwningOpRef<ModuleOp> optionsScope =
      ModuleOp::create(UnknownLoc::get(&context));
  AutoShardOptions &shardOptions = placement.shardOptions;
  if (failed(buildAutoShardOptions(*optionsScope, clusterName, meshFlag,
                                   shardingFlag, objectiveFlag,
                                   deviceMemoryFlag, shardOptions)))
    return kExitBadInput;
  const plan::Mesh &mesh = shardOptions.cluster.meshes[shardOptions.mesh];
  int64_t numDevices = mesh.size();
  // A pipeline: the checks that need the cluster, and the pipeline file,
  // before the model is read.
  placement.pipeline = stagesFlag.getNumOccurrences() || !pipelineFile.empty();
  if (placement.pipeline) {
    if (llvm::Error error = checkPipelineOptions(numDevices))
      return refuse(toString(std::move(error)));
    if (!pipelineFile.empty()) {
      llvm::Expected<std::vector<StageRequest>> read = readPipelineFile(
          pipelineFile,
          static_cast<int64_t>(shardOptions.cluster.devices.size()));
      if (!read)
        return refuse(toString(read.takeError()));
      placement.stageRequests = std::move(*read);
      numDevices = 0;
      for (const StageRequest &stage : placement.stageRequests)
        numDevices += stage.devices.size();
    }
    // Every rank is a device of the package, even a one-device pipeline.
    numDevices = std::max<int64_t>(numDevices, 2);
  }
  placement.numDevices = numDevices;
  if (llvm::Error error =
          checkMeshOptions(numDevices, shardOptions.cluster.name))
    return refuse(toString(std::move(error)));
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
      return refuse("-o '" + outputPath + "': " + toString(std::move(error)));
  }
  return 0;
}

/// What --help prints before the options.
static const char kOverview[] =
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
    "  weftc model.onnx -o out/ --cluster dgx-h100x8:2 --stages=auto \\\n"
    "        --objective=throughput   # stages, sub-meshes, placement chosen\n"
    "  weftc model.onnx -o out/ --cluster cpu:4 --stages=auto \\\n"
    "        --microbatches=auto      # and the microbatch count with them\n"
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
    "the signal\n(130 for Ctrl-C), with no scratch files left.\n";

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
  cl::ParseCommandLineOptions(argc, argv, kOverview);

  WeftcOptions options = readOptions();
  if (int code = checkOptions(options.gpuArchs))
    return code;
  OnnxImportOptions importOptions;
  if (int code = readInputShapes(importOptions))
    return code;
  TargetOptions targetOptions;
  targetOptions.cpu = mcpu;
  targetOptions.features = mattr;
  std::string error;
  std::unique_ptr<llvm::TargetMachine> machine =
      createTargetMachine(targetOptions, error);
  if (!machine)
    return refuse("--mcpu/--mattr: " + error);

  DialectRegistry registry;
  registerOnnxImportDialects(registry);
  registerCodegenDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  context.printOpOnDiagnostic(false);
  context.getDiagEngine().registerHandler(printDiagnostic);
  Placement placement;
  if (int code = placeModel(context, placement))
    return code;

  const AutoShardOptions &shardOptions = placement.shardOptions;

  if (options.autoMicrobatches)
    if (int code = chooseMicrobatches(context, options, importOptions,
                                      shardOptions, placement.stageRequests))
      return code;
  StageClock clock;
  ImportedModel model;
  if (int code =
          importModel(context, options, importOptions,
                      shardOptions.cluster.meshes[shardOptions.mesh].shape,
                      placement.stageRequests, clock, model))
    return code;
  if (placement.pipeline)
    return compilePipeline(context, options, model,
                           std::move(placement.stageRequests), shardOptions,
                           *machine, clock, argv[0]);
  // Multi-device: plan, then partition and compile each device's program.
  if (placement.numDevices > 1 || options.emit == EmitKind::Plan)
    return compileMesh(context, options, model, shardOptions, *machine, clock,
                       argv[0]);
  return compileOneDevice(context, options, model, shardOptions, *machine,
                          clock, argv[0]);
}
