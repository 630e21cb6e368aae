//===- ElementwiseOps.cpp - Weft elementwise ops --------------------------===//
//
// Type inference (which is also the verification) and constant folding of
// weft.unary, weft.clip, weft.cast, weft.binary and weft.select.
//
//===----------------------------------------------------------------------===//

#include "weft/WeftOps.h"

#include "llvm/ADT/APSInt.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::weft;

/// Folds produce at most this many elements (unless every input is a splat),
/// so that folding never duplicates weights.
static constexpr int64_t kMaxFoldElements = 1 << 16;

//===----------------------------------------------------------------------===//
// Element type classes
//===----------------------------------------------------------------------===//

static bool isBool(Type type) { return type.isSignlessInteger(1); }

static bool isFloat(Type type) {
  return type.isF32() || type.isF16() || type.isBF16() || type.isF64();
}

/// i8, i32, i64 (ONNX's signed integers) and ui8.
static bool isInt(Type type) {
  return type.isSignlessInteger(8) || type.isSignlessInteger(32) ||
         type.isSignlessInteger(64) || type.isUnsignedInteger(8);
}

static bool isSignedInt(Type type) {
  return isInt(type) && !type.isUnsignedInteger();
}

static bool isNumeric(Type type) { return isFloat(type) || isInt(type); }

static bool isSupported(Type type) { return isNumeric(type) || isBool(type); }

/// The operand's ranked tensor type, or an error naming it.
static FailureOr<RankedTensorType> getTensorType(Value value, StringRef name,
                                                 std::optional<Location> loc) {
  auto type = value ? dyn_cast<RankedTensorType>(value.getType()) : nullptr;
  if (!type || !isSupported(type.getElementType())) {
    (void)emitOptionalError(loc, name,
                            " must be a ranked tensor of a supported element "
                            "type, got ",
                            value ? value.getType() : Type());
    return failure();
  }
  return type;
}

//===----------------------------------------------------------------------===//
// Folding helpers
//===----------------------------------------------------------------------===//

namespace {
/// The elements of one constant operand of a fold, read once, with the map
/// from each element of the (static, broadcast) result to an element of the
/// operand. Floats are held as double: every supported float type converts
/// to it exactly, and one final rounding of +, -, *, / and sqrt computed in
/// double gives the correctly rounded result of the narrower type.
class FoldOperand {
public:
  /// Reads `attr` broadcast to `resultShape`; nullopt when `attr` is not a
  /// dense constant. A splat is read as one element.
  static std::optional<FoldOperand> read(Attribute attr,
                                         ArrayRef<int64_t> resultShape) {
    auto dense = dyn_cast_or_null<DenseElementsAttr>(attr);
    if (!dense)
      return std::nullopt;
    FoldOperand op;
    op.elementType = dense.getElementType();
    // An empty tensor is read as no elements, never as a splat.
    op.splat = dense.isSplat() && dense.getNumElements() > 0;
    if (::isFloat(op.elementType)) {
      if (op.splat)
        op.floats.push_back(dense.getSplatValue<APFloat>().convertToDouble());
      else
        for (const APFloat &f : dense.getValues<APFloat>())
          op.floats.push_back(f.convertToDouble());
    } else {
      if (op.splat)
        op.ints.push_back(dense.getSplatValue<APInt>());
      else
        llvm::append_range(op.ints, dense.getValues<APInt>());
    }
    ArrayRef<int64_t> shape = dense.getType().getShape();
    if (!op.splat && shape != resultShape)
      op.indices = getBroadcastIndices(shape, resultShape);
    return op;
  }

  bool isFloat() const { return ::isFloat(elementType); }
  bool isUnsigned() const { return elementType.isUnsignedInteger(); }
  bool isSplat() const { return splat; }
  Type getElementType() const { return elementType; }

  /// Element `k` of the result, as double (float operands only).
  double getFloat(int64_t k) const { return floats[index(k)]; }
  /// Element `k` of the result, as APInt (integer and i1 operands only).
  const APInt &getInt(int64_t k) const { return ints[index(k)]; }
  /// Element `k` as double for any numeric type.
  double getAsDouble(int64_t k) const {
    if (isFloat())
      return getFloat(k);
    const APInt &v = getInt(k);
    return isUnsigned() ? static_cast<double>(v.getZExtValue())
                        : static_cast<double>(v.getSExtValue());
  }

private:
  int64_t index(int64_t k) const {
    if (splat)
      return 0;
    return indices.empty() ? k : indices[k];
  }

  /// For each element of `resultShape`, the linear index of the element of
  /// an operand of shape `shape` that numpy broadcasting maps to it.
  static SmallVector<int64_t>
  getBroadcastIndices(ArrayRef<int64_t> shape, ArrayRef<int64_t> resultShape) {
    int64_t rank = resultShape.size();
    int64_t offset = rank - static_cast<int64_t>(shape.size());
    SmallVector<int64_t> strides(rank, 0);
    int64_t stride = 1;
    for (int64_t i = rank - 1; i >= offset; --i) {
      int64_t size = shape[i - offset];
      strides[i] = size == 1 ? 0 : stride;
      stride *= size;
    }
    int64_t count = 1;
    for (int64_t size : resultShape)
      count *= size;
    SmallVector<int64_t> out;
    out.reserve(count);
    SmallVector<int64_t> position(rank, 0);
    int64_t current = 0;
    for (int64_t k = 0; k < count; ++k) {
      out.push_back(current);
      for (int64_t i = rank - 1; i >= 0; --i) {
        current += strides[i];
        if (++position[i] < resultShape[i])
          break;
        current -= strides[i] * position[i];
        position[i] = 0;
      }
    }
    return out;
  }

  Type elementType;
  bool splat = false;
  SmallVector<double> floats;
  SmallVector<APInt> ints;
  SmallVector<int64_t> indices;
};
} // namespace

/// The number of elements a fold to `type` computes from the constant
/// operands `attrs`: 1 when every operand is a splat; nullopt when an operand
/// is not a dense constant, `type` is not static or the fold is too large.
/// Checked before any operand is read, so large weights are never copied.
static std::optional<int64_t> getFoldCount(Type type,
                                           ArrayRef<Attribute> attrs) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return std::nullopt;
  bool allSplat = tensor.getNumElements() != 0;
  for (Attribute attr : attrs) {
    auto dense = dyn_cast_or_null<DenseElementsAttr>(attr);
    if (!dense)
      return std::nullopt;
    allSplat &= dense.isSplat() && dense.getNumElements() > 0;
  }
  if (allSplat)
    return 1;
  // Overflow-safe: a broadcast result's shape was never checked as a whole.
  std::optional<int64_t> count = getNumElements(tensor.getShape());
  if (!count || *count > kMaxFoldElements)
    return std::nullopt;
  return *count;
}

/// A dense attribute of `type` from doubles rounded to its float type; one
/// value makes a splat.
static Attribute makeFloats(Type type, ArrayRef<double> values) {
  auto tensor = cast<RankedTensorType>(type);
  const llvm::fltSemantics &semantics =
      cast<FloatType>(tensor.getElementType()).getFloatSemantics();
  SmallVector<APFloat> out;
  out.reserve(values.size());
  for (double v : values) {
    APFloat f(v);
    bool losesInfo;
    f.convert(semantics, APFloat::rmNearestTiesToEven, &losesInfo);
    out.push_back(f);
  }
  return DenseElementsAttr::get(tensor, out);
}

/// A dense attribute of `type` from integers of its element width.
static Attribute makeInts(Type type, ArrayRef<APInt> values) {
  return DenseElementsAttr::get(cast<RankedTensorType>(type), values);
}

/// True when `attr` is a splat equal to `value` (any numeric element type).
static bool isSplatOf(Attribute attr, double value) {
  auto dense = dyn_cast_or_null<DenseElementsAttr>(attr);
  if (!dense || !dense.isSplat() || dense.getNumElements() == 0)
    return false;
  Type element = dense.getElementType();
  if (isFloat(element)) {
    APFloat v = dense.getSplatValue<APFloat>();
    // Tells +0.0 from -0.0: only the right one is an identity.
    return v.convertToDouble() == value &&
           v.isNegative() == std::signbit(value);
  }
  APInt v = dense.getSplatValue<APInt>();
  if (isBool(element))
    return v.getZExtValue() == static_cast<uint64_t>(value);
  return element.isUnsignedInteger()
             ? value >= 0 && v.getZExtValue() == static_cast<uint64_t>(value)
             : v.getSExtValue() == static_cast<int64_t>(value);
}

/// `value` when it has exactly the type `type` (folding to an operand must not
/// change the result type), else null.
static OpFoldResult sameTypeOrNull(Value value, Type type) {
  if (value && value.getType() == type)
    return value;
  return {};
}

/// Truncates `value` toward zero into an integer of `type`'s width; nullopt
/// for NaN, infinities and values out of range (undefined in ONNX).
static std::optional<APInt> truncateToInt(double value, Type type) {
  unsigned width = type.getIntOrFloatBitWidth();
  llvm::APSInt result(width, /*isUnsigned=*/type.isUnsignedInteger());
  bool isExact;
  APFloat f(value);
  if (f.convertToInteger(result, APFloat::rmTowardZero, &isExact) &
      APFloat::opInvalidOp)
    return std::nullopt;
  return APInt(result);
}

//===----------------------------------------------------------------------===//
// UnaryOp
//===----------------------------------------------------------------------===//

namespace {
/// Which float parameters a unary kind takes.
struct UnaryParams {
  bool alpha = false, beta = false, gamma = false;
};
} // namespace

static UnaryParams getUnaryParams(UnaryKind kind) {
  switch (kind) {
  case UnaryKind::LeakyRelu:
  case UnaryKind::Elu:
  case UnaryKind::Celu:
  case UnaryKind::ThresholdedRelu:
    return {true, false, false};
  case UnaryKind::Selu:
    return {true, false, true};
  case UnaryKind::HardSigmoid:
    return {true, true, false};
  default:
    return {};
  }
}

/// Whether `kind` accepts elements of `type`, following ONNX's type
/// constraints (Erf, which ONNX also defines on integers, is float-only here).
static bool isAllowedUnaryType(UnaryKind kind, Type type) {
  switch (kind) {
  case UnaryKind::Not:
    return isBool(type);
  case UnaryKind::Relu:
  case UnaryKind::Neg:
    return isFloat(type) || isSignedInt(type);
  case UnaryKind::Abs:
  case UnaryKind::Sign:
    return isNumeric(type);
  default:
    return isFloat(type);
  }
}

LogicalResult UnaryOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> type =
      getTensorType(adaptor.getInput(), "input", loc);
  if (failed(type))
    return failure();
  if (!adaptor.getKindAttr())
    return emitOptionalError(loc, "missing kind");
  UnaryKind kind = adaptor.getKind();
  StringRef name = stringifyUnaryKind(kind);
  if (!isAllowedUnaryType(kind, type->getElementType()))
    return emitOptionalError(loc, "'", name, "' does not accept elements of ",
                             type->getElementType());
  UnaryParams params = getUnaryParams(kind);
  auto checkParam = [&](Attribute attr, bool wanted,
                        StringRef param) -> LogicalResult {
    if (wanted && !attr)
      return emitOptionalError(loc, "'", name, "' needs parameter '", param,
                               "'");
    if (!wanted && attr)
      return emitOptionalError(loc, "'", name, "' takes no parameter '", param,
                               "'");
    return success();
  };
  if (failed(checkParam(adaptor.getAlphaAttr(), params.alpha, "alpha")) ||
      failed(checkParam(adaptor.getBetaAttr(), params.beta, "beta")) ||
      failed(checkParam(adaptor.getGammaAttr(), params.gamma, "gamma")))
    return failure();
  inferred.push_back(*type);
  return success();
}

/// `kind` on a float (computed in double).
static double applyUnary(UnaryKind kind, double x, double alpha, double beta,
                         double gamma) {
  auto clamp01 = [](double v) {
    return std::isnan(v) ? v : std::min(1.0, std::max(0.0, v));
  };
  switch (kind) {
  case UnaryKind::Relu:
    return std::isnan(x) || x > 0 ? x : 0.0;
  case UnaryKind::Sigmoid:
    return 1.0 / (1.0 + std::exp(-x));
  case UnaryKind::Tanh:
    return std::tanh(x);
  case UnaryKind::Erf:
    return std::erf(x);
  case UnaryKind::Exp:
    return std::exp(x);
  case UnaryKind::Log:
    return std::log(x);
  case UnaryKind::Sqrt:
    return std::sqrt(x);
  case UnaryKind::Reciprocal:
    return 1.0 / x;
  case UnaryKind::Neg:
    return -x;
  case UnaryKind::Abs:
    return std::fabs(x);
  case UnaryKind::Floor:
    return std::floor(x);
  case UnaryKind::Ceil:
    return std::ceil(x);
  case UnaryKind::Sign:
    return std::isnan(x) ? x : (x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0));
  case UnaryKind::Sin:
    return std::sin(x);
  case UnaryKind::Cos:
    return std::cos(x);
  case UnaryKind::Not:
    return x;
  case UnaryKind::LeakyRelu:
    return x < 0 ? alpha * x : x;
  case UnaryKind::Elu:
    return x < 0 ? alpha * std::expm1(x) : x;
  case UnaryKind::Selu:
    return x > 0 ? gamma * x : gamma * alpha * std::expm1(x);
  case UnaryKind::Celu:
    return std::max(0.0, x) + std::min(0.0, alpha * std::expm1(x / alpha));
  case UnaryKind::ThresholdedRelu:
    return x > alpha ? x : 0.0;
  case UnaryKind::HardSigmoid:
    return clamp01(alpha * x + beta);
  case UnaryKind::HardSwish:
    return x * clamp01(x / 6.0 + 0.5);
  case UnaryKind::Softplus:
    return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
  case UnaryKind::Softsign:
    return x / (1.0 + std::fabs(x));
  case UnaryKind::Gelu:
    return 0.5 * x * (1.0 + std::erf(x / llvm::numbers::sqrt2));
  case UnaryKind::GeluTanh:
    return 0.5 * x *
           (1.0 + std::tanh(std::sqrt(2.0 / llvm::numbers::pi) *
                            (x + 0.044715 * x * x * x)));
  }
  return x;
}

/// `kind` on an integer or i1 (only the kinds that accept them).
static APInt applyUnary(UnaryKind kind, const APInt &x, bool isUnsigned) {
  switch (kind) {
  case UnaryKind::Not:
    return ~x;
  case UnaryKind::Relu:
    return x.isNegative() ? APInt::getZero(x.getBitWidth()) : x;
  case UnaryKind::Neg:
    return -x;
  case UnaryKind::Abs:
    return isUnsigned ? x : x.abs();
  case UnaryKind::Sign:
    if (x.isZero())
      return x;
    if (!isUnsigned && x.isNegative())
      return APInt::getAllOnes(x.getBitWidth());
    return APInt(x.getBitWidth(), 1);
  default:
    return x;
  }
}

OpFoldResult UnaryOp::fold(FoldAdaptor adaptor) {
  Type type = getType();
  std::optional<int64_t> count = getFoldCount(type, adaptor.getInput());
  if (!count)
    return {};
  auto shape = cast<RankedTensorType>(type).getShape();
  std::optional<FoldOperand> x = FoldOperand::read(adaptor.getInput(), shape);
  UnaryKind kind = getKind();
  if (x->isFloat()) {
    auto param = [](FloatAttr attr) {
      return attr ? attr.getValueAsDouble() : 0.0;
    };
    double alpha = param(getAlphaAttr());
    double beta = param(getBetaAttr());
    double gamma = param(getGammaAttr());
    SmallVector<double> out;
    out.reserve(*count);
    for (int64_t k = 0; k < *count; ++k)
      out.push_back(applyUnary(kind, x->getFloat(k), alpha, beta, gamma));
    return makeFloats(type, out);
  }
  SmallVector<APInt> out;
  out.reserve(*count);
  for (int64_t k = 0; k < *count; ++k)
    out.push_back(applyUnary(kind, x->getInt(k), x->isUnsigned()));
  return makeInts(type, out);
}

//===----------------------------------------------------------------------===//
// ClipOp
//===----------------------------------------------------------------------===//

LogicalResult ClipOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> type =
      getTensorType(adaptor.getInput(), "input", loc);
  if (failed(type))
    return failure();
  Type element = type->getElementType();
  if (!isNumeric(element))
    return emitOptionalError(loc, "clip does not accept elements of ", element);
  for (auto [bound, name] : {std::pair(adaptor.getMin(), StringRef("min")),
                             std::pair(adaptor.getMax(), StringRef("max"))}) {
    if (!bound)
      continue;
    FailureOr<RankedTensorType> boundType = getTensorType(bound, name, loc);
    if (failed(boundType))
      return failure();
    if (boundType->getElementType() != element)
      return emitOptionalError(loc, name, " has element type ",
                               boundType->getElementType(),
                               " but the input has ", element);
    if (boundType->getRank() > type->getRank() ||
        llvm::any_of(boundType->getShape(),
                     [](int64_t size) { return size != 1; }))
      return emitOptionalError(loc, name,
                               " must hold one element (rank 0 "
                               "or sizes 1, rank at most the input's), got ",
                               formatShape(boundType->getShape()));
  }
  inferred.push_back(*type);
  return success();
}

OpFoldResult ClipOp::fold(FoldAdaptor adaptor) {
  Type type = getType();
  if (!getMin() && !getMax())
    return sameTypeOrNull(getInput(), type);
  SmallVector<Attribute> attrs = {adaptor.getInput()};
  if (getMin())
    attrs.push_back(adaptor.getMin());
  if (getMax())
    attrs.push_back(adaptor.getMax());
  std::optional<int64_t> count = getFoldCount(type, attrs);
  if (!count)
    return {};
  auto shape = cast<RankedTensorType>(type).getShape();
  std::optional<FoldOperand> x = FoldOperand::read(adaptor.getInput(), shape);
  std::optional<FoldOperand> lo, hi;
  if (getMin())
    lo = FoldOperand::read(adaptor.getMin(), shape);
  if (getMax())
    hi = FoldOperand::read(adaptor.getMax(), shape);
  if (x->isFloat()) {
    // A NaN input stays NaN; a NaN bound gives NaN, as numpy's clip does.
    double lower = lo ? lo->getFloat(0) : 0.0;
    double upper = hi ? hi->getFloat(0) : 0.0;
    SmallVector<double> out;
    out.reserve(*count);
    for (int64_t k = 0; k < *count; ++k) {
      double v = x->getFloat(k);
      if (lo && (std::isnan(lower) || v < lower))
        v = lower;
      if (hi && (std::isnan(upper) || v > upper))
        v = upper;
      out.push_back(v);
    }
    return makeFloats(type, out);
  }
  bool isUnsigned = x->isUnsigned();
  auto less = [&](const APInt &a, const APInt &b) {
    return isUnsigned ? a.ult(b) : a.slt(b);
  };
  SmallVector<APInt> out;
  out.reserve(*count);
  for (int64_t k = 0; k < *count; ++k) {
    APInt v = x->getInt(k);
    if (lo && less(v, lo->getInt(0)))
      v = lo->getInt(0);
    if (hi && less(hi->getInt(0), v))
      v = hi->getInt(0);
    out.push_back(v);
  }
  return makeInts(type, out);
}

//===----------------------------------------------------------------------===//
// CastOp
//===----------------------------------------------------------------------===//

LogicalResult CastOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> type =
      getTensorType(adaptor.getInput(), "input", loc);
  if (failed(type))
    return failure();
  TypeAttr to = adaptor.getToAttr();
  if (!to || !isSupported(to.getValue()))
    return emitOptionalError(loc, "cannot cast to unsupported element type ",
                             to ? to.getValue() : Type());
  inferred.push_back(type->clone(to.getValue()));
  return success();
}

/// Casts one element of `x` (element `k`) to `to`; nullopt where ONNX leaves
/// the result undefined.
static std::optional<APInt> castToInt(const FoldOperand &x, int64_t k,
                                      Type to) {
  unsigned width = to.getIntOrFloatBitWidth();
  if (x.isFloat()) {
    double v = x.getFloat(k);
    if (isBool(to))
      return APInt(1, v != 0.0 || std::isnan(v));
    return truncateToInt(v, to);
  }
  const APInt &v = x.getInt(k);
  if (isBool(to))
    return APInt(1, !v.isZero());
  bool zeroExtend = x.isUnsigned() || isBool(x.getElementType());
  return zeroExtend ? v.zextOrTrunc(width) : v.sextOrTrunc(width);
}

OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  Type type = getType();
  if (OpFoldResult same = sameTypeOrNull(getInput(), type))
    return same;
  std::optional<int64_t> count = getFoldCount(type, adaptor.getInput());
  if (!count)
    return {};
  auto shape = cast<RankedTensorType>(type).getShape();
  std::optional<FoldOperand> x = FoldOperand::read(adaptor.getInput(), shape);
  Type to = getTo();
  if (isFloat(to)) {
    SmallVector<double> out;
    out.reserve(*count);
    for (int64_t k = 0; k < *count; ++k) {
      if (x->isFloat() || isBool(x->getElementType())) {
        out.push_back(x->isFloat() ? x->getFloat(k)
                                   : double(x->getInt(k).getZExtValue()));
        continue;
      }
      // Integers go straight to the target type: i64 to f32 through double
      // could round twice.
      APFloat f(cast<FloatType>(to).getFloatSemantics());
      f.convertFromAPInt(x->getInt(k), !x->isUnsigned(),
                         APFloat::rmNearestTiesToEven);
      bool losesInfo;
      f.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven,
                &losesInfo);
      out.push_back(f.convertToDouble());
    }
    return makeFloats(type, out);
  }
  SmallVector<APInt> out;
  out.reserve(*count);
  for (int64_t k = 0; k < *count; ++k) {
    std::optional<APInt> v = castToInt(*x, k, to);
    if (!v)
      return {};
    out.push_back(*v);
  }
  return makeInts(type, out);
}

//===----------------------------------------------------------------------===//
// BinaryOp
//===----------------------------------------------------------------------===//

static bool isComparison(BinaryKind kind) {
  return kind == BinaryKind::Equal || kind == BinaryKind::Less ||
         kind == BinaryKind::LessEqual || kind == BinaryKind::Greater ||
         kind == BinaryKind::GreaterEqual;
}

LogicalResult BinaryOp::inferReturnTypes(MLIRContext *context,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> lhs = getTensorType(adaptor.getLhs(), "lhs", loc);
  if (failed(lhs))
    return failure();
  FailureOr<RankedTensorType> rhs = getTensorType(adaptor.getRhs(), "rhs", loc);
  if (failed(rhs))
    return failure();
  if (!adaptor.getKindAttr())
    return emitOptionalError(loc, "missing kind");
  BinaryKind kind = adaptor.getKind();
  StringRef name = stringifyBinaryKind(kind);
  Type lhsElement = lhs->getElementType();
  Type rhsElement = rhs->getElementType();

  // Element types.
  if (kind != BinaryKind::Pow && lhsElement != rhsElement)
    return emitOptionalError(loc, "'", name,
                             "' needs operands of one element type, got ",
                             lhsElement, " and ", rhsElement);
  bool allowed;
  switch (kind) {
  case BinaryKind::Mod:
    allowed = isInt(lhsElement);
    break;
  case BinaryKind::Pow:
    allowed = isNumeric(lhsElement) && isNumeric(rhsElement);
    break;
  case BinaryKind::Equal:
    allowed = true;
    break;
  case BinaryKind::And:
  case BinaryKind::Or:
  case BinaryKind::Xor:
    allowed = isBool(lhsElement);
    break;
  default:
    allowed = isNumeric(lhsElement);
    break;
  }
  if (!allowed) {
    if (kind == BinaryKind::Mod && isFloat(lhsElement))
      return emitOptionalError(loc,
                               "'mod' (sign of the divisor) needs "
                               "integers; floats use 'fmod', got ",
                               lhsElement);
    return emitOptionalError(loc, "'", name, "' does not accept elements of ",
                             kind == BinaryKind::Pow && isNumeric(lhsElement)
                                 ? rhsElement
                                 : lhsElement);
  }
  Type resultElement =
      isComparison(kind) ? IntegerType::get(context, 1) : lhsElement;

  // Shapes.
  ArrayRef<int64_t> lhsShape = lhs->getShape();
  ArrayRef<int64_t> rhsShape = rhs->getShape();
  if (kind == BinaryKind::Prelu) {
    // The slope broadcasts to the input's shape (unidirectionally).
    auto fail = [&] {
      return emitOptionalError(loc, "slope of shape ", formatShape(rhsShape),
                               " does not broadcast to input of shape ",
                               formatShape(lhsShape));
    };
    if (rhsShape.size() > lhsShape.size())
      return fail();
    SmallVector<int64_t> shape(lhsShape);
    int64_t offset = lhsShape.size() - rhsShape.size();
    for (auto [i, size] : llvm::enumerate(rhsShape)) {
      int64_t &dim = shape[offset + i];
      if (ShapedType::isDynamic(size) || size == 1)
        continue;
      if (ShapedType::isDynamic(dim))
        dim = size;
      else if (dim != size)
        return fail();
    }
    inferred.push_back(RankedTensorType::get(shape, resultElement));
    return success();
  }
  FailureOr<SmallVector<int64_t>> shape =
      broadcastShapes({lhsShape, rhsShape}, loc);
  if (failed(shape))
    return failure();
  inferred.push_back(RankedTensorType::get(*shape, resultElement));
  return success();
}

/// `kind` on two floats; comparisons give 0 or 1.
static double applyBinary(BinaryKind kind, double a, double b) {
  switch (kind) {
  case BinaryKind::Add:
    return a + b;
  case BinaryKind::Sub:
    return a - b;
  case BinaryKind::Mul:
    return a * b;
  case BinaryKind::Div:
    return a / b;
  case BinaryKind::Fmod:
    return std::fmod(a, b);
  case BinaryKind::Pow:
    return std::pow(a, b);
  case BinaryKind::Max:
    return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
  case BinaryKind::Min:
    return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
  case BinaryKind::Prelu:
    return a < 0 ? a * b : a;
  case BinaryKind::Equal:
    return a == b;
  case BinaryKind::Less:
    return a < b;
  case BinaryKind::LessEqual:
    return a <= b;
  case BinaryKind::Greater:
    return a > b;
  case BinaryKind::GreaterEqual:
    return a >= b;
  default:
    return NAN;
  }
}

/// `kind` on two integers (or i1) of one type; comparisons give an i1.
/// nullopt where ONNX leaves the result undefined.
static std::optional<APInt> applyBinary(BinaryKind kind, const APInt &a,
                                        const APInt &b, bool isUnsigned) {
  switch (kind) {
  case BinaryKind::Add:
    return a + b;
  case BinaryKind::Sub:
    return a - b;
  case BinaryKind::Mul:
    return a * b;
  case BinaryKind::Div:
    if (b.isZero() || (!isUnsigned && a.isMinSignedValue() && b.isAllOnes()))
      return std::nullopt;
    return isUnsigned ? a.udiv(b) : a.sdiv(b);
  case BinaryKind::Mod: {
    if (b.isZero())
      return std::nullopt;
    if (isUnsigned)
      return a.urem(b);
    APInt r = a.srem(b);
    if (!r.isZero() && r.isNegative() != b.isNegative())
      r += b;
    return r;
  }
  case BinaryKind::Fmod:
    if (b.isZero())
      return std::nullopt;
    return isUnsigned ? a.urem(b) : a.srem(b);
  case BinaryKind::Max:
    return isUnsigned ? llvm::APIntOps::umax(a, b) : llvm::APIntOps::smax(a, b);
  case BinaryKind::Min:
    return isUnsigned ? llvm::APIntOps::umin(a, b) : llvm::APIntOps::smin(a, b);
  case BinaryKind::Prelu:
    return !isUnsigned && a.isNegative() ? a * b : a;
  case BinaryKind::Equal:
    return APInt(1, a == b);
  case BinaryKind::Less:
    return APInt(1, isUnsigned ? a.ult(b) : a.slt(b));
  case BinaryKind::LessEqual:
    return APInt(1, isUnsigned ? a.ule(b) : a.sle(b));
  case BinaryKind::Greater:
    return APInt(1, isUnsigned ? a.ugt(b) : a.sgt(b));
  case BinaryKind::GreaterEqual:
    return APInt(1, isUnsigned ? a.uge(b) : a.sge(b));
  case BinaryKind::And:
    return a & b;
  case BinaryKind::Or:
    return a | b;
  case BinaryKind::Xor:
    return a ^ b;
  case BinaryKind::Pow:
    break;
  }
  return std::nullopt;
}

/// Integer `base` to the power of element `k` of `exponent` (any numeric
/// type), wrapping around like numpy; nullopt for negative integer exponents
/// and float results out of range.
static std::optional<APInt> applyIntPow(const APInt &base, bool isUnsigned,
                                        const FoldOperand &exponent, int64_t k,
                                        Type type) {
  if (exponent.isFloat()) {
    double b =
        isUnsigned ? double(base.getZExtValue()) : double(base.getSExtValue());
    return truncateToInt(std::pow(b, exponent.getFloat(k)), type);
  }
  const APInt &e = exponent.getInt(k);
  if (!exponent.isUnsigned() && e.isNegative())
    return std::nullopt;
  uint64_t n = e.getZExtValue();
  APInt result(base.getBitWidth(), 1), square = base;
  for (; n; n >>= 1) {
    if (n & 1)
      result *= square;
    square *= square;
  }
  return result;
}

/// Folds x op identity to x (and identity op x to x for commutative kinds)
/// when x has the result's type.
static OpFoldResult foldBinaryIdentity(BinaryOp op, Attribute lhs,
                                       Attribute rhs) {
  Type type = op.getType();
  Value l = op.getLhs(), r = op.getRhs();
  bool isFloatType = isFloat(cast<ShapedType>(l.getType()).getElementType());
  switch (op.getKind()) {
  case BinaryKind::Add:
    // x + (-0.0) is x for every float x; x + 0.0 is not for x = -0.0.
    if (isSplatOf(rhs, isFloatType ? -0.0 : 0.0))
      return sameTypeOrNull(l, type);
    if (isSplatOf(lhs, isFloatType ? -0.0 : 0.0))
      return sameTypeOrNull(r, type);
    return {};
  case BinaryKind::Sub:
    return isSplatOf(rhs, 0.0) ? sameTypeOrNull(l, type) : OpFoldResult();
  case BinaryKind::Mul:
    if (isSplatOf(rhs, 1.0))
      return sameTypeOrNull(l, type);
    if (isSplatOf(lhs, 1.0))
      return sameTypeOrNull(r, type);
    return {};
  case BinaryKind::Div:
  case BinaryKind::Pow:
    return isSplatOf(rhs, 1.0) ? sameTypeOrNull(l, type) : OpFoldResult();
  case BinaryKind::And:
  case BinaryKind::Or:
  case BinaryKind::Xor: {
    double identity = op.getKind() == BinaryKind::And ? 1.0 : 0.0;
    if (isSplatOf(rhs, identity))
      return sameTypeOrNull(l, type);
    if (isSplatOf(lhs, identity))
      return sameTypeOrNull(r, type);
    if (l == r && op.getKind() != BinaryKind::Xor)
      return sameTypeOrNull(l, type);
    return {};
  }
  case BinaryKind::Max:
  case BinaryKind::Min:
    return l == r ? sameTypeOrNull(l, type) : OpFoldResult();
  default:
    return {};
  }
}

OpFoldResult BinaryOp::fold(FoldAdaptor adaptor) {
  if (OpFoldResult identity =
          foldBinaryIdentity(*this, adaptor.getLhs(), adaptor.getRhs()))
    return identity;
  Type type = getType();
  std::optional<int64_t> count =
      getFoldCount(type, {adaptor.getLhs(), adaptor.getRhs()});
  if (!count)
    return {};
  auto shape = cast<RankedTensorType>(type).getShape();
  std::optional<FoldOperand> lhs = FoldOperand::read(adaptor.getLhs(), shape);
  std::optional<FoldOperand> rhs = FoldOperand::read(adaptor.getRhs(), shape);
  BinaryKind kind = getKind();
  Type resultElement = cast<RankedTensorType>(type).getElementType();

  if (lhs->isFloat()) {
    // Float operands (Pow's exponent may be of any numeric type).
    if (isComparison(kind)) {
      SmallVector<APInt> out;
      out.reserve(*count);
      for (int64_t k = 0; k < *count; ++k)
        out.emplace_back(
            1, applyBinary(kind, lhs->getFloat(k), rhs->getAsDouble(k)) != 0);
      return makeInts(type, out);
    }
    SmallVector<double> out;
    out.reserve(*count);
    for (int64_t k = 0; k < *count; ++k)
      out.push_back(applyBinary(kind, lhs->getFloat(k), rhs->getAsDouble(k)));
    return makeFloats(type, out);
  }

  SmallVector<APInt> out;
  out.reserve(*count);
  bool isUnsigned = lhs->isUnsigned();
  for (int64_t k = 0; k < *count; ++k) {
    std::optional<APInt> v =
        kind == BinaryKind::Pow
            ? applyIntPow(lhs->getInt(k), isUnsigned, *rhs, k, resultElement)
            : applyBinary(kind, lhs->getInt(k), rhs->getInt(k), isUnsigned);
    if (!v)
      return {};
    out.push_back(*v);
  }
  return makeInts(type, out);
}

//===----------------------------------------------------------------------===//
// SelectOp
//===----------------------------------------------------------------------===//

LogicalResult SelectOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> condition =
      getTensorType(adaptor.getCondition(), "condition", loc);
  if (failed(condition))
    return failure();
  FailureOr<RankedTensorType> onTrue =
      getTensorType(adaptor.getTrueValue(), "true value", loc);
  if (failed(onTrue))
    return failure();
  FailureOr<RankedTensorType> onFalse =
      getTensorType(adaptor.getFalseValue(), "false value", loc);
  if (failed(onFalse))
    return failure();
  if (!isBool(condition->getElementType()))
    return emitOptionalError(loc, "condition must be i1, got ",
                             condition->getElementType());
  if (onTrue->getElementType() != onFalse->getElementType())
    return emitOptionalError(loc,
                             "true and false values have different "
                             "element types ",
                             onTrue->getElementType(), " and ",
                             onFalse->getElementType());
  FailureOr<SmallVector<int64_t>> shape = broadcastShapes(
      {condition->getShape(), onTrue->getShape(), onFalse->getShape()}, loc);
  if (failed(shape))
    return failure();
  inferred.push_back(RankedTensorType::get(*shape, onTrue->getElementType()));
  return success();
}

OpFoldResult SelectOp::fold(FoldAdaptor adaptor) {
  Type type = getType();
  if (isSplatOf(adaptor.getCondition(), 1.0))
    return sameTypeOrNull(getTrueValue(), type);
  if (isSplatOf(adaptor.getCondition(), 0.0))
    return sameTypeOrNull(getFalseValue(), type);
  if (getTrueValue() == getFalseValue())
    return sameTypeOrNull(getTrueValue(), type);

  std::optional<int64_t> count =
      getFoldCount(type, {adaptor.getCondition(), adaptor.getTrueValue(),
                          adaptor.getFalseValue()});
  if (!count)
    return {};
  auto shape = cast<RankedTensorType>(type).getShape();
  std::optional<FoldOperand> condition =
      FoldOperand::read(adaptor.getCondition(), shape);
  std::optional<FoldOperand> onTrue =
      FoldOperand::read(adaptor.getTrueValue(), shape);
  std::optional<FoldOperand> onFalse =
      FoldOperand::read(adaptor.getFalseValue(), shape);
  if (onTrue->isFloat()) {
    SmallVector<double> out;
    out.reserve(*count);
    for (int64_t k = 0; k < *count; ++k)
      out.push_back(condition->getInt(k).isZero() ? onFalse->getFloat(k)
                                                  : onTrue->getFloat(k));
    return makeFloats(type, out);
  }
  SmallVector<APInt> out;
  out.reserve(*count);
  for (int64_t k = 0; k < *count; ++k)
    out.push_back(condition->getInt(k).isZero() ? onFalse->getInt(k)
                                                : onTrue->getInt(k));
  return makeInts(type, out);
}
