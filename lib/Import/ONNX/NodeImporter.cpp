//===- NodeImporter.cpp - What an ONNX op handler sees
//---------------------===//
//
// Input, attribute and output access for op handlers, with diagnostics that
// name the node; and the registry of handlers.
//
//===----------------------------------------------------------------------===//

#include "NodeImporter.h"
#include "GraphImporter.h"

#include "llvm/ADT/StringSet.h"

#include <charconv>
#include <cstdlib>

using namespace mlir;
using namespace mlir::weft;
using namespace mlir::weft::onnx_import;

NodeImporter::NodeImporter(GraphImporter &graph, const onnx::NodeProto &node,
                           int64_t opset, Location loc, OpBuilder &builder)
    : graph(graph), node(node), opset(opset), loc(loc), builder(builder) {}

InFlightDiagnostic NodeImporter::emitError() {
  return graph.emitNodeError(node);
}

bool NodeImporter::hasInput(unsigned i) const {
  return i < static_cast<unsigned>(node.input_size()) && !node.input(i).empty();
}

Value NodeImporter::getInput(unsigned i) const {
  if (!hasInput(i))
    return nullptr;
  return graph.lookup(node.input(i), &node);
}

RankedTensorType NodeImporter::getInputType(unsigned i) const {
  Value v = getInput(i);
  return v ? cast<RankedTensorType>(v.getType()) : RankedTensorType();
}

std::optional<SmallVector<int64_t>>
NodeImporter::getConstantInts(unsigned i) const {
  Value v = getInput(i);
  if (!v)
    return std::nullopt;
  return getConstantIntValues(v);
}

std::optional<SmallVector<double>>
NodeImporter::getConstantFloats(unsigned i) const {
  Value v = getInput(i);
  if (!v)
    return std::nullopt;
  std::optional<DenseElementsAttr> attr = getConstantValue(v);
  if (!attr || !isa<FloatType>(attr->getElementType()))
    return std::nullopt;
  SmallVector<double> out;
  for (const APFloat &f : attr->getValues<APFloat>())
    out.push_back(f.convertToDouble());
  return out;
}

FailureOr<SmallVector<int64_t>>
NodeImporter::requireConstantInts(unsigned i, StringRef what) {
  if (!hasInput(i))
    return emitError() << what << " (input " << i << ") is missing";
  std::optional<SmallVector<int64_t>> values = getConstantInts(i);
  if (!values)
    return emitError() << what << " (input " << i << ", '" << node.input(i)
                       << "') must be a constant known at compile time";
  return *values;
}

LogicalResult NodeImporter::requireInputs(unsigned count) {
  for (unsigned i = 0; i < count; ++i)
    if (!hasInput(i))
      return emitError() << "input " << i << " is required but "
                         << (i < getNumInputs() ? "empty" : "missing");
  return success();
}

double mlir::weft::onnx_import::toShortestFloatDecimal(double value) {
  char text[32];
  std::to_chars_result end =
      std::to_chars(text, text + sizeof(text) - 1, static_cast<float>(value));
  *end.ptr = '\0';
  return std::strtod(text, nullptr);
}

bool NodeImporter::hasOutput(unsigned i) const {
  return i < static_cast<unsigned>(node.output_size()) &&
         !node.output(i).empty();
}

void NodeImporter::setOutput(unsigned i, Value value) {
  if (hasOutput(i) && value)
    graph.bind(node.output(i), value);
}

const onnx::AttributeProto *NodeImporter::findAttr(StringRef name) const {
  for (const onnx::AttributeProto &attr : node.attribute())
    if (attr.name() == name)
      return &attr;
  return nullptr;
}

static StringRef getAttrTypeName(onnx::AttributeProto::AttributeType type) {
  switch (type) {
  case onnx::AttributeProto::FLOAT:
    return "float";
  case onnx::AttributeProto::INT:
    return "int";
  case onnx::AttributeProto::STRING:
    return "string";
  case onnx::AttributeProto::TENSOR:
    return "tensor";
  case onnx::AttributeProto::FLOATS:
    return "list of floats";
  case onnx::AttributeProto::INTS:
    return "list of ints";
  case onnx::AttributeProto::STRINGS:
    return "list of strings";
  case onnx::AttributeProto::GRAPH:
    return "graph";
  default:
    return "other";
  }
}

/// The attribute's type; older models leave `type` unset and only fill one
/// field, so infer it from the fields then.
static onnx::AttributeProto::AttributeType
getEffectiveType(const onnx::AttributeProto &attr) {
  if (attr.type() != onnx::AttributeProto::UNDEFINED)
    return attr.type();
  if (attr.has_f())
    return onnx::AttributeProto::FLOAT;
  if (attr.has_i())
    return onnx::AttributeProto::INT;
  if (attr.has_s())
    return onnx::AttributeProto::STRING;
  if (attr.has_t())
    return onnx::AttributeProto::TENSOR;
  if (attr.floats_size())
    return onnx::AttributeProto::FLOATS;
  if (attr.ints_size())
    return onnx::AttributeProto::INTS;
  if (attr.strings_size())
    return onnx::AttributeProto::STRINGS;
  return onnx::AttributeProto::UNDEFINED;
}

const onnx::AttributeProto *
NodeImporter::getTypedAttr(StringRef name,
                           onnx::AttributeProto::AttributeType type) {
  const onnx::AttributeProto *attr = findAttr(name);
  if (!attr)
    return nullptr;
  onnx::AttributeProto::AttributeType actual = getEffectiveType(*attr);
  // An empty list is stored with no field set; accept it for list types.
  bool emptyList = actual == onnx::AttributeProto::UNDEFINED &&
                   (type == onnx::AttributeProto::INTS ||
                    type == onnx::AttributeProto::FLOATS ||
                    type == onnx::AttributeProto::STRINGS);
  if (actual != type && !emptyList) {
    (void)(emitError() << "attribute '" << name << "' must be a "
                       << getAttrTypeName(type) << ", got a "
                       << getAttrTypeName(actual));
    return reinterpret_cast<const onnx::AttributeProto *>(-1);
  }
  return attr;
}

static bool isBad(const onnx::AttributeProto *attr) {
  return attr == reinterpret_cast<const onnx::AttributeProto *>(-1);
}

FailureOr<int64_t> NodeImporter::getInt(StringRef name,
                                        std::optional<int64_t> defaultValue) {
  const onnx::AttributeProto *attr =
      getTypedAttr(name, onnx::AttributeProto::INT);
  if (isBad(attr))
    return failure();
  if (attr)
    return attr->i();
  if (defaultValue)
    return *defaultValue;
  return emitError() << "required attribute '" << name << "' is missing";
}

FailureOr<double> NodeImporter::getFloat(StringRef name,
                                         std::optional<double> defaultValue) {
  const onnx::AttributeProto *attr =
      getTypedAttr(name, onnx::AttributeProto::FLOAT);
  if (isBad(attr))
    return failure();
  if (attr)
    return static_cast<double>(attr->f());
  if (defaultValue)
    return *defaultValue;
  return emitError() << "required attribute '" << name << "' is missing";
}

FailureOr<std::string>
NodeImporter::getString(StringRef name, std::optional<StringRef> defaultValue) {
  const onnx::AttributeProto *attr =
      getTypedAttr(name, onnx::AttributeProto::STRING);
  if (isBad(attr))
    return failure();
  if (attr)
    return attr->s();
  if (defaultValue)
    return defaultValue->str();
  return emitError() << "required attribute '" << name << "' is missing";
}

FailureOr<SmallVector<int64_t>>
NodeImporter::getInts(StringRef name,
                      std::optional<ArrayRef<int64_t>> defaultValue) {
  const onnx::AttributeProto *attr =
      getTypedAttr(name, onnx::AttributeProto::INTS);
  if (isBad(attr))
    return failure();
  if (attr)
    return SmallVector<int64_t>(attr->ints().begin(), attr->ints().end());
  if (defaultValue)
    return SmallVector<int64_t>(defaultValue->begin(), defaultValue->end());
  return emitError() << "required attribute '" << name << "' is missing";
}

FailureOr<SmallVector<double>>
NodeImporter::getFloats(StringRef name,
                        std::optional<ArrayRef<double>> defaultValue) {
  const onnx::AttributeProto *attr =
      getTypedAttr(name, onnx::AttributeProto::FLOATS);
  if (isBad(attr))
    return failure();
  if (attr)
    return SmallVector<double>(attr->floats().begin(), attr->floats().end());
  if (defaultValue)
    return SmallVector<double>(defaultValue->begin(), defaultValue->end());
  return emitError() << "required attribute '" << name << "' is missing";
}

FailureOr<DenseElementsAttr> NodeImporter::getTensor(StringRef name) {
  const onnx::AttributeProto *attr =
      getTypedAttr(name, onnx::AttributeProto::TENSOR);
  if (isBad(attr))
    return failure();
  if (!attr)
    return emitError() << "required attribute '" << name << "' is missing";
  return convertTensorProto(getContext(), attr->t(), [&]() {
    InFlightDiagnostic diag = emitError();
    diag << "attribute '" << name << "': ";
    return diag;
  });
}

LogicalResult NodeImporter::checkKnownAttrs(ArrayRef<StringRef> known) {
  for (const onnx::AttributeProto &attr : node.attribute())
    if (!llvm::is_contained(known, StringRef(attr.name())))
      return emitError() << "unknown attribute '" << attr.name() << "' for "
                         << node.op_type() << " at opset " << opset;
  return success();
}

Value NodeImporter::createConstant(DenseElementsAttr value) {
  return ConstantOp::create(builder, loc, value);
}

Value NodeImporter::createI64Constant(ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get({static_cast<int64_t>(values.size())},
                                    builder.getI64Type());
  return createConstant(DenseElementsAttr::get(type, values));
}

Value NodeImporter::createScalar(Type elementType, double value) {
  auto type = RankedTensorType::get({}, elementType);
  if (auto floatType = dyn_cast<FloatType>(elementType)) {
    APFloat f(value);
    bool losesInfo;
    f.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven,
              &losesInfo);
    return createConstant(DenseElementsAttr::get(type, f));
  }
  auto intType = cast<IntegerType>(elementType);
  APInt i(intType.getWidth(), static_cast<int64_t>(value),
          /*isSigned=*/!intType.isUnsigned(), /*implicitTrunc=*/true);
  return createConstant(DenseElementsAttr::get(type, i));
}

const OpImportRegistry &mlir::weft::onnx_import::getOpImportRegistry() {
  static const OpImportRegistry registry = [] {
    OpImportRegistry r;
    registerCoreImporters(r);
    registerElementwiseImporters(r);
    registerLinalgImporters(r);
    registerConvPoolNormImporters(r);
    registerReduceImporters(r);
    registerShapeImporters(r);
    return r;
  }();
  return registry;
}
