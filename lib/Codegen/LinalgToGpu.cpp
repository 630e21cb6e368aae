//===- LinalgToGpu.cpp - linalg.generic on buffers -> gpu.launch ----------===//
//
// One GPU thread per point of a generic's parallel loops, on a 1-D grid;
// reduction loops run sequentially inside the thread. Written directly
// rather than through scf.parallel mapping so that the thread numbering is
// row-major over all parallel loops (coalesced for elementwise chains of
// any rank) instead of limited to three mapped dimensions.
//
//===----------------------------------------------------------------------===//

#include "weft/Codegen/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::weft {
#define GEN_PASS_DEF_WEFTLINALGTOGPU
#include "weft/Codegen/Passes.h.inc"
} // namespace mlir::weft

using namespace mlir;
using namespace mlir::weft;

namespace {

/// The indices of `map` applied to the loop induction values `ivs`.
SmallVector<Value> applyIndexingMap(OpBuilder &b, Location loc, AffineMap map,
                                    ArrayRef<Value> ivs) {
  SmallVector<Value> indices;
  for (AffineExpr expr : map.getResults()) {
    if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
      indices.push_back(ivs[dim.getPosition()]);
      continue;
    }
    if (auto constant = dyn_cast<AffineConstantExpr>(expr)) {
      indices.push_back(
          arith::ConstantIndexOp::create(b, loc, constant.getValue()));
      continue;
    }
    AffineMap single = AffineMap::get(map.getNumDims(), 0, expr);
    indices.push_back(affine::AffineApplyOp::create(b, loc, single, ivs));
  }
  return indices;
}

/// Clones the generic's body at `b` for the loop point `ivs`: inputs are
/// loaded through their maps, outputs' block arguments are `outValues`.
/// Returns the yielded values.
SmallVector<Value> emitBody(OpBuilder &b, Location loc, linalg::GenericOp op,
                            ArrayRef<Value> ivs, ValueRange outValues) {
  Block &body = op.getRegion().front();
  IRMapping mapping;
  for (OpOperand *input : op.getDpsInputOperands()) {
    BlockArgument arg = body.getArgument(input->getOperandNumber());
    Value source = input->get();
    if (!isa<MemRefType>(source.getType())) {
      mapping.map(arg, source);
      continue;
    }
    SmallVector<Value> indices =
        applyIndexingMap(b, loc, op.getMatchingIndexingMap(input), ivs);
    mapping.map(arg, memref::LoadOp::create(b, loc, source, indices));
  }
  for (auto [init, value] : llvm::zip(op.getDpsInitsMutable(), outValues))
    if (value)
      mapping.map(body.getArgument(init.getOperandNumber()), value);
  for (Operation &inner : body.without_terminator()) {
    if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
      mapping.map(index.getResult(), ivs[index.getDim()]);
      continue;
    }
    b.clone(inner, mapping);
  }
  SmallVector<Value> results;
  for (Value yielded : body.getTerminator()->getOperands())
    results.push_back(mapping.lookupOrDefault(yielded));
  return results;
}

struct WeftLinalgToGpuPass
    : mlir::weft::impl::WeftLinalgToGpuBase<WeftLinalgToGpuPass> {
  using WeftLinalgToGpuBase::WeftLinalgToGpuBase;

  void runOnOperation() override {
    if (blockSize < 1 || blockSize > 1024) {
      getOperation().emitError() << "weft-linalg-to-gpu: block-size "
                                 << blockSize << " is not between 1 and 1024";
      return signalPassFailure();
    }
    SmallVector<linalg::GenericOp> generics;
    WalkResult walk = getOperation().walk([&](linalg::LinalgOp op) {
      auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
      if (!generic) {
        op->emitOpError("has no GPU lowering; run "
                        "linalg-generalize-named-ops first");
        return WalkResult::interrupt();
      }
      if (op->getParentOfType<gpu::LaunchOp>())
        return WalkResult::advance();
      generics.push_back(generic);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    for (linalg::GenericOp op : generics)
      if (failed(convert(op)))
        return signalPassFailure();
  }

  LogicalResult convert(linalg::GenericOp op) {
    Location loc = op.getLoc();
    if (!op.hasPureBufferSemantics())
      return op.emitOpError("must work on buffers (bufferize first)");
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    if (llvm::any_of(ranges, ShapedType::isDynamic))
      return op.emitOpError("has dynamic loop bounds; GPU code is generated "
                            "for static shapes");
    SmallVector<unsigned> parallelDims, reductionDims;
    for (auto [i, type] : llvm::enumerate(op.getIteratorTypesArray()))
      (type == utils::IteratorType::parallel ? parallelDims : reductionDims)
          .push_back(i);
    for (OpOperand &init : op.getDpsInitsMutable())
      for (unsigned d : reductionDims)
        if (op.getMatchingIndexingMap(&init).isFunctionOfDim(d))
          return op.emitOpError("writes its output along a reduction loop");

    int64_t total = 1;
    for (unsigned d : parallelDims)
      total *= ranges[d];
    OpBuilder b(op);
    if (total == 0) {
      op.erase();
      return success();
    }
    int64_t threads = std::min<int64_t>(blockSize, total);
    int64_t blocks = llvm::divideCeil(total, threads);
    if (blocks > std::numeric_limits<int32_t>::max())
      return op.emitOpError()
             << "needs " << blocks << " GPU blocks, more than a grid holds";

    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value gridX = arith::ConstantIndexOp::create(b, loc, blocks);
    Value blockX = arith::ConstantIndexOp::create(b, loc, threads);
    auto launch =
        gpu::LaunchOp::create(b, loc, gridX, one, one, blockX, one, one);
    Block &body = launch.getBody().front();
    b.setInsertionPointToStart(&body);
    Value blockDim = arith::ConstantIndexOp::create(b, loc, threads);
    Value linear = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, launch.getBlockIds().x, blockDim),
        launch.getThreadIds().x);
    Value count = arith::ConstantIndexOp::create(b, loc, total);
    Value inRange =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, linear, count);
    auto guard = scf::IfOp::create(b, loc, inRange, /*withElseRegion=*/false);
    gpu::TerminatorOp::create(b, loc);

    // The thread's loop point: row-major over the parallel loops.
    b.setInsertionPointToStart(guard.thenBlock());
    SmallVector<Value> ivs(ranges.size());
    Value rest = linear;
    for (int64_t k = static_cast<int64_t>(parallelDims.size()) - 1; k >= 0;
         --k) {
      unsigned d = parallelDims[k];
      if (k == 0) {
        ivs[d] = rest;
        break;
      }
      Value extent = arith::ConstantIndexOp::create(b, loc, ranges[d]);
      ivs[d] = arith::RemUIOp::create(b, loc, rest, extent);
      rest = arith::DivUIOp::create(b, loc, rest, extent);
    }

    // Outputs: read when the body uses them (always when reducing).
    SmallVector<Value> outValues;
    SmallVector<SmallVector<Value>> outIndices;
    for (OpOperand &init : op.getDpsInitsMutable()) {
      outIndices.push_back(
          applyIndexingMap(b, loc, op.getMatchingIndexingMap(&init), ivs));
      bool read =
          !reductionDims.empty() || op.payloadUsesValueFromOperand(&init);
      outValues.push_back(
          read ? memref::LoadOp::create(b, loc, init.get(), outIndices.back())
                     .getResult()
               : Value());
    }

    SmallVector<Value> results;
    if (reductionDims.empty()) {
      results = emitBody(b, loc, op, ivs, outValues);
    } else {
      // Nested sequential loops over the reductions carry the outputs.
      std::function<SmallVector<Value>(OpBuilder &, size_t, ValueRange)>
          reduce = [&](OpBuilder &nb, size_t k,
                       ValueRange carried) -> SmallVector<Value> {
        if (k == reductionDims.size())
          return emitBody(nb, loc, op, ivs, carried);
        unsigned d = reductionDims[k];
        Value lower = arith::ConstantIndexOp::create(nb, loc, 0);
        Value upper = arith::ConstantIndexOp::create(nb, loc, ranges[d]);
        Value step = arith::ConstantIndexOp::create(nb, loc, 1);
        auto loop = scf::ForOp::create(
            nb, loc, lower, upper, step, carried,
            [&](OpBuilder &lb, Location, Value iv, ValueRange args) {
              ivs[d] = iv;
              scf::YieldOp::create(lb, loc, reduce(lb, k + 1, args));
            });
        return SmallVector<Value>(loop.getResults());
      };
      results = reduce(b, 0, outValues);
    }
    for (auto [i, init] : llvm::enumerate(op.getDpsInitsMutable()))
      memref::StoreOp::create(b, loc, results[i], init.get(), outIndices[i]);
    op.erase();
    return success();
  }
};

} // namespace
