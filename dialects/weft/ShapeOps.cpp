//===- ShapeOps.cpp - Weft shape and data movement ops -------------------===//
//
// Type inference, folding and canonicalization of the ops that move data
// (reshape, transpose, concat, slice, gather, pad, ...) and of the ops that
// compute shapes (shape, size, range, constant_of_shape). The folders turn
// the shape arithmetic exporters emit into constants once shapes are static.
//
//===----------------------------------------------------------------------===//

#include "weft/WeftOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::weft;

/// Folds never build a non-splat constant with more elements than this, so
/// that large tensors are not copied into the IR.
static constexpr int64_t kFoldElementLimit = 1 << 16;

/// Longest integer tensor whose partly known values are tracked through
/// shape computations.
static constexpr int64_t kMaxTrackedValues = 64;

static constexpr int64_t kDynamic = ShapedType::kDynamic;

//===----------------------------------------------------------------------===//
// Helpers: element access
//===----------------------------------------------------------------------===//

namespace {
/// Reads the elements of a dense attribute by flat index, whatever their
/// element type (booleans are bit-packed, everything else is byte-aligned).
class ElementReader {
public:
  explicit ElementReader(DenseElementsAttr attr)
      : attr(attr), isBool(attr.getElementType().isInteger(1)),
        isSplat(attr.isSplat()) {
    if (!isBool) {
      byteWidth = attr.getElementType().getIntOrFloatBitWidth() / 8;
      raw = attr.getRawData();
    }
  }

  DenseElementsAttr getAttr() const { return attr; }

private:
  friend class ElementWriter;
  DenseElementsAttr attr;
  bool isBool;
  bool isSplat;
  unsigned byteWidth = 0;
  ArrayRef<char> raw;
};

/// Builds a dense attribute element by element.
class ElementWriter {
public:
  explicit ElementWriter(RankedTensorType type)
      : type(type), isBool(type.getElementType().isInteger(1)) {
    if (!isBool)
      byteWidth = type.getElementType().getIntOrFloatBitWidth() / 8;
  }

  /// Appends element `index` of `reader`.
  void append(const ElementReader &reader, int64_t index) {
    if (reader.isSplat)
      index = 0;
    if (isBool) {
      bools.push_back(reader.attr.getValues<bool>()[index]);
      return;
    }
    const char *begin = reader.raw.data() + index * byteWidth;
    bytes.append(begin, begin + byteWidth);
  }

  /// Appends the zero of the element type.
  void appendZero() {
    if (isBool) {
      bools.push_back(false);
      return;
    }
    bytes.append(byteWidth, 0);
  }

  DenseElementsAttr finish() {
    if (isBool)
      return DenseElementsAttr::get(type, ArrayRef<bool>(bools));
    return DenseElementsAttr::getFromRawBuffer(type, bytes);
  }

private:
  RankedTensorType type;
  bool isBool;
  unsigned byteWidth = 0;
  SmallVector<char> bytes;
  SmallVector<bool> bools;
};
} // namespace

/// The dense value of a folder's operand attribute, if any.
static DenseElementsAttr getDense(Attribute attr) {
  return dyn_cast_or_null<DenseElementsAttr>(attr);
}

/// True when a folder may build a constant of `type` that is not a splat.
static bool isFoldableType(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.hasStaticShape() &&
         tensor.getNumElements() <= kFoldElementLimit;
}

/// A splat of `attr`'s single value with type `type`, when `attr` is a splat
/// and `type` is static.
static DenseElementsAttr getSplatAs(DenseElementsAttr attr, Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!attr || !attr.isSplat() || !tensor || !tensor.hasStaticShape())
    return {};
  return DenseElementsAttr::get(tensor, attr.getSplatValue<Attribute>());
}

/// Row-major strides of a static shape.
static SmallVector<int64_t> getStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

/// Calls `fn(index)` for every multi-index of a static shape in row-major
/// order.
static void forEachIndex(ArrayRef<int64_t> shape,
                         llvm::function_ref<void(ArrayRef<int64_t>)> fn) {
  std::optional<int64_t> count = getNumElements(shape);
  if (!count || *count == 0)
    return;
  SmallVector<int64_t> index(shape.size(), 0);
  for (int64_t n = 0; n < *count; ++n) {
    fn(index);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
}

/// An integer tensor of `type` holding `values` (truncated to the element
/// width).
static DenseElementsAttr getIntAttr(RankedTensorType type,
                                    ArrayRef<int64_t> values) {
  unsigned width = type.getElementType().getIntOrFloatBitWidth();
  SmallVector<APInt> ints;
  for (int64_t v : values)
    ints.push_back(APInt(width, static_cast<uint64_t>(v), /*isSigned=*/true,
                         /*implicitTrunc=*/true));
  return DenseElementsAttr::get(type, ints);
}

/// A constant 1-D i64 tensor, for rewrite patterns.
static Value createI64Vector(PatternRewriter &rewriter, Location loc,
                             ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get({static_cast<int64_t>(values.size())},
                                    rewriter.getI64Type());
  return ConstantOp::create(rewriter, loc, getIntAttr(type, values));
}

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

//===----------------------------------------------------------------------===//
// Helpers: values of shape computations
//===----------------------------------------------------------------------===//

/// The values of a small static integer tensor as far as they are known at
/// compile time (kDynamic where not), looking through the shape arithmetic
/// exporters emit: weft.shape of partly static tensors, concat, gather,
/// slice and reshapes of such values. Nullopt when `value` is not a static
/// integer tensor of at most kMaxTrackedValues elements.
static std::optional<SmallVector<int64_t>> getKnownIntValues(Value value,
                                                             int depth = 0) {
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
        getKnownIntValues(operand, depth + 1);
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
          getKnownIntValues(input, depth + 1);
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
        getKnownIntValues(gather.getInput(), depth + 1);
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

/// The entries of a 1-D shape operand of static length, kDynamic where not
/// known at compile time.
static SmallVector<int64_t> getKnownShapeEntries(Value shape) {
  auto type = cast<RankedTensorType>(shape.getType());
  if (std::optional<SmallVector<int64_t>> values = getKnownIntValues(shape))
    return *values;
  return SmallVector<int64_t>(type.getDimSize(0), kDynamic);
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
  if (failed(shape))
    return failure();
  inferred.push_back(
      RankedTensorType::get(*shape, inputType->getElementType()));
  return success();
}

/// True when a reshape to `entries` keeps every dimension of `input` (same
/// rank, each entry a copy, the same static size, or the single -1).
static bool isIdentityReshape(ArrayRef<int64_t> input,
                              ArrayRef<int64_t> entries, bool allowzero) {
  if (input.size() != entries.size())
    return false;
  int numInferred = 0;
  for (auto [d, v] : llvm::zip(input, entries)) {
    if (v == -1) {
      ++numInferred;
      continue;
    }
    if ((v == 0 && !allowzero) ||
        (!ShapedType::isDynamic(d) && v == d && !ShapedType::isDynamic(v)))
      continue;
    return false;
  }
  return numInferred <= 1;
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  auto inputType = cast<RankedTensorType>(getInput().getType());
  if (inputType == getType() &&
      (inputType.hasStaticShape() ||
       isIdentityReshape(inputType.getShape(), getKnownShapeEntries(getShape()),
                         getAllowzero())))
    return getInput();
  DenseElementsAttr input = getDense(adaptor.getInput());
  if (DenseElementsAttr splat = getSplatAs(input, getType()))
    return splat;
  if (input && isFoldableType(getType()))
    return input.reshape(getType());
  return {};
}

/// The op is one of the reshapes that only change the shape (reshape,
/// flatten, squeeze, unsqueeze).
static bool isPureReshape(Operation *op) {
  return op && isa<ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp>(op);
}

namespace {
/// reshape(reshape(x)) -> reshape(x) when the outer shape does not copy
/// dimensions of the intermediate value (or the outer result is static).
struct ComposeReshapes : public OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    Operation *inner = op.getInput().getDefiningOp();
    if (!isPureReshape(inner))
      return failure();
    Value source = inner->getOperand(0);
    SmallVector<int64_t> entries = getKnownShapeEntries(op.getShape());
    bool copies = !op.getAllowzero() && llvm::any_of(entries, [](int64_t v) {
      return v == 0 || ShapedType::isDynamic(v);
    });
    if (!copies) {
      rewriter.replaceOpWithNewOp<ReshapeOp>(
          op, op.getType(), source, op.getShape(), op.getAllowzeroAttr());
      return success();
    }
    if (!op.getType().hasStaticShape())
      return failure();
    ArrayRef<int64_t> shape = op.getType().getShape();
    Value constShape = createI64Vector(rewriter, op.getLoc(), shape);
    bool zero = llvm::is_contained(shape, 0);
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), source, constShape,
                                           zero ? rewriter.getUnitAttr()
                                                : UnitAttr());
    return success();
  }
};

/// A reshape whose result is static gets that shape as a constant operand,
/// so the computation of the old shape operand becomes dead.
struct UseStaticReshapeShape : public OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getType().hasStaticShape())
      return failure();
    ArrayRef<int64_t> shape = op.getType().getShape();
    bool zero = llvm::is_contained(shape, 0);
    std::optional<SmallVector<int64_t>> current =
        getConstantIntValues(op.getShape());
    if (current && ArrayRef<int64_t>(*current) == shape &&
        op.getAllowzero() == zero)
      return failure();
    Value constShape = createI64Vector(rewriter, op.getLoc(), shape);
    rewriter.replaceOpWithNewOp<ReshapeOp>(
        op, op.getType(), op.getInput(), constShape,
        zero ? rewriter.getUnitAttr() : UnitAttr());
    return success();
  }
};

/// A flatten, squeeze or unsqueeze with a static result becomes a reshape
/// to a constant shape, so that later passes see a single reshape op.
template <typename OpTy>
struct StaticReshapeToReshape : public OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    if (!type.hasStaticShape())
      return failure();
    Value constShape = createI64Vector(rewriter, op.getLoc(), type.getShape());
    bool zero = llvm::is_contained(type.getShape(), 0);
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, type, op.getInput(), constShape,
                                           zero ? rewriter.getUnitAttr()
                                                : UnitAttr());
    return success();
  }
};
} // namespace

void ReshapeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                            MLIRContext *context) {
  results.add<ComposeReshapes, UseStaticReshapeShape>(context);
}

/// Shared fold of flatten, squeeze and unsqueeze: identity, or a reshaped
/// constant.
static OpFoldResult foldPureReshape(Value input, Attribute inputAttr,
                                    RankedTensorType type, bool isIdentity) {
  if (input.getType() == type && (type.hasStaticShape() || isIdentity))
    return input;
  DenseElementsAttr dense = getDense(inputAttr);
  if (DenseElementsAttr splat = getSplatAs(dense, type))
    return splat;
  if (dense && isFoldableType(type))
    return dense.reshape(type);
  return {};
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

OpFoldResult FlattenOp::fold(FoldAdaptor adaptor) {
  auto inputType = cast<RankedTensorType>(getInput().getType());
  return foldPureReshape(getInput(), adaptor.getInput(), getType(),
                         inputType.getRank() == 2 && getAxis() == 1);
}

void FlattenOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                            MLIRContext *context) {
  results.add<StaticReshapeToReshape<FlattenOp>>(context);
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
  for (int64_t axis : adaptor.getAxes())
    if (axis < 0 || axis >= rank)
      return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                               rank, " (expected [0, ", rank, "))");
  if (failed(normalizeAxes(adaptor.getAxes(), rank, loc)))
    return failure();
  SmallVector<int64_t> shape;
  for (auto [i, d] : llvm::enumerate(inputType->getShape())) {
    if (!llvm::is_contained(adaptor.getAxes(), static_cast<int64_t>(i))) {
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

OpFoldResult SqueezeOp::fold(FoldAdaptor adaptor) {
  // squeeze(unsqueeze(x)) with the same axes is x.
  if (auto unsqueeze = getInput().getDefiningOp<UnsqueezeOp>()) {
    SmallVector<int64_t> a(getAxes()), b(unsqueeze.getAxes());
    llvm::sort(a);
    llvm::sort(b);
    if (a == b && unsqueeze.getInput().getType() == getType())
      return unsqueeze.getInput();
  }
  return foldPureReshape(getInput(), adaptor.getInput(), getType(),
                         getAxes().empty());
}

void SqueezeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                            MLIRContext *context) {
  results.add<StaticReshapeToReshape<SqueezeOp>>(context);
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
  int64_t rank = inputType->getRank() + adaptor.getAxes().size();
  for (int64_t axis : adaptor.getAxes())
    if (axis < 0 || axis >= rank)
      return emitOptionalError(loc, "axis ", axis,
                               " is out of range for result rank ", rank,
                               " (expected [0, ", rank, "))");
  if (failed(normalizeAxes(adaptor.getAxes(), rank, loc)))
    return failure();
  SmallVector<int64_t> shape;
  ArrayRef<int64_t> inShape = inputType->getShape();
  for (int64_t i = 0; i < rank; ++i) {
    if (llvm::is_contained(adaptor.getAxes(), i)) {
      shape.push_back(1);
      continue;
    }
    shape.push_back(inShape.front());
    inShape = inShape.drop_front();
  }
  inferred.push_back(RankedTensorType::get(shape, inputType->getElementType()));
  return success();
}

OpFoldResult UnsqueezeOp::fold(FoldAdaptor adaptor) {
  return foldPureReshape(getInput(), adaptor.getInput(), getType(),
                         getAxes().empty());
}

void UnsqueezeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<StaticReshapeToReshape<UnsqueezeOp>>(context);
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

OpFoldResult TransposeOp::fold(FoldAdaptor adaptor) {
  ArrayRef<int64_t> perm = getPerm();
  bool identity = llvm::all_of(llvm::enumerate(perm), [](auto pair) {
    return static_cast<int64_t>(pair.index()) == pair.value();
  });
  if (identity && getInput().getType() == getType())
    return getInput();
  DenseElementsAttr input = getDense(adaptor.getInput());
  if (DenseElementsAttr splat = getSplatAs(input, getType()))
    return splat;
  if (!input || !isFoldableType(getType()))
    return {};
  RankedTensorType type = getType();
  SmallVector<int64_t> inStrides =
      getStrides(cast<RankedTensorType>(input.getType()).getShape());
  ElementReader reader(input);
  ElementWriter writer(type);
  forEachIndex(type.getShape(), [&](ArrayRef<int64_t> index) {
    int64_t flat = 0;
    for (auto [i, p] : llvm::enumerate(perm))
      flat += index[i] * inStrides[p];
    writer.append(reader, flat);
  });
  return writer.finish();
}

namespace {
/// transpose(transpose(x)) -> transpose(x) with the composed permutation.
struct ComposeTransposes : public OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<TransposeOp>();
    if (!inner)
      return failure();
    SmallVector<int64_t> perm;
    for (int64_t p : op.getPerm())
      perm.push_back(inner.getPerm()[p]);
    rewriter.replaceOpWithNewOp<TransposeOp>(op, op.getType(), inner.getInput(),
                                             perm);
    return success();
  }
};
} // namespace

void TransposeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<ComposeTransposes>(context);
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

OpFoldResult ConcatOp::fold(FoldAdaptor adaptor) {
  if (getInputs().size() == 1 && getInputs()[0].getType() == getType())
    return getInputs()[0];
  RankedTensorType type = getType();
  if (!isFoldableType(type))
    return {};
  SmallVector<ElementReader> readers;
  for (Attribute attr : adaptor.getInputs()) {
    DenseElementsAttr dense = getDense(attr);
    if (!dense)
      return {};
    readers.emplace_back(dense);
  }
  int64_t axis = getAxis();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= type.getDimSize(d);
  for (int64_t d = axis + 1; d < type.getRank(); ++d)
    inner *= type.getDimSize(d);
  ElementWriter writer(type);
  for (int64_t o = 0; o < outer; ++o) {
    for (const ElementReader &reader : readers) {
      int64_t chunk =
          cast<RankedTensorType>(reader.getAttr().getType()).getDimSize(axis) *
          inner;
      for (int64_t i = 0; i < chunk; ++i)
        writer.append(reader, o * chunk + i);
    }
  }
  return writer.finish();
}

namespace {
/// Drops inputs that are empty along the axis.
struct DropEmptyConcatInputs : public OpRewritePattern<ConcatOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConcatOp op,
                                PatternRewriter &rewriter) const override {
    SmallVector<Value> kept;
    for (Value input : op.getInputs())
      if (cast<RankedTensorType>(input.getType()).getDimSize(op.getAxis()) != 0)
        kept.push_back(input);
    if (kept.size() == op.getInputs().size() || kept.empty())
      return failure();
    rewriter.replaceOpWithNewOp<ConcatOp>(op, op.getType(), kept, op.getAxis());
    return success();
  }
};
} // namespace

void ConcatOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                           MLIRContext *context) {
  results.add<DropEmptyConcatInputs>(context);
}

//===----------------------------------------------------------------------===//
// SplitOp
//===----------------------------------------------------------------------===//

/// The piece sizes of a split of a dimension of size `dim` (kDynamic when
/// not known).
static FailureOr<SmallVector<int64_t>>
getSplitSizes(int64_t dim, std::optional<ArrayRef<int64_t>> sizes,
              std::optional<int64_t> numOutputs, std::optional<Location> loc) {
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
  FailureOr<SmallVector<int64_t>> pieces =
      getSplitSizes(inputType->getDimSize(axis), sizes, numOutputs, loc);
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

LogicalResult SplitOp::fold(FoldAdaptor adaptor,
                            SmallVectorImpl<OpFoldResult> &results) {
  if (getNumResults() == 1 && getInput().getType() == getResult(0).getType()) {
    results.push_back(getInput());
    return success();
  }
  DenseElementsAttr input = getDense(adaptor.getInput());
  if (!input)
    return failure();
  auto inputType = cast<RankedTensorType>(input.getType());
  int64_t axis = getAxis();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= inputType.getDimSize(d);
  for (int64_t d = axis + 1; d < inputType.getRank(); ++d)
    inner *= inputType.getDimSize(d);
  int64_t dim = inputType.getDimSize(axis);
  ElementReader reader(input);
  SmallVector<OpFoldResult> folded;
  int64_t offset = 0;
  for (Value result : getResults()) {
    auto type = cast<RankedTensorType>(result.getType());
    if (DenseElementsAttr splat = getSplatAs(input, type)) {
      folded.push_back(splat);
      offset += type.getDimSize(axis);
      continue;
    }
    if (!isFoldableType(type))
      return failure();
    int64_t size = type.getDimSize(axis);
    ElementWriter writer(type);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < size * inner; ++i)
        writer.append(reader, (o * dim + offset) * inner + i);
    offset += size;
    folded.push_back(writer.finish());
  }
  results.append(folded);
  return success();
}

namespace {
/// An even split of a static dimension gets explicit sizes.
struct ExplicitSplitSizes : public OpRewritePattern<SplitOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SplitOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getNumOutputs())
      return failure();
    auto inputType = cast<RankedTensorType>(op.getInput().getType());
    int64_t dim = inputType.getDimSize(op.getAxis());
    if (ShapedType::isDynamic(dim))
      return failure();
    FailureOr<SmallVector<int64_t>> sizes =
        getSplitSizes(dim, std::nullopt, op.getNumOutputs(), std::nullopt);
    if (failed(sizes))
      return failure();
    rewriter.replaceOpWithNewOp<SplitOp>(
        op, op.getResultTypes(), op.getInput(), op.getAxis(),
        rewriter.getDenseI64ArrayAttr(*sizes), IntegerAttr());
    return success();
  }
};
} // namespace

void SplitOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                          MLIRContext *context) {
  results.add<ExplicitSplitSizes>(context);
}

//===----------------------------------------------------------------------===//
// SliceOp
//===----------------------------------------------------------------------===//

namespace {
/// The elements one axis of a slice takes: `count` of them from `start` in
/// steps of `step`.
struct SliceRange {
  int64_t start, count, step;
};
} // namespace

/// ONNX's clamping of a slice of a dimension of static size `dim`.
static SliceRange getSliceRange(int64_t dim, int64_t start, int64_t end,
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

namespace {
/// The known parameters of a slice, one entry per axis (kDynamic when not
/// known at compile time).
struct SliceParams {
  SmallVector<int64_t> starts, ends, steps;
};
} // namespace

static FailureOr<SliceParams> getSliceParams(Value starts, Value ends,
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
  ArrayRef<int64_t> axes = adaptor.getAxes();
  int64_t rank = inputType->getRank();
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

OpFoldResult SliceOp::fold(FoldAdaptor adaptor) {
  auto inputType = cast<RankedTensorType>(getInput().getType());
  FailureOr<SliceParams> params = getSliceParams(
      getStarts(), getEnds(), getSteps(), getAxes(), std::nullopt);
  if (failed(params))
    return {};
  // Identity: every sliced axis takes all of its elements in order.
  bool identity = true;
  for (auto [i, axis] : llvm::enumerate(getAxes())) {
    int64_t dim = inputType.getDimSize(axis);
    int64_t start = params->starts[i], end = params->ends[i],
            step = params->steps[i];
    bool whole = step == 1 && start == 0 &&
                 (end == std::numeric_limits<int64_t>::max() ||
                  (!ShapedType::isDynamic(dim) && !ShapedType::isDynamic(end) &&
                   end >= dim));
    identity &= whole;
  }
  if (identity && inputType == getType())
    return getInput();

  DenseElementsAttr input = getDense(adaptor.getInput());
  RankedTensorType type = getType();
  if (!input || !type.hasStaticShape())
    return {};
  if (DenseElementsAttr splat = getSplatAs(input, type))
    return splat;
  if (!isFoldableType(type))
    return {};
  // Per input dimension: first element and step.
  SmallVector<int64_t> starts(inputType.getRank(), 0),
      steps(inputType.getRank(), 1);
  for (auto [i, axis] : llvm::enumerate(getAxes())) {
    if (ShapedType::isDynamic(params->starts[i]) ||
        ShapedType::isDynamic(params->ends[i]) ||
        ShapedType::isDynamic(params->steps[i]))
      return {};
    SliceRange range =
        getSliceRange(inputType.getDimSize(axis), params->starts[i],
                      params->ends[i], params->steps[i]);
    starts[axis] = range.start;
    steps[axis] = range.step;
  }
  SmallVector<int64_t> strides = getStrides(inputType.getShape());
  ElementReader reader(input);
  ElementWriter writer(type);
  forEachIndex(type.getShape(), [&](ArrayRef<int64_t> index) {
    int64_t flat = 0;
    for (auto [d, i] : llvm::enumerate(index))
      flat += (starts[d] + i * steps[d]) * strides[d];
    writer.append(reader, flat);
  });
  return writer.finish();
}

namespace {
/// slice(shape(x)) with step 1 -> shape(x) of the sliced dimensions, which
/// then folds when those are static.
struct SliceOfShape : public OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SliceOp op,
                                PatternRewriter &rewriter) const override {
    auto shape = op.getInput().getDefiningOp<ShapeOp>();
    if (!shape)
      return failure();
    FailureOr<SliceParams> params =
        getSliceParams(op.getStarts(), op.getEnds(), op.getSteps(),
                       op.getAxes(), std::nullopt);
    if (failed(params) || params->steps.size() != 1 || params->steps[0] != 1 ||
        ShapedType::isDynamic(params->starts[0]) ||
        ShapedType::isDynamic(params->ends[0]))
      return failure();
    int64_t rank = cast<RankedTensorType>(shape.getInput().getType()).getRank();
    int64_t length =
        std::max<int64_t>(shape.getEnd().value_or(rank) - shape.getStart(), 0);
    SliceRange range =
        getSliceRange(length, params->starts[0], params->ends[0], 1);
    int64_t start = shape.getStart() + range.start;
    auto type = RankedTensorType::get({range.count}, rewriter.getI64Type());
    if (!areCompatibleTensorTypes(type, op.getType()))
      return failure();
    Value sliced =
        ShapeOp::create(rewriter, op.getLoc(), op.getType(), shape.getInput(),
                        start, rewriter.getI64IntegerAttr(start + range.count));
    rewriter.replaceOp(op, sliced);
    return success();
  }
};
} // namespace

void SliceOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                          MLIRContext *context) {
  results.add<SliceOfShape>(context);
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

OpFoldResult GatherOp::fold(FoldAdaptor adaptor) {
  RankedTensorType type = getType();
  if (!isFoldableType(type))
    return {};
  std::optional<SmallVector<int64_t>> indices =
      getConstantIntValues(getIndices());
  if (!indices)
    return {};
  auto inputType = cast<RankedTensorType>(getInput().getType());
  int64_t axis = getAxis();
  int64_t dim = inputType.getDimSize(axis);
  if (ShapedType::isDynamic(dim))
    return {};
  SmallVector<int64_t> wrapped;
  for (int64_t index : *indices) {
    if (index < -dim || index >= dim)
      return {};
    wrapped.push_back(index < 0 ? index + dim : index);
  }
  // Picking known entries of a shape vector (weft.shape of a partly static
  // tensor, or a concat of such pieces).
  if (inputType.getRank() == 1 && isa<IntegerType>(type.getElementType())) {
    if (std::optional<SmallVector<int64_t>> values =
            getKnownIntValues(getInput())) {
      SmallVector<int64_t> picked;
      for (int64_t index : wrapped)
        picked.push_back((*values)[index]);
      if (llvm::none_of(picked, ShapedType::isDynamic))
        return getIntAttr(type, picked);
    }
  }
  DenseElementsAttr input = getDense(adaptor.getInput());
  if (!input)
    return {};
  if (DenseElementsAttr splat = getSplatAs(input, type))
    return splat;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= inputType.getDimSize(d);
  for (int64_t d = axis + 1; d < inputType.getRank(); ++d)
    inner *= inputType.getDimSize(d);
  ElementReader reader(input);
  ElementWriter writer(type);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t index : wrapped)
      for (int64_t i = 0; i < inner; ++i)
        writer.append(reader, (o * dim + index) * inner + i);
  return writer.finish();
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

OpFoldResult GatherElementsOp::fold(FoldAdaptor adaptor) {
  DenseElementsAttr input = getDense(adaptor.getInput());
  std::optional<SmallVector<int64_t>> indices =
      getIntValues(adaptor.getIndices());
  RankedTensorType type = getType();
  if (!input || !indices || !isFoldableType(type))
    return {};
  auto inputType = cast<RankedTensorType>(input.getType());
  int64_t axis = getAxis();
  int64_t dim = inputType.getDimSize(axis);
  SmallVector<int64_t> strides = getStrides(inputType.getShape());
  ElementReader reader(input);
  ElementWriter writer(type);
  int64_t n = 0;
  bool valid = true;
  forEachIndex(type.getShape(), [&](ArrayRef<int64_t> index) {
    int64_t at = (*indices)[n++];
    if (at < -dim || at >= dim) {
      valid = false;
      return;
    }
    int64_t flat = 0;
    for (auto [d, i] : llvm::enumerate(index))
      flat += (static_cast<int64_t>(d) == axis ? (at < 0 ? at + dim : at) : i) *
              strides[d];
    writer.append(reader, flat);
  });
  if (!valid)
    return {};
  return writer.finish();
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
  if (failed(shape))
    return failure();
  inferred.push_back(
      RankedTensorType::get(*shape, inputType->getElementType()));
  return success();
}

OpFoldResult ExpandOp::fold(FoldAdaptor adaptor) {
  auto inputType = cast<RankedTensorType>(getInput().getType());
  RankedTensorType type = getType();
  if (inputType == type) {
    SmallVector<int64_t> entries = getKnownShapeEntries(getShape());
    if (type.hasStaticShape() ||
        (entries.size() <= static_cast<size_t>(type.getRank()) &&
         llvm::all_of(entries, [](int64_t v) { return v == 1; })))
      return getInput();
  }
  DenseElementsAttr input = getDense(adaptor.getInput());
  if (DenseElementsAttr splat = getSplatAs(input, type))
    return splat;
  if (!input || !isFoldableType(type))
    return {};
  ArrayRef<int64_t> in = inputType.getShape();
  int64_t offset = type.getRank() - inputType.getRank();
  SmallVector<int64_t> strides = getStrides(in);
  ElementReader reader(input);
  ElementWriter writer(type);
  forEachIndex(type.getShape(), [&](ArrayRef<int64_t> index) {
    int64_t flat = 0;
    for (int64_t d = 0; d < inputType.getRank(); ++d)
      flat += (in[d] == 1 ? 0 : index[d + offset]) * strides[d];
    writer.append(reader, flat);
  });
  return writer.finish();
}

namespace {
/// An expand whose result is static gets that shape as a constant operand.
struct UseStaticExpandShape : public OpRewritePattern<ExpandOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ExpandOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getType().hasStaticShape() ||
        matchPattern(op.getShape(), m_Constant()))
      return failure();
    Value constShape =
        createI64Vector(rewriter, op.getLoc(), op.getType().getShape());
    rewriter.replaceOpWithNewOp<ExpandOp>(op, op.getType(), op.getInput(),
                                          constShape);
    return success();
  }
};
} // namespace

void ExpandOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                           MLIRContext *context) {
  results.add<UseStaticExpandShape>(context);
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
  ArrayRef<int64_t> pads = adaptor.getPads();
  if (static_cast<int64_t>(pads.size()) != 2 * rank)
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
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t dim = inputType->getDimSize(d);
    int64_t before = pads[d], after = pads[rank + d];
    if (ShapedType::isDynamic(dim)) {
      shape.push_back(before == 0 && after == 0 ? dim : kDynamic);
      continue;
    }
    int64_t size = dim + before + after;
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
  inferred.push_back(RankedTensorType::get(shape, inputType->getElementType()));
  return success();
}

OpFoldResult PadOp::fold(FoldAdaptor adaptor) {
  if (llvm::all_of(getPads(), [](int64_t p) { return p == 0; }) &&
      getInput().getType() == getType())
    return getInput();
  DenseElementsAttr input = getDense(adaptor.getInput());
  RankedTensorType type = getType();
  if (!input || !isFoldableType(type))
    return {};
  DenseElementsAttr value;
  if (getValue()) {
    value = getDense(adaptor.getValue());
    if (!value)
      return {};
  }
  auto inputType = cast<RankedTensorType>(input.getType());
  int64_t rank = inputType.getRank();
  ArrayRef<int64_t> pads = getPads();
  SmallVector<int64_t> strides = getStrides(inputType.getShape());
  ElementReader reader(input);
  std::optional<ElementReader> fill;
  if (value)
    fill.emplace(value);
  ElementWriter writer(type);
  PadMode mode = getMode();
  forEachIndex(type.getShape(), [&](ArrayRef<int64_t> index) {
    int64_t flat = 0;
    bool outside = false;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t dim = inputType.getDimSize(d);
      int64_t s = index[d] - pads[d];
      if (s < 0 || s >= dim) {
        switch (mode) {
        case PadMode::constant:
          outside = true;
          break;
        case PadMode::reflect:
          s = s < 0 ? -s : 2 * (dim - 1) - s;
          break;
        case PadMode::edge:
          s = std::clamp<int64_t>(s, 0, dim - 1);
          break;
        case PadMode::wrap:
          s = ((s % dim) + dim) % dim;
          break;
        }
      }
      flat += s * strides[d];
    }
    if (!outside)
      writer.append(reader, flat);
    else if (fill)
      writer.append(*fill, 0);
    else
      writer.appendZero();
  });
  return writer.finish();
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
    else
      shape.push_back(d * r);
  }
  inferred.push_back(RankedTensorType::get(shape, inputType->getElementType()));
  return success();
}

OpFoldResult TileOp::fold(FoldAdaptor adaptor) {
  SmallVector<int64_t> repeats = getKnownShapeEntries(getRepeats());
  if (llvm::all_of(repeats, [](int64_t r) { return r == 1; }) &&
      getInput().getType() == getType())
    return getInput();
  DenseElementsAttr input = getDense(adaptor.getInput());
  RankedTensorType type = getType();
  if (DenseElementsAttr splat = getSplatAs(input, type))
    return splat;
  if (!input || !isFoldableType(type))
    return {};
  auto inputType = cast<RankedTensorType>(input.getType());
  ArrayRef<int64_t> in = inputType.getShape();
  SmallVector<int64_t> strides = getStrides(in);
  ElementReader reader(input);
  ElementWriter writer(type);
  forEachIndex(type.getShape(), [&](ArrayRef<int64_t> index) {
    int64_t flat = 0;
    for (auto [d, i] : llvm::enumerate(index))
      flat += (i % in[d]) * strides[d];
    writer.append(reader, flat);
  });
  return writer.finish();
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

OpFoldResult TriluOp::fold(FoldAdaptor adaptor) {
  auto inputType = cast<RankedTensorType>(getInput().getType());
  int64_t rank = inputType.getRank();
  int64_t rows = inputType.getDimSize(rank - 2);
  int64_t cols = inputType.getDimSize(rank - 1);
  std::optional<SmallVector<int64_t>> kValues = getIntValues(adaptor.getK());
  if (!kValues)
    return {};
  int64_t k = kValues->front();
  // Keeps element (i, j) when j - i >= k (upper) or j - i <= k (lower).
  auto keep = [&](int64_t i, int64_t j) {
    return getUpper() ? j - i >= k : j - i <= k;
  };
  if (!ShapedType::isDynamic(rows) && !ShapedType::isDynamic(cols) &&
      getInput().getType() == getType() &&
      (rows == 0 || cols == 0 ||
       (getUpper() ? keep(rows - 1, 0) : keep(0, cols - 1))))
    return getInput();
  DenseElementsAttr input = getDense(adaptor.getInput());
  RankedTensorType type = getType();
  if (!input || !isFoldableType(type))
    return {};
  ElementReader reader(input);
  ElementWriter writer(type);
  int64_t n = 0;
  forEachIndex(type.getShape(), [&](ArrayRef<int64_t> index) {
    if (keep(index[rank - 2], index[rank - 1]))
      writer.append(reader, n);
    else
      writer.appendZero();
    ++n;
  });
  return writer.finish();
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

OpFoldResult ShapeOp::fold(FoldAdaptor) {
  // A result type made less static than inferred is refined first.
  if (!getType().hasStaticShape())
    return {};
  auto inputType = cast<RankedTensorType>(getInput().getType());
  ArrayRef<int64_t> dims =
      inputType.getShape().slice(getStart(), getType().getDimSize(0));
  if (llvm::any_of(dims, ShapedType::isDynamic))
    return {};
  return getIntAttr(getType(), dims);
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

OpFoldResult SizeOp::fold(FoldAdaptor) {
  std::optional<int64_t> count =
      getNumElements(cast<RankedTensorType>(getInput().getType()).getShape());
  if (!count)
    return {};
  return getIntAttr(getType(), {*count});
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
  inferred.push_back(RankedTensorType::get(shape, elementType));
  return success();
}

OpFoldResult ConstantOfShapeOp::fold(FoldAdaptor) {
  // A splat is one value however large the tensor: no element limit.
  if (!getType().hasStaticShape())
    return {};
  return DenseElementsAttr::get(getType(), Attribute(getValue()));
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
    if (n > static_cast<double>(std::numeric_limits<int32_t>::max()))
      return emitOptionalError(loc, "range of ", n, " elements is too long");
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

OpFoldResult RangeOp::fold(FoldAdaptor adaptor) {
  DenseElementsAttr start = getDense(adaptor.getStart());
  DenseElementsAttr delta = getDense(adaptor.getDelta());
  RankedTensorType type = getType();
  if (!start || !delta || !getDense(adaptor.getLimit()) ||
      !isFoldableType(type))
    return {};
  int64_t n = type.getDimSize(0);
  Type elementType = type.getElementType();
  if (auto floatType = dyn_cast<FloatType>(elementType)) {
    double s = start.getSplatValue<APFloat>().convertToDouble();
    double d = delta.getSplatValue<APFloat>().convertToDouble();
    SmallVector<APFloat> values;
    for (int64_t i = 0; i < n; ++i) {
      APFloat v(s + static_cast<double>(i) * d);
      bool losesInfo;
      v.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                &losesInfo);
      values.push_back(v);
    }
    return DenseElementsAttr::get(type, values);
  }
  APInt s = start.getSplatValue<APInt>();
  APInt d = delta.getSplatValue<APInt>();
  SmallVector<APInt> values;
  for (int64_t i = 0; i < n; ++i) {
    values.push_back(s);
    s += d;
  }
  return DenseElementsAttr::get(type, values);
}
