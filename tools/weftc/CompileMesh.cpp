//===- CompileMesh.cpp - Compiling the model on one mesh ------------------===//

#include "CompileMesh.h"
#include "DeviceCompile.h"
#include "PlanReport.h"
#include "Simulation.h"

#include "weft/Codegen/ObjectEmitter.h"
#include "weft/Codegen/ProgramABI.h"
#include "weft/Codegen/WeightsFile.h"
#include "weft/Support/TempFolder.h"
#include "weft/Transforms/SpmdPartition.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InterleavedRange.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <map>

using namespace mlir;
using namespace mlir::weft;

/// The package's description of the model and of what it is compiled for;
/// the programs, devices and plan are added as they are made.
static PackageContents packageContents(const WeftcOptions &options,
                                       const ImportedModel &model) {
  PackageContents contents;
  contents.modelName = model.name;
  contents.backend = options.packageBackend();
  contents.gpuArchs = options.gpuArchs;
  contents.cpu = options.cpu;
  contents.features = options.features;
  contents.inputs = model.inputs;
  contents.outputs = model.outputs;
  return contents;
}

//===----------------------------------------------------------------------===//
// Several devices
//===----------------------------------------------------------------------===//

namespace {
/// Each device's partitioned program, and what the plan's summary and
/// --emit=mlir need of them.
struct PartitionedMesh {
  std::vector<DeviceSummary> summaries;
  OwningOpRef<ModuleOp> device0;
  std::vector<std::string> partitioned; // --emit=mlir: per device
  // Devices whose blocks have the same shapes differ only in which block
  // of each weight they hold: the first of them is partitioned, the
  // others get a copy with their weights' blocks moved.
  std::map<std::string, OwningOpRef<ModuleOp>> partitionedByKey;
  std::vector<std::string> keyOfDevice;
};
} // namespace

/// Partitions the planned `module` into each device's program and, unless
/// `stopAfterPartition`, compiles it into `contents`. Returns 0, or the exit
/// code of a failure it reported.
static int partitionDevices(MLIRContext &context, const WeftcOptions &options,
                            ModuleOp module,
                            const AutoShardOptions &shardOptions,
                            bool stopAfterPartition, StringRef scratch,
                            llvm::TargetMachine &machine,
                            PackageContents &contents,
                            PartitionedMesh &result, ProgramSimulation &sim) {
  const plan::Mesh &mesh = shardOptions.cluster.meshes[shardOptions.mesh];
  int64_t numDevices = mesh.size();
  // Mesh position k is world rank k, on the mesh's k-th cluster device.
  std::vector<int64_t> clusterDeviceOfRank(mesh.devices.begin(),
                                           mesh.devices.end());
  result.summaries.resize(numDevices);
  ProgramCache programIndex;
  for (int64_t k = 0; k < numDevices; ++k) {
    FailureOr<std::string> key = blockShapeKey(module, k, kMeshName);
    if (failed(key))
      return kExitInternal;
    OwningOpRef<ModuleOp> device;
    result.keyOfDevice.push_back(*key);
    if (auto it = result.partitionedByKey.find(*key);
        it != result.partitionedByKey.end()) {
      device = it->second->clone();
      if (failed(retargetPartition(module, *device, k, kMeshName)))
        return kExitInternal;
    } else {
      device = module.clone();
      if (failed(spmdPartition(*device, k, kMeshName)))
        return kExitInternal;
      result.partitionedByKey.emplace(*key, device->clone());
    }
    result.summaries[k].flops = programFlops(*device);
    RankSimInfo info;
    info.rank = k;
    info.clusterDeviceOfRank = clusterDeviceOfRank;
    if (int code = addRankToSimulation(sim, *device, info, shardOptions.cluster))
      return code;
    if (k == 0)
      result.device0 = device->clone();
    if (options.emit == EmitKind::Mlir) {
      llvm::raw_string_ostream printed(result.partitioned.emplace_back());
      device->print(printed);
    }
    if (stopAfterPartition) {
      result.summaries[k].weightBytes =
          layoutWeights(*device, "weights.bin").bytes;
      continue;
    }
    if (int code = compileDeviceProgram(
            context, options, *device, k,
            deviceMemoryOf(options, shardOptions.cluster, mesh, k), scratch,
            machine, programIndex, contents, result.summaries[k]))
      return code;
  }
  return 0;
}

/// Adds the distinct programs to the plan's summary: compiled ones as
/// codegen merged them, else one per distinct partitioning (block shapes).
static void addDistinctPrograms(PlanSummary &planSummary,
                                PartitionedMesh &partition,
                                bool stopAfterPartition) {
  std::map<std::string, std::vector<int64_t>> devicesOfProgram;
  std::map<std::string, std::string> representative;
  for (int64_t k = 0, e = partition.summaries.size(); k < e; ++k) {
    std::string id = stopAfterPartition
                         ? partition.keyOfDevice[k]
                         : std::to_string(partition.summaries[k].program);
    devicesOfProgram[id].push_back(k);
    representative.try_emplace(id, partition.keyOfDevice[k]);
  }
  std::vector<std::pair<int64_t, std::string>> order;
  for (auto &[id, devices] : devicesOfProgram)
    order.push_back({devices.front(), id});
  llvm::sort(order);
  for (auto &[first, id] : order)
    addProgram(planSummary, *partition.partitionedByKey[representative[id]],
               devicesOfProgram[id]);
}

/// Writes what --emit asks for: the folder of --emit=mlir, plan.json, or
/// the package. Returns 0, or the exit code of a failure it reported.
static int writeMeshOutput(const WeftcOptions &options, ModuleOp module,
                           const PartitionedMesh &partition,
                           const PackageContents &contents, StageClock &clock,
                           const char *argv0) {
  if (options.emit == EmitKind::Mlir) {
    // OUT/plan.json and OUT/dev<k>.mlir: what each device runs, before
    // codegen (collectives and weight blocks as weft ops).
    std::vector<std::pair<std::string, std::string>> files;
    for (auto [k, text] : llvm::enumerate(partition.partitioned))
      files.push_back({"dev" + std::to_string(k) + ".mlir", text});
    files.push_back({"plan.json", contents.planJson});
    return writeFolder(options.outputPath, files);
  }
  return writePlanOrPackage(options, contents, module.getLoc(), clock, argv0);
}

/// The closing lines of a mesh compile: the plan, the ILP, the prediction,
/// each device and the stages' times.
static void printMeshSummary(const WeftcOptions &options, StringRef modelName,
                             const AutoShardOptions &shardOptions,
                             const AutoShardReport &report,
                             ArrayRef<int64_t> meshShape,
                             ArrayRef<DeviceSummary> summaries,
                             const SimulatedSummary &simulated,
                             const StageClock &clock, llvm::raw_ostream &info) {
  const plan::Solution &sol = report.solution;
  info << "weftc: planned " << modelName << " for " << shardOptions.cluster.name
       << ", mesh " << llvm::interleaved(meshShape, "x") << " into "
       << options.outputPath << "\n"
       << llvm::formatv("  ilp: {0} nodes, {1} variables, {2} "
                        "constraints, solved in {3:f2} s{4}\n",
                        report.graphNodes, sol.numVariables, sol.numConstraints,
                        sol.solveSeconds, sol.optimal ? " (optimal)" : "")
       << llvm::formatv("  predicted: {0:f3} ms per run, peak "
                        "{1:f1} MB per device\n",
                        sol.objective * 1e3, report.memory.peakBytes / 1e6);
  printSimulatedLines(simulated, info);
  for (auto [k, d] : llvm::enumerate(summaries))
    info << llvm::formatv(
        "  device {0}: program {1}, weights {2} bytes, arena {3} bytes, "
        "{4:e2} FLOPs\n",
        k, d.program, d.weightBytes, d.arenaBytes, d.flops);
  info << clock.lines;
}

int mlir::weft::compileMesh(MLIRContext &context, const WeftcOptions &options,
                            ImportedModel &model,
                            const AutoShardOptions &shardOptions,
                            llvm::TargetMachine &machine, StageClock &clock,
                            const char *argv0) {
  ModuleOp module = *model.module;
  // Planning and partitioning only: no device program is compiled.
  bool stopAfterPartition =
      options.emit == EmitKind::Plan || options.emit == EmitKind::Mlir;
  AutoShardReport report;
  if (failed(autoShard(module, shardOptions, report)))
    return stageFailure();
  clock.lap("plan");
  std::string note = plan::planningNote(shardOptions.cluster);
  if (!options.quiet && !note.empty())
    llvm::errs() << "weftc: note: " << note << "\n";

  llvm::Expected<std::unique_ptr<::weft::TempFolder>> scratchFolder =
      ::weft::TempFolder::create("weftc");
  if (!scratchFolder)
    return refuse(toString(scratchFolder.takeError()));
  SmallString<128> scratch((*scratchFolder)->path());

  PackageContents contents = packageContents(options, model);
  contents.meshShape = shardOptions.cluster.meshes[shardOptions.mesh].shape;
  PartitionedMesh partition;
  ProgramSimulation sim(options.microbatches,
                        model.name + " on " + shardOptions.cluster.name +
                            ": mesh " +
                            llvm::formatv("{0:$[x]}",
                                          llvm::make_range(
                                              contents.meshShape.begin(),
                                              contents.meshShape.end()))
                                .str());
  if (int code = partitionDevices(context, options, module, shardOptions,
                                  stopAfterPartition, scratch, machine,
                                  contents, partition, sim))
    return code;
  clock.lap("codegen");
  PlanSummary planSummary = summarizePlan(
      module, *partition.device0, shardOptions, report, partition.summaries,
      /*compiled=*/!stopAfterPartition, model.name);
  planSummary.microbatches = options.microbatches;
  if (int code =
          simulatePrograms(sim, shardOptions.cluster, planSummary.simulated))
    return code;
  addDistinctPrograms(planSummary, partition, stopAfterPartition);
  contents.planJson = planJson(planSummary);
  llvm::raw_ostream &info = infoStream(options);
  if (int code =
          writeMeshOutput(options, module, partition, contents, clock, argv0))
    return code;
  if (int code = writeTimelineFiles(options, sim))
    return code;
  if (options.reportPlan)
    printPlanReport(planSummary, info);
  if (!options.quiet)
    printMeshSummary(options, model.name, shardOptions, report,
                     contents.meshShape, partition.summaries,
                     planSummary.simulated, clock, info);
  return 0;
}

//===----------------------------------------------------------------------===//
// One device
//===----------------------------------------------------------------------===//

/// Writes the text `print` gives to the file -o names ('-' is stdout).
/// Returns 0, or 1 after reporting why it could not.
static int
writeTextOutput(StringRef outputPath,
                llvm::function_ref<void(llvm::raw_ostream &)> print) {
  std::string error;
  auto out = openOutputFile(outputPath, &error);
  if (!out)
    return refuse("cannot open " + outputPath + ": " + error);
  print(out->os());
  out->keep();
  return 0;
}

/// Checks that the model's inputs and outputs fit the device, then runs the
/// device pipeline on `module` (to buffers for --emit=mlir) and, for cuda,
/// adds the GPU constants to `weights`. Returns 0, or the exit code of a
/// failure it reported.
static int lowerOneDevice(MLIRContext &context, const WeftcOptions &options,
                          const ImportedModel &model,
                          const AutoShardOptions &shardOptions,
                          StringRef constantsPath, WeightsFileLayout &weights) {
  ModuleOp module = *model.module;
  {
    const plan::Mesh &mesh = shardOptions.cluster.meshes[shardOptions.mesh];
    DeviceMemory memory =
        deviceMemoryOf(options, shardOptions.cluster, mesh, 0);
    if (!checkIOFits(model.inputs, "input", memory) ||
        !checkIOFits(model.outputs, "output", memory))
      return kExitBadInput;
    PassManager pm(&context);
    buildDevicePipeline(pm, options, module, weights.bytes, constantsPath,
                        /*stopAtBuffers=*/options.emit == EmitKind::Mlir,
                        memory);
    if (failed(pm.run(module)))
      return stageFailure();
  }
  if (options.isCuda() &&
      failed(appendDeviceConstants(module, constantsPath, weights)))
    return kExitInternal;
  return 0;
}

/// The closing lines of a one-device compile: the target, the kinds of
/// code in `signature`, the memory and the stages' times.
static void printOneDeviceSummary(const WeftcOptions &options,
                                  StringRef modelName, StringRef signature,
                                  int64_t arenaBytes, int64_t weightsBytes,
                                  const StageClock &clock) {
  bool cuda = options.isCuda();
  int64_t kernels = 0, loops = 0;
  StringRef ops = signature;
  while (!ops.empty()) {
    auto [line, rest] = ops.split('\n');
    ops = rest;
    if (line.starts_with("op "))
      (line.contains(" loops ") ? loops : kernels)++;
  }
  std::string target = "cpu (" + options.cpu + ")";
  if (cuda) {
    target = "cuda (";
    for (auto [i, arch] : llvm::enumerate(options.gpuArchs))
      target += (i ? "," : "") + std::string("sm_") + std::to_string(arch);
    target += ")";
  }
  llvm::outs() << "weftc: compiled " << modelName << " for " << target
               << " into " << options.outputPath << "\n"
               << "  plan: 1 device; " << kernels << " kernel calls, " << loops
               << (cuda && !options.gpuEmulate ? " generated GPU kernels\n"
                                               : " generated loop nests\n")
               << "  memory: arena " << arenaBytes << " bytes (planned "
               << "peak), weights " << weightsBytes << " bytes\n"
               << clock.lines;
}

int mlir::weft::compileOneDevice(MLIRContext &context,
                                 const WeftcOptions &options,
                                 ImportedModel &model,
                                 const AutoShardOptions &shardOptions,
                                 llvm::TargetMachine &machine,
                                 StageClock &clock, const char *argv0) {
  ModuleOp module = *model.module;
  // A package's timeline.svg and timeline.json, as a mesh's package has:
  // the program simulated as the planner prices it, before lowering.
  bool package =
      options.emit == EmitKind::Exe || options.emit == EmitKind::Lib;
  ProgramSimulation sim(/*microbatches=*/1,
                        model.name + " on " + shardOptions.cluster.name +
                            ": one device");
  if (package) {
    const plan::Mesh &mesh = shardOptions.cluster.meshes[shardOptions.mesh];
    std::vector<int64_t> clusterDeviceOfRank = {mesh.devices.front()};
    RankSimInfo info;
    info.clusterDeviceOfRank = clusterDeviceOfRank;
    SimulatedSummary summary;
    if (int code =
            addRankToSimulation(sim, module, info, shardOptions.cluster))
      return code;
    if (int code = simulatePrograms(sim, shardOptions.cluster, summary))
      return code;
  }
  if (int code = prepareKernelForms(context, options, module))
    return code;
  // Weights move into the device's file; their ops point there.
  WeightsFileLayout weights = layoutWeights(module, "dev0.bin");

  // Files made on the way (objects, weights, GPU constants) go to a scratch
  // folder that is removed at the end.
  llvm::Expected<std::unique_ptr<::weft::TempFolder>> scratchFolder =
      ::weft::TempFolder::create("weftc");
  if (!scratchFolder)
    return refuse(toString(scratchFolder.takeError()));
  SmallString<128> scratch((*scratchFolder)->path());
  SmallString<256> constantsPath(scratch);
  llvm::sys::path::append(constantsPath, "gpu-constants.bin");

  if (int code = lowerOneDevice(context, options, model, shardOptions,
                                constantsPath, weights))
    return code;
  clock.lap("lower");
  int64_t arenaBytes = 0;
  if (auto attr = module->getAttrOfType<IntegerAttr>(kArenaBytesAttr))
    arenaBytes = attr.getInt();

  if (options.emit == EmitKind::Mlir)
    return writeTextOutput(options.outputPath, [&](llvm::raw_ostream &os) {
      module->print(os);
      os << "\n";
    });

  std::string signature = buildProgramSignature(module, weights.bytes);
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateProgram(module, llvmContext, machine, signature);
  if (!llvmModule) {
    llvm::WithColor::error(llvm::errs(), "weftc")
        << "translation to LLVM IR failed; this is a bug in Weft, please "
           "report it with the model\n";
    return kExitInternal;
  }
  clock.lap("optimize");
  if (options.emit == EmitKind::Llvm)
    return writeTextOutput(options.outputPath, [&](llvm::raw_ostream &os) {
      llvmModule->print(os, nullptr);
    });
  std::string error;
  if (options.emit == EmitKind::Obj) {
    if (!emitObjectFile(*llvmModule, machine, options.outputPath, error))
      return refuse(error);
    return 0;
  }

  // A package: object and weights into the scratch folder, then link.
  SmallString<256> objectPath(scratch), weightsPath(scratch);
  llvm::sys::path::append(objectPath, "dev0.o");
  llvm::sys::path::append(weightsPath, "dev0.bin");
  if (!emitObjectFile(*llvmModule, machine, objectPath, error))
    return refuse(error);
  clock.lap("codegen");
  std::string sha256;
  if (failed(writeWeightsFile(weights, weightsPath, module.getLoc(), sha256)))
    return kExitBadInput;

  PackageContents contents = packageContents(options, model);
  contents.programs.push_back({objectPath.str().str(), arenaBytes, signature});
  contents.devices.push_back(
      {/*program=*/0, weightsPath.str().str(), weights.bytes, sha256});
  RuntimeLocation runtime = findRuntime(argv0);
  if (failed(writePackage(contents, runtime, options.outputPath,
                          options.emit == EmitKind::Lib, module.getLoc())))
    return kExitInternal;
  if (int code = writeTimelineFiles(options, sim))
    return code;
  clock.lap("link");

  if (!options.quiet)
    printOneDeviceSummary(options, model.name, signature, arenaBytes,
                          weights.bytes, clock);
  return 0;
}
