//===- ApproximateMath.cpp - Vectorizable transcendental functions --------===//
//
// Swaps libm calls of f32 exp/log/tanh/erf for MLIR's polynomial
// approximations, which the loop vectorizer can turn into vector code.
//
//===----------------------------------------------------------------------===//

#include "weft/Codegen/Passes.h"

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
    static const llvm::StringSet<> approximated = {"exp",   "expm1", "log",
                                                   "log1p", "tanh",  "erf"};
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(
        patterns, [](StringRef name) { return approximated.contains(name); });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
