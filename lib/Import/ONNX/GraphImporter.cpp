//===- GraphImporter.cpp - Import of one ONNX graph
//------------------------===//
//
// Checks a graph's opsets, domains, op types and arities before any op is
// built, then imports inputs, initializers and nodes in order.
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"

#include "weft/ModelFunction.h"
#include "weft/WeftLimits.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"

#include <onnx/defs/schema.h>

#include <cstring>
#include <map>

using namespace mlir;
using namespace mlir::weft;
using namespace mlir::weft::onnx_import;

/// Opsets of the default domain that weft imports. Models of older opsets
/// import too when every operator they use is defined as at kMinOpset (see
/// isUnchangedSinceOldOpset).
static constexpr int64_t kMinOpset = 7;
static constexpr int64_t kMaxOpset = 22;

/// True when ONNX defines `opType` at `opset` (< kMinOpset) exactly as at
/// kMinOpset, i.e. both opsets select the same schema version; the op then
/// imports with its opset-7 handling.
static bool isUnchangedSinceOldOpset(const std::string &opType, int64_t opset) {
  try {
    const onnx::OpSchema *old =
        onnx::OpSchemaRegistry::Schema(opType, static_cast<int>(opset), "");
    const onnx::OpSchema *base =
        onnx::OpSchemaRegistry::Schema(opType, kMinOpset, "");
    return old && base && old->SinceVersion() == base->SinceVersion();
  } catch (...) {
    return false;
  }
}

static bool isDefaultDomain(StringRef domain) {
  return domain.empty() || domain == "ai.onnx";
}

GraphImporter::GraphImporter(MLIRContext *context,
                             const onnx::ModelProto &model,
                             const ModelSource &source,
                             const OnnxImportOptions &options)
    : context(context), model(model), graph(model.graph()), source(source),
      options(options), builder(context) {}

std::string GraphImporter::describe(const onnx::NodeProto &node) {
  std::string name = node.name();
  if (name.empty() && node.output_size() > 0)
    name = node.output(0);
  return "node '" + name + "' (" + node.op_type() + ")";
}

InFlightDiagnostic GraphImporter::emitNodeError(const onnx::NodeProto &node) {
  InFlightDiagnostic diag = mlir::emitError(getNodeLoc(node));
  diag << describe(node) << ": ";
  return diag;
}

Location GraphImporter::getNodeLoc(const onnx::NodeProto &node) {
  // ONNX node names become locations; unnamed nodes are named after their op
  // type and first output so that every diagnostic can point at them.
  std::string name = node.name();
  if (name.empty())
    name = node.op_type() + ":" +
           (node.output_size() > 0 ? node.output(0) : std::string("?"));
  return NameLoc::get(StringAttr::get(context, name),
                      FileLineColLoc::get(context, source.path, 0, 0));
}

LogicalResult GraphImporter::checkOpsetsAndDomains() {
  Location loc = FileLineColLoc::get(context, source.path, 0, 0);
  bool found = false;
  for (const onnx::OperatorSetIdProto &id : model.opset_import()) {
    if (!isDefaultDomain(id.domain()))
      continue; // Declared domains are fine as long as no node uses them.
    if (found)
      return mlir::emitError(loc)
             << "model declares the default ONNX domain in opset_import "
                "more than once";
    found = true;
    opset = id.version();
  }
  if (!found)
    return mlir::emitError(loc)
           << "model declares no opset for the default ONNX domain "
              "(opset_import has no entry for domain '')";
  if (opset < 1 || opset > kMaxOpset)
    return mlir::emitError(loc)
           << "model uses opset " << opset
           << " of the default ONNX domain; weft supports opsets " << kMinOpset
           << " to " << kMaxOpset
           << " (and older ones for operators unchanged since)";
  return success();
}

LogicalResult GraphImporter::checkNodesSupported() {
  const OpImportRegistry &registry = getOpImportRegistry();
  struct Unsupported {
    int64_t count = 0;
    const onnx::NodeProto *first = nullptr;
    std::string reason;
  };
  llvm::MapVector<std::string, Unsupported, std::map<std::string, unsigned>>
      unsupported;
  llvm::StringSet<> declaredDomains;
  for (const onnx::OperatorSetIdProto &id : model.opset_import())
    declaredDomains.insert(id.domain());

  for (const onnx::NodeProto &node : graph.node()) {
    std::string key = node.op_type();
    std::string reason;
    if (!isDefaultDomain(node.domain())) {
      key = node.domain() + "::" + node.op_type();
      reason = declaredDomains.contains(node.domain())
                   ? "domain '" + node.domain() + "' is not supported"
                   : "domain '" + node.domain() +
                         "' is not declared in opset_import and not "
                         "supported";
    } else if (const OpImportSpec *spec = registry.lookup(node.op_type())) {
      if (opset < kMinOpset && !isUnchangedSinceOldOpset(key, opset)) {
        reason = "its opset-" + std::to_string(opset) +
                 " definition differs from opset " + std::to_string(kMinOpset) +
                 "'s; weft supports opsets " + std::to_string(kMinOpset) +
                 " to " + std::to_string(kMaxOpset) +
                 " (convert the model with onnx.version_converter)";
      } else if (spec->sinceOpset <= std::max(opset, kMinOpset)) {
        continue;
      } else {
        reason = "not an operator of opset " + std::to_string(opset) +
                 " (introduced in opset " + std::to_string(spec->sinceOpset) +
                 ")";
      }
    }
    Unsupported &entry = unsupported[key];
    if (entry.count++ == 0) {
      entry.first = &node;
      entry.reason = reason;
    }
  }
  if (!unsupported.empty()) {
    InFlightDiagnostic diag =
        mlir::emitError(FileLineColLoc::get(context, source.path, 0, 0));
    diag << "model uses " << unsupported.size() << " unsupported operator type"
         << (unsupported.size() > 1 ? "s" : "") << ":";
    for (auto &[key, entry] : unsupported) {
      diag << "\n  " << key << ": " << entry.count << " node"
           << (entry.count > 1 ? "s" : "") << ", first "
           << describe(*entry.first);
      if (!entry.reason.empty())
        diag << "; " << entry.reason;
    }
    return failure();
  }

  // Arity, and names that must be unique in SSA form.
  llvm::StringSet<> defined;
  for (const onnx::ValueInfoProto &input : graph.input())
    defined.insert(input.name());
  for (const onnx::TensorProto &init : graph.initializer())
    defined.insert(init.name());
  for (const onnx::NodeProto &node : graph.node()) {
    const OpImportSpec *spec = registry.lookup(node.op_type());
    auto checkCount = [&](int count, int lo, int hi,
                          StringRef what) -> LogicalResult {
      if (count >= lo && (hi < 0 || count <= hi))
        return success();
      InFlightDiagnostic diag = emitNodeError(node);
      diag << "expected ";
      if (hi < 0)
        diag << "at least " << lo;
      else if (lo == hi)
        diag << lo;
      else
        diag << lo << " to " << hi;
      diag << " " << what << ", got " << count;
      return diag;
    };
    if (failed(checkCount(node.input_size(), spec->minInputs, spec->maxInputs,
                          "inputs")) ||
        failed(checkCount(node.output_size(), spec->minOutputs,
                          spec->maxOutputs, "outputs")))
      return failure();
    // ONNX never lets a required input (one of the first minInputs) be
    // omitted; handlers read their types without checking.
    for (int i = 0, e = std::min(spec->minInputs, node.input_size()); i < e;
         ++i)
      if (node.input(i).empty())
        return emitNodeError(node)
               << "required input " << i << " is omitted (empty name)";
    for (const onnx::AttributeProto &attr : node.attribute())
      if (attr.type() == onnx::AttributeProto::GRAPH ||
          attr.type() == onnx::AttributeProto::GRAPHS)
        return emitNodeError(node) << "attribute '" << attr.name()
                                   << "' holds a subgraph, which weft does "
                                      "not support";
    for (const std::string &out : node.output()) {
      if (out.empty())
        continue;
      if (!defined.insert(out).second)
        return emitNodeError(node)
               << "output '" << out
               << "' is already defined by a graph input, an initializer or "
                  "an earlier node (ONNX graphs are in SSA form)";
    }
  }
  return success();
}

FailureOr<RankedTensorType>
GraphImporter::convertValueInfoType(const onnx::ValueInfoProto &info,
                                    bool isInput) {
  Location loc = FileLineColLoc::get(context, source.path, 0, 0);
  StringRef what = isInput ? "input" : "output";
  if (!info.has_type() || !info.type().has_tensor_type())
    return mlir::emitError(loc)
           << "graph " << what << " '" << info.name()
           << "' is not a tensor (sequence, map and optional values are not "
              "supported)";
  const onnx::TypeProto::Tensor &tensorType = info.type().tensor_type();
  Type elementType = convertOnnxDataType(context, tensorType.elem_type());
  if (!elementType)
    return mlir::emitError(loc)
           << "graph " << what << " '" << info.name() << "' has data type "
           << getOnnxDataTypeName(tensorType.elem_type())
           << ", which weft does not support (supported: FLOAT, FLOAT16, "
              "BFLOAT16, DOUBLE, BOOL, INT8, UINT8, INT32, INT64)";

  auto fixed = options.inputShapes.find(info.name());
  bool hasFixed = isInput && fixed != options.inputShapes.end();
  if (!tensorType.has_shape()) {
    if (hasFixed)
      return RankedTensorType::get(fixed->second, elementType);
    return mlir::emitError(loc)
           << "graph " << what << " '" << info.name()
           << "' has no shape (unknown rank); give one with --input-shape="
           << info.name() << "=D0xD1x...";
  }
  SmallVector<int64_t> shape;
  for (const onnx::TensorShapeProto::Dimension &dim :
       tensorType.shape().dim()) {
    if (dim.has_dim_value()) {
      if (dim.dim_value() < 0)
        return mlir::emitError(loc)
               << "graph " << what << " '" << info.name()
               << "' has negative dimension " << dim.dim_value();
      shape.push_back(dim.dim_value());
    } else {
      shape.push_back(ShapedType::kDynamic);
    }
  }
  if (hasFixed) {
    ArrayRef<int64_t> given = fixed->second;
    if (given.size() != shape.size())
      return mlir::emitError(loc)
             << "--input-shape " << info.name() << "=" << formatShape(given)
             << " has rank " << given.size() << " but the model declares '"
             << info.name() << "' with rank " << shape.size() << " ("
             << formatShape(shape) << ")";
    for (auto [i, dims] : llvm::enumerate(llvm::zip(shape, given))) {
      auto [declared, wanted] = dims;
      if (!ShapedType::isDynamic(declared) && declared != wanted)
        return mlir::emitError(loc)
               << "--input-shape " << info.name() << "=" << formatShape(given)
               << " disagrees with the model, which declares dimension " << i
               << " as " << declared << " (" << formatShape(shape) << ")";
    }
    shape.assign(given.begin(), given.end());
  }
  if (isInput && options.batchDivisor > 1) {
    if (shape.empty() || ShapedType::isDynamic(shape[0]) ||
        shape[0] % options.batchDivisor != 0)
      return mlir::emitError(loc)
             << "graph input '" << info.name() << "' (" << formatShape(shape)
             << ") has no batch in dimension 0 that " << options.batchDivisor
             << " microbatches divide";
    shape[0] /= options.batchDivisor;
  }
  // Sizes enter here; no later stage has to guard its arithmetic.
  if (std::optional<std::string> problem = checkTensorSize(shape, elementType))
    return mlir::emitError(loc)
           << "graph " << what << " '" << info.name() << "' ("
           << RankedTensorType::get(shape, elementType) << ") " << *problem
           << (hasFixed ? " (its shape is from --input-shape)" : "");
  return RankedTensorType::get(shape, elementType);
}

LogicalResult GraphImporter::createFunction(ModuleOp module) {
  llvm::StringSet<> initializerNames;
  for (const onnx::TensorProto &init : graph.initializer()) {
    if (init.name().empty())
      return mlir::emitError(FileLineColLoc::get(context, source.path, 0, 0))
             << "graph has an initializer without a name";
    if (!initializers.try_emplace(init.name(), &init).second)
      return mlir::emitError(FileLineColLoc::get(context, source.path, 0, 0))
             << "graph has two initializers named '" << init.name() << "'";
    initializerNames.insert(init.name());
  }

  // Inputs that are also initializers (models of IR version < 4 list every
  // weight as an input) are constants, not arguments.
  SmallVector<Type> argTypes;
  SmallVector<std::string> argNames;
  llvm::StringSet<> inputNames;
  for (const onnx::ValueInfoProto &input : graph.input()) {
    if (!inputNames.insert(input.name()).second)
      return mlir::emitError(FileLineColLoc::get(context, source.path, 0, 0))
             << "graph has two inputs named '" << input.name() << "'";
    if (initializerNames.contains(input.name()))
      continue;
    FailureOr<RankedTensorType> type = convertValueInfoType(input, true);
    if (failed(type))
      return failure();
    argTypes.push_back(*type);
    argNames.push_back(input.name());
  }
  for (const auto &entry : options.inputShapes) {
    if (inputNames.contains(entry.getKey()) &&
        !initializerNames.contains(entry.getKey()))
      continue;
    std::string list;
    for (const std::string &name : argNames)
      list += (list.empty() ? "" : ", ") + name;
    return mlir::emitError(FileLineColLoc::get(context, source.path, 0, 0))
           << "--input-shape names '" << entry.getKey()
           << "', which is not an input of the model (inputs: " << list << ")";
  }

  builder.setInsertionPointToEnd(module.getBody());
  auto type = builder.getFunctionType(argTypes, {});
  function = func::FuncOp::create(
      builder, FileLineColLoc::get(context, source.path, 0, 0),
      options.functionName, type);
  setModelFunction(function);
  Block *entry = function.addEntryBlock();
  for (auto [i, name] : llvm::enumerate(argNames)) {
    function.setArgAttr(i, "weft.name", builder.getStringAttr(name));
    values[name] = entry->getArgument(i);
  }
  builder.setInsertionPointToStart(entry);
  initializerInsertPoint = builder.saveInsertionPoint();
  return success();
}

FailureOr<Value>
GraphImporter::materializeInitializer(const onnx::TensorProto &tensor) {
  Location loc = NameLoc::get(StringAttr::get(context, tensor.name()),
                              FileLineColLoc::get(context, source.path, 0, 0));
  auto emitErr = [&]() {
    InFlightDiagnostic diag = mlir::emitError(loc);
    diag << "initializer '" << tensor.name() << "': ";
    return diag;
  };
  Type elementType = convertOnnxDataType(context, tensor.data_type());
  if (!elementType)
    return emitErr() << "data type " << getOnnxDataTypeName(tensor.data_type())
                     << " is not supported (supported: FLOAT, FLOAT16, "
                        "BFLOAT16, DOUBLE, BOOL, INT8, UINT8, INT32, INT64)";
  SmallVector<int64_t> shape;
  uint64_t numElements = 1;
  for (int64_t d : tensor.dims()) {
    if (d < 0)
      return emitErr() << "negative dimension " << d;
    if (d != 0 && numElements > (uint64_t(1) << 50) / uint64_t(d))
      return emitErr() << "too many elements";
    numElements *= d;
    shape.push_back(d);
  }
  auto type = RankedTensorType::get(shape, elementType);
  unsigned bits = elementType.getIntOrFloatBitWidth();
  uint64_t numBytes = numElements * (bits == 1 ? 1 : bits / 8);

  OpBuilder::InsertionGuard guard(builder);
  builder.restoreInsertionPoint(initializerInsertPoint);
  auto finish = [&](Value value) {
    initializerInsertPoint = builder.saveInsertionPoint();
    return value;
  };
  bool inlineIt = static_cast<int64_t>(numBytes) <= options.inlineLimitBytes;

  if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    if (source.directory.empty())
      return emitErr() << "external data is only supported for models read "
                          "from a file";
    ExternalLocation location;
    std::string error;
    if (!resolveExternalData(tensor, source.directory, numBytes, location,
                             error))
      return emitErr() << error;
    auto buffer = llvm::MemoryBuffer::getFileSlice(
        location.resolvedPath, location.range.size, location.range.offset,
        /*IsVolatile=*/false);
    if (!buffer)
      return emitErr() << "cannot read external data '" << location.relativePath
                       << "': " << buffer.getError().message();
    StringRef bytes = (*buffer)->getBuffer();
    if (inlineIt) {
      onnx::TensorProto copy;
      copy.set_data_type(tensor.data_type());
      copy.mutable_dims()->CopyFrom(tensor.dims());
      copy.set_name(tensor.name());
      copy.set_raw_data(bytes.data(), bytes.size());
      FailureOr<DenseElementsAttr> value =
          convertTensorProto(context, copy, emitErr);
      if (failed(value))
        return failure();
      return finish(ConstantOp::create(builder, loc, *value));
    }
    return finish(WeightOp::create(builder, loc, type, tensor.name(),
                                   location.relativePath, location.range.offset,
                                   location.range.size, checksumHex(bytes),
                                   /*block_offsets=*/nullptr,
                                   /*full_shape=*/nullptr, /*perm=*/nullptr));
  }

  // Data inside the model file: refer to it in place when it is large and
  // stored contiguously, after checking that the scanned bytes are exactly
  // the ones protobuf parsed.
  auto inFile = dataInModelFile.find(tensor.name());
  if (!inlineIt && source.canReferToModelFile &&
      inFile != dataInModelFile.end() && inFile->second.size == numBytes) {
    const char *parsed = nullptr;
    if (tensor.has_raw_data())
      parsed = tensor.raw_data().data();
    else if (tensor.data_type() == onnx::TensorProto::FLOAT &&
             uint64_t(tensor.float_data_size()) == numElements)
      parsed = reinterpret_cast<const char *>(tensor.float_data().data());
    else if (tensor.data_type() == onnx::TensorProto::DOUBLE &&
             uint64_t(tensor.double_data_size()) == numElements)
      parsed = reinterpret_cast<const char *>(tensor.double_data().data());
    StringRef bytes =
        source.bytes.substr(inFile->second.offset, inFile->second.size);
    if (parsed && bytes.size() == numBytes &&
        std::memcmp(parsed, bytes.data(), numBytes) == 0 &&
        tensor.data_type() != onnx::TensorProto::BOOL)
      return finish(WeightOp::create(builder, loc, type, tensor.name(),
                                     source.fileName, inFile->second.offset,
                                     inFile->second.size, checksumHex(bytes),
                                     /*block_offsets=*/nullptr,
                                     /*full_shape=*/nullptr, /*perm=*/nullptr));
  }
  FailureOr<DenseElementsAttr> value =
      convertTensorProto(context, tensor, emitErr);
  if (failed(value))
    return failure();
  return finish(ConstantOp::create(builder, loc, *value));
}

Value GraphImporter::lookup(StringRef name, const onnx::NodeProto *user) {
  auto it = values.find(name);
  if (it != values.end())
    return it->second;
  auto init = initializers.find(name);
  if (init != initializers.end()) {
    FailureOr<Value> value = materializeInitializer(*init->second);
    if (failed(value))
      return nullptr;
    values[name] = *value;
    return *value;
  }
  auto unproduced = unproducedOutputs.find(name);
  if (unproduced != unproducedOutputs.end()) {
    InFlightDiagnostic diag = emitNodeError(*unproduced->second);
    diag << "weft does not produce its optional output '" << name << "'";
    if (user)
      diag << ", but " << describe(*user) << " uses it";
    else
      diag << ", but the graph returns it";
  }
  return nullptr;
}

LogicalResult GraphImporter::importNodes() {
  const OpImportRegistry &registry = getOpImportRegistry();
  for (const onnx::NodeProto &node : graph.node()) {
    // Every input must be defined before the node (ONNX graphs are sorted).
    for (const std::string &input : node.input()) {
      if (input.empty() || values.count(input))
        continue;
      if (initializers.count(input)) {
        if (!lookup(input, &node))
          return failure();
        continue;
      }
      if (unproducedOutputs.count(input)) {
        (void)lookup(input, &node);
        return failure();
      }
      return emitNodeError(node)
             << "input '" << input
             << "' is not a graph input, an initializer or an output of an "
                "earlier node";
    }
    Location loc = getNodeLoc(node);
    builder.setInsertionPointToEnd(&function.getBody().front());
    // Older models only get here with ops defined as at kMinOpset.
    NodeImporter importer(*this, node, std::max(opset, kMinOpset), loc,
                          builder);
    if (failed(registry.lookup(node.op_type())->import(importer)))
      return failure();
    for (const std::string &output : node.output())
      if (!output.empty() && !values.count(output))
        unproducedOutputs[output] = &node;
  }
  return success();
}

LogicalResult GraphImporter::createReturn() {
  SmallVector<Value> results;
  SmallVector<Type> resultTypes;
  Location loc = FileLineColLoc::get(context, source.path, 0, 0);
  for (const onnx::ValueInfoProto &output : graph.output()) {
    Value value = lookup(output.name(), nullptr);
    if (!value) {
      if (values.count(output.name()) || unproducedOutputs.count(output.name()))
        return failure();
      if (initializers.count(output.name()))
        return failure(); // lookup reported the bad initializer.
      return mlir::emitError(loc)
             << "graph output '" << output.name()
             << "' is not produced by any node, input or initializer";
    }
    auto actual = cast<RankedTensorType>(value.getType());
    // Compare with what the model declares: a disagreement means the model
    // is inconsistent (or weft's inference is wrong); either way, say so.
    if (output.has_type() && output.type().has_tensor_type()) {
      const auto &declared = output.type().tensor_type();
      if (declared.elem_type() != 0) {
        Type declaredElement =
            convertOnnxDataType(context, declared.elem_type());
        if (declaredElement != actual.getElementType())
          return mlir::emitError(loc)
                 << "graph output '" << output.name() << "' is declared as "
                 << getOnnxDataTypeName(declared.elem_type())
                 << " but the graph computes " << actual.getElementType();
      }
      if (declared.has_shape()) {
        const auto &dims = declared.shape().dim();
        // A microbatch's output has 1/batchDivisor of the declared batch.
        SmallVector<int64_t> declaredShape;
        for (auto [i, d] : llvm::enumerate(dims)) {
          int64_t size = d.has_dim_value() ? d.dim_value() : ShapedType::kDynamic;
          if (i == 0 && d.has_dim_value() && options.batchDivisor > 1 &&
              size % options.batchDivisor == 0)
            size /= options.batchDivisor;
          declaredShape.push_back(size);
        }
        bool conflict = dims.size() != actual.getRank();
        for (int i = 0; !conflict && i < dims.size(); ++i)
          conflict = !ShapedType::isDynamic(declaredShape[i]) &&
                     !ShapedType::isDynamic(actual.getDimSize(i)) &&
                     declaredShape[i] != actual.getDimSize(i);
        if (conflict) {
          return mlir::emitError(loc)
                 << "graph output '" << output.name()
                 << "' is declared with shape " << formatShape(declaredShape)
                 << " but the graph computes "
                 << formatShape(actual.getShape());
        }
      }
    }
    results.push_back(value);
    resultTypes.push_back(actual);
  }
  builder.setInsertionPointToEnd(&function.getBody().front());
  func::ReturnOp::create(builder, loc, results);
  function.setType(
      builder.getFunctionType(function.getArgumentTypes(), resultTypes));
  for (auto [i, output] : llvm::enumerate(graph.output()))
    function.setResultAttr(i, "weft.name",
                           builder.getStringAttr(output.name()));
  return success();
}

void GraphImporter::collectTensors(
    const llvm::SmallPtrSetImpl<Operation *> &erased,
    ImportedTensors &tensors) {
  // Runs before the erasure: every value here is still alive.
  for (const auto &entry : values) {
    Operation *def = entry.getValue().getDefiningOp();
    if (def && erased.contains(def))
      tensors.dropped.insert(entry.getKey());
    else
      tensors.values[entry.getKey()] = entry.getValue();
  }
  auto noteDeclared = [&](const std::string &name) {
    if (!name.empty() && !tensors.values.contains(name))
      tensors.dropped.insert(name);
  };
  for (const onnx::ValueInfoProto &input : graph.input())
    noteDeclared(input.name());
  for (const onnx::TensorProto &init : graph.initializer())
    noteDeclared(init.name());
  for (const onnx::NodeProto &node : graph.node())
    for (const std::string &output : node.output())
      noteDeclared(output);
}

LogicalResult GraphImporter::importInto(ModuleOp module,
                                        ImportedTensors *tensors) {
  if (failed(checkOpsetsAndDomains()) || failed(checkNodesSupported()))
    return failure();
  if (source.canReferToModelFile)
    dataInModelFile = scanInitializerData(source.bytes);
  if (failed(createFunction(module)) || failed(importNodes()) ||
      failed(createReturn()))
    return failure();
  // Folding during import leaves constants (and unused nodes' results)
  // behind; drop what nothing uses, last first so chains go too. The set is
  // found before anything is erased, so that names bound to erased ops can
  // be dropped without touching their values.
  Block &body = function.getBody().front();
  llvm::SmallPtrSet<Operation *, 32> erased;
  for (Operation &op : llvm::reverse(body)) {
    if (!wouldOpBeTriviallyDead(&op))
      continue;
    bool unused = llvm::all_of(op.getUsers(), [&](Operation *user) {
      Operation *inBody = body.findAncestorOpInBlock(*user);
      return inBody && erased.contains(inBody);
    });
    if (unused)
      erased.insert(&op);
  }
  if (tensors)
    collectTensors(erased, *tensors);
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (erased.contains(&op))
      op.erase();
  module->setAttr("weft.opset", builder.getI64IntegerAttr(opset));
  if (!source.directory.empty())
    module->setAttr("weft.weights_dir",
                    builder.getStringAttr(source.directory));
  return success();
}
