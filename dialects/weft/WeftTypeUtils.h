//===- WeftTypeUtils.h - Shape and type helpers for weft ops -----*- C++ -*-===//
//
// Helpers shared by the type inference, verifiers and folders of all weft op
// families: compatibility of result types, broadcasting, reading constant
// operands, normalizing ONNX-style negative axes, and the ONNX node name in a
// location.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECT_WEFT_WEFTTYPEUTILS_H
#define WEFT_DIALECT_WEFT_WEFTTYPEUTILS_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Value.h"
#include "mlir/Support/LLVM.h"

#include <optional>

namespace mlir::weft {

/// The first NameLoc inside `loc` (the importer names each op after its
/// ONNX node), or null when it has none.
NameLoc findNameLoc(Location loc);

/// True when each pair of types has the same element type and rank and no
/// dimension where both are static and differ. A result type may be less
/// static than the inferred one.
bool areCompatibleTensorTypes(TypeRange inferred, TypeRange actual);

/// Returns, per dimension, the more static of two compatible shapes.
SmallVector<int64_t> joinShapes(ArrayRef<int64_t> a, ArrayRef<int64_t> b);

/// Numpy-style broadcast of several shapes (dynamic sizes allowed). Emits an
/// error at `loc` (when given) naming both shapes if two static sizes clash.
FailureOr<SmallVector<int64_t>>
broadcastShapes(ArrayRef<ArrayRef<int64_t>> shapes,
                std::optional<Location> loc);

/// Turns an ONNX axis in [-rank, rank) into [0, rank). Emits an error at
/// `loc` naming `what` when it is out of range.
FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank,
                                 std::optional<Location> loc,
                                 StringRef what = "axis");

/// Normalizes a list of axes; also rejects duplicates.
FailureOr<SmallVector<int64_t>> normalizeAxes(ArrayRef<int64_t> axes,
                                              int64_t rank,
                                              std::optional<Location> loc,
                                              StringRef what = "axes");

/// The dense value of `value` when it is produced by a constant-like op.
std::optional<DenseElementsAttr> getConstantValue(Value value);

/// The values of a constant integer tensor (any integer element type) as
/// int64_t, or nullopt when `value` is not a constant.
std::optional<SmallVector<int64_t>> getConstantIntValues(Value value);

/// Same as above, for an attribute given to a folder.
std::optional<SmallVector<int64_t>> getIntValues(Attribute attr);

/// Number of elements of a static shape, or nullopt when any dimension is
/// dynamic or the count does not fit in int64_t.
std::optional<int64_t> getNumElements(ArrayRef<int64_t> shape);

/// Formats a shape as "2x?x4" for diagnostics. (Use mlir::emitOptionalError
/// to report errors from type inference, which may run without a location.)
std::string formatShape(ArrayRef<int64_t> shape);

} // namespace mlir::weft

#endif // WEFT_DIALECT_WEFT_WEFTTYPEUTILS_H
