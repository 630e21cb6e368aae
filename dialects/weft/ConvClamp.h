//===- ConvClamp.h - What a convolution can take over -----------*- C++ -*-===//
//
// A Relu or a Clip with constant bounds right after a convolution runs as
// the convolution's `clamp_min` / `clamp_max` on the CPU, and an Add of the
// convolution's result and a tensor of its type (a residual connection) as
// its `addend` (codegen's weft-fuse-conv-clamp). The rules live here, beside
// the op, so that the fusion and the cost model agree on them: a fused
// clamp costs no pass of its own in the model. A fused Add keeps its pass
// there, as it does at run time on every algorithm but the 1x1 one.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECT_WEFT_CONVCLAMP_H
#define WEFT_DIALECT_WEFT_CONVCLAMP_H

#include "weft/WeftOps.h"

#include <optional>

namespace mlir::weft {

/// What a clamp limits its input to; an absent bound leaves that side open.
struct ClampBounds {
  std::optional<double> min, max;
};

/// The bounds `op` clamps its first operand to, when it is a Relu or a Clip
/// whose bounds are finite one-element constants (ONNX: min > max gives max
/// everywhere, so min becomes max). Nullopt for anything else.
std::optional<ClampBounds> getClampBounds(Operation *op);

/// The convolution `clamp` fuses into: its first operand is the f32 result
/// of a weft.conv that has no clamp yet and no other user. Null otherwise
/// (also when `clamp` is not a clamp).
ConvOp getConvToFuseInto(Operation *clamp);

/// The convolution an Add fuses into, and the Add's other operand, which
/// becomes the convolution's `addend`: `add` is a weft.binary add of the
/// f32 result of a weft.conv that has no clamp, no addend and no other user
/// and of a value of the same type (no broadcasting). {nullptr, {}}
/// otherwise. (A clamp already fused would have to apply after the Add.)
std::pair<ConvOp, Value> getConvToFuseAddendInto(Operation *add);

} // namespace mlir::weft

#endif // WEFT_DIALECT_WEFT_CONVCLAMP_H
