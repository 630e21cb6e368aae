//===- Bufferize.cpp - One-shot bufferization of a device program ---------===//
//
// Runs upstream one-shot bufferization over the program function, with
// BufferizableOpInterface models that turn each heavy weft op and each
// collective into a runtime call on freshly allocated result buffers (an
// all_reduce in place where the analysis allows) and weft.weight into a view
// of the weights buffer.
//
//===----------------------------------------------------------------------===//

#include "KernelOps.h"

#include "weft/Codegen/Passes.h"
#include "weft/Codegen/ProgramABI.h"
#include "weft/WeftDialect.h"
#include "weft/WeftOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/Bufferize.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/Transforms.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::weft {
#define GEN_PASS_DEF_WEFTBUFFERIZE
#include "weft/Codegen/Passes.h.inc"
} // namespace mlir::weft

using namespace mlir;
using namespace mlir::weft;
using namespace mlir::bufferization;

/// The dense, identity-layout buffer type of a static tensor.
static MemRefType denseBufferType(Type tensorType) {
  auto type = cast<RankedTensorType>(tensorType);
  return MemRefType::get(type.getShape(), type.getElementType());
}

/// `buffer` itself when it is dense row-major, else a dense copy (kernels
/// take plain pointers).
static Value makeDense(OpBuilder &b, Location loc, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  if (type.getLayout().isIdentity())
    return buffer;
  auto denseType = MemRefType::get(type.getShape(), type.getElementType());
  Value copy = memref::AllocOp::create(b, loc, denseType,
                                       b.getI64IntegerAttr(kBufferAlignment));
  linalg::CopyOp::create(b, loc, buffer, copy);
  return copy;
}

/// The program output `result` is written to, when that is its only use:
/// the kernel then writes there directly (the copy that materializes it
/// becomes a self-copy, which canonicalization removes).
static Value outputBufferOf(Value result) {
  if (!result.hasOneUse())
    return Value();
  auto materialize =
      dyn_cast<MaterializeInDestinationOp>(*result.getUsers().begin());
  if (!materialize || !isa<MemRefType>(materialize.getDest().getType()))
    return Value();
  auto dest = cast<MemRefType>(materialize.getDest().getType());
  if (!dest.getLayout().isIdentity() ||
      dest != denseBufferType(result.getType()))
    return Value();
  return materialize.getDest();
}

/// Every weft op that computes on tensors must have been lowered or have a
/// bufferization model by now. One that has neither is a bug in Weft (the
/// importer let through an op that codegen cannot handle), reported with
/// the op and its ONNX node instead of one-shot bufferization's "op was not
/// bufferized".
static LogicalResult checkEveryOpLowers(ModuleOp module,
                                        const BufferizationOptions &options) {
  WalkResult result = module.walk([&](Operation *op) {
    if (!isa<WeftDialect>(op->getDialect()) ||
        options.dynCastBufferizableOp(op))
      return WalkResult::advance();
    auto isTensor = [](Type t) { return isa<TensorType>(t); };
    if (llvm::none_of(op->getOperandTypes(), isTensor) &&
        llvm::none_of(op->getResultTypes(), isTensor))
      return WalkResult::advance();
    op->emitError() << "internal: " << op->getName()
                    << " has no lowering for this target; this is a bug in "
                       "Weft, please report it with the model";
    return WalkResult::interrupt();
  });
  return failure(result.wasInterrupted());
}

namespace {

/// A heavy weft op: reads its operands, writes only fresh result buffers.
template <typename OpTy>
struct KernelOpModel
    : BufferizableOpInterface::ExternalModel<KernelOpModel<OpTy>, OpTy> {
  bool bufferizesToMemoryRead(Operation *op, OpOperand &operand,
                              const AnalysisState &) const {
    return isKernelOperandRead(op, operand.getOperandNumber());
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return false;
  }
  AliasingValueList getAliasingValues(Operation *, OpOperand &,
                                      const AnalysisState &) const {
    return {};
  }
  bool bufferizesToAllocation(Operation *, Value) const { return true; }

  FailureOr<BufferLikeType> getBufferType(Operation *, Value value,
                                          const BufferizationOptions &,
                                          const BufferizationState &,
                                          SmallVector<Value> &) const {
    return cast<BufferLikeType>(denseBufferType(value.getType()));
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    Location loc = op->getLoc();
    SmallVector<Value> operandBuffers;
    for (OpOperand &operand : op->getOpOperands()) {
      if (!isKernelOperandRead(op, operand.getOperandNumber())) {
        operandBuffers.push_back(Value());
        continue;
      }
      FailureOr<Value> buffer =
          getBuffer(rewriter, operand.get(), options, state);
      if (failed(buffer))
        return failure();
      operandBuffers.push_back(makeDense(rewriter, loc, *buffer));
    }
    SmallVector<Value> resultBuffers;
    for (Value result : op->getResults()) {
      auto type = cast<RankedTensorType>(result.getType());
      if (!type.hasStaticShape())
        return op->emitOpError("has a result of dynamic shape ")
               << type << "; weftc compiles static shapes only";
      if (Value output = outputBufferOf(result)) {
        resultBuffers.push_back(output);
        continue;
      }
      resultBuffers.push_back(memref::AllocOp::create(
          rewriter, loc, denseBufferType(type),
          rewriter.getI64IntegerAttr(kBufferAlignment)));
    }
    if (failed(emitKernelCalls(op, rewriter, operandBuffers, resultBuffers)))
      return failure();
    replaceOpWithBufferizedValues(rewriter, op, resultBuffers);
    return success();
  }
};

/// weft.weight: a read-only view of the weights buffer (the program
/// function's third argument) at the weight's offset in weights/dev<k>.bin.
struct WeightOpModel
    : BufferizableOpInterface::ExternalModel<WeightOpModel, WeightOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return false;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return false;
  }
  AliasingValueList getAliasingValues(Operation *, OpOperand &,
                                      const AnalysisState &) const {
    return {};
  }
  bool isWritable(Operation *, Value, const AnalysisState &) const {
    return false;
  }
  FailureOr<BufferLikeType> getBufferType(Operation *, Value value,
                                          const BufferizationOptions &,
                                          const BufferizationState &,
                                          SmallVector<Value> &) const {
    return cast<BufferLikeType>(denseBufferType(value.getType()));
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &,
                          BufferizationState &) const {
    auto weight = cast<WeightOp>(op);
    auto func = op->getParentOfType<func::FuncOp>();
    if (!func || func.getNumArguments() != 3)
      return op->emitOpError("is outside a device program function");
    auto type = cast<RankedTensorType>(weight.getType());
    if (!type.hasStaticShape())
      return op->emitOpError("has a dynamic shape");
    if (weight.getPerm())
      return op->emitOpError("is stored permuted, which the weights file "
                             "does only once weftc lays weights out "
                             "(layoutWeights): lay them out before codegen");
    if (weight.getOffset() % kBufferAlignment != 0)
      return op->emitOpError("is not 64-byte aligned in the weights file "
                             "(weftc lays weights out before codegen)");
    Value shift = arith::ConstantIndexOp::create(rewriter, op->getLoc(),
                                                 weight.getOffset());
    Value view =
        memref::ViewOp::create(rewriter, op->getLoc(), denseBufferType(type),
                               func.getArgument(2), shift, ValueRange{});
    replaceOpWithBufferizedValues(rewriter, op, view);
    return success();
  }
};

/// Marks an all_reduce that the analysis could not run in place (its
/// operand is read later or not writable): it sums into a fresh buffer.
static constexpr llvm::StringLiteral kOutOfPlaceAttr = "weft.out_of_place";

/// weft.all_reduce: sums in place when one-shot analysis allows, else into
/// a fresh buffer (never a copy followed by an in-place sum: the runtime
/// takes distinct buffers as well).
struct AllReduceOpModel
    : BufferizableOpInterface::ExternalModel<AllReduceOpModel, AllReduceOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return true;
  }
  AliasingValueList getAliasingValues(Operation *op, OpOperand &,
                                      const AnalysisState &) const {
    return {{op->getResult(0), BufferRelation::Equivalent}};
  }
  bool bufferizesToAllocation(Operation *op, Value) const {
    return op->hasAttr(kOutOfPlaceAttr);
  }

  /// Instead of the default (copying the operand, then summing in place),
  /// an out-of-place all_reduce writes its sum into a new buffer.
  LogicalResult resolveConflicts(Operation *op, RewriterBase &rewriter,
                                 const AnalysisState &analysisState,
                                 const BufferizationState &) const {
    if (!analysisState.isInPlace(op->getOpOperand(0)))
      rewriter.modifyOpInPlace(
          op, [&] { op->setAttr(kOutOfPlaceAttr, rewriter.getUnitAttr()); });
    return success();
  }

  FailureOr<BufferLikeType> getBufferType(Operation *, Value value,
                                          const BufferizationOptions &,
                                          const BufferizationState &,
                                          SmallVector<Value> &) const {
    return cast<BufferLikeType>(denseBufferType(value.getType()));
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto allReduce = cast<AllReduceOp>(op);
    Location loc = op->getLoc();
    auto type = cast<RankedTensorType>(allReduce.getType());
    if (!type.hasStaticShape())
      return op->emitOpError("has a result of dynamic shape ")
             << type << "; weftc compiles static shapes only";
    FailureOr<Value> buffer =
        getBuffer(rewriter, allReduce.getInput(), options, state);
    if (failed(buffer))
      return failure();
    Value input = makeDense(rewriter, loc, *buffer);
    Value output;
    if (Value programOutput = outputBufferOf(allReduce.getResult()))
      // Straight into the program output, sparing the copy there.
      output = programOutput;
    else if (op->hasAttr(kOutOfPlaceAttr))
      output =
          memref::AllocOp::create(rewriter, loc, denseBufferType(type),
                                  rewriter.getI64IntegerAttr(kBufferAlignment));
    else
      // In place; a dense copy made above is private to this op.
      output = input;
    if (failed(emitKernelCalls(op, rewriter, input, output)))
      return failure();
    replaceOpWithBufferizedValues(rewriter, op, output);
    return success();
  }
};

template <typename... OpTys> void attachKernelModels(MLIRContext *ctx) {
  (OpTys::template attachInterface<KernelOpModel<OpTys>>(*ctx), ...);
}

struct WeftBufferizePass : weft::impl::WeftBufferizeBase<WeftBufferizePass> {
  void getDependentDialects(DialectRegistry &registry) const override {
    weft::impl::WeftBufferizeBase<WeftBufferizePass>::getDependentDialects(
        registry);
    registerWeftBufferizationModels(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Outputs are written where the caller reads them: linalg ops whose
    // result is materialized into an output view get that view as their
    // destination instead of a tensor.empty.
    {
      IRRewriter rewriter(&getContext());
      if (failed(eliminateEmptyTensors(rewriter, module)))
        return signalPassFailure();
    }
    // The remaining tensor.empty ops (linalg outputs) become allocations.
    {
      RewritePatternSet patterns(&getContext());
      populateEmptyTensorToAllocTensorPattern(patterns);
      if (failed(applyPatternsGreedily(module, std::move(patterns))))
        return signalPassFailure();
    }

    OneShotBufferizationOptions options;
    options.allowUnknownOps = false;
    options.bufferizeFunctionBoundaries = false;
    // Every buffer is dense row-major: kernels take plain pointers and the
    // memory planner sizes buffers by their element count.
    options.unknownTypeConverterFn = [](TensorType type, Attribute memorySpace,
                                        const BufferizationOptions &) {
      return cast<BaseMemRefType>(
          MemRefType::get(type.getShape(), type.getElementType(),
                          MemRefLayoutAttrInterface(), memorySpace));
    };
    options.defaultMemorySpaceFn = [](TensorType) -> std::optional<Attribute> {
      return Attribute();
    };
    // Copies are linalg.copy, lowered to loops: no call into MLIR's C
    // runner library, which packages do not link.
    options.memCpyFn = [](OpBuilder &b, Location loc, Value from,
                          Value to) -> LogicalResult {
      linalg::CopyOp::create(b, loc, from, to);
      return success();
    };
    options.bufferAlignment = kBufferAlignment;
    if (failed(checkEveryOpLowers(module, options)))
      return signalPassFailure();
    BufferizationState state;
    if (failed(runOneShotBufferize(module, options, state)))
      return signalPassFailure();
    // The collectives, which named the mesh, are kernel calls now; the
    // mesh's shape and ranks are in the module's attributes (recorded by
    // weft-expose-program-abi), and the op has no LLVM counterpart.
    for (MeshOp mesh : llvm::make_early_inc_range(module.getOps<MeshOp>()))
      mesh.erase();
  }
};

} // namespace

void mlir::weft::registerWeftBufferizationModels(DialectRegistry &registry) {
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  registry.addExtension(+[](MLIRContext *ctx, WeftDialect *) {
    attachKernelModels<MatmulOp, EinsumOp, ConvOp, PoolOp, BatchNormOp,
                       NormalizeOp, SoftmaxOp, ReduceOp, ArgReduceOp,
                       TransposeOp, GatherOp, GatherElementsOp, SliceOp, PadOp,
                       TileOp, ConcatOp, SplitOp, AllGatherOp, ReduceScatterOp,
                       LocalSliceOp, AllToAllOp, SendOp, RecvOp,
                       BroadcastSendOp, BroadcastRecvOp>(ctx);
    AllReduceOp::attachInterface<AllReduceOpModel>(*ctx);
    WeightOp::attachInterface<WeightOpModel>(*ctx);
  });
}
