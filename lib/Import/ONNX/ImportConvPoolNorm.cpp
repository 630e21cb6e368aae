//===- ImportConvPoolNorm.cpp - Import of ONNX conv, pooling, norms -------===//
//
// Maps ONNX Conv to weft.conv, MaxPool and AveragePool to weft.pool,
// BatchNormalization (inference) to weft.batch_norm and LayerNormalization
// and InstanceNormalization to weft.normalize. ONNX's auto_pad is resolved
// to explicit pads here whenever the spatial sizes are static.
//
//===----------------------------------------------------------------------===//

#include "NodeImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

#include <charconv>
#include <cstdlib>

using namespace mlir;
using namespace mlir::weft;
using namespace mlir::weft::onnx_import;

/// Reports outputs from `first` on that the node lists: weft computes only
/// the inference-mode results.
static LogicalResult refuseOutputs(NodeImporter &node, unsigned first,
                                   StringRef why) {
  for (unsigned i = first; i < node.getNumOutputs(); ++i)
    if (node.hasOutput(i))
      return node.emitError()
             << "optional output " << i << " ('" << node.getNode().output(i)
             << "') is not supported: " << why;
  return success();
}

//===----------------------------------------------------------------------===//
// Windows: strides, pads, dilations, auto_pad
//===----------------------------------------------------------------------===//

namespace {
/// The window attributes of a Conv or pool, ready for weft.
struct WindowAttrs {
  SmallVector<int64_t> strides, pads, dilations;
  AutoPad autoPad = AutoPad::notset;
};
} // namespace

/// Reads strides, pads, dilations (when the op has them) and auto_pad for
/// `inputSizes.size()` spatial dimensions, resolving SAME_* to explicit pads
/// when the sizes are static and VALID to zero pads.
static FailureOr<WindowAttrs> importWindow(NodeImporter &node,
                                           ArrayRef<int64_t> inputSizes,
                                           ArrayRef<int64_t> kernelSizes,
                                           bool hasDilations) {
  size_t n = inputSizes.size();
  SmallVector<int64_t> ones(n, 1), zeros(2 * n, 0);
  FailureOr<SmallVector<int64_t>> strides = node.getInts("strides", ones);
  FailureOr<SmallVector<int64_t>> pads = node.getInts("pads", zeros);
  FailureOr<SmallVector<int64_t>> dilations =
      hasDilations ? node.getInts("dilations", ones) : ones;
  FailureOr<std::string> autoPad = node.getString("auto_pad", "NOTSET");
  if (failed(strides) || failed(pads) || failed(dilations) || failed(autoPad))
    return failure();
  // ONNX allows empty lists to mean the defaults.
  if (strides->empty())
    *strides = ones;
  if (dilations->empty())
    *dilations = ones;
  if (pads->empty())
    *pads = zeros;
  for (auto [name, values, count] :
       {std::tuple<StringRef, ArrayRef<int64_t>, size_t>{"strides", *strides,
                                                         n},
        {"dilations", *dilations, n},
        {"pads", *pads, 2 * n}}) {
    if (values.size() != count)
      return node.emitError() << "attribute '" << name << "' has "
                              << values.size() << " values, expected " << count
                              << " for " << n << " spatial dimensions";
    int64_t min = name == "pads" ? 0 : 1;
    for (int64_t v : values)
      if (v < min)
        return node.emitError() << "attribute '" << name << "' value " << v
                                << " must be >= " << min;
  }

  WindowAttrs window{*strides, *pads, *dilations, AutoPad::notset};
  if (*autoPad == "NOTSET")
    return window;
  if (*autoPad != "VALID" && *autoPad != "SAME_UPPER" &&
      *autoPad != "SAME_LOWER")
    return node.emitError() << "auto_pad '" << *autoPad
                            << "' is not one of NOTSET, SAME_UPPER, "
                               "SAME_LOWER, VALID";
  if (llvm::any_of(*pads, [](int64_t p) { return p != 0; }))
    return node.emitError() << "attribute 'pads' cannot be used with "
                               "auto_pad "
                            << *autoPad;
  window.pads = zeros;
  if (*autoPad == "VALID")
    return window;
  bool upper = *autoPad == "SAME_UPPER";
  if (std::optional<SmallVector<int64_t>> resolved = ConvOp::getSamePads(
          inputSizes, kernelSizes, window.strides, window.dilations, upper))
    window.pads = *resolved;
  else
    window.autoPad = upper ? AutoPad::same_upper : AutoPad::same_lower;
  return window;
}

/// The attributes of `window` as weft.conv and weft.pool name them.
static void addWindowAttrs(Builder &b, const WindowAttrs &window,
                           SmallVectorImpl<NamedAttribute> &attrs) {
  attrs.push_back(
      b.getNamedAttr("strides", b.getDenseI64ArrayAttr(window.strides)));
  attrs.push_back(b.getNamedAttr("pads", b.getDenseI64ArrayAttr(window.pads)));
  attrs.push_back(
      b.getNamedAttr("dilations", b.getDenseI64ArrayAttr(window.dilations)));
  if (window.autoPad != AutoPad::notset)
    attrs.push_back(b.getNamedAttr(
        "auto_pad", AutoPadAttr::get(b.getContext(), window.autoPad)));
}

/// Checks that the input has rank n + 2 (batch, channels, n spatial).
static LogicalResult checkSpatialRank(NodeImporter &node, size_t n) {
  RankedTensorType type = node.getInputType(0);
  if (type.getRank() < 3 || (n && type.getRank() != int64_t(n) + 2))
    return node.emitError()
           << "input X " << type << " must have rank "
           << (n ? std::to_string(n + 2) : ">= 3") << " (N x C x spatial)";
  return success();
}

//===----------------------------------------------------------------------===//
// Conv
//===----------------------------------------------------------------------===//

/// Conv (opsets 1, 11): kernel_shape is optional and must agree with W.
static LogicalResult importConv(NodeImporter &node) {
  if (failed(node.checkKnownAttrs({"auto_pad", "dilations", "group",
                                   "kernel_shape", "pads", "strides"})) ||
      failed(node.requireInputs(2)) || failed(checkSpatialRank(node, 0)))
    return failure();
  RankedTensorType xType = node.getInputType(0);
  RankedTensorType wType = node.getInputType(1);
  if (wType.getRank() != xType.getRank())
    return node.emitError() << "weight W " << wType
                            << " must have the rank of input X " << xType;
  size_t n = xType.getRank() - 2;
  SmallVector<int64_t> kernel(wType.getShape().drop_front(2));
  if (node.hasAttr("kernel_shape")) {
    FailureOr<SmallVector<int64_t>> given = node.getInts("kernel_shape");
    if (failed(given))
      return failure();
    if (given->size() != n)
      return node.emitError() << "attribute 'kernel_shape' has "
                              << given->size() << " values, expected " << n;
    for (size_t i = 0; i < n; ++i) {
      if (!ShapedType::isDynamic(kernel[i]) && kernel[i] != (*given)[i])
        return node.emitError()
               << "attribute 'kernel_shape' " << formatShape(*given)
               << " disagrees with weight W " << wType;
      kernel[i] = (*given)[i];
    }
  }
  FailureOr<int64_t> group = node.getInt("group", 1);
  if (failed(group))
    return failure();
  FailureOr<WindowAttrs> window =
      importWindow(node, xType.getShape().drop_front(2), kernel,
                   /*hasDilations=*/true);
  if (failed(window))
    return failure();

  Builder &b = node.getBuilder();
  SmallVector<NamedAttribute> attrs;
  addWindowAttrs(b, *window, attrs);
  if (*group != 1)
    attrs.push_back(b.getNamedAttr("group", b.getI64IntegerAttr(*group)));
  SmallVector<Value> operands = {node.getInput(0), node.getInput(1)};
  if (node.hasInput(2))
    operands.push_back(node.getInput(2));
  // Input, weight, bias (0 or 1), addend (never from ONNX).
  attrs.push_back(b.getNamedAttr(
      "operandSegmentSizes",
      b.getDenseI32ArrayAttr(
          {1, 1, static_cast<int32_t>(operands.size() - 2), 0})));
  FailureOr<ConvOp> op = node.buildChecked<ConvOp>(operands, attrs);
  if (failed(op))
    return failure();
  node.setOutput(0, op->getResult());
  return success();
}

//===----------------------------------------------------------------------===//
// MaxPool, AveragePool
//===----------------------------------------------------------------------===//

static LogicalResult importPool(NodeImporter &node, PoolKind kind) {
  int64_t opset = node.getOpset();
  bool isMax = kind == PoolKind::max;
  SmallVector<StringRef> known = {"auto_pad", "kernel_shape", "pads",
                                  "strides"};
  if (opset >= 10)
    known.push_back("ceil_mode");
  if (isMax && opset >= 8)
    known.push_back("storage_order");
  if (!isMax && opset >= 7)
    known.push_back("count_include_pad");
  bool hasDilations = opset >= (isMax ? 10 : 19);
  if (hasDilations)
    known.push_back("dilations");
  if (failed(node.checkKnownAttrs(known)))
    return failure();
  FailureOr<SmallVector<int64_t>> kernel = node.getInts("kernel_shape");
  FailureOr<int64_t> ceilMode = node.getInt("ceil_mode", 0);
  FailureOr<int64_t> countIncludePad = node.getInt("count_include_pad", 0);
  FailureOr<int64_t> storageOrder = node.getInt("storage_order", 0);
  if (failed(kernel) || failed(ceilMode) || failed(countIncludePad) ||
      failed(storageOrder))
    return failure();
  if (kernel->empty())
    return node.emitError() << "attribute 'kernel_shape' must not be empty";
  for (int64_t k : *kernel)
    if (k < 1)
      return node.emitError()
             << "attribute 'kernel_shape' value " << k << " must be >= 1";
  if (*storageOrder != 0 && *storageOrder != 1)
    return node.emitError()
           << "attribute 'storage_order' must be 0 or 1, got " << *storageOrder;
  if (failed(checkSpatialRank(node, kernel->size())))
    return failure();
  FailureOr<WindowAttrs> window =
      importWindow(node, node.getInputType(0).getShape().drop_front(2), *kernel,
                   hasDilations);
  if (failed(window))
    return failure();

  Builder &b = node.getBuilder();
  SmallVector<NamedAttribute> attrs = {
      b.getNamedAttr("kind", PoolKindAttr::get(b.getContext(), kind)),
      b.getNamedAttr("kernel_shape", b.getDenseI64ArrayAttr(*kernel))};
  addWindowAttrs(b, *window, attrs);
  if (*ceilMode)
    attrs.push_back(b.getNamedAttr("ceil_mode", b.getUnitAttr()));
  if (*countIncludePad)
    attrs.push_back(b.getNamedAttr("count_include_pad", b.getUnitAttr()));
  // MaxPool's Indices output, flat indices into the input that count its
  // spatial dimensions in row-major or, with storage_order = 1, column-major
  // order (an unused one is dropped by canonicalization).
  bool withIndices = isMax && node.hasOutput(1);
  if (withIndices)
    attrs.push_back(b.getNamedAttr("with_indices", b.getUnitAttr()));
  if (withIndices && *storageOrder == 1)
    attrs.push_back(b.getNamedAttr("column_major", b.getUnitAttr()));
  FailureOr<PoolOp> op = node.buildChecked<PoolOp>(node.getInput(0), attrs);
  if (failed(op))
    return failure();
  node.setOutput(0, op->getResult());
  if (withIndices)
    node.setOutput(1, op->getIndices());
  return success();
}

/// MaxPool (opsets 1, 8, 10, 11, 12), with its Indices output.
static LogicalResult importMaxPool(NodeImporter &node) {
  return importPool(node, PoolKind::max);
}

/// AveragePool (opsets 1, 7, 10, 11, 19).
static LogicalResult importAveragePool(NodeImporter &node) {
  return importPool(node, PoolKind::average);
}

//===----------------------------------------------------------------------===//
// BatchNormalization
//===----------------------------------------------------------------------===//

/// BatchNormalization (opsets 6, 7, 9, 14, 15) in inference mode only.
static LogicalResult importBatchNorm(NodeImporter &node) {
  int64_t opset = node.getOpset();
  if (opset < 6)
    return node.emitError() << "opset " << opset
                            << " (with consumed_inputs) is not supported; "
                               "weft supports opset 6 and later";
  SmallVector<StringRef> known = {"epsilon", "momentum"};
  if (opset < 9)
    known.push_back("spatial");
  if (opset == 6)
    known.push_back("is_test");
  if (opset >= 14)
    known.push_back("training_mode");
  if (failed(node.checkKnownAttrs(known)) || failed(node.requireInputs(5)))
    return failure();
  FailureOr<double> epsilon = node.getFloat("epsilon", 1e-5);
  FailureOr<int64_t> spatial = node.getInt("spatial", 1);
  FailureOr<int64_t> isTest = node.getInt("is_test", 0);
  FailureOr<int64_t> trainingMode = node.getInt("training_mode", 0);
  if (failed(epsilon) || failed(spatial) || failed(isTest) ||
      failed(trainingMode))
    return failure();
  if (opset == 6 && *isTest == 0)
    return node.emitError() << "training mode (is_test = 0) is not "
                               "supported; weft imports inference only";
  if (*trainingMode != 0)
    return node.emitError()
           << "training mode (training_mode = " << *trainingMode
           << ") is not supported; weft imports inference "
              "only";
  if (failed(refuseOutputs(node, 1,
                           "running and saved statistics exist only in "
                           "training mode; weft imports inference only")))
    return failure();
  // With spatial = 1 (the default) the parameters are per channel; with
  // spatial = 0 (opsets 6-8) they cover every dimension but the batch.
  RankedTensorType xType = node.getInputType(0);
  int64_t paramRank = *spatial ? 1 : xType.getRank() - 1;
  for (unsigned i = 1; i < 5; ++i)
    if (node.getInputType(i).getRank() != paramRank)
      return node.emitError()
             << "input " << i << " " << node.getInputType(i) << " must have "
             << "rank " << paramRank << " (spatial = " << *spatial
             << ") for input X " << xType;

  Builder &b = node.getBuilder();
  SmallVector<Value> operands;
  for (unsigned i = 0; i < 5; ++i)
    operands.push_back(node.getInput(i));
  FailureOr<BatchNormOp> op = node.buildChecked<BatchNormOp>(
      operands,
      {b.getNamedAttr("epsilon",
                      b.getF64FloatAttr(toShortestFloatDecimal(*epsilon)))});
  if (failed(op))
    return failure();
  node.setOutput(0, op->getResult());
  return success();
}

//===----------------------------------------------------------------------===//
// LayerNormalization, InstanceNormalization
//===----------------------------------------------------------------------===//

/// LayerNormalization (opset 17), with its optional Mean and InvStdDev
/// outputs.
static LogicalResult importLayerNorm(NodeImporter &node) {
  if (failed(node.checkKnownAttrs({"axis", "epsilon", "stash_type"})) ||
      failed(node.requireInputs(2)))
    return failure();
  FailureOr<int64_t> axis = node.getInt("axis", -1);
  FailureOr<double> epsilon = node.getFloat("epsilon", 1e-5);
  FailureOr<int64_t> stash =
      node.getInt("stash_type", onnx::TensorProto::FLOAT);
  if (failed(axis) || failed(epsilon) || failed(stash))
    return failure();
  int64_t rank = node.getInputType(0).getRank();
  if (*axis < -rank || *axis >= rank)
    return node.emitError() << "axis " << *axis << " is out of range for "
                            << "input X of rank " << rank;
  Type stashType = convertOnnxDataType(node.getContext(), *stash);
  if (!isa_and_nonnull<FloatType>(stashType))
    return node.emitError()
           << "stash_type " << *stash << " is not a supported float type";

  Builder &b = node.getBuilder();
  SmallVector<NamedAttribute> attrs = {
      b.getNamedAttr("kind",
                     NormKindAttr::get(b.getContext(), NormKind::layer)),
      b.getNamedAttr("axis",
                     b.getI64IntegerAttr(*axis < 0 ? *axis + rank : *axis)),
      b.getNamedAttr("epsilon",
                     b.getF64FloatAttr(toShortestFloatDecimal(*epsilon))),
      b.getNamedAttr("stash_type", TypeAttr::get(stashType))};
  SmallVector<Value> operands = {node.getInput(0), node.getInput(1)};
  if (node.hasInput(2))
    operands.push_back(node.getInput(2));
  FailureOr<NormalizeOp> op = node.buildChecked<NormalizeOp>(operands, attrs);
  if (failed(op))
    return failure();
  for (unsigned i = 0; i < 3; ++i)
    node.setOutput(i, (*op)->getResult(i));
  return success();
}

/// InstanceNormalization (opset 6; opset 1 with consumed_inputs is refused).
static LogicalResult importInstanceNorm(NodeImporter &node) {
  if (node.getOpset() < 6)
    return node.emitError() << "opset " << node.getOpset()
                            << " (with consumed_inputs) is not supported; "
                               "weft supports opset 6 and later";
  if (failed(node.checkKnownAttrs({"epsilon"})) ||
      failed(node.requireInputs(3)) || failed(checkSpatialRank(node, 0)))
    return failure();
  FailureOr<double> epsilon = node.getFloat("epsilon", 1e-5);
  if (failed(epsilon))
    return failure();
  Builder &b = node.getBuilder();
  SmallVector<NamedAttribute> attrs = {
      b.getNamedAttr("kind",
                     NormKindAttr::get(b.getContext(), NormKind::instance)),
      b.getNamedAttr("axis", b.getI64IntegerAttr(2)),
      b.getNamedAttr("epsilon",
                     b.getF64FloatAttr(toShortestFloatDecimal(*epsilon)))};
  FailureOr<NormalizeOp> op = node.buildChecked<NormalizeOp>(
      {node.getInput(0), node.getInput(1), node.getInput(2)}, attrs);
  if (failed(op))
    return failure();
  node.setOutput(0, (*op)->getResult(0));
  return success();
}

void mlir::weft::onnx_import::registerConvPoolNormImporters(
    OpImportRegistry &registry) {
  registry.add("Conv", {1, 2, 3, 1, 1, importConv});
  registry.add("MaxPool", {1, 1, 1, 1, 2, importMaxPool});
  registry.add("AveragePool", {1, 1, 1, 1, 1, importAveragePool});
  registry.add("BatchNormalization", {1, 5, 5, 1, 5, importBatchNorm});
  registry.add("LayerNormalization", {17, 2, 3, 1, 3, importLayerNorm});
  registry.add("InstanceNormalization", {1, 3, 3, 1, 1, importInstanceNorm});
}
