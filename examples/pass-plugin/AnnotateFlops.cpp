//===- AnnotateFlops.cpp - Example out-of-tree pass plugin for weft -------===//
//
// A pass plugin built against an installed Weft (find_package(Weft)) and
// loaded into weft-opt with --load-pass-plugin. Its one pass,
// weft-example-annotate-flops, estimates the floating-point operations of
// each weft.matmul, weft.unary and weft.binary and of each function.
//
// The pass is declared with PassWrapper rather than Passes.td to keep the
// example to one file; a real plugin with several passes should use
// Passes.td like weft's own (include/weft/Transforms/Passes.td).
//
//===----------------------------------------------------------------------===//

#include "weft/WeftOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/MathExtras.h"

#include <optional>

using namespace mlir;

/// Name of the attribute the pass sets on ops and functions.
static constexpr llvm::StringLiteral kFlopsAttr = "weft_example.flops";
/// Name of the attribute counting, per function, the ops whose FLOPs are
/// unknown because a shape is dynamic.
static constexpr llvm::StringLiteral kUnknownAttr =
    "weft_example.unknown_flops";

/// Elements of a static shape, or nullopt.
static std::optional<uint64_t> getStaticNumElements(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return std::nullopt;
  uint64_t count = 1;
  for (int64_t dim : tensor.getShape())
    count = llvm::SaturatingMultiply(count, static_cast<uint64_t>(dim));
  return count;
}

/// 2*K multiply-adds per result element, plus one add per element for the
/// bias; nullopt when a shape is dynamic.
static std::optional<uint64_t> getMatmulFlops(mlir::weft::MatmulOp op) {
  auto lhs = cast<RankedTensorType>(op.getLhs().getType());
  std::optional<uint64_t> results = getStaticNumElements(op.getType());
  if (!results || !lhs.hasStaticShape() || lhs.getRank() == 0)
    return std::nullopt;
  // The contracted dimension: lhs's last, or its second to last when
  // transposed (transposed operands have rank >= 2).
  int64_t kDim = op.getTransposeA() ? lhs.getRank() - 2 : lhs.getRank() - 1;
  uint64_t k = static_cast<uint64_t>(lhs.getDimSize(kDim));
  uint64_t flops = llvm::SaturatingMultiply(*results, 2 * k);
  if (op.getBias())
    flops = llvm::SaturatingAdd(flops, *results);
  return flops;
}

/// FLOPs of `op`, nullopt when unknown, or 0 for ops the pass does not count
/// (constants, weights, shape ops).
static std::optional<uint64_t> getFlops(Operation *op) {
  if (auto matmul = dyn_cast<mlir::weft::MatmulOp>(op))
    return getMatmulFlops(matmul);
  // One operation per result element.
  if (isa<mlir::weft::UnaryOp, mlir::weft::BinaryOp>(op))
    return getStaticNumElements(op->getResult(0).getType());
  return 0;
}

namespace {
struct AnnotateFlopsPass
    : public PassWrapper<AnnotateFlopsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(AnnotateFlopsPass)

  AnnotateFlopsPass() = default;
  AnnotateFlopsPass(const AnnotateFlopsPass &other) : PassWrapper(other) {}

  StringRef getArgument() const final { return "weft-example-annotate-flops"; }
  StringRef getDescription() const final {
    return "Annotate weft.matmul, weft.unary, weft.binary and functions with "
           "estimated FLOPs (example pass plugin)";
  }

  Option<bool> remarks{*this, "remarks",
                       llvm::cl::desc("Also report each function's total as "
                                      "a remark"),
                       llvm::cl::init(false)};

  void runOnOperation() override {
    Builder builder(&getContext());
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      uint64_t total = 0;
      int64_t unknown = 0;
      func.walk([&](Operation *op) {
        std::optional<uint64_t> flops = getFlops(op);
        if (!flops) {
          ++unknown;
          return;
        }
        if (*flops == 0)
          return;
        total = llvm::SaturatingAdd(total, *flops);
        op->setAttr(kFlopsAttr,
                    builder.getI64IntegerAttr(static_cast<int64_t>(*flops)));
      });
      func->setAttr(kFlopsAttr,
                    builder.getI64IntegerAttr(static_cast<int64_t>(total)));
      if (unknown)
        func->setAttr(kUnknownAttr, builder.getI64IntegerAttr(unknown));
      if (remarks)
        func.emitRemark() << "@" << func.getSymName() << ": " << total
                          << " FLOPs, " << unknown
                          << " ops with dynamic shapes not counted";
    }
  }
};
} // namespace

/// Entry point that weft-opt's --load-pass-plugin looks up.
extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "WeftExamplePlugin", LLVM_VERSION_STRING,
          []() { PassRegistration<AnnotateFlopsPass>(); }};
}
