//===- ImportElementwise.cpp - Import of ONNX elementwise ops -------------===//
//
// Maps ONNX's elementwise operators (activations, math, casts, arithmetic,
// comparisons, logic, Where, Clip, Dropout at inference) to weft.unary,
// weft.clip, weft.cast, weft.binary and weft.select.
//
//===----------------------------------------------------------------------===//

#include "NodeImporter.h"

#include "mlir/IR/Diagnostics.h"

#include <iterator>
#include <limits>

using namespace mlir;
using namespace mlir::weft;
using namespace mlir::weft::onnx_import;

/// Creates an `OpTy` with the result type its inference gives. `OpTy`'s
/// inferring builders abort when inference fails (mismatched element types,
/// shapes that do not broadcast: things a model can hold), so inference runs
/// first here and its message is reported as an error of the node.
template <typename OpTy, typename... Args>
static FailureOr<Value> build(NodeImporter &node, Args &&...args) {
  OperationState state(node.getLoc(), OpTy::getOperationName());
  OpTy::build(node.getBuilder(), state, Type(), args...);
  // Ops without inherent attributes leave the state's properties null.
  typename OpTy::Properties properties{};
  if (auto *built =
          state.getRawProperties().template as<typename OpTy::Properties *>())
    properties = *built;
  FailureOr<SmallVector<Type>> types =
      node.inferResultTypes<OpTy>(state.operands, properties);
  if (failed(types))
    return failure();
  return node.create<OpTy>(types->front(), std::forward<Args>(args)...);
}

/// Binds output 0 of `node` to `value` when building succeeded.
static LogicalResult setResult(NodeImporter &node, FailureOr<Value> value) {
  if (failed(value))
    return failure();
  node.setOutput(0, *value);
  return success();
}

//===----------------------------------------------------------------------===//
// Unary functions and activations
//===----------------------------------------------------------------------===//

static LogicalResult buildUnary(NodeImporter &node, UnaryKind kind,
                                FloatAttr alpha = {}, FloatAttr beta = {},
                                FloatAttr gamma = {}) {
  if (failed(node.requireInputs(1)))
    return failure();
  return setResult(
      node, build<UnaryOp>(node, kind, node.getInput(0), alpha, beta, gamma));
}

/// An ONNX float attribute (or its default) as the f64 parameter of
/// weft.unary. ONNX attributes are f32: the default is rounded to f32 too, so
/// that an explicit default attribute imports to the same IR.
static FailureOr<FloatAttr> getParam(NodeImporter &node, StringRef name,
                                     double defaultValue) {
  FailureOr<double> value =
      node.getFloat(name, static_cast<float>(defaultValue));
  if (failed(value))
    return failure();
  return node.getBuilder().getF64FloatAttr(*value);
}

/// Relu, Exp, Not, ...: one input, no attributes.
template <UnaryKind kind> static LogicalResult importUnary(NodeImporter &node) {
  if (failed(node.checkKnownAttrs({})))
    return failure();
  return buildUnary(node, kind);
}

/// LeakyRelu, Elu, Celu, ThresholdedRelu: one float attribute `alpha`.
template <UnaryKind kind>
static LogicalResult importAlphaActivation(NodeImporter &node) {
  double defaultAlpha = kind == UnaryKind::LeakyRelu ? 0.01 : 1.0;
  if (failed(node.checkKnownAttrs({"alpha"})))
    return failure();
  FailureOr<FloatAttr> alpha = getParam(node, "alpha", defaultAlpha);
  if (failed(alpha))
    return failure();
  return buildUnary(node, kind, *alpha);
}

static LogicalResult importSelu(NodeImporter &node) {
  if (failed(node.checkKnownAttrs({"alpha", "gamma"})))
    return failure();
  FailureOr<FloatAttr> alpha =
      getParam(node, "alpha", 1.67326319217681884765625);
  FailureOr<FloatAttr> gamma =
      getParam(node, "gamma", 1.05070102214813232421875);
  if (failed(alpha) || failed(gamma))
    return failure();
  return buildUnary(node, UnaryKind::Selu, *alpha, {}, *gamma);
}

static LogicalResult importHardSigmoid(NodeImporter &node) {
  if (failed(node.checkKnownAttrs({"alpha", "beta"})))
    return failure();
  FailureOr<FloatAttr> alpha = getParam(node, "alpha", 0.2);
  FailureOr<FloatAttr> beta = getParam(node, "beta", 0.5);
  if (failed(alpha) || failed(beta))
    return failure();
  return buildUnary(node, UnaryKind::HardSigmoid, *alpha, *beta);
}

static LogicalResult importGelu(NodeImporter &node) {
  if (failed(node.checkKnownAttrs({"approximate"})))
    return failure();
  FailureOr<std::string> approximate = node.getString("approximate", "none");
  if (failed(approximate))
    return failure();
  if (*approximate != "none" && *approximate != "tanh")
    return node.emitError() << "attribute 'approximate' must be \"none\" or "
                               "\"tanh\", got \""
                            << *approximate << "\"";
  return buildUnary(node, *approximate == "tanh" ? UnaryKind::GeluTanh
                                                 : UnaryKind::Gelu);
}

//===----------------------------------------------------------------------===//
// Clip, Cast, CastLike, Dropout
//===----------------------------------------------------------------------===//

static LogicalResult importClip(NodeImporter &node) {
  if (failed(node.requireInputs(1)))
    return failure();
  Value min, max;
  if (node.getOpset() < 11) {
    // Clip-6: the bounds are float attributes.
    if (failed(node.checkKnownAttrs({"min", "max"})))
      return failure();
    if (node.getNumInputs() != 1)
      return node.emitError() << "expected 1 input before opset 11 (the "
                                 "bounds are attributes), got "
                              << node.getNumInputs();
    Type element = node.getInputType(0).getElementType();
    if (!isa<FloatType>(element))
      return node.emitError()
             << "Clip before opset 11 takes floats, got " << element;
    for (auto [name, bound] : {std::pair(StringRef("min"), &min),
                               std::pair(StringRef("max"), &max)}) {
      if (!node.hasAttr(name))
        continue;
      FailureOr<double> value = node.getFloat(name);
      if (failed(value))
        return failure();
      *bound = node.createScalar(element, *value);
    }
  } else {
    if (failed(node.checkKnownAttrs({})))
      return failure();
    min = node.getInput(1);
    max = node.getInput(2);
  }
  return setResult(node, build<ClipOp>(node, node.getInput(0), min, max));
}

/// Cast to the element type of ONNX data type `to`, or a clear refusal.
static LogicalResult buildCast(NodeImporter &node, Type to) {
  return setResult(node, build<CastOp>(node, node.getInput(0), to));
}

/// The `saturate` attribute (opset 19) only changes conversions to float8
/// types, which weft refuses, so any value is accepted.
static LogicalResult checkSaturate(NodeImporter &node) {
  if (node.getOpset() < 19)
    return success();
  return failure(failed(node.getInt("saturate", 1)));
}

/// The name of a Cast target, including the types newer than ONNX 1.12.
static std::string getCastTargetName(int64_t dataType) {
  static const char *const newer[] = {
      "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ",
      "UINT4",        "INT4",           "FLOAT4E2M1"};
  if (dataType >= 17 && dataType < 17 + static_cast<int64_t>(std::size(newer)))
    return newer[dataType - 17];
  if (dataType >= 0 && dataType < 17)
    return getOnnxDataTypeName(static_cast<int32_t>(dataType)).str();
  return "data type " + std::to_string(dataType);
}

static LogicalResult importCast(NodeImporter &node) {
  if (failed(node.requireInputs(1)) ||
      failed(node.checkKnownAttrs(node.getOpset() >= 19
                                      ? ArrayRef<StringRef>{"to", "saturate"}
                                      : ArrayRef<StringRef>{"to"})) ||
      failed(checkSaturate(node)))
    return failure();
  FailureOr<int64_t> to = node.getInt("to");
  if (failed(to))
    return failure();
  Type type = *to >= 0 && *to <= std::numeric_limits<int32_t>::max()
                  ? convertOnnxDataType(node.getContext(), *to)
                  : Type();
  if (!type)
    return node.emitError() << "cannot cast to " << getCastTargetName(*to)
                            << ": weft does not support that element type";
  return buildCast(node, type);
}

static LogicalResult importCastLike(NodeImporter &node) {
  if (failed(node.requireInputs(2)) ||
      failed(node.checkKnownAttrs(node.getOpset() >= 19
                                      ? ArrayRef<StringRef>{"saturate"}
                                      : ArrayRef<StringRef>{})) ||
      failed(checkSaturate(node)))
    return failure();
  return buildCast(node, node.getInputType(1).getElementType());
}

/// Dropout at inference: the output is the input and the optional mask is
/// all true (ones of the input's type before opset 10, whose mask was T).
static LogicalResult importDropout(NodeImporter &node) {
  if (failed(node.requireInputs(1)))
    return failure();
  int64_t opset = node.getOpset();
  if (opset < 12) {
    if (failed(node.checkKnownAttrs({"ratio"})) ||
        failed(node.getFloat("ratio", 0.5)))
      return failure();
    if (node.getNumInputs() != 1)
      return node.emitError()
             << "expected 1 input before opset 12, got " << node.getNumInputs();
  } else {
    if (failed(node.checkKnownAttrs({"seed"})))
      return failure();
    if (node.hasInput(2)) {
      std::optional<SmallVector<int64_t>> training = node.getConstantInts(2);
      if (!training)
        return node.emitError()
               << "training_mode must be a constant false: weft imports "
                  "inference graphs, where Dropout is the identity";
      if (llvm::any_of(*training, [](int64_t v) { return v != 0; }))
        return node.emitError()
               << "training_mode is true: weft imports inference graphs "
                  "only (training-time dropout is random)";
    }
  }
  Value data = node.getInput(0);
  node.setOutput(0, data);
  if (!node.hasOutput(1))
    return success();

  RankedTensorType type = node.getInputType(0);
  Type maskElement =
      opset < 10 ? type.getElementType() : node.getBuilder().getI1Type();
  if (type.hasStaticShape()) {
    auto maskType = RankedTensorType::get(type.getShape(), maskElement);
    Attribute one =
        isa<FloatType>(maskElement)
            ? Attribute(node.getBuilder().getFloatAttr(maskElement, 1.0))
            : Attribute(node.getBuilder().getIntegerAttr(maskElement, 1));
    node.setOutput(1,
                   node.createConstant(DenseElementsAttr::get(maskType, one)));
    return success();
  }
  // Dynamic shape: not(x < x) is true for every x, NaN included.
  FailureOr<Value> less = build<BinaryOp>(node, BinaryKind::Less, data, data);
  if (failed(less))
    return failure();
  FailureOr<Value> mask = build<UnaryOp>(node, UnaryKind::Not, *less,
                                         FloatAttr(), FloatAttr(), FloatAttr());
  if (succeeded(mask) && maskElement != node.getBuilder().getI1Type())
    mask = build<CastOp>(node, *mask, maskElement);
  if (failed(mask))
    return failure();
  node.setOutput(1, *mask);
  return success();
}

//===----------------------------------------------------------------------===//
// Binary and variadic ops, Where
//===----------------------------------------------------------------------===//

template <BinaryKind kind>
static LogicalResult importBinary(NodeImporter &node) {
  if (failed(node.requireInputs(2)) || failed(node.checkKnownAttrs({})))
    return failure();
  return setResult(
      node, build<BinaryOp>(node, kind, node.getInput(0), node.getInput(1)));
}

static LogicalResult importMod(NodeImporter &node) {
  if (failed(node.requireInputs(2)) || failed(node.checkKnownAttrs({"fmod"})))
    return failure();
  FailureOr<int64_t> fmod = node.getInt("fmod", 0);
  if (failed(fmod))
    return failure();
  if (*fmod != 0 && *fmod != 1)
    return node.emitError() << "attribute 'fmod' must be 0 or 1, got " << *fmod;
  Type element = node.getInputType(0).getElementType();
  if (*fmod == 0 && isa<FloatType>(element))
    return node.emitError() << "fmod = 0 (integer modulo) is undefined for "
                            << element << " inputs; ONNX requires fmod = 1";
  return setResult(
      node, build<BinaryOp>(node, *fmod ? BinaryKind::Fmod : BinaryKind::Mod,
                            node.getInput(0), node.getInput(1)));
}

/// Sum, Max, Min, Mean: a left-to-right chain of weft.binary over 1..N
/// inputs (each step broadcasts); Mean then divides by N.
template <BinaryKind kind, bool isMean = false>
static LogicalResult importVariadic(NodeImporter &node) {
  unsigned count = node.getNumInputs();
  if (failed(node.requireInputs(count)) || failed(node.checkKnownAttrs({})))
    return failure();
  Type element = node.getInputType(0).getElementType();
  if (isMean && !isa<FloatType>(element))
    return node.emitError() << "Mean takes floats, got " << element;
  FailureOr<Value> result = node.getInput(0);
  for (unsigned i = 1; i < count && succeeded(result); ++i)
    result = build<BinaryOp>(node, kind, *result, node.getInput(i));
  if (isMean && count > 1 && succeeded(result))
    result = build<BinaryOp>(node, BinaryKind::Div, *result,
                             node.createScalar(element, count));
  return setResult(node, result);
}

static LogicalResult importWhere(NodeImporter &node) {
  if (failed(node.requireInputs(3)) || failed(node.checkKnownAttrs({})))
    return failure();
  return setResult(node, build<SelectOp>(node, node.getInput(0),
                                         node.getInput(1), node.getInput(2)));
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

void mlir::weft::onnx_import::registerElementwiseImporters(
    OpImportRegistry &registry) {
  // {first opset, min inputs, max inputs, min outputs, max outputs, handler}
  auto unary = [&](StringRef name, int64_t since, NodeImportFn fn) {
    registry.add(name, {since, 1, 1, 1, 1, fn});
  };
  unary("Relu", 1, importUnary<UnaryKind::Relu>);
  unary("Sigmoid", 1, importUnary<UnaryKind::Sigmoid>);
  unary("Tanh", 1, importUnary<UnaryKind::Tanh>);
  unary("Erf", 9, importUnary<UnaryKind::Erf>);
  unary("Exp", 1, importUnary<UnaryKind::Exp>);
  unary("Log", 1, importUnary<UnaryKind::Log>);
  unary("Sqrt", 1, importUnary<UnaryKind::Sqrt>);
  unary("Reciprocal", 1, importUnary<UnaryKind::Reciprocal>);
  unary("Neg", 1, importUnary<UnaryKind::Neg>);
  unary("Abs", 1, importUnary<UnaryKind::Abs>);
  unary("Floor", 1, importUnary<UnaryKind::Floor>);
  unary("Ceil", 1, importUnary<UnaryKind::Ceil>);
  unary("Sign", 9, importUnary<UnaryKind::Sign>);
  unary("Sin", 7, importUnary<UnaryKind::Sin>);
  unary("Cos", 7, importUnary<UnaryKind::Cos>);
  unary("Not", 1, importUnary<UnaryKind::Not>);
  unary("HardSwish", 14, importUnary<UnaryKind::HardSwish>);
  unary("Softplus", 1, importUnary<UnaryKind::Softplus>);
  unary("Softsign", 1, importUnary<UnaryKind::Softsign>);
  unary("LeakyRelu", 1, importAlphaActivation<UnaryKind::LeakyRelu>);
  unary("Elu", 1, importAlphaActivation<UnaryKind::Elu>);
  unary("Celu", 12, importAlphaActivation<UnaryKind::Celu>);
  unary("ThresholdedRelu", 10,
        importAlphaActivation<UnaryKind::ThresholdedRelu>);
  unary("Selu", 1, importSelu);
  unary("HardSigmoid", 1, importHardSigmoid);
  unary("Gelu", 20, importGelu);

  registry.add("Clip", {1, 1, 3, 1, 1, importClip});
  registry.add("Cast", {1, 1, 1, 1, 1, importCast});
  registry.add("CastLike", {15, 2, 2, 1, 1, importCastLike});
  registry.add("Dropout", {1, 1, 3, 1, 2, importDropout});

  auto binary = [&](StringRef name, int64_t since, NodeImportFn fn) {
    registry.add(name, {since, 2, 2, 1, 1, fn});
  };
  binary("Add", 1, importBinary<BinaryKind::Add>);
  binary("Sub", 1, importBinary<BinaryKind::Sub>);
  binary("Mul", 1, importBinary<BinaryKind::Mul>);
  binary("Div", 1, importBinary<BinaryKind::Div>);
  binary("Pow", 1, importBinary<BinaryKind::Pow>);
  binary("PRelu", 1, importBinary<BinaryKind::Prelu>);
  binary("Mod", 10, importMod);
  binary("Equal", 1, importBinary<BinaryKind::Equal>);
  binary("Less", 1, importBinary<BinaryKind::Less>);
  binary("LessOrEqual", 12, importBinary<BinaryKind::LessEqual>);
  binary("Greater", 1, importBinary<BinaryKind::Greater>);
  binary("GreaterOrEqual", 12, importBinary<BinaryKind::GreaterEqual>);
  binary("And", 1, importBinary<BinaryKind::And>);
  binary("Or", 1, importBinary<BinaryKind::Or>);
  binary("Xor", 1, importBinary<BinaryKind::Xor>);

  auto variadic = [&](StringRef name, NodeImportFn fn) {
    registry.add(name, {1, 1, -1, 1, 1, fn});
  };
  variadic("Sum", importVariadic<BinaryKind::Add>);
  variadic("Max", importVariadic<BinaryKind::Max>);
  variadic("Min", importVariadic<BinaryKind::Min>);
  variadic("Mean", importVariadic<BinaryKind::Add, /*isMean=*/true>);

  registry.add("Where", {9, 3, 3, 1, 1, importWhere});
}
