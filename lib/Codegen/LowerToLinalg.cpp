//===- LowerToLinalg.cpp - Elementwise weft ops to linalg.generic ---------===//
//
// Lowers the weft ops that become generated loops: elementwise math as
// linalg.generic ops with numpy broadcasting in their indexing maps (so that
// linalg's elementwise fusion merges chains into one loop nest), expand as a
// broadcasting copy, the reshape family as tensor.reshape and constants as
// arith.constant.
//
//===----------------------------------------------------------------------===//

#include "weft/Codegen/Passes.h"
#include "weft/Codegen/ProgramABI.h"
#include "weft/WeftDialect.h"
#include "weft/WeftOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/DialectConversion.h"

#include <cmath>

namespace mlir::weft {
#define GEN_PASS_DEF_WEFTLOWERTOLINALG
#include "weft/Codegen/Passes.h.inc"
} // namespace mlir::weft

using namespace mlir;
using namespace mlir::weft;

//===----------------------------------------------------------------------===//
// Scalar bodies
//===----------------------------------------------------------------------===//

/// f16 and bf16 math runs in f32: libm and LLVM's intrinsics have no half
/// versions of erf or tanh, and rounding once at the end is more accurate.
static Type computeType(Type elementType) {
  if (elementType.isF16() || elementType.isBF16())
    return Float32Type::get(elementType.getContext());
  return elementType;
}

static Value extendForCompute(OpBuilder &b, Location loc, Value v) {
  Type type = computeType(v.getType());
  if (type == v.getType())
    return v;
  return arith::ExtFOp::create(b, loc, type, v);
}

static Value truncateFromCompute(OpBuilder &b, Location loc, Value v,
                                 Type elementType) {
  if (v.getType() == elementType)
    return v;
  return arith::TruncFOp::create(b, loc, elementType, v);
}

static Value floatConstant(OpBuilder &b, Location loc, Type type,
                           double value) {
  return arith::ConstantOp::create(b, loc, type, b.getFloatAttr(type, value));
}

static Value intConstant(OpBuilder &b, Location loc, Type type, int64_t value) {
  return arith::ConstantOp::create(b, loc, type, b.getIntegerAttr(type, value));
}

static double attrOr(std::optional<APFloat> value, double fallback) {
  return value ? value->convertToDouble() : fallback;
}

/// The scalar function of weft.unary on `x` (already in compute type).
static Value buildUnary(OpBuilder &b, Location loc, UnaryOp op, Value x) {
  Type t = x.getType();
  if (getElementTypeOrSelf(op.getInput()).isUnsignedInteger()) {
    // ui8 arrives as i8: relu and abs are the identity, sign is 0 or 1.
    switch (op.getKind()) {
    case UnaryKind::Relu:
    case UnaryKind::Abs:
      return x;
    case UnaryKind::Sign: {
      Value zero = intConstant(b, loc, t, 0);
      Value nonZero =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, x, zero);
      return arith::ExtUIOp::create(b, loc, t, nonZero);
    }
    default:
      break;
    }
  }
  bool isFloat = isa<FloatType>(t);
  auto fc = [&](double v) { return floatConstant(b, loc, t, v); };
  auto ic = [&](int64_t v) { return intConstant(b, loc, t, v); };
  double alpha = attrOr(op.getAlpha(), 0.0);
  double beta = attrOr(op.getBeta(), 0.0);
  double gamma = attrOr(op.getGamma(), 0.0);
  auto cmpf = [&](arith::CmpFPredicate p, Value l, Value r) {
    return arith::CmpFOp::create(b, loc, p, l, r);
  };
  auto sel = [&](Value c, Value l, Value r) {
    return arith::SelectOp::create(b, loc, c, l, r);
  };
  auto mul = [&](Value l, Value r) {
    return arith::MulFOp::create(b, loc, l, r);
  };
  auto add = [&](Value l, Value r) {
    return arith::AddFOp::create(b, loc, l, r);
  };
  auto sub = [&](Value l, Value r) {
    return arith::SubFOp::create(b, loc, l, r);
  };
  auto div = [&](Value l, Value r) {
    return arith::DivFOp::create(b, loc, l, r);
  };
  auto exp = [&](Value v) { return math::ExpOp::create(b, loc, v); };
  auto clamp01 = [&](Value v) {
    return arith::MinimumFOp::create(
        b, loc, arith::MaximumFOp::create(b, loc, v, fc(0.0)), fc(1.0));
  };

  switch (op.getKind()) {
  case UnaryKind::Relu:
    if (isFloat)
      return arith::MaximumFOp::create(b, loc, x, fc(0.0));
    return arith::MaxSIOp::create(b, loc, x, ic(0));
  case UnaryKind::Neg:
    if (isFloat)
      return arith::NegFOp::create(b, loc, x);
    return arith::SubIOp::create(b, loc, ic(0), x);
  case UnaryKind::Abs:
    if (isFloat)
      return math::AbsFOp::create(b, loc, x);
    return math::AbsIOp::create(b, loc, x);
  case UnaryKind::Sign: {
    if (isFloat) {
      // NaN stays NaN, as numpy's sign does.
      Value pos =
          sel(cmpf(arith::CmpFPredicate::OGT, x, fc(0.0)), fc(1.0), fc(0.0));
      Value neg =
          sel(cmpf(arith::CmpFPredicate::OLT, x, fc(0.0)), fc(-1.0), pos);
      return sel(cmpf(arith::CmpFPredicate::UNO, x, x), x, neg);
    }
    Value gt =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, x, ic(0));
    Value lt =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x, ic(0));
    return sel(lt, ic(-1), sel(gt, ic(1), ic(0)));
  }
  case UnaryKind::Not:
    return arith::XOrIOp::create(b, loc, x, ic(1));
  case UnaryKind::Sigmoid:
    return div(fc(1.0), add(fc(1.0), exp(arith::NegFOp::create(b, loc, x))));
  case UnaryKind::Tanh:
    return math::TanhOp::create(b, loc, x);
  case UnaryKind::Erf:
    return math::ErfOp::create(b, loc, x);
  case UnaryKind::Exp:
    return exp(x);
  case UnaryKind::Log:
    return math::LogOp::create(b, loc, x);
  case UnaryKind::Sqrt:
    return math::SqrtOp::create(b, loc, x);
  case UnaryKind::Reciprocal:
    return div(fc(1.0), x);
  case UnaryKind::Floor:
    return math::FloorOp::create(b, loc, x);
  case UnaryKind::Ceil:
    return math::CeilOp::create(b, loc, x);
  case UnaryKind::Sin:
    return math::SinOp::create(b, loc, x);
  case UnaryKind::Cos:
    return math::CosOp::create(b, loc, x);
  case UnaryKind::LeakyRelu:
    return sel(cmpf(arith::CmpFPredicate::OLT, x, fc(0.0)), mul(fc(alpha), x),
               x);
  case UnaryKind::Elu:
    return sel(cmpf(arith::CmpFPredicate::OLT, x, fc(0.0)),
               mul(fc(alpha), sub(exp(x), fc(1.0))), x);
  case UnaryKind::Selu:
    return sel(cmpf(arith::CmpFPredicate::OLE, x, fc(0.0)),
               mul(fc(gamma), sub(mul(fc(alpha), exp(x)), fc(alpha))),
               mul(fc(gamma), x));
  case UnaryKind::Celu: {
    // max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
    Value e = mul(fc(alpha), sub(exp(div(x, fc(alpha))), fc(1.0)));
    return add(arith::MaximumFOp::create(b, loc, x, fc(0.0)),
               arith::MinimumFOp::create(b, loc, e, fc(0.0)));
  }
  case UnaryKind::ThresholdedRelu:
    return sel(cmpf(arith::CmpFPredicate::OGT, x, fc(alpha)), x, fc(0.0));
  case UnaryKind::HardSigmoid:
    return clamp01(add(mul(fc(alpha), x), fc(beta)));
  case UnaryKind::HardSwish:
    return mul(x, clamp01(add(mul(fc(1.0 / 6.0), x), fc(0.5))));
  case UnaryKind::Softplus: {
    // log(1 + exp(x)) without overflow: max(x, 0) + log1p(exp(-|x|)).
    Value negAbs =
        arith::NegFOp::create(b, loc, math::AbsFOp::create(b, loc, x));
    return add(arith::MaximumFOp::create(b, loc, x, fc(0.0)),
               math::Log1pOp::create(b, loc, exp(negAbs)));
  }
  case UnaryKind::Softsign:
    return div(x, add(fc(1.0), math::AbsFOp::create(b, loc, x)));
  case UnaryKind::Gelu:
    return mul(
        mul(fc(0.5), x),
        add(fc(1.0), math::ErfOp::create(b, loc, mul(x, fc(M_SQRT1_2)))));
  case UnaryKind::GeluTanh: {
    Value cube = mul(mul(x, x), x);
    Value inner =
        mul(fc(std::sqrt(2.0 / M_PI)), add(x, mul(fc(0.044715), cube)));
    return mul(mul(fc(0.5), x),
               add(fc(1.0), math::TanhOp::create(b, loc, inner)));
  }
  }
  return {};
}

/// The unsigned version of a signed integer comparison.
static arith::CmpIPredicate toUnsigned(arith::CmpIPredicate p) {
  switch (p) {
  case arith::CmpIPredicate::slt:
    return arith::CmpIPredicate::ult;
  case arith::CmpIPredicate::sle:
    return arith::CmpIPredicate::ule;
  case arith::CmpIPredicate::sgt:
    return arith::CmpIPredicate::ugt;
  case arith::CmpIPredicate::sge:
    return arith::CmpIPredicate::uge;
  default:
    return p;
  }
}

/// The scalar function of weft.binary on `l` and `r` (compute types; ui8
/// values arrive as i8 with `isUnsigned`).
static Value buildBinary(OpBuilder &b, Location loc, BinaryKind kind, Value l,
                         Value r, bool isUnsigned) {
  Type t = l.getType();
  bool isFloat = isa<FloatType>(t);
  using FP = arith::CmpFPredicate;
  using IP = arith::CmpIPredicate;
  auto cmp = [&](FP fp, IP ip) -> Value {
    if (isFloat)
      return arith::CmpFOp::create(b, loc, fp, l, r);
    return arith::CmpIOp::create(b, loc, isUnsigned ? toUnsigned(ip) : ip, l,
                                 r);
  };
  switch (kind) {
  case BinaryKind::Add:
    return isFloat ? (Value)arith::AddFOp::create(b, loc, l, r)
                   : (Value)arith::AddIOp::create(b, loc, l, r);
  case BinaryKind::Sub:
    return isFloat ? (Value)arith::SubFOp::create(b, loc, l, r)
                   : (Value)arith::SubIOp::create(b, loc, l, r);
  case BinaryKind::Mul:
    return isFloat ? (Value)arith::MulFOp::create(b, loc, l, r)
                   : (Value)arith::MulIOp::create(b, loc, l, r);
  case BinaryKind::Div:
    if (isFloat)
      return arith::DivFOp::create(b, loc, l, r);
    return isUnsigned ? (Value)arith::DivUIOp::create(b, loc, l, r)
                      : (Value)arith::DivSIOp::create(b, loc, l, r);
  case BinaryKind::Fmod:
    if (isFloat)
      return arith::RemFOp::create(b, loc, l, r);
    return isUnsigned ? (Value)arith::RemUIOp::create(b, loc, l, r)
                      : (Value)arith::RemSIOp::create(b, loc, l, r);
  case BinaryKind::Mod: {
    if (isUnsigned)
      return arith::RemUIOp::create(b, loc, l, r);
    // Python's %: the remainder takes the sign of the divisor.
    Value rem = arith::RemSIOp::create(b, loc, l, r);
    Value zero = intConstant(b, loc, t, 0);
    Value remNonZero = arith::CmpIOp::create(b, loc, IP::ne, rem, zero);
    Value signsDiffer = arith::XOrIOp::create(
        b, loc, arith::CmpIOp::create(b, loc, IP::slt, rem, zero),
        arith::CmpIOp::create(b, loc, IP::slt, r, zero));
    Value fix = arith::AndIOp::create(b, loc, remNonZero, signsDiffer);
    return arith::SelectOp::create(b, loc, fix,
                                   arith::AddIOp::create(b, loc, rem, r), rem);
  }
  case BinaryKind::Pow: {
    if (isFloat) {
      if (!isa<FloatType>(r.getType()))
        r = arith::SIToFPOp::create(b, loc, t, r);
      else if (r.getType() != t)
        r = r.getType().getIntOrFloatBitWidth() < t.getIntOrFloatBitWidth()
                ? (Value)arith::ExtFOp::create(b, loc, t, r)
                : (Value)arith::TruncFOp::create(b, loc, t, r);
      return math::PowFOp::create(b, loc, l, r);
    }
    // Integer base: compute in f64 and truncate, as ONNX's reference does.
    Type f64 = b.getF64Type();
    if (isUnsigned) {
      Value lf = arith::UIToFPOp::create(b, loc, f64, l);
      Value rf = isa<FloatType>(r.getType())
                     ? (r.getType().isF64()
                            ? r
                            : (Value)arith::ExtFOp::create(b, loc, f64, r))
                     : (Value)arith::UIToFPOp::create(b, loc, f64, r);
      return arith::FPToUIOp::create(b, loc, t,
                                     math::PowFOp::create(b, loc, lf, rf));
    }
    Value lf = arith::SIToFPOp::create(b, loc, f64, l);
    Value rf = isa<FloatType>(r.getType())
                   ? (r.getType().isF64()
                          ? r
                          : (Value)arith::ExtFOp::create(b, loc, f64, r))
                   : (Value)arith::SIToFPOp::create(b, loc, f64, r);
    return arith::FPToSIOp::create(b, loc, t,
                                   math::PowFOp::create(b, loc, lf, rf));
  }
  case BinaryKind::Max:
    if (isFloat)
      return arith::MaximumFOp::create(b, loc, l, r);
    return isUnsigned ? (Value)arith::MaxUIOp::create(b, loc, l, r)
                      : (Value)arith::MaxSIOp::create(b, loc, l, r);
  case BinaryKind::Min:
    if (isFloat)
      return arith::MinimumFOp::create(b, loc, l, r);
    return isUnsigned ? (Value)arith::MinUIOp::create(b, loc, l, r)
                      : (Value)arith::MinSIOp::create(b, loc, l, r);
  case BinaryKind::Prelu: {
    if (isFloat) {
      Value neg = arith::CmpFOp::create(b, loc, FP::OLT, l,
                                        floatConstant(b, loc, t, 0.0));
      return arith::SelectOp::create(b, loc, neg,
                                     arith::MulFOp::create(b, loc, l, r), l);
    }
    Value neg =
        arith::CmpIOp::create(b, loc, IP::slt, l, intConstant(b, loc, t, 0));
    return arith::SelectOp::create(b, loc, neg,
                                   arith::MulIOp::create(b, loc, l, r), l);
  }
  case BinaryKind::Equal:
    return cmp(FP::OEQ, IP::eq);
  case BinaryKind::Less:
    return cmp(FP::OLT, IP::slt);
  case BinaryKind::LessEqual:
    return cmp(FP::OLE, IP::sle);
  case BinaryKind::Greater:
    return cmp(FP::OGT, IP::sgt);
  case BinaryKind::GreaterEqual:
    return cmp(FP::OGE, IP::sge);
  case BinaryKind::And:
    return arith::AndIOp::create(b, loc, l, r);
  case BinaryKind::Or:
    return arith::OrIOp::create(b, loc, l, r);
  case BinaryKind::Xor:
    return arith::XOrIOp::create(b, loc, l, r);
  }
  return {};
}

/// Converts a scalar between weft element types with ONNX Cast semantics.
static Value buildCast(OpBuilder &b, Location loc, Value x, Type to,
                       bool fromUnsigned = false, bool toUnsigned = false) {
  Type from = x.getType();
  if (from == to)
    return x;
  bool fromFloat = isa<FloatType>(from), toFloat = isa<FloatType>(to);
  if (to.isInteger(1)) {
    // Anything non-zero is true.
    if (fromFloat)
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, x,
                                   floatConstant(b, loc, from, 0.0));
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, x,
                                 intConstant(b, loc, from, 0));
  }
  if (fromFloat && toFloat) {
    if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
      return arith::ExtFOp::create(b, loc, to, x);
    if (from.getIntOrFloatBitWidth() > to.getIntOrFloatBitWidth())
      return arith::TruncFOp::create(b, loc, to, x);
    // f16 <-> bf16: through f32.
    Value wide = arith::ExtFOp::create(b, loc, b.getF32Type(), x);
    return arith::TruncFOp::create(b, loc, to, wide);
  }
  if (fromFloat)
    return toUnsigned ? (Value)arith::FPToUIOp::create(b, loc, to, x)
                      : (Value)arith::FPToSIOp::create(b, loc, to, x);
  if (toFloat) {
    if (from.isInteger(1) || fromUnsigned)
      return arith::UIToFPOp::create(b, loc, to, x);
    return arith::SIToFPOp::create(b, loc, to, x);
  }
  unsigned fromBits = from.getIntOrFloatBitWidth();
  unsigned toBits = to.getIntOrFloatBitWidth();
  if (fromBits < toBits) {
    if (from.isInteger(1) || fromUnsigned)
      return arith::ExtUIOp::create(b, loc, to, x);
    return arith::ExtSIOp::create(b, loc, to, x);
  }
  return arith::TruncIOp::create(b, loc, to, x);
}

//===----------------------------------------------------------------------===//
// Building linalg.generic with broadcasting
//===----------------------------------------------------------------------===//

/// The indexing map that reads `operandType` (numpy-broadcast into
/// `resultType`): trailing dimensions align, size-1 dimensions that grow read
/// index 0.
static AffineMap broadcastMap(RankedTensorType operandType,
                              RankedTensorType resultType, MLIRContext *ctx) {
  int64_t resultRank = resultType.getRank();
  int64_t rank = operandType.getRank();
  SmallVector<AffineExpr> exprs;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t resultDim = resultRank - rank + i;
    if (operandType.getDimSize(i) == 1 && resultType.getDimSize(resultDim) != 1)
      exprs.push_back(getAffineConstantExpr(0, ctx));
    else
      exprs.push_back(getAffineDimExpr(resultDim, ctx));
  }
  return AffineMap::get(resultRank, 0, exprs, ctx);
}

using ScalarBuilder =
    function_ref<Value(OpBuilder &, Location, ValueRange args)>;

/// Creates `linalg.generic` computing `resultType` elementwise from
/// `inputs` (broadcast as numpy does) with `body` on their scalars.
static Value buildElementwise(OpBuilder &b, Location loc,
                              RankedTensorType resultType, ValueRange inputs,
                              ScalarBuilder body) {
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps;
  for (Value input : inputs)
    maps.push_back(
        broadcastMap(cast<RankedTensorType>(input.getType()), resultType, ctx));
  maps.push_back(AffineMap::getMultiDimIdentityMap(resultType.getRank(), ctx));
  SmallVector<utils::IteratorType> iterators(resultType.getRank(),
                                             utils::IteratorType::parallel);
  Value init = tensor::EmptyOp::create(b, loc, resultType.getShape(),
                                       resultType.getElementType());
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{resultType}, inputs, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value result = body(nb, nloc, args.drop_back());
        linalg::YieldOp::create(nb, nloc, result);
      });
  return generic.getResult(0);
}

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

/// `type` with ui8 elements replaced by i8.
static RankedTensorType signlessType(RankedTensorType type) {
  auto intType = dyn_cast<IntegerType>(type.getElementType());
  if (!intType || intType.isSignless())
    return type;
  return type.clone(IntegerType::get(type.getContext(), intType.getWidth()));
}

/// A scalar as another integer type of the same width (ui8 <-> i8): arith
/// takes signless integers only. The cast vanishes in the LLVM lowering,
/// where both are i8 (tensor.bitcast would not bufferize).
static Value castScalar(OpBuilder &b, Location loc, Value v, Type to) {
  if (v.getType() == to)
    return v;
  return UnrealizedConversionCastOp::create(b, loc, to, v).getResult(0);
}

static SmallVector<Value> toSignlessScalars(OpBuilder &b, Location loc,
                                            ValueRange values) {
  SmallVector<Value> out;
  for (Value v : values) {
    Type t = v.getType();
    auto intType = dyn_cast<IntegerType>(t);
    out.push_back(
        intType && !intType.isSignless()
            ? castScalar(b, loc, v,
                         IntegerType::get(b.getContext(), intType.getWidth()))
            : v);
  }
  return out;
}

namespace {

template <typename OpTy> struct ElementwisePattern : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    auto resultType = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!resultType || !resultType.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "result shape is not static");
    for (Value operand : op->getOperands())
      if (!cast<RankedTensorType>(operand.getType()).hasStaticShape())
        return rewriter.notifyMatchFailure(op, "operand shape is not static");
    // arith takes signless integers: ui8 tensors are bitcast to i8 around
    // the loop, and the bodies pick unsigned operations for them.
    Type computeElement = signlessType(resultType).getElementType();
    Value result = buildElementwise(
        rewriter, op.getLoc(), resultType, op->getOperands(),
        [&](OpBuilder &b, Location loc, ValueRange args) {
          Value r = buildBody(op, b, loc, toSignlessScalars(b, loc, args),
                              computeElement);
          return castScalar(b, loc, r, resultType.getElementType());
        });
    rewriter.replaceOp(op, result);
    return success();
  }

  static Value buildBody(OpTy op, OpBuilder &b, Location loc, ValueRange args,
                         Type resultElement);
};

template <>
Value ElementwisePattern<UnaryOp>::buildBody(UnaryOp op, OpBuilder &b,
                                             Location loc, ValueRange args,
                                             Type resultElement) {
  Value x = extendForCompute(b, loc, args[0]);
  return truncateFromCompute(b, loc, buildUnary(b, loc, op, x), resultElement);
}

template <>
Value ElementwisePattern<BinaryOp>::buildBody(BinaryOp op, OpBuilder &b,
                                              Location loc, ValueRange args,
                                              Type resultElement) {
  Value l = extendForCompute(b, loc, args[0]);
  Value r = isa<FloatType>(args[1].getType())
                ? extendForCompute(b, loc, args[1])
                : args[1];
  if (isa<FloatType>(l.getType()) && isa<FloatType>(r.getType()) &&
      l.getType() != r.getType() && op.getKind() != BinaryKind::Pow)
    r = buildCast(b, loc, r, l.getType());
  bool isUnsigned = getElementTypeOrSelf(op.getLhs()).isUnsignedInteger();
  if (!isa<FloatType>(l.getType()) && isa<IntegerType>(r.getType()) &&
      op.getKind() == BinaryKind::Pow && r.getType() != l.getType())
    r = buildCast(b, loc, r, l.getType(),
                  getElementTypeOrSelf(op.getRhs()).isUnsignedInteger(),
                  isUnsigned);
  Value result = buildBinary(b, loc, op.getKind(), l, r, isUnsigned);
  if (resultElement.isInteger(1))
    return result;
  return truncateFromCompute(b, loc, result, resultElement);
}

template <>
Value ElementwisePattern<SelectOp>::buildBody(SelectOp, OpBuilder &b,
                                              Location loc, ValueRange args,
                                              Type) {
  return arith::SelectOp::create(b, loc, args[0], args[1], args[2]);
}

template <>
Value ElementwisePattern<CastOp>::buildBody(CastOp op, OpBuilder &b,
                                            Location loc, ValueRange args,
                                            Type resultElement) {
  return buildCast(b, loc, args[0], resultElement,
                   getElementTypeOrSelf(op.getInput()).isUnsignedInteger(),
                   getElementTypeOrSelf(op.getType()).isUnsignedInteger());
}

/// weft.clip: min and max are optional operands, so the operand list of the
/// generic is built from those present.
struct ClipPattern : OpRewritePattern<ClipOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ClipOp op,
                                PatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(op.getType());
    if (!resultType.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "result shape is not static");
    bool hasMin = static_cast<bool>(op.getMin());
    bool hasMax = static_cast<bool>(op.getMax());
    bool isUnsigned = resultType.getElementType().isUnsignedInteger();
    RankedTensorType computeResult = signlessType(resultType);
    Value result = buildElementwise(
        rewriter, op.getLoc(), resultType, op->getOperands(),
        [&](OpBuilder &b, Location loc, ValueRange rawArgs) -> Value {
          SmallVector<Value> args = toSignlessScalars(b, loc, rawArgs);
          Type element = computeResult.getElementType();
          bool isFloat = isa<FloatType>(element);
          Value x = extendForCompute(b, loc, args[0]);
          unsigned next = 1;
          // ONNX: min(max(x, min), max).
          if (hasMin) {
            Value lo = extendForCompute(b, loc, args[next++]);
            x = isFloat      ? (Value)arith::MaximumFOp::create(b, loc, x, lo)
                : isUnsigned ? (Value)arith::MaxUIOp::create(b, loc, x, lo)
                             : (Value)arith::MaxSIOp::create(b, loc, x, lo);
          }
          if (hasMax) {
            Value hi = extendForCompute(b, loc, args[next++]);
            x = isFloat      ? (Value)arith::MinimumFOp::create(b, loc, x, hi)
                : isUnsigned ? (Value)arith::MinUIOp::create(b, loc, x, hi)
                             : (Value)arith::MinSIOp::create(b, loc, x, hi);
          }
          return castScalar(b, loc, truncateFromCompute(b, loc, x, element),
                            resultType.getElementType());
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// weft.expand: a broadcasting copy.
struct ExpandPattern : OpRewritePattern<ExpandOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ExpandOp op,
                                PatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(op.getType());
    if (!resultType.hasStaticShape() ||
        !cast<RankedTensorType>(op.getInput().getType()).hasStaticShape())
      return rewriter.notifyMatchFailure(op, "shapes are not static");
    Value result = buildElementwise(
        rewriter, op.getLoc(), resultType, ValueRange{op.getInput()},
        [](OpBuilder &, Location, ValueRange args) { return args[0]; });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// weft.trilu: element (.., i, j) is kept when j - i >= k (upper) or
/// j - i <= k (lower), else zero. k may be computed at run time: it is a
/// rank-0 input of the generic.
struct TriluPattern : OpRewritePattern<TriluOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(TriluOp op,
                                PatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(op.getType());
    if (!resultType.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "result shape is not static");
    MLIRContext *ctx = rewriter.getContext();
    int64_t rank = resultType.getRank();
    SmallVector<Value> inputs = {op.getInput(), op.getK()};
    RankedTensorType computeResult = resultType;
    SmallVector<AffineMap> maps = {
        AffineMap::getMultiDimIdentityMap(rank, ctx),
        AffineMap::get(rank, 0, {}, ctx),
        AffineMap::getMultiDimIdentityMap(rank, ctx)};
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    Value init =
        tensor::EmptyOp::create(rewriter, op.getLoc(), computeResult.getShape(),
                                computeResult.getElementType());
    bool upper = op.getUpper();
    auto generic = linalg::GenericOp::create(
        rewriter, op.getLoc(), TypeRange{computeResult}, inputs,
        ValueRange{init}, maps, iterators,
        [&](OpBuilder &b, Location loc, ValueRange args) {
          Value i = linalg::IndexOp::create(b, loc, rank - 2);
          Value j = linalg::IndexOp::create(b, loc, rank - 1);
          Value diff = arith::IndexCastOp::create(
              b, loc, b.getI64Type(), arith::SubIOp::create(b, loc, j, i));
          Value keep = arith::CmpIOp::create(b, loc,
                                             upper ? arith::CmpIPredicate::sge
                                                   : arith::CmpIPredicate::sle,
                                             diff, args[1]);
          Value x = toSignlessScalars(b, loc, args[0])[0];
          Type element = x.getType();
          Value zero = arith::ConstantOp::create(b, loc, element,
                                                 b.getZeroAttr(element));
          Value kept = arith::SelectOp::create(b, loc, keep, x, zero);
          linalg::YieldOp::create(
              b, loc, ValueRange{castScalar(b, loc, kept, args[0].getType())});
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

/// The reshape family keeps the row-major order of elements: a
/// tensor.reshape to the (static) result shape, which bufferizes to a view.
template <typename OpTy> struct ReshapePattern : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(op.getResult().getType());
    Value input = op.getInput();
    auto inputType = cast<RankedTensorType>(input.getType());
    if (!resultType.hasStaticShape() || !inputType.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "shapes are not static");
    if (inputType == resultType) {
      rewriter.replaceOp(op, input);
      return success();
    }
    Location loc = op.getLoc();
    auto shapeType =
        RankedTensorType::get({resultType.getRank()}, rewriter.getIndexType());
    SmallVector<APInt> dims;
    for (int64_t d : resultType.getShape())
      dims.push_back(APInt(64, d));
    Value shape = arith::ConstantOp::create(
        rewriter, loc, DenseElementsAttr::get(shapeType, dims));
    rewriter.replaceOpWithNewOp<tensor::ReshapeOp>(op, resultType, input,
                                                   shape);
    return success();
  }
};

/// weft.range: element i is start + i * delta, computed as the folder
/// computes ranges short enough to fold (in f64 for floats, wrapping in the
/// element type for integers), so that both give the same values.
struct RangePattern : OpRewritePattern<RangeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(RangeOp op,
                                PatternRewriter &rewriter) const override {
    RankedTensorType resultType = op.getType();
    if (!resultType.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "result shape is not static");
    MLIRContext *ctx = rewriter.getContext();
    Location loc = op.getLoc();
    AffineMap scalar = AffineMap::get(1, 0, {}, ctx);
    SmallVector<AffineMap> maps = {scalar, scalar,
                                   AffineMap::getMultiDimIdentityMap(1, ctx)};
    Value init = tensor::EmptyOp::create(rewriter, loc, resultType.getShape(),
                                         resultType.getElementType());
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{resultType},
        ValueRange{op.getStart(), op.getDelta()}, ValueRange{init}, maps,
        {utils::IteratorType::parallel},
        [&](OpBuilder &b, Location nloc, ValueRange args) {
          Value index = linalg::IndexOp::create(b, nloc, 0);
          Type element = args[0].getType();
          Value result;
          if (auto floatType = dyn_cast<FloatType>(element)) {
            Type f64 = b.getF64Type();
            auto widen = [&](Value v) -> Value {
              return v.getType() == f64
                         ? v
                         : arith::ExtFOp::create(b, nloc, f64, v);
            };
            Value i = arith::SIToFPOp::create(
                b, nloc, f64,
                arith::IndexCastOp::create(b, nloc, b.getI64Type(), index));
            result = arith::AddFOp::create(
                b, nloc, widen(args[0]),
                arith::MulFOp::create(b, nloc, i, widen(args[1])));
            if (floatType != f64)
              result = arith::TruncFOp::create(b, nloc, floatType, result);
          } else {
            Value i = arith::IndexCastOp::create(b, nloc, element, index);
            result = arith::AddIOp::create(
                b, nloc, args[0], arith::MulIOp::create(b, nloc, i, args[1]));
          }
          linalg::YieldOp::create(b, nloc, result);
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

/// Splat constants larger than this are filled at run time into an arena
/// buffer, not written out as a global: a ConstantOfShape of many GiB would
/// otherwise take LLVM minutes to emit and no object file could hold it.
static constexpr int64_t kMaxSplatGlobalBytes = 1 << 20;

/// weft.constant becomes arith.constant (bufferized to a constant global),
/// or a linalg.fill for a large splat.
struct ConstantPattern : OpRewritePattern<ConstantOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ConstantOp op,
                                PatternRewriter &rewriter) const override {
    auto value = dyn_cast<DenseElementsAttr>(op.getValue());
    if (!value)
      return rewriter.notifyMatchFailure(op, "not a dense constant");
    auto type = cast<RankedTensorType>(op.getType());
    // arith.constant takes signless scalars only: ui8 splats stay globals.
    Type element = type.getElementType();
    bool signless = !element.isInteger() || element.isSignlessInteger();
    if (value.isSplat() && signless && type.hasStaticShape() &&
        type.getNumElements() * getStorageBytes(element) >
            kMaxSplatGlobalBytes) {
      Location loc = op.getLoc();
      Value scalar = arith::ConstantOp::create(
          rewriter, loc, cast<TypedAttr>(value.getSplatValue<Attribute>()));
      Value init =
          tensor::EmptyOp::create(rewriter, loc, type.getShape(), element);
      rewriter.replaceOpWithNewOp<linalg::FillOp>(op, scalar, init);
      return success();
    }
    if (value.getType() != op.getType())
      value = value.reshape(cast<ShapedType>(op.getType()));
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, value);
    return success();
  }
};

struct WeftLowerToLinalgPass
    : weft::impl::WeftLowerToLinalgBase<WeftLowerToLinalgPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    patterns.add<ElementwisePattern<UnaryOp>, ElementwisePattern<BinaryOp>,
                 ElementwisePattern<SelectOp>, ElementwisePattern<CastOp>,
                 ClipPattern, ExpandPattern, ReshapePattern<ReshapeOp>,
                 ReshapePattern<FlattenOp>, ReshapePattern<SqueezeOp>,
                 ReshapePattern<UnsqueezeOp>, TriluPattern, RangePattern,
                 ConstantPattern>(ctx);
    // Every op the patterns match must go: a left-over one means a shape
    // that is not static, which weftc reports before codegen.
    ConversionTarget target(*ctx);
    target
        .addLegalDialect<linalg::LinalgDialect, tensor::TensorDialect,
                         arith::ArithDialect, math::MathDialect, WeftDialect>();
    target.addIllegalOp<UnaryOp, BinaryOp, SelectOp, CastOp, ClipOp, ExpandOp,
                        ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp, TriluOp,
                        RangeOp>();
    target.addDynamicallyLegalOp<ConstantOp>(
        [](ConstantOp op) { return !isa<DenseElementsAttr>(op.getValue()); });
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
