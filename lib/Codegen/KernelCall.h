//===- KernelCall.h - Building calls to the runtime's kernels ---*- C++ -*-===//
//
// A heavy weft op becomes one or more calls
// `weft_rt_cpu_<kernel>(ctx, params, buffers...) -> status`. This helper
// builds the parameter block (a private constant global per call), turns
// buffers into pointers and declares the kernel.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_LIB_CODEGEN_KERNELCALL_H
#define WEFT_LIB_CODEGEN_KERNELCALL_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::weft {

/// Collects the parameters and buffers of one kernel call.
class KernelCall {
public:
  /// `kernel` is the name after `weft_rt_cpu_`.
  explicit KernelCall(llvm::StringRef kernel) : kernel(kernel.str()) {}

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
  std::string kernel;
  llvm::SmallVector<int64_t> params;
  llvm::SmallVector<Value> buffers;
};

/// The prefix of every CPU kernel's symbol.
inline constexpr llvm::StringLiteral kCpuKernelPrefix = "weft_rt_cpu_";

} // namespace mlir::weft

#endif // WEFT_LIB_CODEGEN_KERNELCALL_H
