//===- ApproximateMath.cpp - Vectorizable transcendental functions --------===//
//
// Swaps libm calls of f32 exp/log/tanh for MLIR's polynomial
// approximations, which the loop vectorizer can turn into vector code, f32
// erf for a shorter rational one (below), and powers with a constant
// exponent (x^2, x^3, x^0.5, x^-1: LayerNorm's variance and tanh-GELU as
// exporters write them out) for multiplications, sqrt and division: a libm
// powf call per element kept those loops scalar and was most of a
// GPT-2-style decoder's time.
//
//===----------------------------------------------------------------------===//

#include "weft/Codegen/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::weft {
#define GEN_PASS_DEF_WEFTAPPROXIMATEMATH
#include "weft/Codegen/Passes.h.inc"
} // namespace mlir::weft

using namespace mlir;

namespace {

/// f32 erf without libm and without MLIR's approximation, whose three
/// intervals blend every coefficient (about 80 vector instructions an
/// element: erf-GELU was 13% of bert_tiny's run, 43 us for 128 x 512): the
/// rational approximation Eigen and XLA use, x P(x^2) / Q(x^2) on x clamped
/// to [-4, 4] (beyond, erf is +-1 in f32), about 15 instructions and a
/// division: 43 -> 26 us for that GELU. Against double-precision erf over
/// [-10, 10] and the special values its error is at most 3.6e-7, relative
/// and absolute (test/Tools/weftc/erf-accuracy.test checks 1e-6); the
/// quotient, which can exceed 1 by 2e-7, is clamped to [-1, 1]. NaN gives
/// NaN (the clamps propagate it) and +-inf gives +-1.
struct ErfAsRational : OpRewritePattern<math::ErfOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(math::ErfOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getType().isF32())
      return failure();
    Location loc = op.getLoc();
    auto constant = [&](double v) -> Value {
      return arith::ConstantOp::create(rewriter, loc,
                                       rewriter.getF32FloatAttr(v));
    };
    auto clamp = [&](Value v, double bound) -> Value {
      Value upper = arith::MinimumFOp::create(rewriter, loc, v, constant(bound));
      return arith::MaximumFOp::create(rewriter, loc, upper, constant(-bound));
    };
    // Horner's rule: c[0] + z (c[1] + z (c[2] + ...)).
    auto horner = [&](Value z, ArrayRef<double> c) {
      Value acc = constant(c.back());
      for (double coefficient : llvm::reverse(c.drop_back()))
        acc = math::FmaOp::create(rewriter, loc, acc, z, constant(coefficient));
      return acc;
    };
    Value x = clamp(op.getOperand(), 4.0);
    Value x2 = arith::MulFOp::create(rewriter, loc, x, x);
    Value p = arith::MulFOp::create(
        rewriter, loc, x,
        horner(x2, {-1.60960333262415e-02, -2.95459980854025e-03,
                    -7.34990630326855e-04, -5.69250639462346e-05,
                    -2.10102402082508e-06, 2.77068142495902e-08,
                    -2.72614225801306e-10}));
    Value q = horner(x2, {-1.42647390514189e-02, -7.37332916720468e-03,
                          -1.68282697438203e-03, -2.13374055278905e-04,
                          -1.45660718464996e-05});
    rewriter.replaceOp(op,
                       clamp(arith::DivFOp::create(rewriter, loc, p, q), 1.0));
    return success();
  }
};

struct WeftApproximateMathPass
    : weft::impl::WeftApproximateMathBase<WeftApproximateMathPass> {
  void runOnOperation() override {
    // The predicate sees full operation names ("math.tanh"); with bare
    // mnemonics nothing matched and every call stayed in libm.
    static const llvm::StringSet<> approximated = {
        math::ExpOp::getOperationName(),   math::ExpM1Op::getOperationName(),
        math::LogOp::getOperationName(),   math::Log1pOp::getOperationName(),
        math::TanhOp::getOperationName()};
    RewritePatternSet patterns(&getContext());
    patterns.add<ErfAsRational>(&getContext());
    populateMathPolynomialApproximationPatterns(
        patterns, [](StringRef name) { return approximated.contains(name); });
    populateMathAlgebraicSimplificationPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
