//===- InsertStatusChecks.cpp - Kernel statuses and profiling hooks -------===//
//
// Makes a failing kernel or collective end the run with its status, and
// brackets every op of the program (runtime calls and loop nests) with
// profiling hooks.
//
//===----------------------------------------------------------------------===//

#include "weft/Codegen/Passes.h"
#include "weft/Codegen/ProgramABI.h"
#include "weft/WeftTypeUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace mlir::weft {
#define GEN_PASS_DEF_WEFTINSERTSTATUSCHECKS
#include "weft/Codegen/Passes.h.inc"
} // namespace mlir::weft

using namespace mlir;
using namespace mlir::weft;

/// The ONNX node name in `loc` (the importer names ops after their node),
/// or "" when it has none.
static std::string nodeName(Location loc) {
  NameLoc named = findNameLoc(loc);
  return named ? named.getName().str() : std::string();
}

static func::FuncOp declareHook(ModuleOp module, StringRef name) {
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  MLIRContext *ctx = module.getContext();
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  auto decl = func::FuncOp::create(
      b, module.getLoc(), name,
      FunctionType::get(
          ctx, {LLVM::LLVMPointerType::get(ctx), IntegerType::get(ctx, 64)},
          {}));
  decl.setPrivate();
  return decl;
}

namespace {

struct WeftInsertStatusChecksPass
    : weft::impl::WeftInsertStatusChecksBase<WeftInsertStatusChecksPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>(kProgramRunName);
    if (!func || !func.getBody().hasOneBlock()) {
      module.emitError("no single-block device program to check");
      return signalPassFailure();
    }
    Value ctxArg = func.getArgument(0);
    func::FuncOp begin = declareHook(module, "weft_rt_op_begin");
    func::FuncOp end = declareHook(module, "weft_rt_op_end");

    // The program's ops, in order: kernel calls and linalg loop nests.
    SmallVector<Operation *> programOps;
    for (Operation &op : func.getBody().front()) {
      if (auto call = dyn_cast<func::CallOp>(&op)) {
        if (call.getCallee().starts_with(kCpuKernelPrefix) ||
            call.getCallee() == kCollectiveSymbol)
          programOps.push_back(call);
      } else if (isa<linalg::LinalgOp>(&op)) {
        programOps.push_back(&op);
      }
    }

    std::string lines;
    for (auto [id, op] : llvm::enumerate(programOps)) {
      std::string kind;
      if (auto call = dyn_cast<func::CallOp>(op)) {
        // Collectives share one symbol; their call says which they are
        // (read here for the last time: LLVM has no use for the tag).
        if (auto tag = call->getAttrOfType<StringAttr>(kOpKindAttr)) {
          kind = tag.str();
          call->removeAttr(kOpKindAttr);
        } else
          kind = call.getCallee().drop_front(kCpuKernelPrefix.size()).str();
      } else {
        kind = "loops";
      }
      std::string name = nodeName(op->getLoc());
      if (name.empty())
        name = kind;
      lines += "op " + std::to_string(id) + " " + kind + " " +
               escapeSignatureName(name) + "\n";

      Location loc = op->getLoc();
      OpBuilder b(op);
      Value idValue = arith::ConstantIntOp::create(b, loc, id, 64);
      func::CallOp::create(b, loc, begin, ValueRange{ctxArg, idValue});
      b.setInsertionPointAfter(op);
      func::CallOp::create(b, loc, end, ValueRange{ctxArg, idValue});

      auto call = dyn_cast<func::CallOp>(op);
      if (!call)
        continue;
      // Split after the end hook: a non-zero status returns at once.
      Value status = call.getResult(0);
      Block *before = b.getInsertionBlock();
      Block *after = before->splitBlock(b.getInsertionPoint());
      Block *fail = b.createBlock(after);
      func::ReturnOp::create(b, loc, ValueRange{status});
      b.setInsertionPointToEnd(before);
      Value zero = arith::ConstantIntOp::create(b, loc, 0, 32);
      Value failed =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, status, zero);
      cf::CondBranchOp::create(b, loc, failed, fail, after);
    }
    module->setAttr(kProgramOpsAttr, StringAttr::get(&getContext(), lines));
  }
};

} // namespace
