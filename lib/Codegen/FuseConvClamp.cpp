//===- FuseConvClamp.cpp - Relu, Relu6 and Clip into the convolution ------===//
//
// A convolution whose only user is a Relu or a Clip with constant bounds
// takes the clamp over (weft.conv's `clamp`), so that the kernel clamps each
// output block while it is in cache instead of a separate pass over the
// whole tensor (MobileNet's ReLU6 after every convolution, ResNet's ReLU).
//
//===----------------------------------------------------------------------===//

#include "weft/Codegen/Passes.h"
#include "weft/WeftOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace mlir::weft {
#define GEN_PASS_DEF_WEFTFUSECONVCLAMP
#include "weft/Codegen/Passes.h.inc"
} // namespace mlir::weft

using namespace mlir;
using namespace mlir::weft;

namespace {

/// The value of a one-element float constant (a Clip bound).
std::optional<double> scalarConstant(Value value) {
  DenseFPElementsAttr attr;
  if (!matchPattern(value, m_Constant(&attr)) || attr.getNumElements() != 1)
    return std::nullopt;
  return (*attr.value_begin<APFloat>()).convertToDouble();
}

/// The bounds `user` clamps to (absent: that side is open), when it is a
/// Relu or a Clip with constant finite bounds.
struct Clamp {
  std::optional<double> min, max;
};

std::optional<Clamp> clampOf(Operation *user) {
  if (auto unary = dyn_cast<UnaryOp>(user)) {
    if (unary.getKind() != UnaryKind::Relu)
      return std::nullopt;
    return Clamp{0.0, std::nullopt};
  }
  auto clip = dyn_cast<ClipOp>(user);
  if (!clip)
    return std::nullopt;
  Clamp clamp;
  for (auto [bound, into] : {std::make_pair(clip.getMin(), &clamp.min),
                             std::make_pair(clip.getMax(), &clamp.max)}) {
    if (!bound)
      continue;
    std::optional<double> v = scalarConstant(bound);
    if (!v || !std::isfinite(*v))
      return std::nullopt;
    *into = *v;
  }
  // ONNX: min(max(x, low), high), so every element is high when low > high.
  if (clamp.min && clamp.max && *clamp.min > *clamp.max)
    clamp.min = clamp.max;
  return clamp;
}

struct FuseClampIntoConv : OpRewritePattern<ConvOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ConvOp conv,
                                PatternRewriter &rewriter) const override {
    if (conv.getClampMin() || conv.getClampMax() ||
        !conv.getResult().hasOneUse() ||
        !conv.getType().getElementType().isF32())
      return failure();
    Operation *user = *conv.getResult().getUsers().begin();
    if (user->getOperand(0) != conv.getResult() ||
        user->getResult(0).getType() != conv.getType())
      return failure();
    std::optional<Clamp> clamp = clampOf(user);
    if (!clamp)
      return failure();
    rewriter.modifyOpInPlace(conv, [&] {
      if (clamp->min)
        conv.setClampMinAttr(rewriter.getF64FloatAttr(*clamp->min));
      if (clamp->max)
        conv.setClampMaxAttr(rewriter.getF64FloatAttr(*clamp->max));
    });
    rewriter.replaceOp(user, conv.getResult());
    return success();
  }
};

struct WeftFuseConvClampPass
    : weft::impl::WeftFuseConvClampBase<WeftFuseConvClampPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseClampIntoConv>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
