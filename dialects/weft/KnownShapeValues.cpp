//===- KnownShapeValues.cpp - Partly known shape values -------------------===//
//
// Tracks the values of the small integer tensors that carry shapes through
// the shape arithmetic exporters emit, as far as they are known at compile
// time (see KnownShapeValues.h).
//
//===----------------------------------------------------------------------===//

#include "weft/KnownShapeValues.h"
#include "weft/WeftOps.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::weft;

/// Longest integer tensor whose partly known values are tracked through
/// shape computations.
static constexpr int64_t kMaxTrackedValues = 64;

static constexpr int64_t kDynamic = ShapedType::kDynamic;

/// getKnownIntValues of a value `depth` defining ops below the one asked
/// about; nothing is known deeper than 8.
static std::optional<SmallVector<int64_t>> trackIntValues(Value value,
                                                          int depth) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.hasStaticShape() ||
      !isa<IntegerType>(type.getElementType()) ||
      type.getNumElements() > kMaxTrackedValues)
    return std::nullopt;
  int64_t count = type.getNumElements();
  if (std::optional<SmallVector<int64_t>> values = getConstantIntValues(value))
    return values;
  SmallVector<int64_t> unknown(count, kDynamic);
  Operation *def = value.getDefiningOp();
  if (!def || depth > 8)
    return unknown;
  // Values of an integer operand with the same element count (reshapes).
  auto sameCount = [&](Value operand) -> SmallVector<int64_t> {
    std::optional<SmallVector<int64_t>> values =
        trackIntValues(operand, depth + 1);
    if (!values || static_cast<int64_t>(values->size()) != count)
      return unknown;
    return *values;
  };

  if (auto shape = dyn_cast<ShapeOp>(def)) {
    auto inputType = cast<RankedTensorType>(shape.getInput().getType());
    int64_t start = shape.getStart();
    SmallVector<int64_t> out;
    for (int64_t i = 0; i < count; ++i)
      out.push_back(inputType.getDimSize(start + i));
    return out;
  }
  if (auto size = dyn_cast<SizeOp>(def)) {
    auto inputType = cast<RankedTensorType>(size.getInput().getType());
    return SmallVector<int64_t>{
        getNumElements(inputType.getShape()).value_or(kDynamic)};
  }
  if (isa<ReshapeOp, SqueezeOp, UnsqueezeOp, FlattenOp>(def))
    return sameCount(def->getOperand(0));
  if (auto concat = dyn_cast<ConcatOp>(def)) {
    if (type.getRank() != 1)
      return unknown;
    SmallVector<int64_t> out;
    for (Value input : concat.getInputs()) {
      std::optional<SmallVector<int64_t>> values =
          trackIntValues(input, depth + 1);
      if (!values)
        return unknown;
      llvm::append_range(out, *values);
    }
    return static_cast<int64_t>(out.size()) == count ? out : unknown;
  }
  if (auto gather = dyn_cast<GatherOp>(def)) {
    std::optional<SmallVector<int64_t>> indices =
        getConstantIntValues(gather.getIndices());
    std::optional<SmallVector<int64_t>> values =
        trackIntValues(gather.getInput(), depth + 1);
    if (!indices || !values ||
        cast<RankedTensorType>(gather.getInput().getType()).getRank() != 1)
      return unknown;
    int64_t n = values->size();
    SmallVector<int64_t> out;
    for (int64_t index : *indices) {
      if (index < -n || index >= n)
        return unknown;
      out.push_back((*values)[index < 0 ? index + n : index]);
    }
    return out;
  }
  return unknown;
}

std::optional<SmallVector<int64_t>> mlir::weft::getKnownIntValues(Value value) {
  return trackIntValues(value, /*depth=*/0);
}

SmallVector<int64_t> mlir::weft::getKnownShapeEntries(Value shape) {
  auto type = cast<RankedTensorType>(shape.getType());
  if (std::optional<SmallVector<int64_t>> values = getKnownIntValues(shape))
    return *values;
  return SmallVector<int64_t>(type.getDimSize(0), kDynamic);
}
