//===- GraphImporter.h - Import of one ONNX graph ---------------*- C++ -*-===//
//
// Turns the main graph of a ModelProto into a func.func of weft ops: graph
// inputs become arguments, initializers become constants or weights, nodes go
// through the op handlers, graph outputs are returned.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_LIB_IMPORT_ONNX_GRAPHIMPORTER_H
#define WEFT_LIB_IMPORT_ONNX_GRAPHIMPORTER_H

#include "NodeImporter.h"
#include "WeightLocator.h"

#include "weft/Import/ONNX/Importer.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::weft::onnx_import {

/// Where the bytes of the model and its weights come from.
struct ModelSource {
  /// The serialized model (binary protobuf); empty for textual models.
  StringRef bytes;
  /// The model's file name as given (for locations and weft.weight), or a
  /// buffer name.
  std::string path;
  /// Folder that external data and weft.weight paths are relative to; empty
  /// when the model has no file (weights are then written inline).
  std::string directory;
  /// File name of the model inside `directory` (for in-place weights).
  std::string fileName;
  /// True when the model was parsed from a binary file whose bytes weft.weight
  /// may refer to.
  bool canReferToModelFile = false;
};

class GraphImporter {
public:
  GraphImporter(MLIRContext *context, const onnx::ModelProto &model,
                const ModelSource &source, const OnnxImportOptions &options);

  /// Imports the graph into `module`. Reports errors and returns failure on
  /// bad input. Fills `tensors` when given.
  LogicalResult importInto(ModuleOp module, ImportedTensors *tensors = nullptr);

  /// The value bound to an ONNX name, creating initializers on first use.
  /// Null when the name is unknown; reports an error when the name is known
  /// but cannot be produced (an unsupported optional output, a bad
  /// initializer).
  Value lookup(StringRef name, const onnx::NodeProto *user);

  /// Binds an ONNX name to a value (a node's output).
  void bind(StringRef name, Value value) { values[name] = value; }

  /// Reports an error about the node, naming it.
  InFlightDiagnostic emitNodeError(const onnx::NodeProto &node);
  /// Describes a node for diagnostics: "node 'name' (OpType)".
  static std::string describe(const onnx::NodeProto &node);

  int64_t getInlineLimitBytes() const { return options.inlineLimitBytes; }

private:
  LogicalResult checkOpsetsAndDomains();
  LogicalResult checkNodesSupported();
  LogicalResult createFunction(ModuleOp module);
  FailureOr<RankedTensorType> convertValueInfoType(
      const onnx::ValueInfoProto &info, bool isInput);
  LogicalResult importNodes();
  LogicalResult createReturn();
  FailureOr<Value> materializeInitializer(const onnx::TensorProto &tensor);
  Location getNodeLoc(const onnx::NodeProto &node);
  void collectTensors(const llvm::SmallPtrSetImpl<Operation *> &erased,
                      ImportedTensors &tensors);

  MLIRContext *context;
  const onnx::ModelProto &model;
  const onnx::GraphProto &graph;
  const ModelSource &source;
  const OnnxImportOptions &options;
  OpBuilder builder;
  func::FuncOp function;
  /// Insertion point for initializers: after the last one created, so they
  /// stay together at the top of the function in order of first use.
  OpBuilder::InsertPoint initializerInsertPoint;
  int64_t opset = 0;

  /// ONNX value names bound so far.
  llvm::StringMap<Value> values;
  /// Initializers by name, created lazily on first use.
  llvm::StringMap<const onnx::TensorProto *> initializers;
  /// Outputs that a handler declared but did not produce, with the node.
  llvm::StringMap<const onnx::NodeProto *> unproducedOutputs;
  /// Byte ranges of initializer data inside the model file.
  llvm::StringMap<FileRange> dataInModelFile;
};

} // namespace mlir::weft::onnx_import

#endif // WEFT_LIB_IMPORT_ONNX_GRAPHIMPORTER_H
