//===- FuseLayerNorm.cpp - LayerNorm written out, as one weft.normalize ---===//
//
// Exporters of hand-written models (and older opsets, which have no
// LayerNormalization) spell LayerNorm out:
//
//   mean = ReduceMean(x, trailing axes, keepdims)
//   d    = x - mean
//   var  = ReduceMean(d^2 | d*d, same axes, keepdims)
//   y    = d / Sqrt(var + eps)   [* gamma]   [+ beta]
//
// Two reductions and four elementwise passes over the tensor become one
// weft.normalize, whose kernel reads each row once for its statistics and
// once to write it. Every intermediate value must have no other user, the
// axes must be the trailing ones and gamma and beta must hold exactly one
// value per normalized element (what the kernels take); otherwise the
// graph stays as it is.
//
//===----------------------------------------------------------------------===//

#include "weft/Codegen/Passes.h"
#include "weft/WeftOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::weft {
#define GEN_PASS_DEF_WEFTFUSELAYERNORM
#include "weft/Codegen/Passes.h.inc"
} // namespace mlir::weft

using namespace mlir;
using namespace mlir::weft;

namespace {

/// The value of a one-element float constant.
std::optional<double> scalarConstant(Value value) {
  DenseFPElementsAttr attr;
  if (!matchPattern(value, m_Constant(&attr)) || attr.getNumElements() != 1)
    return std::nullopt;
  return (*attr.value_begin<APFloat>()).convertToDouble();
}

/// `value` defined by `weft.binary kind` with no other user than the one
/// being matched (`uses` users in all).
BinaryOp binaryDef(Value value, BinaryKind kind, unsigned uses = 1) {
  auto op = value.getDefiningOp<BinaryOp>();
  if (!op || op.getKind() != kind)
    return nullptr;
  if (std::distance(value.use_begin(), value.use_end()) != uses)
    return nullptr;
  return op;
}

/// The first axis of a keepdims mean over the trailing axes of its input,
/// or nullopt.
std::optional<int64_t> trailingMeanAxis(ReduceOp reduce) {
  if (!reduce || reduce.getKind() != ReduceKind::mean ||
      !reduce.getKeepdims() || reduce.getDynamicAxes())
    return std::nullopt;
  // The verifier keeps axes non-negative and strictly increasing.
  int64_t rank = cast<RankedTensorType>(reduce.getInput().getType()).getRank();
  ArrayRef<int64_t> axes = reduce.getAxes();
  if (axes.empty())
    return std::nullopt;
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != rank - static_cast<int64_t>(axes.size() - i))
      return std::nullopt;
  return axes.front();
}

/// True when `param` holds exactly the normalized elements: the trailing
/// dimensions of `input` from `axis`, with only leading 1s before them.
bool matchesNormalizedShape(Value param, RankedTensorType input, int64_t axis) {
  auto type = dyn_cast<RankedTensorType>(param.getType());
  if (!type || !type.hasStaticShape() || !input.hasStaticShape() ||
      type.getElementType() != input.getElementType())
    return false;
  ArrayRef<int64_t> normalized = input.getShape().drop_front(axis);
  ArrayRef<int64_t> shape = type.getShape();
  if (shape.size() < normalized.size())
    return false;
  size_t extra = shape.size() - normalized.size();
  return llvm::all_of(shape.take_front(extra),
                      [](int64_t d) { return d == 1; }) &&
         shape.drop_front(extra) == normalized;
}

/// The operand of a commutative `op` other than `known`.
Value otherOperand(BinaryOp op, Value known) {
  return op.getLhs() == known ? op.getRhs() : op.getLhs();
}

struct FuseWrittenOutLayerNorm : OpRewritePattern<BinaryOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BinaryOp div,
                                PatternRewriter &rewriter) const override {
    if (div.getKind() != BinaryKind::Div)
      return failure();
    // d / sqrt(var + eps)
    auto sqrt = div.getRhs().getDefiningOp<UnaryOp>();
    if (!sqrt || sqrt.getKind() != UnaryKind::Sqrt ||
        !sqrt.getResult().hasOneUse())
      return failure();
    BinaryOp addEps = binaryDef(sqrt.getInput(), BinaryKind::Add);
    if (!addEps)
      return failure();
    std::optional<double> eps = scalarConstant(addEps.getRhs());
    Value varValue = addEps.getLhs();
    if (!eps) {
      eps = scalarConstant(addEps.getLhs());
      varValue = addEps.getRhs();
    }
    if (!eps || !(*eps >= 0))
      return failure();
    auto var = varValue.getDefiningOp<ReduceOp>();
    if (!var || !var.getResult().hasOneUse())
      return failure();
    std::optional<int64_t> axis = trailingMeanAxis(var);
    if (!axis)
      return failure();
    // var = mean(d^2) or mean(d*d); d = x - mean(x), used by the square
    // and the division only.
    Value d = div.getLhs();
    auto square = var.getInput().getDefiningOp<BinaryOp>();
    if (!square || !square.getResult().hasOneUse())
      return failure();
    bool isSquare =
        (square.getKind() == BinaryKind::Pow && square.getLhs() == d &&
         scalarConstant(square.getRhs()) == 2.0) ||
        (square.getKind() == BinaryKind::Mul && square.getLhs() == d &&
         square.getRhs() == d);
    unsigned dUses = square.getKind() == BinaryKind::Mul ? 3 : 2;
    BinaryOp sub = binaryDef(d, BinaryKind::Sub, dUses);
    if (!isSquare || !sub)
      return failure();
    Value x = sub.getLhs();
    auto mean = sub.getRhs().getDefiningOp<ReduceOp>();
    if (!mean || mean.getInput() != x || !mean.getResult().hasOneUse() ||
        trailingMeanAxis(mean) != axis)
      return failure();
    // f32 and f64 only: the normalization kernels take no other type, and
    // an f16 chain written out still compiles as elementwise loops.
    auto inputType = cast<RankedTensorType>(x.getType());
    if (!inputType.getElementType().isF32() &&
        !inputType.getElementType().isF64())
      return failure();
    if (div.getType() != inputType)
      return failure();

    // [* gamma] [+ beta], each taken only when it holds one value per
    // normalized element.
    Operation *last = div;
    Value gamma, beta;
    if (div.getResult().hasOneUse())
      if (auto mul = dyn_cast<BinaryOp>(*div.getResult().getUsers().begin());
          mul && mul.getKind() == BinaryKind::Mul &&
          mul.getType() == inputType) {
        Value candidate = otherOperand(mul, div.getResult());
        if (matchesNormalizedShape(candidate, inputType, *axis))
          gamma = candidate, last = mul;
      }
    if (last->getResult(0).hasOneUse())
      if (auto add = dyn_cast<BinaryOp>(*last->getResult(0).getUsers().begin());
          add && add.getKind() == BinaryKind::Add &&
          add.getType() == inputType) {
        Value candidate = otherOperand(add, last->getResult(0));
        if (matchesNormalizedShape(candidate, inputType, *axis))
          beta = candidate, last = add;
      }

    rewriter.setInsertionPoint(last);
    Location loc = div.getLoc();
    auto paramType = RankedTensorType::get(
        inputType.getShape().drop_front(*axis), inputType.getElementType());
    if (!gamma)
      gamma = ConstantOp::create(
          rewriter, loc,
          DenseElementsAttr::get(
              paramType,
              rewriter.getFloatAttr(paramType.getElementType(), 1.0)));
    auto normalize = NormalizeOp::create(
        rewriter, loc, x, gamma, beta, NormKind::layer,
        static_cast<uint64_t>(*axis), APFloat(*eps), TypeAttr());
    rewriter.replaceOp(last, normalize.getResult());
    return success();
  }
};

struct WeftFuseLayerNormPass
    : weft::impl::WeftFuseLayerNormBase<WeftFuseLayerNormPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseWrittenOutLayerNorm>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
