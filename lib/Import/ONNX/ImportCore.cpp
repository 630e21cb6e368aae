//===- ImportCore.cpp - Import of ONNX Constant and Identity ---------------===//
//
// The ops that carry values rather than compute: Constant (every attribute
// form) and Identity.
//
//===----------------------------------------------------------------------===//

#include "NodeImporter.h"

using namespace mlir;
using namespace mlir::weft;
using namespace mlir::weft::onnx_import;

/// Constant: exactly one of value, value_float(s), value_int(s) (opset 12+),
/// sparse_value and value_string(s) (not supported: no sparse or string
/// tensors in weft).
static LogicalResult importConstant(NodeImporter &node) {
  if (failed(node.checkKnownAttrs({"value", "value_float", "value_floats",
                                   "value_int", "value_ints", "value_string",
                                   "value_strings", "sparse_value"})))
    return failure();
  if (node.getNode().attribute_size() != 1)
    return node.emitError() << "expected exactly one value attribute, got "
                            << node.getNode().attribute_size();
  StringRef name = node.getNode().attribute(0).name();
  if (name != "value" && node.getOpset() < 12)
    return node.emitError() << "attribute '" << name
                            << "' needs opset 12 or later";
  Builder &b = node.getBuilder();
  DenseElementsAttr value;
  if (name == "value") {
    FailureOr<DenseElementsAttr> tensor = node.getTensor("value");
    if (failed(tensor))
      return failure();
    value = *tensor;
  } else if (name == "value_float") {
    FailureOr<double> f = node.getFloat(name);
    if (failed(f))
      return failure();
    value = DenseElementsAttr::get(RankedTensorType::get({}, b.getF32Type()),
                                   static_cast<float>(*f));
  } else if (name == "value_floats") {
    FailureOr<SmallVector<double>> fs = node.getFloats(name);
    if (failed(fs))
      return failure();
    SmallVector<float> values(fs->begin(), fs->end());
    value = DenseElementsAttr::get(
        RankedTensorType::get({int64_t(values.size())}, b.getF32Type()),
        ArrayRef<float>(values));
  } else if (name == "value_int") {
    FailureOr<int64_t> i = node.getInt(name);
    if (failed(i))
      return failure();
    value = DenseElementsAttr::get(RankedTensorType::get({}, b.getI64Type()),
                                   *i);
  } else if (name == "value_ints") {
    FailureOr<SmallVector<int64_t>> is = node.getInts(name);
    if (failed(is))
      return failure();
    value = DenseElementsAttr::get(
        RankedTensorType::get({int64_t(is->size())}, b.getI64Type()),
        ArrayRef<int64_t>(*is));
  } else {
    return node.emitError() << "attribute '" << name
                            << "' is not supported (weft has no string or "
                               "sparse tensors)";
  }
  node.setOutput(0, node.createConstant(value));
  return success();
}

/// Identity forwards its input; no op is needed.
static LogicalResult importIdentity(NodeImporter &node) {
  if (failed(node.checkKnownAttrs({})))
    return failure();
  node.setOutput(0, node.getInput(0));
  return success();
}

void mlir::weft::onnx_import::registerCoreImporters(
    OpImportRegistry &registry) {
  registry.add("Constant", {1, 0, 0, 1, 1, importConstant});
  registry.add("Identity", {1, 1, 1, 1, 1, importIdentity});
}
