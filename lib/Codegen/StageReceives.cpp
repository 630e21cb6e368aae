//===- StageReceives.cpp - A staging buffer for each receive --------------===//
//
// Gives every weft_rt_collective call of kind "recv" a buffer of its own as
// its `in` argument, where the runtime receives the next run's message
// while this run computes (double buffering across a pipeline's
// microbatches and requests). The buffer has the type of the receive's
// `out` buffer, found through the pointer the call takes.
//
//===----------------------------------------------------------------------===//

#include "KernelCall.h"

#include "weft/Codegen/Passes.h"
#include "weft/Codegen/ProgramABI.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::weft {
#define GEN_PASS_DEF_WEFTSTAGERECEIVES
#include "weft/Codegen/Passes.h.inc"
} // namespace mlir::weft

using namespace mlir;
using namespace mlir::weft;

/// Operand positions of weft_rt_collective(ctx, params, in, out).
static constexpr unsigned kInOperand = 2;
static constexpr unsigned kOutOperand = 3;

/// The buffer `pointer` was taken from (pointerToBuffer's
/// extract_aligned_pointer -> index_cast -> inttoptr), or null.
static Value bufferBehind(Value pointer) {
  auto toPointer = pointer.getDefiningOp<LLVM::IntToPtrOp>();
  if (!toPointer)
    return Value();
  auto cast = toPointer.getArg().getDefiningOp<arith::IndexCastOp>();
  if (!cast)
    return Value();
  auto extract =
      cast.getIn().getDefiningOp<memref::ExtractAlignedPointerAsIndexOp>();
  return extract ? extract.getSource() : Value();
}

namespace {

struct WeftStageReceivesPass
    : weft::impl::WeftStageReceivesBase<WeftStageReceivesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>(kProgramRunName);
    if (!func)
      return;
    WalkResult result = func.walk([&](func::CallOp call) {
      auto kind = call->getAttrOfType<StringAttr>(kOpKindAttr);
      if (call.getCallee() != kCollectiveSymbol || !kind ||
          kind.getValue() != "recv")
        return WalkResult::advance();
      Value out = bufferBehind(call.getOperand(kOutOperand));
      auto type = out ? dyn_cast<MemRefType>(out.getType()) : MemRefType();
      if (!type || !type.hasStaticShape() || !type.getLayout().isIdentity()) {
        call.emitOpError("is a receive whose out argument is not a pointer "
                         "to a static dense buffer (as weft-bufferize makes "
                         "it)");
        return WalkResult::interrupt();
      }
      if (type.getNumElements() == 0)
        return WalkResult::advance();
      OpBuilder b(call);
      auto staging = memref::AllocOp::create(
          b, call.getLoc(), type, b.getI64IntegerAttr(kBufferAlignment));
      staging->setAttr(kStagingBufferAttr, b.getUnitAttr());
      call.setOperand(kInOperand, pointerToBuffer(b, call.getLoc(), staging));
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
