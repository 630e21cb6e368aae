//===- Importer.h - ONNX model importer --------------------------*- C++ -*-===//
//
// Public entry points of the ONNX importer: turn a .onnx (binary protobuf) or
// .onnxtext (ONNX textual syntax) model into a module of the weft dialect.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_IMPORT_ONNX_IMPORTER_H
#define WEFT_IMPORT_ONNX_IMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <string>

namespace mlir::weft {

/// Options of an import.
struct OnnxImportOptions {
  /// Fixed shapes of graph inputs, by input name. A fixed shape must have the
  /// input's rank and agree with its static dimensions; it replaces symbolic
  /// (dynamic) ones.
  llvm::StringMap<SmallVector<int64_t>> inputShapes;
  /// Divides dimension 0 (the batch) of every graph input, and of the
  /// graph outputs the model declares, by this: the model of one
  /// microbatch (weftc --microbatches). Applied after inputShapes.
  int64_t batchDivisor = 1;
  /// Tensors of at most this many bytes are written into the IR as
  /// weft.constant; larger initializers become weft.weight referring to the
  /// bytes in the model or external-data file.
  int64_t inlineLimitBytes = 1024;
  /// Run ONNX's checker and shape inference after the import when the model's
  /// opset is one that ONNX 1.12 knows (<= 17).
  bool runOnnxChecker = true;
  /// Name of the imported function.
  std::string functionName = "main";
};

/// The model's tensors as imported, by ONNX name: what lets a caller attach
/// something to a tensor the user names (weftc's --sharding-file).
struct ImportedTensors {
  /// Graph inputs, initializers and node outputs that the imported function
  /// has a value for. Several names may share one value (an Identity's
  /// output is its input).
  llvm::StringMap<Value> values;
  /// The model's other tensor names: those no graph output depends on (the
  /// import drops their ops), initializers no node uses, and optional
  /// outputs weft does not produce.
  llvm::StringSet<> dropped;
};

/// Registers the dialects an imported module uses.
void registerOnnxImportDialects(DialectRegistry &registry);

/// Imports the model in `path`: binary ONNX, or ONNX textual syntax when the
/// name ends in ".onnxtext". Errors go to the context's diagnostic handler;
/// returns null after any error. Never throws. When `tensors` is given, it
/// receives the model's tensors (untouched after an error).
OwningOpRef<ModuleOp> importOnnxFile(MLIRContext *context, StringRef path,
                                     const OnnxImportOptions &options,
                                     ImportedTensors *tensors = nullptr);

/// Imports a serialized binary ModelProto held in memory. Weights are written
/// into the IR (there is no file for weft.weight to refer to) and external
/// data is refused. Used by the fuzz target and by tests. `tensors` as for
/// importOnnxFile.
OwningOpRef<ModuleOp> importOnnxBytes(MLIRContext *context, StringRef bytes,
                                      StringRef bufferName,
                                      const OnnxImportOptions &options,
                                      ImportedTensors *tensors = nullptr);

/// Parses one --input-shape value, "NAME=D0xD1x..." ("NAME=" alone for a
/// scalar). Returns false and sets `error` on malformed text.
bool parseInputShapeSpec(StringRef spec, std::string &name,
                         SmallVectorImpl<int64_t> &shape, std::string &error);

} // namespace mlir::weft

#endif // WEFT_IMPORT_ONNX_IMPORTER_H
