//===- ApproximateMath.cpp - Vectorizable transcendental functions --------===//
//
// Swaps libm calls of f32 exp/log/tanh/erf for MLIR's polynomial
// approximations, which the loop vectorizer can turn into vector code, and
// powers with a constant exponent (x^2, x^3, x^0.5, x^-1: LayerNorm's
// variance and tanh-GELU as exporters write them out) for multiplications,
// sqrt and division: a libm powf call per element kept those loops scalar
// and was most of a GPT-2-style decoder's time.
//
//===----------------------------------------------------------------------===//

#include "weft/Codegen/Passes.h"

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

struct WeftApproximateMathPass
    : weft::impl::WeftApproximateMathBase<WeftApproximateMathPass> {
  void runOnOperation() override {
    // The predicate sees full operation names ("math.tanh"); with bare
    // mnemonics nothing matched and every call stayed in libm.
    static const llvm::StringSet<> approximated = {
        math::ExpOp::getOperationName(),   math::ExpM1Op::getOperationName(),
        math::LogOp::getOperationName(),   math::Log1pOp::getOperationName(),
        math::TanhOp::getOperationName(),  math::ErfOp::getOperationName()};
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(
        patterns, [](StringRef name) { return approximated.contains(name); });
    populateMathAlgebraicSimplificationPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
