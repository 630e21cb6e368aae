//===- GpuLaunchToLoops.cpp - gpu.launch bodies as host loops -------------===//
//
// A testing aid: the kernels weft-linalg-to-gpu makes, run on the CPU by a
// sequential schedule of their blocks and threads, so that the CUDA
// pipeline's index arithmetic is checked numerically where there is no GPU.
//
//===----------------------------------------------------------------------===//

#include "weft/Codegen/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::weft {
#define GEN_PASS_DEF_WEFTGPULAUNCHTOLOOPS
#include "weft/Codegen/Passes.h.inc"
} // namespace mlir::weft

using namespace mlir;
using namespace mlir::weft;

namespace {

struct WeftGpuLaunchToLoopsPass
    : mlir::weft::impl::WeftGpuLaunchToLoopsBase<WeftGpuLaunchToLoopsPass> {
  void runOnOperation() override {
    SmallVector<gpu::LaunchOp> launches;
    getOperation().walk([&](gpu::LaunchOp op) { launches.push_back(op); });
    for (gpu::LaunchOp launch : launches)
      if (failed(convert(launch)))
        return signalPassFailure();
  }

  LogicalResult convert(gpu::LaunchOp launch) {
    if (launch.getAsyncToken() || !launch.getAsyncDependencies().empty() ||
        launch.getDynamicSharedMemorySize() || launch.getClusterSizeX())
      return launch.emitOpError("with async tokens, shared memory or "
                                "clusters cannot run as host loops");
    Location loc = launch.getLoc();
    OpBuilder b(launch);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    // Loop order: blocks z, y, x, then threads z, y, x (x innermost).
    Value sizes[6] = {launch.getGridSizeZ(),  launch.getGridSizeY(),
                      launch.getGridSizeX(),  launch.getBlockSizeZ(),
                      launch.getBlockSizeY(), launch.getBlockSizeX()};
    gpu::KernelDim3 blockIds = launch.getBlockIds();
    gpu::KernelDim3 threadIds = launch.getThreadIds();
    gpu::KernelDim3 gridDims = launch.getGridSize();
    gpu::KernelDim3 blockDims = launch.getBlockSize();
    Value ids[6] = {blockIds.z,  blockIds.y,  blockIds.x,
                    threadIds.z, threadIds.y, threadIds.x};

    IRMapping mapping;
    mapping.map(gridDims.x, launch.getGridSizeX());
    mapping.map(gridDims.y, launch.getGridSizeY());
    mapping.map(gridDims.z, launch.getGridSizeZ());
    mapping.map(blockDims.x, launch.getBlockSizeX());
    mapping.map(blockDims.y, launch.getBlockSizeY());
    mapping.map(blockDims.z, launch.getBlockSizeZ());
    Block &body = launch.getBody().front();
    for (int i = 0; i < 6; ++i) {
      auto loop = scf::ForOp::create(b, loc, zero, sizes[i], one);
      mapping.map(ids[i], loop.getInductionVar());
      b.setInsertionPointToStart(loop.getBody());
    }
    for (Operation &op : body.without_terminator()) {
      // Ids inside nested regions are mapped too: clone walks them.
      if (isa<gpu::BlockIdOp, gpu::ThreadIdOp, gpu::GridDimOp, gpu::BlockDimOp>(
              op))
        return op.emitOpError("as an op (not the launch's block arguments) "
                              "is not supported by weft-gpu-launch-to-loops");
      b.clone(op, mapping);
    }
    if (!isa<gpu::TerminatorOp>(body.getTerminator()))
      return launch.emitOpError("ends with a branch; only a single-block "
                                "body runs as host loops");
    launch.erase();
    return success();
  }
};

} // namespace
