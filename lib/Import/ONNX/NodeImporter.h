//===- NodeImporter.h - What an ONNX op handler sees ------------*- C++ -*-===//
//
// The interface between the importer's core (model, graph, values, weights)
// and the per-family op handlers (ImportElementwise.cpp, ...). A handler gets
// a NodeImporter for one ONNX node, reads its inputs and attributes, builds
// weft ops and sets the node's outputs.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_LIB_IMPORT_ONNX_NODEIMPORTER_H
#define WEFT_LIB_IMPORT_ONNX_NODEIMPORTER_H

#include "weft/WeftOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringMap.h"

#include <onnx/onnx_pb.h>

#include <optional>
#include <string>

namespace mlir::weft::onnx_import {

class GraphImporter;

/// One ONNX node being imported. Every accessor that can fail on bad input
/// reports a diagnostic that names the node and returns failure.
class NodeImporter {
public:
  NodeImporter(GraphImporter &graph, const onnx::NodeProto &node, int64_t opset,
               Location loc, OpBuilder &builder);

  const onnx::NodeProto &getNode() const { return node; }
  StringRef getOpType() const { return node.op_type(); }
  /// The model's opset for the default ONNX domain.
  int64_t getOpset() const { return opset; }
  Location getLoc() const { return loc; }
  OpBuilder &getBuilder() { return builder; }
  MLIRContext *getContext() const { return builder.getContext(); }

  //===--------------------------------------------------------------------===//
  // Inputs and outputs
  //===--------------------------------------------------------------------===//

  /// Number of inputs listed by the node, including empty (omitted) ones.
  unsigned getNumInputs() const { return node.input_size(); }
  /// True when input `i` is listed with a non-empty name.
  bool hasInput(unsigned i) const;
  /// Input `i`, or a null Value when it is omitted.
  Value getInput(unsigned i) const;
  /// Type of input `i` (which must be present).
  RankedTensorType getInputType(unsigned i) const;
  /// Values of input `i` when it is a constant integer tensor (after
  /// folding), else nullopt.
  std::optional<SmallVector<int64_t>> getConstantInts(unsigned i) const;
  /// Values of input `i` when it is a constant floating-point tensor.
  std::optional<SmallVector<double>> getConstantFloats(unsigned i) const;
  /// Like getConstantInts, but reports an error naming `what` when the input
  /// is not a constant (weft needs it known at compile time).
  FailureOr<SmallVector<int64_t>> requireConstantInts(unsigned i,
                                                      StringRef what);

  /// Reports the first of inputs 0 .. count-1 that is missing or omitted
  /// (for inputs an opset makes required beyond the registry's minimum).
  LogicalResult requireInputs(unsigned count);

  unsigned getNumOutputs() const { return node.output_size(); }
  /// True when output `i` is listed with a non-empty name.
  bool hasOutput(unsigned i) const;
  /// Binds output `i` of the node to `value`. Outputs left unbound (optional
  /// ones such as Dropout's mask) are an error only when something uses them.
  void setOutput(unsigned i, Value value);

  //===--------------------------------------------------------------------===//
  // Attributes. A missing attribute takes `defaultValue` when one is given
  // and is an error otherwise; an attribute of the wrong type is an error.
  //===--------------------------------------------------------------------===//

  bool hasAttr(StringRef name) const { return findAttr(name) != nullptr; }
  FailureOr<int64_t> getInt(StringRef name,
                            std::optional<int64_t> defaultValue = {});
  FailureOr<double> getFloat(StringRef name,
                             std::optional<double> defaultValue = {});
  FailureOr<std::string> getString(StringRef name,
                                   std::optional<StringRef> defaultValue = {});
  FailureOr<SmallVector<int64_t>>
  getInts(StringRef name, std::optional<ArrayRef<int64_t>> defaultValue = {});
  FailureOr<SmallVector<double>>
  getFloats(StringRef name, std::optional<ArrayRef<double>> defaultValue = {});
  /// A tensor attribute, converted to a dense attribute.
  FailureOr<DenseElementsAttr> getTensor(StringRef name);
  /// Errors on any attribute not in `known`: ONNX nodes must not carry
  /// attributes their op does not define.
  LogicalResult checkKnownAttrs(ArrayRef<StringRef> known);

  //===--------------------------------------------------------------------===//
  // Building
  //===--------------------------------------------------------------------===//

  /// Creates an op at the node's location and folds it when its operands are
  /// constants (the dialect's folders decide, not the importer). Returns the
  /// single result.
  template <typename OpTy, typename... Args> Value create(Args &&...args) {
    return builder.createOrFold<OpTy>(loc, std::forward<Args>(args)...);
  }
  /// Creates an op at the node's location without folding.
  template <typename OpTy, typename... Args> OpTy createOp(Args &&...args) {
    return OpTy::create(builder, loc, std::forward<Args>(args)...);
  }
  /// Runs OpTy's type inference on `operands` and `properties`. On failure,
  /// reports inference's message as an error of the node. The inferring
  /// builders that ODS generates abort the process instead, so every op whose
  /// inference a malformed model can make fail is built through this.
  template <typename OpTy>
  FailureOr<SmallVector<Type>>
  inferResultTypes(ValueRange operands,
                   const typename OpTy::Properties &properties) {
    MLIRContext *context = getContext();
    SmallVector<Type> types;
    std::string message;
    LogicalResult inferred = failure();
    {
      ScopedDiagnosticHandler capture(context, [&](Diagnostic &diag) {
        if (message.empty())
          message = diag.str();
        return success();
      });
      typename OpTy::Adaptor adaptor(operands, DictionaryAttr::get(context),
                                     properties);
      inferred = OpTy::inferReturnTypes(context, loc, adaptor, types);
    }
    if (failed(inferred))
      return emitError() << (message.empty() ? "invalid operands" : message);
    return types;
  }

  /// Builds an OpTy from operands and inherent attributes with the result
  /// types inference gives, reporting failures (of inference, of the
  /// attributes, of the verifier) as errors of the node.
  template <typename OpTy>
  FailureOr<OpTy> buildChecked(ValueRange operands,
                               ArrayRef<NamedAttribute> attrs) {
    MLIRContext *context = getContext();
    typename OpTy::Properties properties;
    OperationName(OpTy::getOperationName(), context)
        .populateDefaultProperties(&properties);
    if (failed(OpTy::setPropertiesFromAttr(properties,
                                           DictionaryAttr::get(context, attrs),
                                           [&] { return emitError(); })))
      return failure();
    FailureOr<SmallVector<Type>> types =
        inferResultTypes<OpTy>(operands, properties);
    if (failed(types))
      return failure();
    OpTy op = OpTy::create(builder, loc, *types, operands, properties);
    std::string message;
    LogicalResult verified = failure();
    {
      ScopedDiagnosticHandler capture(context, [&](Diagnostic &diag) {
        if (message.empty())
          message = diag.str();
        return success();
      });
      verified = mlir::verify(op);
    }
    if (succeeded(verified))
      return op;
    op->erase();
    return emitError() << message;
  }

  /// A weft.constant holding `value`.
  Value createConstant(DenseElementsAttr value);
  /// A weft.constant of a 1-D i64 tensor.
  Value createI64Constant(ArrayRef<int64_t> values);
  /// A 0-D weft.constant of `elementType` holding `value`.
  Value createScalar(Type elementType, double value);

  /// Reports an error prefixed with the node's name and op type.
  InFlightDiagnostic emitError();

private:
  const onnx::AttributeProto *findAttr(StringRef name) const;
  const onnx::AttributeProto *
  getTypedAttr(StringRef name, onnx::AttributeProto::AttributeType type);

  GraphImporter &graph;
  const onnx::NodeProto &node;
  int64_t opset;
  Location loc;
  OpBuilder &builder;
};

/// Imports one node; returns failure after reporting an error.
using NodeImportFn = LogicalResult (*)(NodeImporter &);

/// How an ONNX op type is imported.
struct OpImportSpec {
  /// First opset of the default domain that has the op.
  int64_t sinceOpset;
  /// Input and output counts over every opset (-1: no upper bound). Handlers
  /// check narrower, opset-specific ranges themselves.
  int minInputs, maxInputs;
  int minOutputs, maxOutputs;
  NodeImportFn import;
};

/// Maps ONNX op types of the default domain to their handlers.
class OpImportRegistry {
public:
  void add(StringRef opType, OpImportSpec spec) { specs[opType] = spec; }
  const OpImportSpec *lookup(StringRef opType) const {
    auto it = specs.find(opType);
    return it == specs.end() ? nullptr : &it->second;
  }

private:
  llvm::StringMap<OpImportSpec> specs;
};

/// The registry with every supported op type.
const OpImportRegistry &getOpImportRegistry();

// One registration function per op family, each in its own file.
void registerCoreImporters(OpImportRegistry &registry); // ImportCore.cpp
void registerElementwiseImporters(
    OpImportRegistry &registry); // ImportElementwise.cpp
void registerLinalgImporters(OpImportRegistry &registry); // ImportLinalg.cpp
void registerConvPoolNormImporters(
    OpImportRegistry &registry); // ImportConvPoolNorm.cpp
void registerReduceImporters(OpImportRegistry &registry); // ImportReduce.cpp
void registerShapeImporters(OpImportRegistry &registry);  // ImportShape.cpp

/// ONNX float attributes are single precision; returns the shortest decimal
/// that rounds to the same float (0.001, not 0.0010000000474974513), so the
/// IR reads as the model was written and rounds back to the same float.
double toShortestFloatDecimal(double value);

/// Converts an ONNX data type to an MLIR element type; null when weft does
/// not support it.
Type convertOnnxDataType(MLIRContext *context, int32_t dataType);
/// The ONNX name of a data type ("FLOAT", "INT64", ...), for diagnostics.
StringRef getOnnxDataTypeName(int32_t dataType);

/// Converts a TensorProto with its data in the proto (not external) to a
/// dense attribute. Reports errors through `emitError`.
FailureOr<DenseElementsAttr>
convertTensorProto(MLIRContext *context, const onnx::TensorProto &tensor,
                   llvm::function_ref<InFlightDiagnostic()> emitError);

} // namespace mlir::weft::onnx_import

#endif // WEFT_LIB_IMPORT_ONNX_NODEIMPORTER_H
