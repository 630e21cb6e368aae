//===- ShapeFolds.cpp - Folding of weft shape and data movement ops -------===//
//
// Folders and canonicalization patterns of the shape and data movement ops,
// which turn the shape arithmetic exporters emit into constants once shapes
// are static; their type inference is in ShapeOps.cpp.
//
//===----------------------------------------------------------------------===//

#include "weft/KnownShapeValues.h"
#include "weft/WeftOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <limits>

using namespace mlir;
using namespace mlir::weft;

/// Folds never build a non-splat constant with more elements than this, so
/// that large tensors are not copied into the IR.
static constexpr int64_t kFoldElementLimit = 1 << 16;

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
  if (!tensor || !tensor.hasStaticShape())
    return false;
  // Overflow-safe: not every result shape was checked as a whole.
  std::optional<int64_t> count = getNumElements(tensor.getShape());
  return count && *count <= kFoldElementLimit;
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

//===----------------------------------------------------------------------===//
// Helpers: lists given at run time
//===----------------------------------------------------------------------===//

/// True when OpTy's type inference accepts `operands` and `props` and gives
/// types that the results of `op` can keep. The folds that move a list
/// given at run time (axes, sizes, pads) into its attribute check the new
/// form with it, so that they never build an invalid op.
template <typename OpTy>
static bool acceptsForm(OpTy op, ValueRange operands,
                        const typename OpTy::Properties &props) {
  MLIRContext *context = op.getContext();
  typename OpTy::Adaptor adaptor(operands, DictionaryAttr::get(context), props);
  SmallVector<Type> types;
  return succeeded(
             OpTy::inferReturnTypes(context, std::nullopt, adaptor, types)) &&
         areCompatibleTensorTypes(types, op->getResultTypes());
}

/// The entries of a constant run-time axes operand normalized against
/// `rank` (and sorted when `sort` is set); nullopt when they are not known
/// or not valid axes.
static std::optional<SmallVector<int64_t>>
getNormalizedAxes(Attribute values, int64_t rank, bool sort) {
  std::optional<SmallVector<int64_t>> axes = getIntValues(values);
  if (!axes || axes->empty())
    return std::nullopt;
  FailureOr<SmallVector<int64_t>> normalized =
      normalizeAxes(*axes, rank, std::nullopt);
  if (failed(normalized))
    return std::nullopt;
  if (sort)
    llvm::sort(*normalized);
  return *normalized;
}

//===----------------------------------------------------------------------===//
// ReshapeOp
//===----------------------------------------------------------------------===//

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

OpFoldResult SqueezeOp::fold(FoldAdaptor adaptor) {
  auto inputType = cast<RankedTensorType>(getInput().getType());
  if (Value dynamicAxes = getDynamicAxes()) {
    // Constant axes, or as many dimensions that can be 1 as there are axes,
    // give the attribute form (in place).
    std::optional<SmallVector<int64_t>> axes;
    if (Attribute values = adaptor.getDynamicAxes()) {
      axes = getNormalizedAxes(values, inputType.getRank(), /*sort=*/true);
    } else {
      auto axesType = cast<RankedTensorType>(dynamicAxes.getType());
      SmallVector<int64_t> ones;
      for (auto [i, d] : llvm::enumerate(inputType.getShape()))
        if (d == 1 || ShapedType::isDynamic(d))
          ones.push_back(i);
      if (axesType.getRank() == 1 &&
          static_cast<int64_t>(ones.size()) == axesType.getDimSize(0))
        axes = std::move(ones);
    }
    if (!axes)
      return foldPureReshape(getInput(), adaptor.getInput(), getType(),
                             /*isIdentity=*/false);
    Properties props = getProperties();
    props.setAxes(DenseI64ArrayAttr::get(getContext(), *axes));
    if (!acceptsForm(*this, getInput(), props))
      return {};
    setAxes(*axes);
    getDynamicAxesMutable().clear();
    return getResult();
  }
  // squeeze(unsqueeze(x)) with the same axes is x.
  if (auto unsqueeze = getInput().getDefiningOp<UnsqueezeOp>();
      unsqueeze && !unsqueeze.getDynamicAxes()) {
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

OpFoldResult UnsqueezeOp::fold(FoldAdaptor adaptor) {
  if (Value dynamicAxes = getDynamicAxes()) {
    // Constant axes give the attribute form (in place).
    int64_t rank = getType().getRank();
    std::optional<SmallVector<int64_t>> axes =
        getNormalizedAxes(adaptor.getDynamicAxes(), rank, /*sort=*/true);
    if (!axes)
      return foldPureReshape(getInput(), adaptor.getInput(), getType(),
                             /*isIdentity=*/false);
    Properties props = getProperties();
    props.setAxes(DenseI64ArrayAttr::get(getContext(), *axes));
    if (!acceptsForm(*this, getInput(), props))
      return {};
    setAxes(*axes);
    getDynamicAxesMutable().clear();
    return getResult();
  }
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

LogicalResult SplitOp::fold(FoldAdaptor adaptor,
                            SmallVectorImpl<OpFoldResult> &results) {
  // Constant run-time sizes give the `sizes` form (in place: no results),
  // and so does a static dimension that leaves one choice: all of it for a
  // single piece, nothing for each piece of an empty one.
  if (getDynamicSizes()) {
    std::optional<SmallVector<int64_t>> sizes =
        getIntValues(adaptor.getDynamicSizes());
    auto inputType = cast<RankedTensorType>(getInput().getType());
    int64_t dim = getAxis() < static_cast<uint64_t>(inputType.getRank())
                      ? inputType.getDimSize(getAxis())
                      : ShapedType::kDynamic;
    if (!sizes &&
        (dim == 0 || (getNumResults() == 1 && !ShapedType::isDynamic(dim))))
      sizes.emplace(getNumResults(), dim);
    if (sizes) {
      Properties props = getProperties();
      props.setSizes(DenseI64ArrayAttr::get(getContext(), *sizes));
      if (acceptsForm(*this, getInput(), props)) {
        setSizes(*sizes);
        getDynamicSizesMutable().clear();
        return success();
      }
    }
  }
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

OpFoldResult SliceOp::fold(FoldAdaptor adaptor) {
  auto inputType = cast<RankedTensorType>(getInput().getType());
  if (getDynamicAxes()) {
    // Constant axes give the attribute form (in place), which the folds
    // below need.
    std::optional<SmallVector<int64_t>> axes = getNormalizedAxes(
        adaptor.getDynamicAxes(), inputType.getRank(), /*sort=*/false);
    if (!axes)
      return {};
    Properties props = getProperties();
    props.setAxes(DenseI64ArrayAttr::get(getContext(), *axes));
    if (!acceptsForm(*this, {getInput(), getStarts(), getEnds(), getSteps()},
                     props))
      return {};
    setAxes(*axes);
    getDynamicAxesMutable().clear();
    return getResult();
  }
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
    if (!shape || op.getDynamicAxes())
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

/// slice(weight) with unit steps -> a block of the stored weight: the bytes
/// are never copied at run time, and a package's weights file holds only
/// the block.
struct SliceOfWeight : public OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SliceOp op,
                                PatternRewriter &rewriter) const override {
    auto weight = op.getInput().getDefiningOp<WeightOp>();
    RankedTensorType type = op.getType();
    auto inputType = cast<RankedTensorType>(op.getInput().getType());
    // A permuted weight (codegen's) is sliced by a kernel.
    if (!weight || weight.getPerm() || op.getDynamicAxes() ||
        !type.hasStaticShape() ||
        !inputType.hasStaticShape())
      return failure();
    FailureOr<SliceParams> params =
        getSliceParams(op.getStarts(), op.getEnds(), op.getSteps(),
                       op.getAxes(), std::nullopt);
    if (failed(params))
      return failure();
    // The block of the stored tensor the input already is, then this slice
    // of it.
    SmallVector<int64_t> offsets(inputType.getRank(), 0);
    if (std::optional<ArrayRef<int64_t>> old = weight.getBlockOffsets())
      offsets.assign(old->begin(), old->end());
    SmallVector<int64_t> full(inputType.getShape());
    if (std::optional<ArrayRef<int64_t>> old = weight.getFullShape())
      full.assign(old->begin(), old->end());
    for (auto [i, axis] : llvm::enumerate(op.getAxes())) {
      int64_t start = params->starts[i], end = params->ends[i];
      if (params->steps[i] != 1 || ShapedType::isDynamic(start) ||
          ShapedType::isDynamic(end))
        return failure();
      SliceRange range =
          getSliceRange(inputType.getDimSize(axis), start, end, 1);
      if (range.count != type.getDimSize(axis))
        return failure();
      offsets[axis] += range.start;
    }
    auto block = WeightOp::create(
        rewriter, op.getLoc(), type, weight.getNameAttr(), weight.getFileAttr(),
        weight.getOffsetAttr(), weight.getSizeAttr(), weight.getChecksumAttr(),
        rewriter.getDenseI64ArrayAttr(offsets),
        rewriter.getDenseI64ArrayAttr(full), /*perm=*/nullptr);
    rewriter.replaceOp(op, block.getResult());
    return success();
  }
};
} // namespace

void SliceOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                          MLIRContext *context) {
  results.add<SliceOfShape, SliceOfWeight>(context);
}

//===----------------------------------------------------------------------===//
// GatherOp
//===----------------------------------------------------------------------===//

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

OpFoldResult PadOp::fold(FoldAdaptor adaptor) {
  if (getDynamicPads()) {
    // Constant pads give the attribute form (in place), which the folds
    // below need.
    std::optional<SmallVector<int64_t>> pads =
        getIntValues(adaptor.getDynamicPads());
    if (!pads)
      return {};
    Properties props = getProperties();
    props.setPads(DenseI64ArrayAttr::get(getContext(), *pads));
    SmallVector<Value> operands = {getInput()};
    if (getValue())
      operands.push_back(getValue());
    props.operandSegmentSizes = {1, static_cast<int32_t>(operands.size() - 1),
                                 0};
    if (!acceptsForm(*this, operands, props))
      return {};
    setPads(*pads);
    getDynamicPadsMutable().clear();
    return getResult();
  }
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

OpFoldResult ConstantOfShapeOp::fold(FoldAdaptor) {
  // A splat is one value however large the tensor: no element limit.
  if (!getType().hasStaticShape())
    return {};
  return DenseElementsAttr::get(getType(), Attribute(getValue()));
}

//===----------------------------------------------------------------------===//
// RangeOp
//===----------------------------------------------------------------------===//

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
