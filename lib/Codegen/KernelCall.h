//===- KernelCall.h - Building calls to the runtime's kernels ---*- C++ -*-===//
//
// A heavy weft op becomes one or more calls
// `weft_rt_cpu_<kernel>(ctx, params, buffers...) -> status`, a collective one
// call `weft_rt_collective(ctx, params, in, out) -> status`. This helper
// builds the parameter block (a private constant global per call), turns
// buffers into pointers and declares the callee.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_LIB_CODEGEN_KERNELCALL_H
#define WEFT_LIB_CODEGEN_KERNELCALL_H

#include "weft/Codegen/ProgramABI.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::weft {

/// Collects the parameters and buffers of one kernel call.
class KernelCall {
public:
  /// `kernel` is the name after `weft_rt_cpu_`.
  explicit KernelCall(llvm::StringRef kernel)
      : kind(kernel.str()), symbol((kCpuKernelPrefix + kernel).str()) {}

  /// A call of `weft_rt_collective`; `kind` ("all_reduce", ...) names it in
  /// the parameter global and, through the call's `weft.op_kind` attribute,
  /// in the program's "op" signature lines.
  static KernelCall collective(llvm::StringRef kind) {
    KernelCall call(kind);
    call.symbol = kCollectiveSymbol.str();
    call.tagKind = true;
    return call;
  }

  KernelCall &param(int64_t value) {
    params.push_back(value);
    return *this;
  }
  KernelCall &params_(llvm::ArrayRef<int64_t> values) {
    params.append(values.begin(), values.end());
    return *this;
  }
  /// A float parameter, passed as the bits of a double.
  KernelCall &paramF64(double value);
  /// A buffer (a memref with a static identity layout), or a null pointer
  /// when `buffer` is null.
  KernelCall &buffer(Value buffer) {
    buffers.push_back(buffer);
    return *this;
  }

  /// Emits the call before the builder's insertion point in the function
  /// that `anchor` is in (whose first argument is the runtime context).
  void emit(OpBuilder &builder, Operation *anchor);

private:
  std::string kind;
  std::string symbol;
  /// Records `kind` on the call (the symbol does not say it).
  bool tagKind = false;
  llvm::SmallVector<int64_t> params;
  llvm::SmallVector<Value> buffers;
};

/// A pointer (!llvm.ptr) to the first element of `buffer`, as kernel calls
/// take their buffers; a null pointer when `buffer` is null.
Value pointerToBuffer(OpBuilder &b, Location loc, Value buffer);

} // namespace mlir::weft

#endif // WEFT_LIB_CODEGEN_KERNELCALL_H
