//===- ShapeOps.cpp - Weft shape and data movement ops --------------------===//
//
// Type inference, which also checks the operands, of the ops that move data
// (reshape, transpose, concat, slice, gather, pad, ...) and of the ops that
// compute shapes (shape, size, range, constant_of_shape). Their folders and
// canonicalization patterns are in ShapeFolds.cpp; the partly known shape
// values that both read are tracked in KnownShapeValues.cpp.
//
//===----------------------------------------------------------------------===//

#include "weft/KnownShapeValues.h"
#include "weft/WeftLimits.h"
#include "weft/WeftOps.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::weft;

/// Refuses a result shape made from operand values (a shape operand, pads,
/// repeats, a range's bounds) that is too large to compile: the shape enters
/// Weft here, so later stages never multiply past int64_t.
static LogicalResult checkResultSize(ArrayRef<int64_t> shape, Type elementType,
                                     std::optional<Location> loc) {
  if (std::optional<std::string> problem = checkTensorSize(shape, elementType))
    return emitOptionalError(loc, "result ",
                             RankedTensorType::get(shape, elementType), " ",
                             *problem);
  return success();
}

static constexpr int64_t kDynamic = ShapedType::kDynamic;

//===----------------------------------------------------------------------===//
// Helpers: operand checks
//===----------------------------------------------------------------------===//

/// Type of an operand seen by inference, which may run before the ODS type
/// constraints are checked.
static FailureOr<RankedTensorType>
getRankedType(Value value, std::optional<Location> loc, StringRef what) {
  auto type =
      dyn_cast_or_null<RankedTensorType>(value ? value.getType() : Type());
  if (!type)
    return emitOptionalError(loc, what, " must be a ranked tensor");
  return type;
}

/// Checks that `shape` is a 1-D operand with a static length.
static LogicalResult checkShapeOperand(Value shape, std::optional<Location> loc,
                                       StringRef what) {
  FailureOr<RankedTensorType> type = getRankedType(shape, loc, what);
  if (failed(type))
    return failure();
  if (type->getRank() != 1 || type->isDynamicDim(0))
    return emitOptionalError(loc, what,
                             " must be 1-D with a static length, got ", *type);
  return success();
}

//===----------------------------------------------------------------------===//
// Helpers: lists given at run time
//===----------------------------------------------------------------------===//

/// An attribute list, empty when absent (properties built by hand, not
/// parsed, may lack the default).
static ArrayRef<int64_t> getList(DenseI64ArrayAttr attr) {
  return attr ? attr.asArrayRef() : ArrayRef<int64_t>();
}

/// Checks an operand `what` that replaces the attribute `attrName` (which
/// must then be empty): it is 1-D with a static length in [minLength,
/// maxLength]. Returns that length.
static FailureOr<int64_t> checkRunTimeList(Value value, StringRef what,
                                           ArrayRef<int64_t> attr,
                                           StringRef attrName,
                                           int64_t minLength, int64_t maxLength,
                                           std::optional<Location> loc) {
  if (!attr.empty())
    return emitOptionalError(loc, attrName, " must be empty when ", what,
                             " is given");
  FailureOr<RankedTensorType> type = getRankedType(value, loc, what);
  if (failed(type))
    return failure();
  if (type->getRank() != 1 || type->isDynamicDim(0))
    return emitOptionalError(loc, what,
                             " must be 1-D with a static length, got ", *type);
  int64_t length = type->getDimSize(0);
  if (minLength == maxLength && length != minLength)
    return emitOptionalError(loc, what, " has ", length, " entries, expected ",
                             minLength);
  if (length < minLength || length > maxLength)
    return emitOptionalError(loc, what, " has ", length, " entries, expected ",
                             minLength, " to ", maxLength);
  return length;
}

//===----------------------------------------------------------------------===//
// ReshapeOp
//===----------------------------------------------------------------------===//

/// The result shape of an ONNX reshape of `input` to `entries` (kDynamic
/// where an entry is not known).
static FailureOr<SmallVector<int64_t>>
inferReshape(ArrayRef<int64_t> input, ArrayRef<int64_t> entries, bool allowzero,
             std::optional<Location> loc) {
  int64_t inRank = input.size();
  SmallVector<int64_t> out;
  int64_t inferIndex = -1;
  bool hasZero = false;
  for (auto [i, v] : llvm::enumerate(entries)) {
    if (ShapedType::isDynamic(v)) {
      out.push_back(kDynamic);
      continue;
    }
    if (v < -1)
      return emitOptionalError(loc, "shape entry ", v, " at index ", i,
                               " is invalid (expected >= -1)");
    if (v == -1) {
      if (inferIndex >= 0)
        return emitOptionalError(loc, "shape has more than one -1 entry");
      inferIndex = i;
      out.push_back(kDynamic);
      continue;
    }
    if (v == 0 && !allowzero) {
      if (static_cast<int64_t>(i) >= inRank)
        return emitOptionalError(loc, "shape entry 0 at index ", i,
                                 " copies a dimension that the input of "
                                 "rank ",
                                 inRank, " does not have");
      out.push_back(input[i]);
      continue;
    }
    hasZero |= v == 0;
    out.push_back(v);
  }
  if (allowzero && hasZero && inferIndex >= 0)
    return emitOptionalError(
        loc, "shape has both 0 and -1 entries while allowzero is set");

  std::optional<int64_t> inCount = getNumElements(input);
  if (inferIndex >= 0) {
    // A dimension copied by a 0 entry cancels the same input dimension, so
    // the -1 is known even when the copied dimensions are dynamic.
    SmallVector<bool> copied(inRank, false);
    int64_t others = 1;
    bool known = true;
    for (auto [i, v] : llvm::enumerate(entries)) {
      if (static_cast<int64_t>(i) == inferIndex)
        continue;
      if (v == 0 && !allowzero) {
        copied[i] = true;
        continue;
      }
      if (ShapedType::isDynamic(out[i]))
        known = false;
      else
        others *= out[i];
    }
    int64_t rest = 1;
    for (int64_t j = 0; j < inRank; ++j) {
      if (copied[j])
        continue;
      if (ShapedType::isDynamic(input[j]))
        known = false;
      else
        rest *= input[j];
    }
    if (known) {
      if (others == 0 || rest % others != 0)
        return emitOptionalError(loc, "cannot reshape ", formatShape(input),
                                 " with -1 in shape ", formatShape(out), ": ",
                                 rest, " elements do not divide by ", others);
      out[inferIndex] = rest / others;
    }
    return out;
  }
  std::optional<int64_t> outCount = getNumElements(out);
  if (inCount && outCount && *inCount != *outCount)
    return emitOptionalError(loc, "cannot reshape ", formatShape(input), " (",
                             *inCount, " elements) into ", formatShape(out),
                             " (", *outCount, " elements)");
  return out;
}

LogicalResult ReshapeOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> inputType =
      getRankedType(adaptor.getInput(), loc, "input");
  if (failed(inputType) ||
      failed(checkShapeOperand(adaptor.getShape(), loc, "shape operand")))
    return failure();
  FailureOr<SmallVector<int64_t>> shape = inferReshape(
      inputType->getShape(), getKnownShapeEntries(adaptor.getShape()),
      adaptor.getAllowzero(), loc);
  if (failed(shape) ||
      failed(checkResultSize(*shape, inputType->getElementType(), loc)))
    return failure();
  inferred.push_back(
      RankedTensorType::get(*shape, inputType->getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// FlattenOp
//===----------------------------------------------------------------------===//

LogicalResult FlattenOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> inputType =
      getRankedType(adaptor.getInput(), loc, "input");
  if (failed(inputType))
    return failure();
  int64_t rank = inputType->getRank();
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis > rank)
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             rank, " (expected [0, ", rank, "])");
  ArrayRef<int64_t> shape = inputType->getShape();
  auto product = [](ArrayRef<int64_t> dims) {
    return getNumElements(dims).value_or(kDynamic);
  };
  inferred.push_back(RankedTensorType::get(
      {product(shape.take_front(axis)), product(shape.drop_front(axis))},
      inputType->getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// SqueezeOp
//===----------------------------------------------------------------------===//

LogicalResult SqueezeOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> inputType =
      getRankedType(adaptor.getInput(), loc, "input");
  if (failed(inputType))
    return failure();
  int64_t rank = inputType->getRank();
  ArrayRef<int64_t> axes = getList(adaptor.getAxesAttr());
  SmallVector<int64_t> resolved;
  if (Value dynamicAxes = adaptor.getDynamicAxes()) {
    FailureOr<int64_t> count = checkRunTimeList(dynamicAxes, "dynamic_axes",
                                                axes, "axes", 1, rank, loc);
    if (failed(count))
      return failure();
    // The dimensions that can be 1: when there are just enough of them, the
    // axes are known whatever their run-time values.
    SmallVector<int64_t> ones;
    for (auto [i, d] : llvm::enumerate(inputType->getShape()))
      if (d == 1 || ShapedType::isDynamic(d))
        ones.push_back(i);
    if (static_cast<int64_t>(ones.size()) < *count)
      return emitOptionalError(loc, "cannot squeeze ", *count,
                               " dimensions of ", *inputType, ": only ",
                               ones.size(), " can be 1");
    if (std::optional<SmallVector<int64_t>> values =
            getConstantIntValues(dynamicAxes)) {
      FailureOr<SmallVector<int64_t>> normalized =
          normalizeAxes(*values, rank, loc, "dynamic_axes");
      if (failed(normalized))
        return failure();
      resolved = std::move(*normalized);
    } else if (static_cast<int64_t>(ones.size()) == *count) {
      resolved = std::move(ones);
    } else {
      // Result dimension j is one of input dimensions j .. j + count.
      ArrayRef<int64_t> in = inputType->getShape();
      SmallVector<int64_t> shape;
      for (int64_t j = 0; j < rank - *count; ++j) {
        ArrayRef<int64_t> choices = in.slice(j, *count + 1);
        shape.push_back(llvm::all_equal(choices) ? choices[0] : kDynamic);
      }
      inferred.push_back(
          RankedTensorType::get(shape, inputType->getElementType()));
      return success();
    }
    axes = resolved;
  }
  for (int64_t axis : axes)
    if (axis < 0 || axis >= rank)
      return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                               rank, " (expected [0, ", rank, "))");
  if (failed(normalizeAxes(axes, rank, loc)))
    return failure();
  SmallVector<int64_t> shape;
  for (auto [i, d] : llvm::enumerate(inputType->getShape())) {
    if (!llvm::is_contained(axes, static_cast<int64_t>(i))) {
      shape.push_back(d);
      continue;
    }
    if (!ShapedType::isDynamic(d) && d != 1)
      return emitOptionalError(loc, "cannot squeeze dimension ", i, " of size ",
                               d);
  }
  inferred.push_back(RankedTensorType::get(shape, inputType->getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// UnsqueezeOp
//===----------------------------------------------------------------------===//

LogicalResult UnsqueezeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> inputType =
      getRankedType(adaptor.getInput(), loc, "input");
  if (failed(inputType))
    return failure();
  ArrayRef<int64_t> axes = getList(adaptor.getAxesAttr());
  SmallVector<int64_t> resolved;
  if (Value dynamicAxes = adaptor.getDynamicAxes()) {
    FailureOr<int64_t> count =
        checkRunTimeList(dynamicAxes, "dynamic_axes", axes, "axes", 1,
                         std::numeric_limits<int32_t>::max(), loc);
    if (failed(count))
      return failure();
    int64_t inRank = inputType->getRank();
    int64_t rank = inRank + *count;
    std::optional<SmallVector<int64_t>> values =
        getConstantIntValues(dynamicAxes);
    if (!values) {
      // Result dimension j is an inserted 1 or one of input dimensions
      // j - count .. j.
      ArrayRef<int64_t> in = inputType->getShape();
      SmallVector<int64_t> shape;
      for (int64_t j = 0; j < rank; ++j) {
        int64_t first = std::max<int64_t>(0, j - *count);
        int64_t last = std::min<int64_t>(inRank - 1, j);
        bool ones = llvm::all_of(in.slice(first, last - first + 1),
                                 [](int64_t d) { return d == 1; });
        shape.push_back(ones ? 1 : kDynamic);
      }
      inferred.push_back(
          RankedTensorType::get(shape, inputType->getElementType()));
      return success();
    }
    FailureOr<SmallVector<int64_t>> normalized =
        normalizeAxes(*values, rank, loc, "dynamic_axes");
    if (failed(normalized))
      return failure();
    resolved = std::move(*normalized);
    axes = resolved;
  }
  int64_t rank = inputType->getRank() + axes.size();
  for (int64_t axis : axes)
    if (axis < 0 || axis >= rank)
      return emitOptionalError(loc, "axis ", axis,
                               " is out of range for result rank ", rank,
                               " (expected [0, ", rank, "))");
  if (failed(normalizeAxes(axes, rank, loc)))
    return failure();
  SmallVector<int64_t> shape;
  ArrayRef<int64_t> inShape = inputType->getShape();
  for (int64_t i = 0; i < rank; ++i) {
    if (llvm::is_contained(axes, i)) {
      shape.push_back(1);
      continue;
    }
    shape.push_back(inShape.front());
    inShape = inShape.drop_front();
  }
  inferred.push_back(RankedTensorType::get(shape, inputType->getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// TransposeOp
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> inputType =
      getRankedType(adaptor.getInput(), loc, "input");
  if (failed(inputType))
    return failure();
  ArrayRef<int64_t> perm = adaptor.getPerm();
  int64_t rank = inputType->getRank();
  SmallVector<bool> seen(rank, false);
  bool valid = static_cast<int64_t>(perm.size()) == rank;
  for (int64_t p : perm) {
    if (!valid || p < 0 || p >= rank || seen[p]) {
      valid = false;
      break;
    }
    seen[p] = true;
  }
  if (!valid) {
    std::string list;
    llvm::raw_string_ostream os(list);
    llvm::interleaveComma(perm, os);
    return emitOptionalError(loc, "perm [", list,
                             "] is not a permutation of the ", rank,
                             " dimensions of the input");
  }
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(inputType->getDimSize(p));
  inferred.push_back(RankedTensorType::get(shape, inputType->getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// ConcatOp
//===----------------------------------------------------------------------===//

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return emitOptionalError(loc, "concat needs at least one input");
  FailureOr<RankedTensorType> first = getRankedType(inputs[0], loc, "input");
  if (failed(first))
    return failure();
  int64_t rank = first->getRank();
  int64_t axis = adaptor.getAxis();
  if (rank == 0)
    return emitOptionalError(loc, "cannot concatenate 0-D tensors");
  if (axis < 0 || axis >= rank)
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             rank, " (expected [0, ", rank, "))");
  SmallVector<int64_t> shape(first->getShape());
  shape[axis] = 0;
  for (auto [i, input] : llvm::enumerate(inputs)) {
    FailureOr<RankedTensorType> type = getRankedType(input, loc, "input");
    if (failed(type))
      return failure();
    if (type->getElementType() != first->getElementType() ||
        type->getRank() != rank)
      return emitOptionalError(loc, "input ", i, " has type ", *type,
                               ", incompatible with input 0 of type ", *first);
    for (int64_t d = 0; d < rank; ++d) {
      int64_t size = type->getDimSize(d);
      if (d == axis) {
        shape[d] =
            ShapedType::isDynamic(size) || ShapedType::isDynamic(shape[d])
                ? kDynamic
                : shape[d] + size;
        continue;
      }
      if (ShapedType::isDynamic(size))
        continue;
      if (!ShapedType::isDynamic(shape[d]) && shape[d] != size)
        return emitOptionalError(loc, "input ", i, " has size ", size,
                                 " in dimension ", d, " where input 0 has ",
                                 shape[d]);
      shape[d] = size;
    }
  }
  inferred.push_back(RankedTensorType::get(shape, first->getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// SplitOp
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<int64_t>>
mlir::weft::getSplitSizes(int64_t dim, std::optional<ArrayRef<int64_t>> sizes,
                          std::optional<int64_t> numOutputs,
                          std::optional<Location> loc) {
  if (sizes.has_value() == numOutputs.has_value())
    return emitOptionalError(
        loc, "split needs exactly one of sizes and num_outputs");
  if (sizes) {
    if (sizes->empty())
      return emitOptionalError(loc, "split needs at least one size");
    int64_t sum = 0;
    for (int64_t s : *sizes) {
      if (s < 0)
        return emitOptionalError(loc, "split size ", s, " is negative");
      sum += s;
    }
    if (!ShapedType::isDynamic(dim) && sum != dim)
      return emitOptionalError(loc, "split sizes add up to ", sum,
                               ", not to the dimension size ", dim);
    return SmallVector<int64_t>(*sizes);
  }
  int64_t n = *numOutputs;
  if (n < 1)
    return emitOptionalError(loc, "num_outputs ", n, " must be at least 1");
  if (ShapedType::isDynamic(dim))
    return SmallVector<int64_t>(n, kDynamic);
  int64_t chunk = (dim + n - 1) / n;
  int64_t last = dim - chunk * (n - 1);
  if (last < 0)
    return emitOptionalError(loc, "cannot split dimension of size ", dim,
                             " into ", n, " pieces of ", chunk);
  SmallVector<int64_t> out(n - 1, chunk);
  out.push_back(last);
  return out;
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> inputType =
      getRankedType(adaptor.getInput(), loc, "input");
  if (failed(inputType))
    return failure();
  int64_t rank = inputType->getRank();
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis >= rank)
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             rank, " (expected [0, ", rank, "))");
  std::optional<ArrayRef<int64_t>> sizes;
  if (adaptor.getSizesAttr())
    sizes = adaptor.getSizesAttr().asArrayRef();
  std::optional<int64_t> numOutputs;
  if (adaptor.getNumOutputsAttr())
    numOutputs = adaptor.getNumOutputsAttr().getInt();
  int64_t dim = inputType->getDimSize(axis);
  std::optional<SmallVector<int64_t>> values;
  if (Value dynamicSizes = adaptor.getDynamicSizes()) {
    if (sizes || numOutputs)
      return emitOptionalError(loc, "split needs exactly one of sizes, "
                                    "num_outputs and dynamic_sizes");
    FailureOr<int64_t> count =
        checkRunTimeList(dynamicSizes, "dynamic_sizes", {}, "sizes", 1,
                         std::numeric_limits<int32_t>::max(), loc);
    if (failed(count))
      return failure();
    values = getConstantIntValues(dynamicSizes);
    if (!values) {
      // Pieces of an empty dimension are empty; a single piece is all of it.
      int64_t piece = dim == 0 || *count == 1 ? dim : kDynamic;
      for (int64_t i = 0; i < *count; ++i) {
        SmallVector<int64_t> shape(inputType->getShape());
        shape[axis] = piece;
        inferred.push_back(
            RankedTensorType::get(shape, inputType->getElementType()));
      }
      return success();
    }
    sizes = *values;
  }
  FailureOr<SmallVector<int64_t>> pieces =
      getSplitSizes(dim, sizes, numOutputs, loc);
  if (failed(pieces))
    return failure();
  for (int64_t piece : *pieces) {
    SmallVector<int64_t> shape(inputType->getShape());
    shape[axis] = piece;
    inferred.push_back(
        RankedTensorType::get(shape, inputType->getElementType()));
  }
  return success();
}

//===----------------------------------------------------------------------===//
// SliceOp
//===----------------------------------------------------------------------===//

SliceRange mlir::weft::getSliceRange(int64_t dim, int64_t start, int64_t end,
                                     int64_t step) {
  if (start < 0)
    start += dim;
  if (end < 0)
    end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    int64_t count = end > start ? (end - start - 1) / step + 1 : 0;
    return {start, count, step};
  }
  start = std::clamp<int64_t>(start, 0, dim - 1);
  end = std::clamp<int64_t>(end, -1, dim - 1);
  if (start <= end)
    return {start, 0, step};
  int64_t count = step == std::numeric_limits<int64_t>::min()
                      ? 1
                      : (start - end - 1) / -step + 1;
  return {start, count, step};
}

FailureOr<SliceParams> mlir::weft::getSliceParams(Value starts, Value ends,
                                                  Value steps,
                                                  ArrayRef<int64_t> axes,
                                                  std::optional<Location> loc) {
  SliceParams params;
  for (auto [what, value, out] :
       {std::make_tuple("starts", starts, &params.starts),
        std::make_tuple("ends", ends, &params.ends),
        std::make_tuple("steps", steps, &params.steps)}) {
    FailureOr<RankedTensorType> type = getRankedType(value, loc, what);
    if (failed(type))
      return failure();
    if (type->getRank() != 1 ||
        (!type->isDynamicDim(0) &&
         type->getDimSize(0) != static_cast<int64_t>(axes.size())))
      return emitOptionalError(loc, what, " must be 1-D with ", axes.size(),
                               " entries (one per axis), got ", *type);
    // INT64_MIN is ONNX's "before the beginning" but also kDynamic: read
    // constants directly and move it by one, which clamps the same way.
    std::optional<SmallVector<int64_t>> known = getConstantIntValues(value);
    if (known) {
      for (int64_t &v : *known)
        v = std::max(v, std::numeric_limits<int64_t>::min() + 1);
    } else {
      known = getKnownIntValues(value);
    }
    *out = known ? *known : SmallVector<int64_t>(axes.size(), kDynamic);
  }
  for (int64_t step : params.steps)
    if (step == 0)
      return emitOptionalError(loc, "slice step must not be 0");
  return params;
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> inputType =
      getRankedType(adaptor.getInput(), loc, "input");
  if (failed(inputType))
    return failure();
  ArrayRef<int64_t> axes = getList(adaptor.getAxesAttr());
  int64_t rank = inputType->getRank();
  SmallVector<int64_t> resolved;
  if (Value dynamicAxes = adaptor.getDynamicAxes()) {
    FailureOr<int64_t> count = checkRunTimeList(dynamicAxes, "dynamic_axes",
                                                axes, "axes", 1, rank, loc);
    if (failed(count))
      return failure();
    std::optional<SmallVector<int64_t>> values =
        getConstantIntValues(dynamicAxes);
    if (!values) {
      // Checks the bounds against the number of axes; any dimension may be
      // sliced, but an empty one stays empty.
      if (failed(getSliceParams(adaptor.getStarts(), adaptor.getEnds(),
                                adaptor.getSteps(),
                                SmallVector<int64_t>(*count, 0), loc)))
        return failure();
      SmallVector<int64_t> shape;
      for (int64_t d : inputType->getShape())
        shape.push_back(d == 0 ? 0 : kDynamic);
      inferred.push_back(
          RankedTensorType::get(shape, inputType->getElementType()));
      return success();
    }
    FailureOr<SmallVector<int64_t>> normalized =
        normalizeAxes(*values, rank, loc, "dynamic_axes");
    if (failed(normalized))
      return failure();
    resolved = std::move(*normalized);
    axes = resolved;
  }
  for (int64_t axis : axes)
    if (axis < 0 || axis >= rank)
      return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                               rank, " (expected [0, ", rank, "))");
  if (failed(normalizeAxes(axes, rank, loc)))
    return failure();
  FailureOr<SliceParams> params = getSliceParams(
      adaptor.getStarts(), adaptor.getEnds(), adaptor.getSteps(), axes, loc);
  if (failed(params))
    return failure();
  SmallVector<int64_t> shape(inputType->getShape());
  for (auto [i, axis] : llvm::enumerate(axes)) {
    int64_t dim = shape[axis];
    int64_t start = params->starts[i], end = params->ends[i],
            step = params->steps[i];
    if (ShapedType::isDynamic(dim) || ShapedType::isDynamic(start) ||
        ShapedType::isDynamic(end) || ShapedType::isDynamic(step)) {
      shape[axis] = kDynamic;
      continue;
    }
    shape[axis] = getSliceRange(dim, start, end, step).count;
  }
  inferred.push_back(RankedTensorType::get(shape, inputType->getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// GatherOp
//===----------------------------------------------------------------------===//

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> inputType =
      getRankedType(adaptor.getInput(), loc, "input");
  FailureOr<RankedTensorType> indicesType =
      getRankedType(adaptor.getIndices(), loc, "indices");
  if (failed(inputType) || failed(indicesType))
    return failure();
  int64_t rank = inputType->getRank();
  int64_t axis = adaptor.getAxis();
  if (rank == 0)
    return emitOptionalError(loc, "cannot gather from a 0-D tensor");
  if (axis < 0 || axis >= rank)
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             rank, " (expected [0, ", rank, "))");
  ArrayRef<int64_t> in = inputType->getShape();
  SmallVector<int64_t> shape(in.take_front(axis));
  llvm::append_range(shape, indicesType->getShape());
  llvm::append_range(shape, in.drop_front(axis + 1));
  inferred.push_back(RankedTensorType::get(shape, inputType->getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// GatherElementsOp
//===----------------------------------------------------------------------===//

LogicalResult
GatherElementsOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                   Adaptor adaptor,
                                   SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> inputType =
      getRankedType(adaptor.getInput(), loc, "input");
  FailureOr<RankedTensorType> indicesType =
      getRankedType(adaptor.getIndices(), loc, "indices");
  if (failed(inputType) || failed(indicesType))
    return failure();
  int64_t rank = inputType->getRank();
  int64_t axis = adaptor.getAxis();
  if (rank == 0)
    return emitOptionalError(loc, "cannot gather from a 0-D tensor");
  if (indicesType->getRank() != rank)
    return emitOptionalError(loc, "indices of rank ", indicesType->getRank(),
                             " must have the input's rank ", rank);
  if (axis < 0 || axis >= rank)
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             rank, " (expected [0, ", rank, "))");
  inferred.push_back(RankedTensorType::get(indicesType->getShape(),
                                           inputType->getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// ExpandOp
//===----------------------------------------------------------------------===//

LogicalResult ExpandOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> inputType =
      getRankedType(adaptor.getInput(), loc, "input");
  if (failed(inputType) ||
      failed(checkShapeOperand(adaptor.getShape(), loc, "shape operand")))
    return failure();
  SmallVector<int64_t> entries = getKnownShapeEntries(adaptor.getShape());
  for (auto [i, v] : llvm::enumerate(entries))
    if (!ShapedType::isDynamic(v) && v < 0)
      return emitOptionalError(loc, "shape entry ", v, " at index ", i,
                               " is negative");
  FailureOr<SmallVector<int64_t>> shape =
      broadcastShapes({inputType->getShape(), entries}, loc);
  if (failed(shape) ||
      failed(checkResultSize(*shape, inputType->getElementType(), loc)))
    return failure();
  inferred.push_back(
      RankedTensorType::get(*shape, inputType->getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// PadOp
//===----------------------------------------------------------------------===//

LogicalResult PadOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> inputType =
      getRankedType(adaptor.getInput(), loc, "input");
  if (failed(inputType))
    return failure();
  int64_t rank = inputType->getRank();
  ArrayRef<int64_t> pads = getList(adaptor.getPadsAttr());
  std::optional<SmallVector<int64_t>> values;
  bool padsKnown = true;
  if (Value dynamicPads = adaptor.getDynamicPads()) {
    if (failed(checkRunTimeList(dynamicPads, "dynamic_pads", pads, "pads",
                                2 * rank, 2 * rank, loc)))
      return failure();
    values = getConstantIntValues(dynamicPads);
    if (values)
      pads = *values;
    else
      padsKnown = false;
  }
  if (padsKnown && static_cast<int64_t>(pads.size()) != 2 * rank)
    return emitOptionalError(loc, "pads has ", pads.size(),
                             " entries, expected ", 2 * rank,
                             " (two per dimension)");
  PadMode mode = adaptor.getMode();
  if (Value value = adaptor.getValue()) {
    FailureOr<RankedTensorType> valueType = getRankedType(value, loc, "value");
    if (failed(valueType))
      return failure();
    if (mode != PadMode::constant)
      return emitOptionalError(loc, "a pad value needs constant mode");
    if (valueType->getElementType() != inputType->getElementType())
      return emitOptionalError(loc, "pad value type ", *valueType,
                               " does not match the input element type ",
                               inputType->getElementType());
    std::optional<int64_t> count = getNumElements(valueType->getShape());
    if (valueType->getRank() > 1 || (count && *count != 1))
      return emitOptionalError(loc, "pad value must have one element, got ",
                               *valueType);
  }
  if (!padsKnown) {
    inferred.push_back(RankedTensorType::get(
        SmallVector<int64_t>(rank, kDynamic), inputType->getElementType()));
    return success();
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t dim = inputType->getDimSize(d);
    int64_t before = pads[d], after = pads[rank + d];
    if (ShapedType::isDynamic(dim)) {
      shape.push_back(before == 0 && after == 0 ? dim : kDynamic);
      continue;
    }
    // Pads are attributes of any int64 value: add in 128 bits.
    __int128 wide = static_cast<__int128>(dim) + before + after;
    if (wide > kMaxDimSize)
      return emitOptionalError(loc, "pads ", before, " and ", after,
                               " make dimension ", d, " larger than ",
                               kMaxDimSize, ", the largest Weft compiles");
    int64_t size = static_cast<int64_t>(wide);
    if (size < 0)
      return emitOptionalError(loc, "pads ", before, " and ", after,
                               " leave a negative size in dimension ", d,
                               " of size ", dim);
    if (mode != PadMode::constant && (before > 0 || after > 0)) {
      if (dim == 0)
        return emitOptionalError(loc, stringifyPadMode(mode),
                                 " padding of the empty dimension ", d);
      int64_t limit = mode == PadMode::reflect ? dim - 1 : dim;
      if (mode != PadMode::edge && (before > limit || after > limit))
        return emitOptionalError(loc, stringifyPadMode(mode), " pads ", before,
                                 " and ", after, " of dimension ", d,
                                 " of size ", dim, " exceed ", limit);
    }
    shape.push_back(size);
  }
  if (failed(checkResultSize(shape, inputType->getElementType(), loc)))
    return failure();
  inferred.push_back(RankedTensorType::get(shape, inputType->getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// TileOp
//===----------------------------------------------------------------------===//

LogicalResult TileOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> inputType =
      getRankedType(adaptor.getInput(), loc, "input");
  if (failed(inputType) ||
      failed(checkShapeOperand(adaptor.getRepeats(), loc, "repeats")))
    return failure();
  int64_t rank = inputType->getRank();
  SmallVector<int64_t> repeats = getKnownShapeEntries(adaptor.getRepeats());
  if (static_cast<int64_t>(repeats.size()) != rank)
    return emitOptionalError(loc, "repeats has ", repeats.size(),
                             " entries for an input of rank ", rank);
  SmallVector<int64_t> shape;
  for (auto [d, r] : llvm::zip(inputType->getShape(), repeats)) {
    if (!ShapedType::isDynamic(r) && r < 0)
      return emitOptionalError(loc, "repeat ", r, " is negative");
    if (r == 0 || d == 0)
      shape.push_back(0);
    else if (r == 1)
      shape.push_back(d);
    else if (ShapedType::isDynamic(r) || ShapedType::isDynamic(d))
      shape.push_back(kDynamic);
    else if (r > kMaxDimSize / d)
      return emitOptionalError(loc, "repeat ", r, " of a dimension of size ", d,
                               " gives more than ", kMaxDimSize,
                               ", the largest dimension Weft compiles");
    else
      shape.push_back(d * r);
  }
  if (failed(checkResultSize(shape, inputType->getElementType(), loc)))
    return failure();
  inferred.push_back(RankedTensorType::get(shape, inputType->getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// TriluOp
//===----------------------------------------------------------------------===//

LogicalResult TriluOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> inputType =
      getRankedType(adaptor.getInput(), loc, "input");
  if (failed(inputType))
    return failure();
  if (inputType->getRank() < 2)
    return emitOptionalError(loc, "trilu needs rank >= 2, got ", *inputType);
  FailureOr<RankedTensorType> kType = getRankedType(adaptor.getK(), loc, "k");
  if (failed(kType))
    return failure();
  if (kType->getRank() != 0)
    return emitOptionalError(loc, "k must be 0-D, got ", *kType);
  inferred.push_back(*inputType);
  return success();
}

//===----------------------------------------------------------------------===//
// ShapeOp
//===----------------------------------------------------------------------===//

LogicalResult ShapeOp::inferReturnTypes(MLIRContext *context,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> inputType =
      getRankedType(adaptor.getInput(), loc, "input");
  if (failed(inputType))
    return failure();
  int64_t rank = inputType->getRank();
  int64_t start = adaptor.getStart();
  int64_t end = adaptor.getEndAttr() ? adaptor.getEndAttr().getInt() : rank;
  if (start < 0 || start > rank || end < 0 || end > rank)
    return emitOptionalError(loc, "start ", start, " and end ", end,
                             " must be in [0, ", rank, "]");
  inferred.push_back(RankedTensorType::get({std::max<int64_t>(end - start, 0)},
                                           IntegerType::get(context, 64)));
  return success();
}

//===----------------------------------------------------------------------===//
// SizeOp
//===----------------------------------------------------------------------===//

LogicalResult SizeOp::inferReturnTypes(MLIRContext *context,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  if (failed(getRankedType(adaptor.getInput(), loc, "input")))
    return failure();
  inferred.push_back(RankedTensorType::get({}, IntegerType::get(context, 64)));
  return success();
}

//===----------------------------------------------------------------------===//
// ConstantOfShapeOp
//===----------------------------------------------------------------------===//

LogicalResult
ConstantOfShapeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                    Adaptor adaptor,
                                    SmallVectorImpl<Type> &inferred) {
  if (failed(checkShapeOperand(adaptor.getShape(), loc, "shape operand")))
    return failure();
  TypedAttr value = adaptor.getValue();
  if (!value || !isa<IntegerAttr, FloatAttr>(value))
    return emitOptionalError(loc, "value must be an integer or float "
                                  "attribute");
  Type elementType = value.getType();
  if (!elementType.isF32() && !elementType.isF16() && !elementType.isBF16() &&
      !elementType.isF64() && !elementType.isInteger(1) &&
      !elementType.isInteger(8) && !elementType.isUnsignedInteger(8) &&
      !elementType.isInteger(32) && !elementType.isInteger(64))
    return emitOptionalError(loc, "value type ", elementType,
                             " is not a supported element type");
  SmallVector<int64_t> shape = getKnownShapeEntries(adaptor.getShape());
  for (auto [i, v] : llvm::enumerate(shape))
    if (!ShapedType::isDynamic(v) && v < 0)
      return emitOptionalError(loc, "shape entry ", v, " at index ", i,
                               " is negative");
  if (failed(checkResultSize(shape, elementType, loc)))
    return failure();
  inferred.push_back(RankedTensorType::get(shape, elementType));
  return success();
}

//===----------------------------------------------------------------------===//
// RangeOp
//===----------------------------------------------------------------------===//

/// The length of a range when its scalars are constants (nullopt when they
/// are not); fails on a zero delta.
static FailureOr<std::optional<int64_t>>
getRangeLength(Value start, Value limit, Value delta,
               std::optional<Location> loc) {
  std::optional<DenseElementsAttr> s = getConstantValue(start),
                                   l = getConstantValue(limit),
                                   d = getConstantValue(delta);
  if (!s || !l || !d)
    return std::optional<int64_t>();
  Type elementType = s->getElementType();
  if (isa<FloatType>(elementType)) {
    double sv = s->getSplatValue<APFloat>().convertToDouble();
    double lv = l->getSplatValue<APFloat>().convertToDouble();
    double dv = d->getSplatValue<APFloat>().convertToDouble();
    if (dv == 0)
      return emitOptionalError(loc, "range delta must not be 0");
    double n = std::ceil((lv - sv) / dv);
    if (!(n > 0))
      return std::optional<int64_t>(0);
    if (n > static_cast<double>(kMaxDimSize))
      return emitOptionalError(loc, "range of ", n, " elements is longer than ",
                               kMaxDimSize,
                               ", the largest dimension Weft compiles");
    return std::optional<int64_t>(static_cast<int64_t>(n));
  }
  auto toInt = [&](DenseElementsAttr attr) {
    APInt v = attr.getSplatValue<APInt>();
    return elementType.isUnsignedInteger()
               ? static_cast<int64_t>(v.getZExtValue())
               : v.getSExtValue();
  };
  int64_t sv = toInt(*s), lv = toInt(*l), dv = toInt(*d);
  if (dv == 0)
    return emitOptionalError(loc, "range delta must not be 0");
  // Exact in 128 bits for any int64 inputs.
  __int128 span = static_cast<__int128>(lv) - sv;
  if ((dv > 0 && span <= 0) || (dv < 0 && span >= 0))
    return std::optional<int64_t>(0);
  __int128 n = (span + (dv > 0 ? dv - 1 : dv + 1)) / dv;
  if (n > kMaxDimSize)
    return emitOptionalError(loc, "range of ", static_cast<double>(n),
                             " elements is longer than ", kMaxDimSize,
                             ", the largest dimension Weft compiles");
  return std::optional<int64_t>(static_cast<int64_t>(n));
}

LogicalResult RangeOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> startType =
      getRankedType(adaptor.getStart(), loc, "start");
  if (failed(startType))
    return failure();
  for (auto [what, value] : {std::make_pair("start", adaptor.getStart()),
                             std::make_pair("limit", adaptor.getLimit()),
                             std::make_pair("delta", adaptor.getDelta())}) {
    FailureOr<RankedTensorType> type = getRankedType(value, loc, what);
    if (failed(type))
      return failure();
    if (type->getRank() != 0 ||
        type->getElementType() != startType->getElementType())
      return emitOptionalError(loc, what, " must be a 0-D tensor of ",
                               startType->getElementType(), ", got ", *type);
  }
  FailureOr<std::optional<int64_t>> length = getRangeLength(
      adaptor.getStart(), adaptor.getLimit(), adaptor.getDelta(), loc);
  if (failed(length))
    return failure();
  inferred.push_back(RankedTensorType::get({length->value_or(kDynamic)},
                                           startType->getElementType()));
  return success();
}
