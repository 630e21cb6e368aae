//===- KnownShapeValues.h - Partly known shape values -----------*- C++ -*-===//
//
// What the shape and data movement ops know at compile time about the small
// integer tensors that carry shapes, slice bounds and split sizes; private to
// the dialect library, shared by type inference (ShapeOps.cpp) and the
// folders and canonicalization patterns (ShapeFolds.cpp). The tracking is
// implemented in KnownShapeValues.cpp, the slice and split parameters beside
// the inference of those ops in ShapeOps.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECT_WEFT_KNOWNSHAPEVALUES_H
#define WEFT_DIALECT_WEFT_KNOWNSHAPEVALUES_H

#include "mlir/IR/Location.h"
#include "mlir/IR/Value.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>

namespace mlir::weft {

//===----------------------------------------------------------------------===//
// Partly known values of shape computations
//===----------------------------------------------------------------------===//

/// The values of a small static integer tensor as far as they are known at
/// compile time (ShapedType::kDynamic where not), looking through the shape
/// arithmetic exporters emit: weft.shape and weft.size of partly static
/// tensors, reshapes, 1-D concats and gathers with constant indices of such
/// values. Nullopt when `value` is not a static integer tensor of at most 64
/// elements.
std::optional<SmallVector<int64_t>> getKnownIntValues(Value value);

/// The entries of a 1-D shape operand of static length, ShapedType::kDynamic
/// where not known at compile time.
SmallVector<int64_t> getKnownShapeEntries(Value shape);

//===----------------------------------------------------------------------===//
// Slice and split parameters
//===----------------------------------------------------------------------===//

/// The elements one axis of a slice takes: `count` of them from `start` in
/// steps of `step`.
struct SliceRange {
  int64_t start, count, step;
};

/// ONNX's clamping of a slice of a dimension of static size `dim`.
SliceRange getSliceRange(int64_t dim, int64_t start, int64_t end, int64_t step);

/// The known parameters of a slice, one entry per axis (ShapedType::kDynamic
/// when not known at compile time).
struct SliceParams {
  SmallVector<int64_t> starts, ends, steps;
};

/// Reads the starts, ends and steps operands of a slice along `axes`. A
/// constant INT64_MIN is moved up by one so that it is not taken for
/// kDynamic. Fails, with an error at `loc` when given, when an operand is not
/// 1-D with one entry per axis or a step is 0.
FailureOr<SliceParams> getSliceParams(Value starts, Value ends, Value steps,
                                      ArrayRef<int64_t> axes,
                                      std::optional<Location> loc);

/// The piece sizes of a split of a dimension of size `dim` (kDynamic when
/// not known), from exactly one of `sizes` and `numOutputs`. Fails, with an
/// error at `loc` when given, on sizes that do not add up to `dim` or a
/// piece count that does not fit.
FailureOr<SmallVector<int64_t>>
getSplitSizes(int64_t dim, std::optional<ArrayRef<int64_t>> sizes,
              std::optional<int64_t> numOutputs, std::optional<Location> loc);

} // namespace mlir::weft

#endif // WEFT_DIALECT_WEFT_KNOWNSHAPEVALUES_H
