//===- WeftDialect.cpp - Weft dialect registration and canonicalization ---===//
//
// Registers the weft ops and attributes, materializes folded constants and
// holds the canonicalization that applies to every op: refining result types
// that inference can now make more static.
//
//===----------------------------------------------------------------------===//

#include "weft/WeftDialect.h"
#include "weft/WeftOps.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::weft;

#include "weft/WeftDialect.cpp.inc"

void WeftDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "weft/WeftOps.cpp.inc"
      >();
  registerAttributes();
}

Operation *WeftDialect::materializeConstant(OpBuilder &builder,
                                            Attribute value, Type type,
                                            Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}

namespace {
/// Refines the result types of a weft op to what type inference now knows.
/// Folding turns shape operands into constants (Reshape's target shape,
/// Expand's shape, ...), after which inference can give static sizes where
/// the op was built with dynamic ones. Uses by weft ops accept the refined
/// type (weft result types only need to be compatible); other users (such as
/// func.return) keep the old type through a tensor.cast.
struct RefineInferredResultTypes : public RewritePattern {
  RefineInferredResultTypes(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (!isa_and_present<WeftDialect>(op->getDialect()))
      return failure();
    auto infer = dyn_cast<InferTypeOpInterface>(op);
    if (!infer)
      return failure();
    SmallVector<Type> inferred;
    if (failed(infer.inferReturnTypes(
            op->getContext(), op->getLoc(), op->getOperands(),
            op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
            op->getRegions(), inferred)) ||
        inferred.size() != op->getNumResults())
      return failure();

    SmallVector<Type> refined;
    bool changed = false;
    for (auto [result, newType] : llvm::zip(op->getResults(), inferred)) {
      auto oldTensor = dyn_cast<RankedTensorType>(result.getType());
      auto newTensor = dyn_cast<RankedTensorType>(newType);
      if (!oldTensor || !newTensor ||
          !areCompatibleTensorTypes(newTensor, oldTensor)) {
        refined.push_back(result.getType());
        continue;
      }
      auto joined = RankedTensorType::get(
          joinShapes(oldTensor.getShape(), newTensor.getShape()),
          oldTensor.getElementType(), oldTensor.getEncoding());
      changed |= joined != oldTensor;
      refined.push_back(joined);
    }
    if (!changed)
      return failure();

    rewriter.setInsertionPointAfter(op);
    for (auto [result, newType] : llvm::zip(op->getResults(), refined)) {
      Type oldType = result.getType();
      if (oldType == newType)
        continue;
      // Users outside the dialect may require the exact old type.
      SmallVector<OpOperand *> foreignUses;
      for (OpOperand &use : result.getUses())
        if (!isa_and_present<WeftDialect>(use.getOwner()->getDialect()))
          foreignUses.push_back(&use);
      rewriter.modifyOpInPlace(op, [&] { result.setType(newType); });
      if (!foreignUses.empty()) {
        auto cast =
            tensor::CastOp::create(rewriter, op->getLoc(), oldType, result);
        for (OpOperand *use : foreignUses)
          rewriter.modifyOpInPlace(use->getOwner(),
                                   [&] { use->set(cast.getResult()); });
      }
      // Weft users can now infer more static types too: revisit them.
      for (Operation *user : result.getUsers())
        if (isa_and_present<WeftDialect>(user->getDialect()))
          rewriter.modifyOpInPlace(user, [] {});
    }
    return success();
  }
};
} // namespace

void WeftDialect::getCanonicalizationPatterns(
    RewritePatternSet &results) const {
  results.add<RefineInferredResultTypes>(getContext());
}
