//===- KernelCall.cpp - Building calls to the runtime's kernels -----------===//
//
// Parameter blocks become private constant memref globals; buffers become
// raw pointers (their aligned base: every buffer here has offset 0).
//
//===----------------------------------------------------------------------===//

#include "KernelCall.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/bit.h"

using namespace mlir;
using namespace mlir::weft;

KernelCall &KernelCall::paramF64(double value) {
  params.push_back(llvm::bit_cast<int64_t>(value));
  return *this;
}

Value mlir::weft::pointerToBuffer(OpBuilder &b, Location loc, Value buffer) {
  auto ptrType = LLVM::LLVMPointerType::get(b.getContext());
  if (!buffer)
    return LLVM::ZeroOp::create(b, loc, ptrType);
  Value index = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buffer);
  Value asInt = arith::IndexCastOp::create(b, loc, b.getI64Type(), index);
  return LLVM::IntToPtrOp::create(b, loc, ptrType, asInt);
}

/// Declares `name` as (ptr x numArgs) -> i32 in `module` once.
static func::FuncOp declareKernel(ModuleOp module, StringRef name,
                                  unsigned numArgs) {
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  MLIRContext *ctx = module.getContext();
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  SmallVector<Type> args(numArgs, LLVM::LLVMPointerType::get(ctx));
  auto decl = func::FuncOp::create(
      b, module.getLoc(), name,
      FunctionType::get(ctx, args, {IntegerType::get(ctx, 32)}));
  decl.setPrivate();
  return decl;
}

void KernelCall::emit(OpBuilder &b, Operation *anchor) {
  Location loc = anchor->getLoc();
  auto func = anchor->getParentOfType<func::FuncOp>();
  auto module = func->getParentOfType<ModuleOp>();
  MLIRContext *ctx = b.getContext();

  // The parameter block: a constant global named after the kernel, made
  // unique by the symbol table.
  auto paramsType =
      MemRefType::get({static_cast<int64_t>(params.size())}, b.getI64Type());
  auto tensorType =
      RankedTensorType::get(paramsType.getShape(), b.getI64Type());
  // Built detached, then inserted by the symbol table, which renames it on
  // a clash.
  OpBuilder gb(ctx);
  auto global = memref::GlobalOp::create(
      gb, loc, "__weft_params_" + kind, gb.getStringAttr("private"), paramsType,
      DenseIntElementsAttr::get(tensorType, params),
      /*constant=*/true, gb.getI64IntegerAttr(8));
  SymbolTable(module).insert(global, module.getBody()->begin());

  Value paramsBuffer =
      memref::GetGlobalOp::create(b, loc, paramsType, global.getSymName());
  SmallVector<Value> args;
  args.push_back(func.getArgument(0));
  args.push_back(pointerToBuffer(b, loc, paramsBuffer));
  for (Value buffer : buffers)
    args.push_back(pointerToBuffer(b, loc, buffer));
  func::FuncOp decl = declareKernel(module, symbol, args.size());
  auto call = func::CallOp::create(b, loc, decl, args);
  if (tagKind)
    call->setAttr(kOpKindAttr, b.getStringAttr(kind));
}
