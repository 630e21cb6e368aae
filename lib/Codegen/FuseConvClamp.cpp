//===- FuseConvClamp.cpp - Relu, Clip and residual Adds into the conv -----===//
//
// A convolution whose only user is a Relu or a Clip with constant bounds
// takes the clamp over (weft.conv's `clamp`), so that the kernel clamps each
// output block while it is in cache instead of a separate pass over the
// whole tensor (MobileNet's ReLU6 after every convolution, ResNet's ReLU).
// One whose only user is an Add of a tensor of its type (a residual
// connection: MobileNetV2's Add after a block's projection, ResNet's Add
// before its Relu) takes that tensor as its `addend`, and then the Relu.
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

struct FuseAddIntoConv : OpRewritePattern<BinaryOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BinaryOp add,
                                PatternRewriter &rewriter) const override {
    auto [conv, addend] = getConvToFuseAddendInto(add);
    if (!conv)
      return failure();
    // The fused convolution takes the Add's place, where the addend is
    // defined too.
    SmallVector<Value> operands = {conv.getInput(), conv.getWeight()};
    if (conv.getBias())
      operands.push_back(conv.getBias());
    operands.push_back(addend);
    ConvOp::Properties properties = conv.getProperties();
    properties.operandSegmentSizes = {
        1, 1, static_cast<int32_t>(conv.getBias() ? 1 : 0), 1};
    rewriter.setInsertionPoint(add);
    auto fused = ConvOp::create(rewriter, conv.getLoc(),
                                TypeRange(conv.getType()), operands, properties);
    rewriter.replaceOp(add, fused.getResult());
    rewriter.eraseOp(conv);
    return success();
  }
};

struct WeftFuseConvClampPass
    : weft::impl::WeftFuseConvClampBase<WeftFuseConvClampPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseClampIntoConv, FuseAddIntoConv>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
