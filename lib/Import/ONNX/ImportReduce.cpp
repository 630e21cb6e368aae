//===- ImportReduce.cpp - Import of ONNX reductions and softmax -----------===//
//
// Maps ONNX Reduce* (axes as an attribute or, from opset 13 for ReduceSum
// and 18 for the others, as an input, which may be computed at run time),
// GlobalAveragePool and
// GlobalMaxPool to weft.reduce; ArgMax and ArgMin to weft.arg_reduce;
// Softmax and LogSoftmax (with their pre-13 "coerce to 2-D" semantics) to
// weft.softmax.
//
//===----------------------------------------------------------------------===//

#include "NodeImporter.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::weft;
using namespace mlir::weft::onnx_import;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// The first opset at which ONNX op `opType` of this family accepts
/// `elementType`, or nullopt when it never does. Only element types that weft
/// supports are listed; the importer's core refuses the others.
static std::optional<int64_t> getFirstOpsetFor(StringRef opType,
                                               Type elementType) {
  bool isFloat =
      elementType.isF16() || elementType.isF32() || elementType.isF64();
  bool isBF16 = elementType.isBF16();
  bool isI32OrI64 =
      elementType.isSignlessInteger(32) || elementType.isSignlessInteger(64);
  bool isByte =
      elementType.isSignlessInteger(8) || elementType.isUnsignedInteger(8);
  bool isBool = elementType.isSignlessInteger(1);

  if (opType == "Softmax" || opType == "LogSoftmax") {
    if (isFloat)
      return 1;
    return isBF16 ? std::optional<int64_t>(13) : std::nullopt;
  }
  if (opType == "GlobalAveragePool" || opType == "GlobalMaxPool") {
    if (isFloat)
      return 1;
    return isBF16 ? std::optional<int64_t>(22) : std::nullopt;
  }
  if (opType == "ArgMax" || opType == "ArgMin") {
    if (isFloat || isI32OrI64 || isByte)
      return 1;
    return isBF16 ? std::optional<int64_t>(13) : std::nullopt;
  }
  // Reduce*: floats and 32/64-bit integers; bf16 from 13. ReduceMax and
  // ReduceMin also take 8-bit integers from 12 and booleans from 20.
  bool isMaxOrMin = opType == "ReduceMax" || opType == "ReduceMin";
  if (isFloat || isI32OrI64)
    return 1;
  if (isBF16)
    return 13;
  if (isMaxOrMin && isByte)
    return 12;
  if (isMaxOrMin && isBool)
    return 20;
  return std::nullopt;
}

/// Reports an input element type that the node's op does not accept at the
/// model's opset.
static LogicalResult checkElementType(NodeImporter &node, Type elementType) {
  std::optional<int64_t> since =
      getFirstOpsetFor(node.getOpType(), elementType);
  if (!since)
    return node.emitError() << "input element type " << elementType
                            << " is not supported by " << node.getOpType();
  if (node.getOpset() < *since)
    return node.emitError()
           << "input element type " << elementType << " is supported by "
           << node.getOpType() << " from opset " << *since
           << " on; the model uses opset " << node.getOpset();
  return success();
}

/// Reads a 0/1 flag attribute (any non-zero value counts as set, as ONNX
/// runtimes read them).
static FailureOr<bool> getFlag(NodeImporter &node, StringRef name,
                               int64_t defaultValue) {
  FailureOr<int64_t> value = node.getInt(name, defaultValue);
  if (failed(value))
    return failure();
  return *value != 0;
}

/// Normalizes one ONNX axis in [-rank, rank) to [0, rank), reporting an
/// out-of-range axis on the node.
static FailureOr<int64_t> normalizeNodeAxis(NodeImporter &node, int64_t axis,
                                            int64_t rank) {
  if (axis < -rank || axis >= rank)
    return node.emitError()
           << "axis " << axis << " is out of range for an input of rank "
           << rank << " (expected [" << -rank << ", " << rank - 1 << "])";
  return axis < 0 ? axis + rank : axis;
}

/// Reports that the node's input 0 is omitted.
static LogicalResult requireData(NodeImporter &node) {
  if (!node.hasInput(0))
    return node.emitError() << "input 0 is required";
  return success();
}

//===----------------------------------------------------------------------===//
// Reduce*, GlobalAveragePool, GlobalMaxPool
//===----------------------------------------------------------------------===//

static std::optional<ReduceKind> getReduceKind(StringRef opType) {
  return llvm::StringSwitch<std::optional<ReduceKind>>(opType)
      .Case("ReduceMean", ReduceKind::mean)
      .Case("ReduceSum", ReduceKind::sum)
      .Case("ReduceMax", ReduceKind::max)
      .Case("ReduceMin", ReduceKind::min)
      .Case("ReduceProd", ReduceKind::prod)
      .Case("ReduceL1", ReduceKind::l1)
      .Case("ReduceL2", ReduceKind::l2)
      .Case("ReduceLogSumExp", ReduceKind::log_sum_exp)
      .Case("ReduceSumSquare", ReduceKind::sum_square)
      .Case("ReduceLogSum", ReduceKind::log_sum)
      .Default(std::nullopt);
}

namespace {
/// The axes of a Reduce* node: known at compile time, normalized to [0,
/// rank) and sorted (empty means "reduce over no axes"), or an input
/// computed at run time with a static length of at least 1.
struct ReduceAxes {
  SmallVector<int64_t> axes;
  Value dynamicAxes;
};
} // namespace

/// Reads the axes of a Reduce* node: the `axes` attribute before the opset
/// that made them an input (13 for ReduceSum, 18 for the others), the `axes`
/// input from then on, which may be computed at run time when its length is
/// static (the length fixes the result's rank).
static FailureOr<ReduceAxes> importReduceAxes(NodeImporter &node,
                                              int64_t rank) {
  bool axesAsInput = node.getOpType() == "ReduceSum" ? node.getOpset() >= 13
                                                     : node.getOpset() >= 18;
  SmallVector<int64_t> axes;
  bool noop = false;
  if (axesAsInput) {
    if (failed(node.checkKnownAttrs({"keepdims", "noop_with_empty_axes"})))
      return failure();
    if (node.getNumInputs() > 2)
      return node.emitError() << "expected at most 2 inputs (data, axes), got "
                              << node.getNumInputs();
    FailureOr<bool> noopAttr = getFlag(node, "noop_with_empty_axes", 0);
    if (failed(noopAttr))
      return failure();
    noop = *noopAttr;
    if (node.hasInput(1)) {
      RankedTensorType axesType = node.getInputType(1);
      if (!axesType || axesType.getRank() > 1 ||
          !axesType.getElementType().isSignlessInteger(64))
        return node.emitError()
               << "axes (input 1) must be a 1-D tensor of i64, got "
               << node.getInputType(1);
      if (std::optional<SmallVector<int64_t>> values =
              node.getConstantInts(1)) {
        axes = std::move(*values);
      } else if (axesType.getRank() != 1 || axesType.isDynamicDim(0)) {
        return node.emitError()
               << "axes (input 1) computed at run time must be 1-D with a "
                  "static length, which gives the result's rank; got "
               << axesType;
      } else if (axesType.getDimSize(0) > rank) {
        return node.emitError()
               << "axes (input 1) has " << axesType.getDimSize(0)
               << " entries, more than the input's rank " << rank;
      } else if (axesType.getDimSize(0) > 0) {
        // Empty axes are empty whatever the run time holds: handled below.
        return ReduceAxes{{}, node.getInput(1)};
      }
    }
  } else {
    if (failed(node.checkKnownAttrs({"axes", "keepdims"})))
      return failure();
    if (node.getNumInputs() > 1)
      return node.emitError() << "expected 1 input at opset " << node.getOpset()
                              << " (axes are an attribute before opset "
                              << (node.getOpType() == "ReduceSum" ? 13 : 18)
                              << "), got " << node.getNumInputs();
    FailureOr<SmallVector<int64_t>> values =
        node.getInts("axes", ArrayRef<int64_t>());
    if (failed(values))
      return failure();
    axes = std::move(*values);
  }

  // Empty axes reduce over every axis, unless noop_with_empty_axes is set:
  // then they reduce over none, which leaves the input as is for the plain
  // reductions and applies abs, square or log alone for ReduceL1, ReduceL2,
  // ReduceSumSquare and ReduceLogSum (the ONNX spec as clarified in
  // onnx/onnx#7394).
  if (axes.empty()) {
    if (!noop)
      axes = llvm::to_vector(llvm::seq<int64_t>(0, rank));
    return ReduceAxes{axes, Value()};
  }
  llvm::SmallSet<int64_t, 8> seen;
  for (int64_t &axis : axes) {
    FailureOr<int64_t> normalized = normalizeNodeAxis(node, axis, rank);
    if (failed(normalized))
      return failure();
    if (!seen.insert(*normalized).second)
      return node.emitError()
             << "axes contain axis " << *normalized << " more than once";
    axis = *normalized;
  }
  llvm::sort(axes);
  return ReduceAxes{axes, Value()};
}

static LogicalResult importReduce(NodeImporter &node) {
  std::optional<ReduceKind> kind = getReduceKind(node.getOpType());
  if (!kind)
    return node.emitError() << "is not a reduction";
  if (failed(requireData(node)))
    return failure();
  RankedTensorType type = node.getInputType(0);
  if (failed(checkElementType(node, type.getElementType())))
    return failure();
  FailureOr<ReduceAxes> axes = importReduceAxes(node, type.getRank());
  FailureOr<bool> keepdims = getFlag(node, "keepdims", 1);
  if (failed(axes) || failed(keepdims))
    return failure();
  if (!axes->dynamicAxes) {
    node.setOutput(0, node.create<ReduceOp>(node.getInput(0), *kind, axes->axes,
                                            *keepdims));
    return success();
  }
  // Axes computed at run time: weft.reduce's `dynamic_axes` form.
  Builder &b = node.getBuilder();
  SmallVector<NamedAttribute> attrs = {
      b.getNamedAttr("kind", ReduceKindAttr::get(b.getContext(), *kind))};
  if (*keepdims)
    attrs.push_back(b.getNamedAttr("keepdims", b.getUnitAttr()));
  FailureOr<ReduceOp> op =
      node.buildChecked<ReduceOp>({node.getInput(0), axes->dynamicAxes}, attrs);
  if (failed(op))
    return failure();
  node.setOutput(0, op->getResult());
  return success();
}

/// GlobalAveragePool and GlobalMaxPool: mean or max over dimensions 2.. of
/// an N x C x D1 x ... input, keeping them as size 1.
static LogicalResult importGlobalPool(NodeImporter &node) {
  if (failed(node.checkKnownAttrs({})) || failed(requireData(node)))
    return failure();
  RankedTensorType type = node.getInputType(0);
  if (failed(checkElementType(node, type.getElementType())))
    return failure();
  if (type.getRank() < 2)
    return node.emitError() << "input must have rank >= 2 (N x C x D1 x ...), "
                               "got "
                            << type;
  ReduceKind kind =
      node.getOpType() == "GlobalMaxPool" ? ReduceKind::max : ReduceKind::mean;
  SmallVector<int64_t> axes =
      llvm::to_vector(llvm::seq<int64_t>(2, type.getRank()));
  node.setOutput(0, node.create<ReduceOp>(node.getInput(0), kind, axes,
                                          /*keepdims=*/true));
  return success();
}

//===----------------------------------------------------------------------===//
// ArgMax, ArgMin
//===----------------------------------------------------------------------===//

static LogicalResult importArgReduce(NodeImporter &node) {
  LogicalResult known =
      node.getOpset() >= 12
          ? node.checkKnownAttrs({"axis", "keepdims", "select_last_index"})
          : node.checkKnownAttrs({"axis", "keepdims"});
  if (failed(known) || failed(requireData(node)))
    return failure();
  RankedTensorType type = node.getInputType(0);
  if (failed(checkElementType(node, type.getElementType())))
    return failure();
  if (type.getRank() == 0)
    return node.emitError() << "input must have rank >= 1, got " << type;
  FailureOr<int64_t> axisAttr = node.getInt("axis", 0);
  FailureOr<bool> keepdims = getFlag(node, "keepdims", 1);
  FailureOr<bool> selectLast = getFlag(node, "select_last_index", 0);
  if (failed(axisAttr) || failed(keepdims) || failed(selectLast))
    return failure();
  FailureOr<int64_t> axis = normalizeNodeAxis(node, *axisAttr, type.getRank());
  if (failed(axis))
    return failure();
  if (type.getDimSize(*axis) == 0)
    return node.emitError() << "dimension " << *axis << " of input " << type
                            << " is empty: there is no element to choose";
  ArgReduceKind kind =
      node.getOpType() == "ArgMin" ? ArgReduceKind::min : ArgReduceKind::max;
  node.setOutput(0, node.create<ArgReduceOp>(node.getInput(0), kind, *axis,
                                             *keepdims, *selectLast));
  return success();
}

//===----------------------------------------------------------------------===//
// Softmax, LogSoftmax
//===----------------------------------------------------------------------===//

/// Before opset 13 both view the input as a 2-D matrix [d0 * ... * d(axis-1),
/// d(axis) * ... * d(rank-1)] (axis 1 by default) and normalize its rows,
/// i.e. over dimensions [axis, rank) together: weft.softmax's `trailing`.
/// From 13 they normalize along `axis` alone (default -1).
static LogicalResult importSoftmax(NodeImporter &node) {
  if (failed(node.checkKnownAttrs({"axis"})) || failed(requireData(node)))
    return failure();
  RankedTensorType type = node.getInputType(0);
  if (failed(checkElementType(node, type.getElementType())))
    return failure();
  if (type.getRank() == 0)
    return node.emitError() << "input must have rank >= 1, got " << type;
  bool coerceTo2D = node.getOpset() < 13;
  FailureOr<int64_t> axisAttr = node.getInt("axis", coerceTo2D ? 1 : -1);
  if (failed(axisAttr))
    return failure();
  FailureOr<int64_t> axis = normalizeNodeAxis(node, *axisAttr, type.getRank());
  if (failed(axis))
    return failure();
  bool trailing = coerceTo2D && *axis + 1 < type.getRank();
  bool log = node.getOpType() == "LogSoftmax";
  node.setOutput(
      0, node.create<SoftmaxOp>(node.getInput(0), *axis, log, trailing));
  return success();
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

void mlir::weft::onnx_import::registerReduceImporters(
    OpImportRegistry &registry) {
  for (StringRef opType :
       {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd",
        "ReduceL1", "ReduceL2", "ReduceLogSumExp", "ReduceLogSum",
        "ReduceSumSquare"})
    registry.add(opType, {1, 1, 2, 1, 1, importReduce});
  registry.add("ArgMax", {1, 1, 1, 1, 1, importArgReduce});
  registry.add("ArgMin", {1, 1, 1, 1, 1, importArgReduce});
  registry.add("Softmax", {1, 1, 1, 1, 1, importSoftmax});
  registry.add("LogSoftmax", {1, 1, 1, 1, 1, importSoftmax});
  registry.add("GlobalAveragePool", {1, 1, 1, 1, 1, importGlobalPool});
  registry.add("GlobalMaxPool", {1, 1, 1, 1, 1, importGlobalPool});
}
