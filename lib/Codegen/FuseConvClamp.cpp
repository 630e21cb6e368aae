//===- FuseConvClamp.cpp - Relu, Relu6 and Clip into the convolution ------===//
//
// A convolution whose only user is a Relu or a Clip with constant bounds
// takes the clamp over (weft.conv's `clamp`), so that the kernel clamps each
// output block while it is in cache instead of a separate pass over the
// whole tensor (MobileNet's ReLU6 after every convolution, ResNet's ReLU).
//
//===----------------------------------------------------------------------===//

#include "weft/Codegen/Passes.h"
#include "weft/ConvClamp.h"
#include "weft/WeftOps.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::weft {
#define GEN_PASS_DEF_WEFTFUSECONVCLAMP
#include "weft/Codegen/Passes.h.inc"
} // namespace mlir::weft

using namespace mlir;
using namespace mlir::weft;

namespace {

struct FuseClampIntoConv : OpRewritePattern<ConvOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ConvOp conv,
                                PatternRewriter &rewriter) const override {
    if (!conv.getResult().hasOneUse())
      return failure();
    Operation *user = *conv.getResult().getUsers().begin();
    if (getConvToFuseInto(user) != conv)
      return failure();
    ClampBounds bounds = *getClampBounds(user);
    rewriter.modifyOpInPlace(conv, [&] {
      if (bounds.min)
        conv.setClampMinAttr(rewriter.getF64FloatAttr(*bounds.min));
      if (bounds.max)
        conv.setClampMaxAttr(rewriter.getF64FloatAttr(*bounds.max));
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
