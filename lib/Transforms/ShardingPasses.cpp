//===- ShardingPasses.cpp - weft-auto-shard and weft-spmd-partition -------===//
//
// Thin pass wrappers over autoShard and spmdPartition, for weft-opt and lit.
//
//===----------------------------------------------------------------------===//

#include "weft/Plan/Cluster.h"
#include "weft/Transforms/AutoShard.h"
#include "weft/Transforms/Passes.h"
#include "weft/Transforms/SpmdPartition.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::weft {
#define GEN_PASS_DEF_WEFTAUTOSHARD
#define GEN_PASS_DEF_WEFTSPMDPARTITION
#include "weft/Transforms/Passes.h.inc"
} // namespace mlir::weft

using namespace mlir;
using namespace mlir::weft;

/// Builds the planner's options from the pass options; errors on the module.
LogicalResult mlir::weft::buildAutoShardOptions(ModuleOp module, StringRef cluster,
                                    StringRef mesh, StringRef mode,
                                    StringRef objective,
                                    StringRef deviceMemory,
                                    AutoShardOptions &options) {
  llvm::Expected<plan::Cluster> loaded = plan::loadCluster(cluster);
  if (!loaded)
    return module.emitError("cluster '")
           << cluster << "': " << llvm::toString(loaded.takeError());
  options.cluster = std::move(*loaded);
  if (!mesh.empty()) {
    llvm::Expected<std::vector<int64_t>> shape = plan::parseMeshShape(mesh);
    if (!shape)
      return module.emitError("mesh '")
             << mesh << "': " << llvm::toString(shape.takeError());
    if (llvm::Error error = plan::setMeshShape(options.cluster, *shape))
      return module.emitError("mesh '")
             << mesh << "': " << llvm::toString(std::move(error));
  }
  if (!deviceMemory.empty()) {
    llvm::Expected<double> bytes = plan::parseByteSize(deviceMemory);
    if (!bytes)
      return module.emitError("device memory '")
             << deviceMemory << "': " << llvm::toString(bytes.takeError());
    plan::overrideDeviceMemory(options.cluster, *bytes);
  }
  std::optional<ShardingMode> parsed = parseShardingMode(mode);
  if (!parsed)
    return module.emitError("sharding mode '")
           << mode << "' is none of auto, dp, tp, replicate";
  options.mode = *parsed;
  if (objective == "latency")
    options.objective = Objective::Latency;
  else if (objective == "throughput")
    options.objective = Objective::Throughput;
  else
    return module.emitError("objective '")
           << objective << "' is neither latency nor throughput";
  return success();
}

namespace {
struct AutoShardPass : public mlir::weft::impl::WeftAutoShardBase<AutoShardPass> {
  using WeftAutoShardBase::WeftAutoShardBase;
  void runOnOperation() override {
    AutoShardOptions options;
    if (failed(buildAutoShardOptions(getOperation(), cluster, mesh, mode,
                                     objective, deviceMemory, options)))
      return signalPassFailure();
    AutoShardReport report;
    if (failed(autoShard(getOperation(), options, report)))
      return signalPassFailure();
  }
};

struct SpmdPartitionPass
    : public mlir::weft::impl::WeftSpmdPartitionBase<SpmdPartitionPass> {
  using WeftSpmdPartitionBase::WeftSpmdPartitionBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::string symbol = mesh;
    if (symbol.empty()) {
      // The module's only mesh; with several, the option must say which.
      SmallVector<MeshOp> meshes = llvm::to_vector(module.getOps<MeshOp>());
      if (meshes.size() != 1) {
        InFlightDiagnostic diag = module.emitError("spmd partition: the module "
                                                   "declares ");
        if (meshes.empty())
          diag << "no weft.mesh (run weft-auto-shard first)";
        else
          diag << meshes.size() << " weft.mesh ops (@"
               << meshes[0].getSymName() << ", @" << meshes[1].getSymName()
               << (meshes.size() > 2 ? ", ..." : "")
               << "); name the one to partition for with mesh=";
        return signalPassFailure();
      }
      symbol = meshes[0].getSymName().str();
    }
    if (failed(spmdPartition(module, device, symbol)))
      return signalPassFailure();
  }
};
} // namespace
