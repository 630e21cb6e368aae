//===- PrintSummary.cpp - Print a readable summary of a weft module -------===//
//
// The weft-print-summary pass: inputs, outputs, op histogram and weight bytes
// of each function, for people reading what the importer produced.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/Passes.h"
#include "weft/WeftOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/ToolOutputFile.h"

#include <map>

namespace mlir::weft {
#define GEN_PASS_DEF_WEFTPRINTSUMMARY
#include "weft/Transforms/Passes.h.inc"
} // namespace mlir::weft

using namespace mlir;
using namespace mlir::weft;

/// The histogram key of an op: its name, plus the variant for ops that come
/// in kinds (weft.unary(relu), weft.reduce(mean), ...).
static std::string getOpKey(Operation *op) {
  std::string name = op->getName().getStringRef().str();
  std::string kind = llvm::TypeSwitch<Operation *, std::string>(op)
                         .Case([](UnaryOp u) {
                           return stringifyUnaryKind(u.getKind()).str();
                         })
                         .Case([](BinaryOp b) {
                           return stringifyBinaryKind(b.getKind()).str();
                         })
                         .Case([](ReduceOp r) {
                           return stringifyReduceKind(r.getKind()).str();
                         })
                         .Case([](ArgReduceOp r) {
                           return stringifyArgReduceKind(r.getKind()).str();
                         })
                         .Case([](PoolOp p) {
                           return stringifyPoolKind(p.getKind()).str();
                         })
                         .Case([](NormalizeOp n) {
                           return stringifyNormKind(n.getKind()).str();
                         })
                         .Default([](Operation *) { return std::string(); });
  return kind.empty() ? name : name + "(" + kind + ")";
}

static void printType(llvm::raw_ostream &os, Type type) { type.print(os); }

static void printFunctionSummary(func::FuncOp func, llvm::raw_ostream &os) {
  os << "func @" << func.getSymName() << "\n";
  for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
    os << "  input  ";
    if (auto name = func.getArgAttrOfType<StringAttr>(i, "weft.name"))
      os << name.getValue();
    else
      os << "#" << i;
    os << " : ";
    printType(os, arg.getType());
    os << "\n";
  }
  for (auto [i, type] : llvm::enumerate(func.getResultTypes())) {
    os << "  output ";
    if (auto name = func.getResultAttrOfType<StringAttr>(i, "weft.name"))
      os << name.getValue();
    else
      os << "#" << i;
    os << " : ";
    printType(os, type);
    os << "\n";
  }

  llvm::MapVector<std::string, int64_t, std::map<std::string, unsigned>> counts;
  int64_t numOps = 0, numWeights = 0, weightBytes = 0, numConstants = 0;
  func.walk([&](Operation *op) {
    if (op == func.getOperation() || isa<func::ReturnOp>(op))
      return;
    if (auto weight = dyn_cast<WeightOp>(op)) {
      ++numWeights;
      weightBytes += weight.getSize();
      return;
    }
    if (isa<ConstantOp>(op)) {
      ++numConstants;
      return;
    }
    ++numOps;
    ++counts[getOpKey(op)];
  });
  // Most frequent first; ties in order of first appearance.
  SmallVector<std::pair<std::string, int64_t>> sorted(counts.begin(),
                                                      counts.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](auto &a, auto &b) { return a.second > b.second; });
  os << "  ops " << numOps << ":";
  for (auto [i, entry] : llvm::enumerate(sorted))
    os << (i ? ", " : " ") << entry.first << " " << entry.second;
  os << "\n";
  os << "  weights " << numWeights << " ("
     << llvm::format("%.1f", weightBytes / 1e6) << " MB), constants "
     << numConstants << "\n";
}

namespace mlir::weft {
namespace {
struct WeftPrintSummaryPass
    : public impl::WeftPrintSummaryBase<WeftPrintSummaryPass> {
  using Base::Base;

  void runOnOperation() override {
    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> file =
        openOutputFile(output, &error);
    if (!file) {
      getOperation()->emitError("cannot open summary output '")
          << output << "': " << error;
      return signalPassFailure();
    }
    for (auto func : getOperation().getOps<func::FuncOp>())
      printFunctionSummary(func, file->os());
    file->keep();
  }
};
} // namespace
} // namespace mlir::weft
