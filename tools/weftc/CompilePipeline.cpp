//===- CompilePipeline.cpp - weftc --stages and --pipeline-file -----------===//

#include "CompilePipeline.h"
#include "DeviceCompile.h"
#include "PipelineReport.h"
#include "Simulation.h"

#include "weft/Codegen/WeightsFile.h"
#include "weft/ModelFunction.h"
#include "weft/Plan/CostModel.h"
#include "weft/Plan/Schedule.h"
#include "weft/Support/TempFolder.h"
#include "weft/Transforms/Microbatch.h"
#include "weft/Transforms/Pipeline.h"
#include "weft/WeftOps.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InterleavedRange.h"

#include <limits>
#include <map>

using namespace mlir;
using namespace mlir::weft;

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
  for (auto [op, stage] :
       llvm::zip(llvm::make_pointer_range(
                     func.getBody().front().without_terminator()),
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
    shard.setShardingAttr(
        ShardingAttr::get(shard.getContext(),
                          FlatSymbolRefAttr::get(shard.getContext(), mesh.name),
                          old.getDims(), old.getPartial()));
  }
  return success();
}

namespace {
/// Where a pipeline's stages run: the ranks are the stages' cluster devices
/// in cluster order, and each stage has a mesh of its ranks.
struct PipelineRanks {
  std::vector<int64_t> clusterDeviceOfRank;
  std::vector<int> stageOfRank;
  std::vector<StageMesh> meshes;

  int64_t size() const { return clusterDeviceOfRank.size(); }
  int64_t rankOf(int64_t device) const {
    return llvm::find(clusterDeviceOfRank, device) -
           clusterDeviceOfRank.begin();
  }
};
} // namespace

/// The resharding planner's view of the job: the cluster, each rank's
/// device, --reshard-method and --max-broadcast-groups.
static TransferNetwork networkOf(const WeftcOptions &options,
                                 const plan::Cluster &cluster,
                                 const PipelineRanks &ranks) {
  TransferNetwork network;
  network.cluster = &cluster;
  network.clusterDeviceOfRank = ranks.clusterDeviceOfRank;
  network.method = options.reshardMethod;
  network.maxBroadcastGroups = options.maxBroadcastGroups;
  return network;
}

/// The stage planner's options from the command line's, for `microbatches`
/// microbatches per batch.
static AutoStageOptions autoStageOptions(const WeftcOptions &options,
                                         const AutoShardOptions &shardOptions,
                                         int64_t microbatches) {
  AutoStageOptions autoOptions;
  autoOptions.objective = shardOptions.objective;
  autoOptions.microbatches = microbatches;
  autoOptions.maxStages = options.maxStages;
  autoOptions.mode = shardOptions.mode;
  autoOptions.reshardMethod = options.reshardMethod;
  return autoOptions;
}

/// Numbers the ranks, gives each stage its mesh, and adds the stages'
/// meshes to `cluster` after the command line's. Returns 0, or 1 after
/// reporting a stage whose mesh the cluster refuses.
static int placeStages(ArrayRef<StageRequest> stages, plan::Cluster &cluster,
                       PipelineRanks &ranks) {
  // Ranks: the stages' cluster devices in cluster order.
  for (const StageRequest &stage : stages)
    llvm::append_range(ranks.clusterDeviceOfRank, stage.devices);
  llvm::sort(ranks.clusterDeviceOfRank);
  ranks.stageOfRank.assign(ranks.size(), 0);
  for (auto [k, stage] : llvm::enumerate(stages)) {
    StageMesh mesh;
    mesh.name = "stage" + std::to_string(k);
    mesh.shape = stage.meshShape;
    for (int64_t device : stage.devices) {
      mesh.worldRanks.push_back(ranks.rankOf(device));
      ranks.stageOfRank[ranks.rankOf(device)] = static_cast<int>(k);
    }
    ranks.meshes.push_back(mesh);
    plan::Mesh planned;
    planned.name = mesh.name;
    planned.shape = stage.meshShape;
    for (int64_t device : stage.devices)
      planned.devices.push_back(static_cast<int>(device));
    if (llvm::Error error = plan::verifyMesh(cluster, planned))
      return refuse("stage " + Twine(k) + ": " + toString(std::move(error)));
    cluster.meshes.push_back(planned);
  }
  return 0;
}

/// Plans each stage of `module` (split into weft.stage ops) on its own mesh
/// of `cluster` and memory: `planned` gets the planned stages, `summary`
/// their rows of the stage table. Returns 0, or the exit code of a failure
/// it reported.
static int planStages(ModuleOp module, ArrayRef<StageRequest> stages,
                      const PipelineRanks &ranks,
                      const AutoShardOptions &shardOptions,
                      const plan::Cluster &cluster,
                      std::vector<OwningOpRef<ModuleOp>> &planned,
                      PipelineSummary &summary) {
  func::FuncOp main = lookupModelFunction(module);
  SmallVector<StageOp> stageOps = llvm::to_vector(main.getOps<StageOp>());
  for (auto [k, stageOp] : llvm::enumerate(stageOps)) {
    AutoShardOptions options = shardOptions;
    options.cluster = cluster;
    options.mesh = static_cast<int>(cluster.meshes.size() - stages.size() + k);
    options.meshSymbol = ranks.meshes[k].name;
    options.meshWorldRanks = ranks.meshes[k].worldRanks;
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
  return 0;
}

/// Builds each rank's program from the planned stages and, when
/// `summary.compiled`, compiles it into `contents`; with --emit=mlir,
/// `printed` gets each rank's program, and `sim` its simulator ops. Returns
/// 0, or the exit code of a failure it reported.
static int compileRanks(MLIRContext &context, const WeftcOptions &options,
                        ModuleOp module,
                        ArrayRef<OwningOpRef<ModuleOp>> planned,
                        const PipelineRanks &ranks,
                        const plan::Cluster &cluster, size_t numStages,
                        StringRef scratch, llvm::TargetMachine &machine,
                        PackageContents &contents, PipelineSummary &summary,
                        std::vector<std::string> &printed,
                        ProgramSimulation &sim) {
  int64_t worldSize = ranks.size();
  ProgramCache programIndex;
  TransferNetwork network = networkOf(options, cluster, ranks);
  printed.resize(worldSize);
  for (int64_t rank = 0; rank < worldSize; ++rank) {
    FailureOr<OwningOpRef<ModuleOp>> device =
        buildDeviceProgram(module, planned, rank, worldSize, network);
    if (failed(device))
      return stageFailure();
    summary.devices[rank].flops = programFlops(**device);
    // Before codegen lowers it: the simulator reads the weft ops.
    RankSimInfo simInfo{rank, ranks.stageOfRank[rank],
                        ranks.clusterDeviceOfRank};
    if (int code = addRankToSimulation(sim, **device, simInfo, cluster))
      return code;
    if (options.emit == EmitKind::Mlir) {
      llvm::raw_string_ostream os(printed[rank]);
      (*device)->print(os);
    }
    if (!summary.compiled) {
      summary.devices[rank].weightBytes =
          layoutWeights(**device, "weights.bin").bytes;
      continue;
    }
    int stage = ranks.stageOfRank[rank];
    const plan::Mesh &stageMesh =
        cluster.meshes[cluster.meshes.size() - numStages + stage];
    int64_t position = llvm::find(ranks.meshes[stage].worldRanks, rank) -
                       ranks.meshes[stage].worldRanks.begin();
    if (int code = compileDeviceProgram(
            context, options, **device, rank,
            deviceMemoryOf(options, cluster, stageMesh, position), scratch,
            machine, programIndex, contents, summary.devices[rank]))
      return code;
    contents.devices.back().mesh = stage;
  }
  return 0;
}

/// Completes `summary` once the ranks are built: each stage's largest
/// weights and peak memory per device, the transfers' predicted times, the
/// total and the GPipe schedule of `microbatches`.
static void predictPipeline(ModuleOp module, const WeftcOptions &options,
                            const plan::Cluster &cluster,
                            const PipelineRanks &ranks, int microbatches,
                            PipelineSummary &summary) {
  // The table: per stage its devices' largest weights and peak memory.
  for (auto [k, stage] : llvm::enumerate(summary.stages)) {
    stage.weightsBytesPerDevice = 0;
    for (int64_t device : stage.devices) {
      const DeviceSummary &d = summary.devices[ranks.rankOf(device)];
      stage.weightsBytesPerDevice =
          std::max(stage.weightsBytesPerDevice, d.weightBytes);
      if (summary.compiled)
        stage.peakMemoryBytesPerDevice =
            std::max(stage.weightsBytesPerDevice,
                     std::max<int64_t>(stage.peakMemoryBytesPerDevice,
                                       d.weightBytes + d.arenaBytes));
    }
  }
  summary.totalSeconds = 0;
  for (const StageSummary &stage : summary.stages)
    summary.totalSeconds += stage.predictedSeconds;
  TransferNetwork network = networkOf(options, cluster, ranks);
  summary.broadcastGroups = jobBroadcastGroups(module, network);
  for (TransferSummary &t : summarizeTransfers(module, network)) {
    TransferReport report;
    report.predictedSeconds = t.predictedSeconds;
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
  summary.schedule = ::weft::plan::estimateGPipe(times, microbatches);
}

/// Writes what --emit asks for: the folder of --emit=mlir, plan.json, or
/// the package. Returns 0, or the exit code of a failure it reported.
static int writePipelineOutput(const WeftcOptions &options, ModuleOp module,
                               ArrayRef<std::string> printed,
                               const PackageContents &contents,
                               StageClock &clock, const char *argv0) {
  if (options.emit == EmitKind::Mlir) {
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
    return writeFolder(options.outputPath, files);
  }
  return writePlanOrPackage(options, contents, module.getLoc(), clock, argv0);
}

int mlir::weft::compilePipeline(
    MLIRContext &context, const WeftcOptions &options, ImportedModel &model,
    std::vector<StageRequest> stages, const AutoShardOptions &shardOptions,
    llvm::TargetMachine &machine, StageClock &clock, const char *argv0) {
  ModuleOp module = *model.module;
  plan::Cluster cluster = shardOptions.cluster;
  const plan::Mesh &whole = cluster.meshes[shardOptions.mesh];
  func::FuncOp func = lookupModelFunction(module);
  std::vector<double> work;
  FailureOr<StageAssignment> assignment = failure();
  if (options.autoStages) {
    AutoStageOptions autoOptions =
        autoStageOptions(options, shardOptions, options.microbatches);
    std::string report;
    assignment = assignAutoStages(func, cluster, whole.devices, autoOptions,
                                  stages, report);
    if (succeeded(assignment) && !options.quiet)
      llvm::outs() << report;
  } else if (options.pipelineFile.empty()) {
    assignment = assignBalancedStages(func, options.stages, cluster,
                                      whole.devices, stages, work);
  } else {
    assignment = assignStagesByEnds(func, options.pipelineFile, stages);
  }
  if (failed(assignment))
    return kExitBadInput;
  PipelineRanks ranks;
  if (int code = placeStages(stages, cluster, ranks))
    return code;
  // The sharding file's constraints name the command line's mesh, which
  // the stages' meshes replace.
  if (failed(retargetConstraints(func, *assignment, ranks.meshes)))
    return kExitBadInput;
  if (auto old = module.lookupSymbol<MeshOp>(kMeshName))
    old.erase();
  if (failed(splitIntoStages(module, *assignment, ranks.meshes)))
    return stageFailure();

  // Each stage planned on its own mesh and memory.
  std::vector<OwningOpRef<ModuleOp>> planned;
  PipelineSummary summary;
  summary.modelName = model.name;
  summary.clusterName = cluster.name;
  if (int code = planStages(module, stages, ranks, shardOptions, cluster,
                            planned, summary))
    return code;
  if (failed(chooseBoundaryShardings(module, planned)))
    return stageFailure();
  clock.lap("plan");

  llvm::Expected<std::unique_ptr<::weft::TempFolder>> scratchFolder =
      ::weft::TempFolder::create("weftc");
  if (!scratchFolder)
    return refuse(toString(scratchFolder.takeError()));
  SmallString<128> scratch((*scratchFolder)->path());
  int64_t worldSize = ranks.size();
  summary.compiled = options.emit == EmitKind::Exe;
  summary.clusterDeviceOfRank = ranks.clusterDeviceOfRank;
  summary.stageOfRank = ranks.stageOfRank;
  summary.devices.resize(worldSize);
  PackageContents contents;
  contents.modelName = model.name;
  contents.backend = options.packageBackend();
  contents.cpu = options.cpu;
  contents.features = options.features;
  contents.inputs = model.inputs;
  contents.outputs = model.outputs;
  std::vector<std::string> printed;
  ProgramSimulation sim(options.microbatches,
                         model.name + " on " + cluster.name + ": " +
                             std::to_string(stages.size()) + " stages");
  if (int code = compileRanks(context, options, module, planned, ranks, cluster,
                              stages.size(), scratch, machine, contents,
                              summary, printed, sim))
    return code;
  clock.lap("codegen");

  predictPipeline(module, options, cluster, ranks, options.microbatches,
                  summary);
  if (int code = simulatePrograms(sim, cluster, summary.simulated))
    return code;
  contents.planJson = pipelinePlanJson(summary);
  for (auto [k, mesh] : llvm::enumerate(ranks.meshes))
    contents.meshes.push_back(
        {mesh.name, mesh.shape,
         std::vector<int64_t>(mesh.worldRanks.begin(), mesh.worldRanks.end())});
  contents.meshShape = {worldSize};

  llvm::raw_ostream &info = infoStream(options);
  if (int code =
          writePipelineOutput(options, module, printed, contents, clock, argv0))
    return code;
  if (int code = writeTimelineFiles(options, sim))
    return code;
  if (options.quiet && options.reportPlan) {
    printStageTable(summary, info);
  } else if (!options.quiet) {
    info << "weftc: pipelined " << model.name << " for " << cluster.name
         << " as " << stages.size() << " stage(s) on " << worldSize
         << " device(s) into " << options.outputPath << "\n";
    printStageTable(summary, info);
    if (summary.compiled)
      info << "  programs: " << contents.programs.size() << " for " << worldSize
           << " ranks\n";
    info << clock.lines;
  }
  return 0;
}

namespace {
/// One microbatch count tried by --microbatches=auto.
struct MicrobatchTrial {
  int microbatches = 1;
  /// The plan's objective per request; +inf when skipped.
  double requestSeconds = std::numeric_limits<double>::infinity();
  int stages = 0;
  /// Why it was skipped (empty when planned).
  std::string skipped;
};
} // namespace

int mlir::weft::chooseMicrobatches(MLIRContext &context, WeftcOptions &options,
                                   const OnnxImportOptions &importOptions,
                                   const AutoShardOptions &shardOptions,
                                   ArrayRef<StageRequest> stageRequests) {
  const plan::Cluster &cluster = shardOptions.cluster;
  const plan::Mesh &whole = cluster.meshes[shardOptions.mesh];
  // The batch, from the model as given: only divisors of it are tried.
  WeftcOptions trialOptions = options;
  trialOptions.microbatches = 1;
  int64_t batch = 1;
  std::string unsplittable;
  {
    StageClock clock;
    ImportedModel model;
    if (int code = importModel(context, trialOptions, importOptions,
                               whole.shape, stageRequests, clock, model))
      return code;
    ScopedDiagnosticHandler capture(&context, [&](Diagnostic &diag) {
      if (unsplittable.empty())
        unsplittable = diag.str();
      return success();
    });
    FailureOr<BatchDims> dims = analyzeBatchSplit(
        lookupModelFunction(*model.module), 1);
    if (succeeded(dims))
      batch = dims->batch;
  }

  std::vector<MicrobatchTrial> trials;
  for (int m = 1; m <= options.maxMicrobatches && m <= batch; ++m) {
    if (batch % m != 0 || (m > 1 && !unsplittable.empty()))
      continue;
    MicrobatchTrial trial;
    trial.microbatches = m;
    trialOptions.microbatches = m;
    StageClock clock;
    ImportedModel model;
    std::string importError;
    int imported = 0;
    {
      // The last message says why (the first names the op that failed).
      ScopedDiagnosticHandler capture(&context, [&](Diagnostic &diag) {
        importError = diag.str();
        return success();
      });
      imported = importModel(context, trialOptions, importOptions, whole.shape,
                             stageRequests, clock, model);
    }
    if (imported != 0) {
      trial.skipped = importError.empty() ? "the model does not import"
                                          : importError;
      trials.push_back(trial);
      continue;
    }
    AutoStageOptions autoOptions = autoStageOptions(options, shardOptions, m);
    std::vector<StageRequest> stages;
    std::string report, why;
    FailureOr<StageAssignment> assignment = failure();
    {
      ScopedDiagnosticHandler capture(&context, [&](Diagnostic &diag) {
        if (why.empty())
          why = diag.str();
        return success();
      });
      assignment =
          assignAutoStages(lookupModelFunction(*model.module),
                           cluster, whole.devices, autoOptions, stages, report,
                           &trial.requestSeconds);
    }
    if (failed(assignment)) {
      trial.requestSeconds = std::numeric_limits<double>::infinity();
      trial.skipped = why.empty() ? "no plan" : why;
    } else {
      trial.stages = assignment->numStages;
    }
    trials.push_back(trial);
  }

  const MicrobatchTrial *best = nullptr;
  for (const MicrobatchTrial &trial : trials)
    if (trial.skipped.empty() &&
        (!best || trial.requestSeconds < best->requestSeconds))
      best = &trial;
  if (!best) {
    // No count plans: the error is the one a plain run with M = 1 gives.
    options.microbatches = 1;
    return 0;
  }
  if (!options.quiet) {
    StringRef measure = shardOptions.objective == Objective::Throughput
                            ? "microbatches x slowest cycle"
                            : "latency";
    if (unsplittable.empty())
      llvm::outs() << "microbatches: tried the divisors of batch " << batch
                   << " up to " << options.maxMicrobatches << " (" << measure
                   << " per request)\n";
    else
      llvm::outs() << "microbatches: only 1, the batch does not split: "
                   << unsplittable << "\n";
    for (const MicrobatchTrial &trial : trials) {
      llvm::outs() << "  " << trial.microbatches << ": ";
      if (!trial.skipped.empty())
        llvm::outs() << "skipped: " << trial.skipped << "\n";
      else
        llvm::outs() << llvm::formatv(
            "{0:F3} {1}s, {2} stage(s){3}\n",
            trial.requestSeconds * (trial.requestSeconds >= 1e-3 ? 1e3 : 1e6),
            trial.requestSeconds >= 1e-3 ? "m" : "u", trial.stages,
            &trial == best ? "  <- chosen" : "");
    }
  }
  options.microbatches = best->microbatches;
  return 0;
}
