//===- ReduceOps.cpp - Weft reductions, arg-reductions, softmax -----------===//
//
// Type inference, verification and folding of weft.reduce, weft.arg_reduce
// and weft.softmax.
//
//===----------------------------------------------------------------------===//

#include "weft/WeftOps.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/APInt.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::weft;

/// Largest input a folder reads, so that folding never copies weights.
static constexpr int64_t kMaxFoldElements = 1 << 16;

/// Formats a list of integers as "[a, b, c]" for diagnostics.
static std::string formatList(ArrayRef<int64_t> values) {
  std::string out = "[";
  llvm::raw_string_ostream os(out);
  llvm::interleaveComma(values, os);
  os << "]";
  return out;
}

//===----------------------------------------------------------------------===//
// ReduceOp
//===----------------------------------------------------------------------===//

/// True for the kinds whose reduction of a single element is that element.
static bool isIdentityOnSingletons(ReduceKind kind) {
  switch (kind) {
  case ReduceKind::sum:
  case ReduceKind::mean:
  case ReduceKind::max:
  case ReduceKind::min:
  case ReduceKind::prod:
  case ReduceKind::log_sum_exp:
    return true;
  case ReduceKind::l1:
  case ReduceKind::l2:
  case ReduceKind::sum_square:
  case ReduceKind::log_sum:
    return false;
  }
  llvm_unreachable("unknown reduce kind");
}

/// The static length n of a run-time axes operand, which must be 1-D with
/// 1 <= n <= `maxLength`.
static FailureOr<int64_t> getDynamicAxesCount(Value axes, int64_t maxLength,
                                              std::optional<Location> loc) {
  auto type = dyn_cast<RankedTensorType>(axes.getType());
  if (!type || type.getRank() != 1 || type.isDynamicDim(0))
    return emitOptionalError(
        loc, "dynamic_axes must be 1-D with a static length, got ",
        axes.getType());
  int64_t count = type.getDimSize(0);
  if (count < 1 || count > maxLength)
    return emitOptionalError(loc, "dynamic_axes has ", count,
                             " entries, expected 1 to ", maxLength,
                             " (one per reduced dimension)");
  return count;
}

/// The axes a constant `dynamic_axes` operand holds, normalized and sorted
/// as the attribute form wants them; nullopt when they are not known at
/// compile time. Fails, with an error at `loc` when given, on invalid axes.
static FailureOr<std::optional<SmallVector<int64_t>>>
getConstantAxes(std::optional<SmallVector<int64_t>> values, int64_t rank,
                std::optional<Location> loc) {
  if (!values)
    return std::optional<SmallVector<int64_t>>();
  FailureOr<SmallVector<int64_t>> axes =
      normalizeAxes(*values, rank, loc, "dynamic_axes");
  if (failed(axes))
    return failure();
  llvm::sort(*axes);
  return std::optional<SmallVector<int64_t>>(std::move(*axes));
}

/// The result shape of a reduction over `count` axes of `shape` that are
/// known only at run time. With `keepdims` each dimension is either kept or
/// 1; without, result dimension j is one of input dimensions j .. j + count.
/// A dimension is static where every choice gives the same size.
static SmallVector<int64_t>
inferUnknownAxesShape(ArrayRef<int64_t> shape, int64_t count, bool keepdims) {
  int64_t rank = shape.size();
  SmallVector<int64_t> result;
  if (keepdims) {
    for (int64_t size : shape)
      result.push_back(size == 1 || count == rank ? 1 : ShapedType::kDynamic);
    return result;
  }
  for (int64_t j = 0; j < rank - count; ++j) {
    ArrayRef<int64_t> choices = shape.slice(j, count + 1);
    bool same = llvm::all_equal(choices) && !ShapedType::isDynamic(choices[0]);
    result.push_back(same ? choices[0] : ShapedType::kDynamic);
  }
  return result;
}

LogicalResult ReduceOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto type = cast<RankedTensorType>(adaptor.getInput().getType());
  int64_t rank = type.getRank();
  // Properties built by hand (not parsed) may lack the default `axes`.
  ArrayRef<int64_t> axes;
  if (DenseI64ArrayAttr axesAttr = adaptor.getAxesAttr())
    axes = axesAttr.asArrayRef();
  ReduceKind kind = adaptor.getKind();
  if (type.getElementType().isInteger(1) && kind != ReduceKind::max &&
      kind != ReduceKind::min)
    return emitOptionalError(loc, "reduction '", stringifyReduceKind(kind),
                             "' does not accept i1 elements (only max and "
                             "min do)");

  std::optional<SmallVector<int64_t>> constantAxes;
  if (Value dynamicAxes = adaptor.getDynamicAxes()) {
    if (!axes.empty())
      return emitOptionalError(loc, "axes ", formatList(axes),
                               " must be empty when dynamic_axes is given");
    FailureOr<int64_t> count = getDynamicAxesCount(dynamicAxes, rank, loc);
    if (failed(count))
      return failure();
    FailureOr<std::optional<SmallVector<int64_t>>> known =
        getConstantAxes(getConstantIntValues(dynamicAxes), rank, loc);
    if (failed(known))
      return failure();
    if (!*known) {
      inferred.push_back(RankedTensorType::get(
          inferUnknownAxesShape(type.getShape(), *count, adaptor.getKeepdims()),
          type.getElementType()));
      return success();
    }
    constantAxes = std::move(*known);
    axes = *constantAxes;
  }

  for (auto [i, axis] : llvm::enumerate(axes)) {
    if (axis < 0 || axis >= rank)
      return emitOptionalError(loc, "axis ", axis,
                               " is out of range for an input of rank ", rank,
                               " (expected [0, ", rank, "))");
    if (i > 0 && axes[i - 1] >= axis)
      return emitOptionalError(loc, "axes ", formatList(axes),
                               " must be strictly increasing");
  }

  SmallVector<int64_t> shape;
  for (auto [dim, size] : llvm::enumerate(type.getShape())) {
    if (!llvm::is_contained(axes, static_cast<int64_t>(dim)))
      shape.push_back(size);
    else if (adaptor.getKeepdims())
      shape.push_back(1);
  }
  inferred.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}

namespace {
/// Folds a reduction of a small constant tensor. Values are combined in
/// double (floats) or in the element type's own width with wrap-around
/// (integers) and the result is rounded once to the element type.
class ConstantReducer {
public:
  ConstantReducer(ReduceKind kind, DenseElementsAttr input,
                  ArrayRef<int64_t> axes, RankedTensorType resultType)
      : kind(kind), input(input), axes(axes), resultType(resultType) {}

  /// The folded result, or null when the kind and element type have no
  /// exact fold here.
  Attribute fold();

private:
  /// Output position of each input element (row-major), and the number of
  /// input elements that land on each output element.
  SmallVector<int64_t> mapToOutput(int64_t &groupSize) const;
  Attribute foldFloat();
  Attribute foldInt();

  ReduceKind kind;
  DenseElementsAttr input;
  ArrayRef<int64_t> axes;
  RankedTensorType resultType;
};
} // namespace

SmallVector<int64_t> ConstantReducer::mapToOutput(int64_t &groupSize) const {
  ArrayRef<int64_t> shape = input.getType().getShape();
  int64_t rank = shape.size();
  // Stride of each input dimension in the output (0 for reduced ones).
  SmallVector<int64_t> outStrides(rank, 0);
  int64_t stride = 1;
  groupSize = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    if (llvm::is_contained(axes, d)) {
      groupSize *= shape[d];
      continue;
    }
    outStrides[d] = stride;
    stride *= shape[d];
  }
  int64_t numElements = input.getNumElements();
  SmallVector<int64_t> map(numElements, 0);
  SmallVector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < numElements; ++i) {
    int64_t out = 0;
    for (int64_t d = 0; d < rank; ++d)
      out += index[d] * outStrides[d];
    map[i] = out;
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
  return map;
}

Attribute ConstantReducer::fold() {
  Type elementType = input.getElementType();
  if (isa<FloatType>(elementType))
    return foldFloat();
  if (isa<IntegerType>(elementType))
    return foldInt();
  return {};
}

Attribute ConstantReducer::foldFloat() {
  auto floatType = cast<FloatType>(input.getElementType());
  int64_t groupSize;
  SmallVector<int64_t> map = mapToOutput(groupSize);
  int64_t numOutputs = resultType.getNumElements();
  constexpr double inf = std::numeric_limits<double>::infinity();
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();

  SmallVector<double> values;
  values.reserve(input.getNumElements());
  for (APFloat v : input.getValues<APFloat>()) {
    bool losesInfo;
    v.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &losesInfo);
    values.push_back(v.convertToDouble());
  }

  // Start values are those of the empty set.
  double start = 0.0;
  if (kind == ReduceKind::prod)
    start = 1.0;
  else if (kind == ReduceKind::max || kind == ReduceKind::log_sum_exp)
    start = -inf;
  else if (kind == ReduceKind::min)
    start = inf;
  SmallVector<double> acc(numOutputs, start);

  // log_sum_exp subtracts each group's maximum first, as runtimes do.
  SmallVector<double> groupMax;
  if (kind == ReduceKind::log_sum_exp) {
    groupMax.assign(numOutputs, -inf);
    for (auto [i, v] : llvm::enumerate(values))
      groupMax[map[i]] = std::isnan(v) || std::isnan(groupMax[map[i]])
                             ? nan
                             : std::max(groupMax[map[i]], v);
    acc.assign(numOutputs, 0.0);
  }

  for (auto [i, v] : llvm::enumerate(values)) {
    double &a = acc[map[i]];
    switch (kind) {
    case ReduceKind::sum:
    case ReduceKind::mean:
    case ReduceKind::log_sum:
      a += v;
      break;
    case ReduceKind::prod:
      a *= v;
      break;
    case ReduceKind::max:
      a = std::isnan(v) || std::isnan(a) ? nan : std::max(a, v);
      break;
    case ReduceKind::min:
      a = std::isnan(v) || std::isnan(a) ? nan : std::min(a, v);
      break;
    case ReduceKind::l1:
      a += std::fabs(v);
      break;
    case ReduceKind::l2:
    case ReduceKind::sum_square:
      a += v * v;
      break;
    case ReduceKind::log_sum_exp: {
      double m = groupMax[map[i]];
      // All -inf: the result is -inf, not NaN from -inf - -inf.
      a += std::isinf(m) ? (v == m ? 1.0 : 0.0) : std::exp(v - m);
      break;
    }
    }
  }

  for (auto [o, a] : llvm::enumerate(acc)) {
    if (kind == ReduceKind::mean)
      a = groupSize == 0 ? nan : a / static_cast<double>(groupSize);
    else if (kind == ReduceKind::l2)
      a = std::sqrt(a);
    else if (kind == ReduceKind::log_sum)
      a = std::log(a);
    else if (kind == ReduceKind::log_sum_exp)
      a = groupSize == 0 ? -inf
                         : (std::isinf(groupMax[o]) && groupMax[o] > 0
                                ? groupMax[o]
                                : groupMax[o] + std::log(a));
  }

  SmallVector<APFloat> results;
  results.reserve(numOutputs);
  for (double a : acc) {
    APFloat v(a);
    bool losesInfo;
    v.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven,
              &losesInfo);
    results.push_back(v);
  }
  return DenseElementsAttr::get(resultType, results);
}

Attribute ConstantReducer::foldInt() {
  auto intType = cast<IntegerType>(input.getElementType());
  unsigned width = intType.getWidth();
  bool isUnsigned = intType.isUnsigned() || width == 1;
  // mean, l2 and the logarithms of integers round in ways runtimes differ
  // on.
  if (kind == ReduceKind::mean || kind == ReduceKind::l2 ||
      kind == ReduceKind::log_sum_exp || kind == ReduceKind::log_sum)
    return {};

  int64_t groupSize;
  SmallVector<int64_t> map = mapToOutput(groupSize);
  int64_t numOutputs = resultType.getNumElements();
  APInt start(width, 0);
  if (kind == ReduceKind::prod)
    start = APInt(width, 1);
  else if (kind == ReduceKind::max)
    start = isUnsigned ? APInt::getMinValue(width)
                       : APInt::getSignedMinValue(width);
  else if (kind == ReduceKind::min)
    start = isUnsigned ? APInt::getMaxValue(width)
                       : APInt::getSignedMaxValue(width);
  SmallVector<APInt> acc(numOutputs, start);

  for (auto [i, v] : llvm::enumerate(input.getValues<APInt>())) {
    APInt &a = acc[map[i]];
    switch (kind) {
    case ReduceKind::sum:
      a += v;
      break;
    case ReduceKind::prod:
      a *= v;
      break;
    case ReduceKind::max:
      if (isUnsigned ? v.ugt(a) : v.sgt(a))
        a = v;
      break;
    case ReduceKind::min:
      if (isUnsigned ? v.ult(a) : v.slt(a))
        a = v;
      break;
    case ReduceKind::l1:
      a += isUnsigned ? v : v.abs();
      break;
    case ReduceKind::sum_square:
      a += v * v;
      break;
    case ReduceKind::mean:
    case ReduceKind::l2:
    case ReduceKind::log_sum_exp:
    case ReduceKind::log_sum:
      llvm_unreachable("declined above");
    }
  }
  return DenseElementsAttr::get(resultType, acc);
}

OpFoldResult ReduceOp::fold(FoldAdaptor adaptor) {
  auto inputType = getInput().getType();
  // Run-time axes that turn out constant become the attribute form, in
  // place; the other folds need the axes.
  if (getDynamicAxes()) {
    FailureOr<std::optional<SmallVector<int64_t>>> axes =
        getConstantAxes(getIntValues(adaptor.getDynamicAxes()),
                        inputType.getRank(), std::nullopt);
    // An empty list would mean "no axes" in the attribute form; the
    // verifier reports it in the run-time form.
    if (failed(axes) || !*axes || (*axes)->empty())
      return {};
    setAxes(**axes);
    getDynamicAxesMutable().clear();
    return getResult();
  }
  // Folding may run before verification (createOrFold).
  if (!llvm::all_of(getAxes(), [&](int64_t axis) {
        return axis >= 0 && axis < inputType.getRank();
      }))
    return {};
  // A reduction whose every group holds one element.
  bool singletons = llvm::all_of(
      getAxes(), [&](int64_t axis) { return inputType.getDimSize(axis) == 1; });
  if (singletons && isIdentityOnSingletons(getKind()) &&
      (getAxes().empty() || getKeepdims()) && inputType == getType())
    return getInput();

  auto input = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput());
  RankedTensorType resultType = getType();
  if (!input || !resultType.hasStaticShape() ||
      input.getNumElements() > kMaxFoldElements)
    return {};
  if (input.isSplat() && input.getNumElements() > 1 &&
      isIdentityOnSingletons(getKind()) && getKind() != ReduceKind::sum &&
      getKind() != ReduceKind::prod && getKind() != ReduceKind::log_sum_exp)
    // max, min and mean of equal values: that value.
    return DenseElementsAttr::get(resultType, input.getSplatValue<Attribute>());
  return ConstantReducer(getKind(), input, getAxes(), resultType).fold();
}

//===----------------------------------------------------------------------===//
// ArgReduceOp
//===----------------------------------------------------------------------===//

LogicalResult ArgReduceOp::inferReturnTypes(MLIRContext *context,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto type = cast<RankedTensorType>(adaptor.getInput().getType());
  int64_t rank = type.getRank();
  auto axis = static_cast<int64_t>(adaptor.getAxis());
  if (rank == 0)
    return emitOptionalError(loc, "input must have rank >= 1");
  if (axis < 0 || axis >= rank)
    return emitOptionalError(loc, "axis ", axis,
                             " is out of range for an input of rank ", rank,
                             " (expected [0, ", rank, "))");
  if (type.getDimSize(axis) == 0)
    return emitOptionalError(loc, "dimension ", axis, " of the input ",
                             formatShape(type.getShape()),
                             " is empty: there is no element to choose");
  SmallVector<int64_t> shape(type.getShape());
  if (adaptor.getKeepdims())
    shape[axis] = 1;
  else
    shape.erase(shape.begin() + axis);
  inferred.push_back(
      RankedTensorType::get(shape, IntegerType::get(context, 64)));
  return success();
}

//===----------------------------------------------------------------------===//
// SoftmaxOp
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  auto type = cast<RankedTensorType>(adaptor.getInput().getType());
  int64_t rank = type.getRank();
  auto axis = static_cast<int64_t>(adaptor.getAxis());
  if (rank == 0)
    return emitOptionalError(loc, "input must have rank >= 1");
  if (axis < 0 || axis >= rank)
    return emitOptionalError(loc, "axis ", axis,
                             " is out of range for an input of rank ", rank,
                             " (expected [0, ", rank, "))");
  inferred.push_back(type);
  return success();
}

OpFoldResult SoftmaxOp::fold(FoldAdaptor) {
  // `trailing` over a run of dimensions after `axis` that are all of size 1
  // is the plain single-axis form.
  ArrayRef<int64_t> shape = getInput().getType().getShape();
  if (!getTrailing() || getAxis() >= shape.size())
    return {};
  if (!llvm::all_of(shape.drop_front(getAxis() + 1),
                    [](int64_t size) { return size == 1; }))
    return {};
  setTrailing(false);
  return getResult();
}
