//===- Importer.cpp - ONNX model importer entry points ---------------------===//
//
// Reads a model (binary or textual), checks it, imports its graph and runs
// ONNX's own checker and shape inference where ONNX knows the opset. No
// exception thrown by protobuf or ONNX leaves this file.
//
//===----------------------------------------------------------------------===//

#include "weft/Import/ONNX/Importer.h"

#include "GraphImporter.h"

#include "weft/WeftDialect.h"
#include "weft/WeftLimits.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <onnx/checker.h>
#include <onnx/defs/parser.h>
#include <onnx/shape_inference/implementation.h>

#include <limits>

using namespace mlir;
using namespace mlir::weft;
using namespace mlir::weft::onnx_import;

/// The newest opset that ONNX 1.12's checker and shape inference know.
static constexpr int64_t kOnnxLibraryMaxOpset = 17;

void mlir::weft::registerOnnxImportDialects(DialectRegistry &registry) {
  registry.insert<WeftDialect, func::FuncDialect, tensor::TensorDialect>();
}

bool mlir::weft::parseInputShapeSpec(StringRef spec, std::string &name,
                                     SmallVectorImpl<int64_t> &shape,
                                     std::string &error) {
  size_t eq = spec.rfind('=');
  if (eq == StringRef::npos || eq == 0) {
    error = "expected NAME=D0xD1x... (for example input=1x3x224x224), got '" +
            spec.str() + "'";
    return false;
  }
  name = spec.substr(0, eq).str();
  StringRef dims = spec.substr(eq + 1);
  shape.clear();
  if (dims.empty() || dims == "scalar")
    return true; // A scalar.
  SmallVector<StringRef> parts;
  dims.split(parts, 'x');
  for (StringRef part : parts) {
    StringRef digits = part.trim();
    uint64_t d;
    bool isNumber = !digits.empty() && llvm::all_of(digits, llvm::isDigit);
    if (!isNumber) {
      error = "dimension '" + part.str() + "' of '" + spec.str() +
              "' is not a non-negative integer";
      return false;
    }
    // Too many digits for uint64_t is too large as well.
    if (digits.getAsInteger(10, d) || d > static_cast<uint64_t>(kMaxDimSize)) {
      error = "dimension '" + part.str() + "' of '" + spec.str() +
              "' is too large: a dimension is at most " +
              std::to_string(kMaxDimSize);
      return false;
    }
    shape.push_back(static_cast<int64_t>(d));
  }
  return true;
}

/// Runs ONNX's checker and strict shape inference on a copy of the model.
/// A model read from a binary file is checked through its path, so that ONNX
/// knows the folder its external data lives in.
static LogicalResult runOnnxChecks(MLIRContext *context,
                                   const onnx::ModelProto &model,
                                   const ModelSource &source) {
  Location loc = FileLineColLoc::get(context, source.path, 0, 0);
  std::string stage = "checker";
  try {
    if (source.canReferToModelFile)
      onnx::checker::check_model(source.path);
    else
      onnx::checker::check_model(model);
    stage = "shape inference";
    onnx::ModelProto copy(model);
    onnx::ShapeInferenceOptions options(/*check_type_val=*/true,
                                        /*strict_mode_val=*/1,
                                        /*data_prop_val=*/false);
    onnx::shape_inference::InferShapes(copy,
                                       onnx::OpSchemaRegistry::Instance(),
                                       options);
  } catch (const std::exception &e) {
    return mlir::emitError(loc) << "ONNX " << stage
                                << " rejected the model: " << e.what();
  } catch (...) {
    return mlir::emitError(loc) << "ONNX " << stage
                                << " rejected the model (unknown error)";
  }
  return success();
}

static int64_t getDefaultOpset(const onnx::ModelProto &model) {
  for (const onnx::OperatorSetIdProto &id : model.opset_import())
    if (id.domain().empty() || id.domain() == "ai.onnx")
      return id.version();
  return 0;
}

static OwningOpRef<ModuleOp> importModel(MLIRContext *context,
                                         const onnx::ModelProto &model,
                                         const ModelSource &source,
                                         const OnnxImportOptions &options,
                                         ImportedTensors *tensors) {
  context->loadDialect<WeftDialect, func::FuncDialect,
                       tensor::TensorDialect>();
  Location loc = FileLineColLoc::get(context, source.path, 0, 0);
  if (!model.has_graph()) {
    mlir::emitError(loc) << "not an ONNX model: it has no graph";
    return nullptr;
  }
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  GraphImporter importer(context, model, source, options);
  ImportedTensors found;
  if (failed(importer.importInto(*module, tensors ? &found : nullptr)))
    return nullptr;
  // The dialect's verifiers are the source of truth for types; ONNX's own
  // checks run after weft has checked arity and attributes itself, since its
  // shape inference can crash on malformed nodes.
  if (failed(mlir::verify(*module)))
    return nullptr;
  if (options.runOnnxChecker && getDefaultOpset(model) <= kOnnxLibraryMaxOpset &&
      failed(runOnnxChecks(context, model, source)))
    return nullptr;
  if (tensors)
    *tensors = std::move(found);
  return module;
}

/// Parses a binary ModelProto; protobuf parsing does not throw, but stay safe.
static bool parseBinaryModel(StringRef bytes, onnx::ModelProto &model) {
  try {
    return model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
  } catch (...) {
    return false;
  }
}

OwningOpRef<ModuleOp>
mlir::weft::importOnnxBytes(MLIRContext *context, StringRef bytes,
                            StringRef bufferName,
                            const OnnxImportOptions &options,
                            ImportedTensors *tensors) {
  Location loc = FileLineColLoc::get(context, bufferName, 0, 0);
  if (bytes.empty()) {
    mlir::emitError(loc) << "not an ONNX model: the input is empty";
    return nullptr;
  }
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    mlir::emitError(loc) << "model is larger than 2 GiB; store its weights "
                            "as ONNX external data";
    return nullptr;
  }
  onnx::ModelProto model;
  if (!parseBinaryModel(bytes, model)) {
    mlir::emitError(loc) << "not an ONNX model: the protobuf cannot be "
                            "parsed (truncated or not a ModelProto)";
    return nullptr;
  }
  ModelSource source;
  source.path = bufferName.str();
  return importModel(context, model, source, options, tensors);
}

OwningOpRef<ModuleOp>
mlir::weft::importOnnxFile(MLIRContext *context, StringRef path,
                           const OnnxImportOptions &options,
                           ImportedTensors *tensors) {
  Location loc = FileLineColLoc::get(context, path, 0, 0);
  // Memory-mapped: weights referred to in place are never copied.
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer) {
    mlir::emitError(loc) << "cannot read model '" << path
                         << "': " << buffer.getError().message();
    return nullptr;
  }
  StringRef bytes = (*buffer)->getBuffer();
  if (bytes.empty()) {
    mlir::emitError(loc) << "not an ONNX model: '" << path
                         << "' is empty";
    return nullptr;
  }

  ModelSource source;
  source.path = path.str();
  SmallString<256> dir = llvm::sys::path::parent_path(path);
  source.directory = dir.empty() ? "." : std::string(dir);
  source.fileName = llvm::sys::path::filename(path).str();

  onnx::ModelProto model;
  if (path.ends_with(".onnxtext")) {
    std::string text = bytes.str();
    try {
      onnx::OnnxParser parser(text.c_str());
      onnx::Common::Status status = parser.Parse(model);
      if (!status.IsOK()) {
        mlir::emitError(loc) << "cannot parse ONNX textual syntax: "
                             << status.ErrorMessage();
        return nullptr;
      }
    } catch (const std::exception &e) {
      mlir::emitError(loc) << "cannot parse ONNX textual syntax: "
                           << e.what();
      return nullptr;
    }
    return importModel(context, model, source, options, tensors);
  }

  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    mlir::emitError(loc) << "model '" << path
                         << "' is larger than 2 GiB; store its weights as "
                            "ONNX external data";
    return nullptr;
  }
  if (!parseBinaryModel(bytes, model)) {
    mlir::emitError(loc) << "not an ONNX model: '" << path
                         << "' cannot be parsed as a ModelProto (truncated "
                            "or another format; textual models need the "
                            ".onnxtext extension)";
    return nullptr;
  }
  source.bytes = bytes;
  source.canReferToModelFile = true;
  // The buffer must outlive the import: GraphImporter reads weights from it.
  return importModel(context, model, source, options, tensors);
}
