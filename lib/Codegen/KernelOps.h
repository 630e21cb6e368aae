//===- KernelOps.h - Which weft ops run as runtime kernels ------*- C++ -*-===//
//
// The weft ops that bufferize into calls of the runtime's CPU kernels and
// collectives.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_LIB_CODEGEN_KERNELOPS_H
#define WEFT_LIB_CODEGEN_KERNELOPS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"

namespace mlir::weft {

class ConvOp;

/// True for the weft ops that run as a CPU kernel or a collective.
bool isKernelOp(Operation *op);

/// False for operands that only give compile-time values (Slice bounds,
/// Tile repeats): they are not passed to the kernel.
bool isKernelOperandRead(Operation *op, unsigned operandIndex);

/// Whether every operand and result of `op` is a tensor of static shape:
/// what the layout passes need before they lay a tensor out otherwise.
bool hasStaticShapes(Operation *op);

/// True when the CPU convolution kernel runs `conv` with channels-last and
/// kernel-first layouts (any of weft.conv's layout attributes): 2-D 1x1
/// convolutions of group 1, stride 1 and no pads (one GEMM), and 2-D
/// depthwise ones (group == C == M). Whatever layouts `conv` has now.
bool isChannelsLastConvSupported(ConvOp conv);

/// Emits the kernel call(s) of `op` at the builder's insertion point, with
/// `operandBuffers` (null for absent optional operands is not used: one
/// entry per operand) and freshly allocated `resultBuffers`. Reports an op
/// or element type without a kernel as an error on `op`.
LogicalResult emitKernelCalls(Operation *op, OpBuilder &b,
                              ValueRange operandBuffers,
                              ValueRange resultBuffers);

} // namespace mlir::weft

#endif // WEFT_LIB_CODEGEN_KERNELOPS_H
