//===- ImportShape.cpp - Import of ONNX shape and data movement ops -------===//
//
// Handlers for the ONNX ops that move data or compute shapes: Reshape,
// Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split, Slice, Gather,
// GatherElements, Expand, Pad, Tile, Trilu, Shape, Size, ConstantOfShape and
// Range. Shapes, slice bounds, range scalars and, when their lengths are
// static, axes, split sizes and pads may be computed at run time.
//
//===----------------------------------------------------------------------===//

#include "NodeImporter.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace mlir::weft;
using namespace mlir::weft::onnx_import;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Creates an OpTy from `operands` and `props`, folding it when possible. Its
/// result types come from the op's inference, run first so that an invalid
/// combination is reported as an error naming the node (the generated
/// builders would abort instead).
template <typename OpTy>
static FailureOr<SmallVector<Value>>
build(NodeImporter &node, ValueRange operands,
      const typename OpTy::Properties &props) {
  FailureOr<SmallVector<Type>> types =
      node.inferResultTypes<OpTy>(operands, props);
  if (failed(types))
    return failure();
  SmallVector<Value> results;
  node.getBuilder().createOrFold<OpTy>(results, node.getLoc(),
                                       TypeRange(*types), operands, props);
  return results;
}

/// Same as above for ops with one result, which becomes output 0.
template <typename OpTy>
static LogicalResult buildOutput(NodeImporter &node, ValueRange operands,
                                 const typename OpTy::Properties &props) {
  FailureOr<SmallVector<Value>> results = build<OpTy>(node, operands, props);
  if (failed(results))
    return failure();
  node.setOutput(0, results->front());
  return success();
}

namespace {
/// A list argument of a node (axes, split sizes, pads): absent (neither set),
/// known at compile time (`values`), or an input computed at run time
/// (`dynamic`, 1-D with a static length of at least 1).
struct ListArgument {
  std::optional<SmallVector<int64_t>> values;
  Value dynamic;

  bool isAbsent() const { return !values && !dynamic; }
};
} // namespace

/// Reads input `i`, a 1-D integer list named `what`: its values when it is a
/// constant, else the input itself, which must then have a static length
/// (weft needs the number of entries at compile time). A run-time list of
/// length 0 is empty whatever it holds; i32 lists are cast to i64.
static FailureOr<ListArgument> getListInput(NodeImporter &node, unsigned i,
                                            StringRef what) {
  if (std::optional<SmallVector<int64_t>> values = node.getConstantInts(i))
    return ListArgument{std::move(*values), Value()};
  RankedTensorType type = node.getInputType(i);
  Type elementType = type.getElementType();
  if (!elementType.isSignlessInteger(64) && !elementType.isSignlessInteger(32))
    return node.emitError() << what << " (input " << i
                            << ") must be int64 or int32, got " << type;
  if (type.getRank() != 1 || type.isDynamicDim(0))
    return node.emitError()
           << what << " (input " << i
           << ") computed at run time must be 1-D with a static length, got "
           << type;
  if (type.getDimSize(0) == 0)
    return ListArgument{SmallVector<int64_t>(), Value()};
  Value value = node.getInput(i);
  if (elementType.isSignlessInteger(32))
    value = node.create<CastOp>(value, node.getBuilder().getI64Type());
  return ListArgument{std::nullopt, value};
}

/// Reads an optional attribute-or-input list of axes: attribute `name` before
/// `inputSince`, input `inputIndex` from then on (which may be computed at
/// run time).
static FailureOr<ListArgument> getAxesArgument(NodeImporter &node,
                                               StringRef name,
                                               int64_t inputSince,
                                               unsigned inputIndex) {
  if (node.getOpset() < inputSince) {
    if (!node.hasAttr(name))
      return ListArgument();
    FailureOr<SmallVector<int64_t>> values = node.getInts(name);
    if (failed(values))
      return failure();
    return ListArgument{std::move(*values), Value()};
  }
  if (!node.hasInput(inputIndex))
    return ListArgument();
  return getListInput(node, inputIndex, name);
}

/// Normalizes an ONNX axis against `rank`, reporting errors on the node.
static FailureOr<int64_t> normalizeNodeAxis(NodeImporter &node, int64_t axis,
                                            int64_t rank,
                                            StringRef what = "axis") {
  if (axis < -rank || axis >= rank)
    return node.emitError()
           << what << " " << axis << " is out of range for rank " << rank
           << " (expected [" << -rank << ", " << rank << "))";
  return axis < 0 ? axis + rank : axis;
}

/// Normalizes a list of ONNX axes; also rejects duplicates.
static FailureOr<SmallVector<int64_t>>
normalizeNodeAxes(NodeImporter &node, ArrayRef<int64_t> axes, int64_t rank) {
  SmallVector<int64_t> out;
  for (int64_t axis : axes) {
    FailureOr<int64_t> n = normalizeNodeAxis(node, axis, rank);
    if (failed(n))
      return failure();
    if (llvm::is_contained(out, *n))
      return node.emitError() << "axes contain axis " << *n << " twice";
    out.push_back(*n);
  }
  return out;
}

/// Checks that input `i` is a 1-D int64 tensor with a static length, as
/// shape-like inputs must be.
static LogicalResult checkShapeInput(NodeImporter &node, unsigned i,
                                     StringRef what) {
  RankedTensorType type = node.getInputType(i);
  if (!type.getElementType().isInteger(64))
    return node.emitError() << what << " must be int64, got " << type;
  if (type.getRank() != 1 || type.isDynamicDim(0))
    return node.emitError()
           << what << " must be 1-D with a static length, got " << type;
  return success();
}

//===----------------------------------------------------------------------===//
// Reshapes
//===----------------------------------------------------------------------===//

/// Reshape: the shape is input 1 and may be computed at run time;
/// `allowzero` from opset 14. (The importer takes opsets from 7, so the
/// attribute form of opsets 1-4 is not handled.)
static LogicalResult importReshape(NodeImporter &node) {
  if (failed(node.checkKnownAttrs(node.getOpset() < 14
                                      ? ArrayRef<StringRef>{}
                                      : ArrayRef<StringRef>{"allowzero"})))
    return failure();
  if (!node.hasInput(1))
    return node.emitError() << "the shape input is missing";
  if (failed(checkShapeInput(node, 1, "the shape input")))
    return failure();
  Value shape = node.getInput(1);
  FailureOr<int64_t> allowzero = node.getInt("allowzero", 0);
  if (failed(allowzero))
    return failure();
  ReshapeOp::Properties props;
  if (*allowzero)
    props.setAllowzero(node.getBuilder().getUnitAttr());
  return buildOutput<ReshapeOp>(node, {node.getInput(0), shape}, props);
}

/// Flatten: `axis` in [-rank, rank] (negative from opset 11), default 1.
static LogicalResult importFlatten(NodeImporter &node) {
  if (failed(node.checkKnownAttrs({"axis"})))
    return failure();
  int64_t rank = node.getInputType(0).getRank();
  FailureOr<int64_t> axis = node.getInt("axis", 1);
  if (failed(axis))
    return failure();
  if (*axis < -rank || *axis > rank)
    return node.emitError()
           << "axis " << *axis << " is out of range for rank " << rank
           << " (expected [" << -rank << ", " << rank << "])";
  FlattenOp::Properties props;
  props.setAxis(
      node.getBuilder().getI64IntegerAttr(*axis < 0 ? *axis + rank : *axis));
  return buildOutput<FlattenOp>(node, {node.getInput(0)}, props);
}

/// Squeeze: axes as attribute before opset 13, as input from then on. With
/// no axes, every dimension of size 1, which must then all be static.
static LogicalResult importSqueeze(NodeImporter &node) {
  if (failed(node.checkKnownAttrs(node.getOpset() < 13
                                      ? ArrayRef<StringRef>{"axes"}
                                      : ArrayRef<StringRef>{})))
    return failure();
  RankedTensorType type = node.getInputType(0);
  FailureOr<ListArgument> axes = getAxesArgument(node, "axes", 13, 1);
  if (failed(axes))
    return failure();
  Builder &b = node.getBuilder();
  if (axes->dynamic) {
    // weft.squeeze's run-time form, which folds to the attribute form when
    // the input's shape leaves one choice of axes.
    SqueezeOp::Properties props;
    props.setAxes(b.getDenseI64ArrayAttr({}));
    return buildOutput<SqueezeOp>(node, {node.getInput(0), axes->dynamic},
                                  props);
  }
  SmallVector<int64_t> normalized;
  if (axes->values) {
    FailureOr<SmallVector<int64_t>> n =
        normalizeNodeAxes(node, *axes->values, type.getRank());
    if (failed(n))
      return failure();
    normalized = *n;
  } else {
    if (!type.hasStaticShape())
      return node.emitError()
             << "Squeeze without axes removes the dimensions of size 1, "
                "which is not known for the dynamic dimensions of "
             << type << "; give the axes";
    for (auto [i, d] : llvm::enumerate(type.getShape()))
      if (d == 1)
        normalized.push_back(i);
  }
  llvm::sort(normalized);
  SqueezeOp::Properties props;
  props.setAxes(b.getDenseI64ArrayAttr(normalized));
  return buildOutput<SqueezeOp>(node, {node.getInput(0)}, props);
}

/// Unsqueeze: axes (of the result) as attribute before opset 13, as input
/// from then on; required.
static LogicalResult importUnsqueeze(NodeImporter &node) {
  if (failed(node.checkKnownAttrs(node.getOpset() < 13
                                      ? ArrayRef<StringRef>{"axes"}
                                      : ArrayRef<StringRef>{})))
    return failure();
  FailureOr<ListArgument> axes = getAxesArgument(node, "axes", 13, 1);
  if (failed(axes))
    return failure();
  if (axes->isAbsent())
    return node.emitError() << "the axes are missing";
  if (axes->dynamic) {
    UnsqueezeOp::Properties props;
    props.setAxes(node.getBuilder().getDenseI64ArrayAttr({}));
    return buildOutput<UnsqueezeOp>(node, {node.getInput(0), axes->dynamic},
                                    props);
  }
  int64_t rank = node.getInputType(0).getRank() + axes->values->size();
  FailureOr<SmallVector<int64_t>> normalized =
      normalizeNodeAxes(node, *axes->values, rank);
  if (failed(normalized))
    return failure();
  llvm::sort(*normalized);
  UnsqueezeOp::Properties props;
  props.setAxes(node.getBuilder().getDenseI64ArrayAttr(*normalized));
  return buildOutput<UnsqueezeOp>(node, {node.getInput(0)}, props);
}

/// Transpose: `perm`, by default the reversed dimensions.
static LogicalResult importTranspose(NodeImporter &node) {
  if (failed(node.checkKnownAttrs({"perm"})))
    return failure();
  int64_t rank = node.getInputType(0).getRank();
  SmallVector<int64_t> reversed;
  for (int64_t i = rank - 1; i >= 0; --i)
    reversed.push_back(i);
  FailureOr<SmallVector<int64_t>> perm = node.getInts("perm", reversed);
  if (failed(perm))
    return failure();
  TransposeOp::Properties props;
  props.setPerm(node.getBuilder().getDenseI64ArrayAttr(*perm));
  return buildOutput<TransposeOp>(node, {node.getInput(0)}, props);
}

//===----------------------------------------------------------------------===//
// Joining and splitting
//===----------------------------------------------------------------------===//

/// Concat: `axis`, required.
static LogicalResult importConcat(NodeImporter &node) {
  if (failed(node.checkKnownAttrs({"axis"})))
    return failure();
  SmallVector<Value> inputs;
  for (unsigned i = 0; i < node.getNumInputs(); ++i) {
    if (!node.hasInput(i))
      return node.emitError() << "input " << i << " is empty";
    inputs.push_back(node.getInput(i));
  }
  FailureOr<int64_t> axis = node.getInt("axis");
  if (failed(axis))
    return failure();
  int64_t rank = node.getInputType(0).getRank();
  if (rank == 0)
    return node.emitError() << "cannot concatenate 0-D tensors";
  FailureOr<int64_t> normalized = normalizeNodeAxis(node, *axis, rank);
  if (failed(normalized))
    return failure();
  ConcatOp::Properties props;
  props.setAxis(node.getBuilder().getI64IntegerAttr(*normalized));
  return buildOutput<ConcatOp>(node, inputs, props);
}

/// Split: sizes from attribute `split` before opset 13, input 1 from then
/// on; `num_outputs` from opset 18; an even split into the node's outputs
/// otherwise.
static LogicalResult importSplit(NodeImporter &node) {
  int64_t opset = node.getOpset();
  SmallVector<StringRef> known = {"axis"};
  if (opset < 13)
    known.push_back("split");
  if (opset >= 18)
    known.push_back("num_outputs");
  if (failed(node.checkKnownAttrs(known)))
    return failure();
  RankedTensorType type = node.getInputType(0);
  FailureOr<int64_t> axisAttr = node.getInt("axis", 0);
  if (failed(axisAttr))
    return failure();
  if (type.getRank() == 0)
    return node.emitError() << "cannot split a 0-D tensor";
  FailureOr<int64_t> axis = normalizeNodeAxis(node, *axisAttr, type.getRank());
  if (failed(axis))
    return failure();
  int64_t numOutputs = node.getNumOutputs();

  std::optional<SmallVector<int64_t>> sizes;
  Value dynamicSizes;
  if (opset < 13 && node.hasAttr("split")) {
    FailureOr<SmallVector<int64_t>> values = node.getInts("split");
    if (failed(values))
      return failure();
    sizes = *values;
  } else if (opset >= 13 && node.hasInput(1)) {
    FailureOr<ListArgument> split = getListInput(node, 1, "split");
    if (failed(split))
      return failure();
    sizes = split->values;
    dynamicSizes = split->dynamic;
  }
  if (sizes && sizes->empty())
    sizes.reset();

  Builder &b = node.getBuilder();
  SplitOp::Properties props;
  props.setAxis(b.getI64IntegerAttr(*axis));
  SmallVector<Value> operands = {node.getInput(0)};
  if (dynamicSizes) {
    // Sizes computed at run time: weft.split's `dynamic_sizes` form.
    if (node.hasAttr("num_outputs"))
      return node.emitError()
             << "takes either the split input or num_outputs, not both";
    int64_t count =
        cast<RankedTensorType>(dynamicSizes.getType()).getDimSize(0);
    if (count != numOutputs)
      return node.emitError() << "has " << count << " split sizes but "
                              << numOutputs << " outputs";
    operands.push_back(dynamicSizes);
  } else if (sizes) {
    if (node.hasAttr("num_outputs"))
      return node.emitError()
             << "takes either the split input or num_outputs, not both";
    if (static_cast<int64_t>(sizes->size()) != numOutputs)
      return node.emitError() << "has " << sizes->size() << " split sizes but "
                              << numOutputs << " outputs";
    props.setSizes(b.getDenseI64ArrayAttr(*sizes));
  } else {
    if (opset >= 18) {
      if (!node.hasAttr("num_outputs"))
        return node.emitError()
               << "needs either the split input or num_outputs";
      FailureOr<int64_t> n = node.getInt("num_outputs");
      if (failed(n))
        return failure();
      if (*n != numOutputs)
        return node.emitError() << "has num_outputs " << *n << " but "
                                << numOutputs << " outputs";
    }
    int64_t dim = type.getDimSize(*axis);
    if (opset < 18 && !ShapedType::isDynamic(dim) && dim % numOutputs != 0)
      return node.emitError()
             << "cannot split dimension " << *axis << " of size " << dim
             << " evenly into " << numOutputs << " outputs";
    props.setNumOutputs(b.getI64IntegerAttr(numOutputs));
  }
  FailureOr<SmallVector<Value>> results = build<SplitOp>(node, operands, props);
  if (failed(results))
    return failure();
  for (auto [i, result] : llvm::enumerate(*results))
    node.setOutput(i, result);
  return success();
}

//===----------------------------------------------------------------------===//
// Indexing
//===----------------------------------------------------------------------===//

/// Slice: starts, ends and axes as attributes before opset 10; from then on
/// as inputs with optional axes (constant) and steps. Starts, ends and steps
/// may be computed at run time.
static LogicalResult importSlice(NodeImporter &node) {
  int64_t opset = node.getOpset();
  if (failed(node.checkKnownAttrs(
          opset < 10 ? ArrayRef<StringRef>{"starts", "ends", "axes"}
                     : ArrayRef<StringRef>{})))
    return failure();
  int64_t rank = node.getInputType(0).getRank();
  Value starts, ends, steps, dynamicAxes;
  std::optional<SmallVector<int64_t>> axes;
  int64_t count;
  if (opset < 10) {
    FailureOr<SmallVector<int64_t>> s = node.getInts("starts");
    if (failed(s))
      return failure();
    FailureOr<SmallVector<int64_t>> e = node.getInts("ends");
    if (failed(e))
      return failure();
    if (s->size() != e->size())
      return node.emitError()
             << "has " << s->size() << " starts but " << e->size() << " ends";
    starts = node.createI64Constant(*s);
    ends = node.createI64Constant(*e);
    count = s->size();
    if (node.hasAttr("axes")) {
      FailureOr<SmallVector<int64_t>> a = node.getInts("axes");
      if (failed(a))
        return failure();
      axes = *a;
    }
  } else {
    if (!node.hasInput(1) || !node.hasInput(2))
      return node.emitError() << "the starts and ends inputs are required";
    starts = node.getInput(1);
    ends = node.getInput(2);
    RankedTensorType startsType = node.getInputType(1);
    if (startsType.getRank() != 1 || startsType.isDynamicDim(0))
      return node.emitError()
             << "starts must be 1-D with a static length, got " << startsType;
    count = startsType.getDimSize(0);
    if (node.hasInput(3)) {
      FailureOr<ListArgument> a = getListInput(node, 3, "axes");
      if (failed(a))
        return failure();
      axes = a->values;
      dynamicAxes = a->dynamic;
    }
    if (node.hasInput(4))
      steps = node.getInput(4);
  }
  if (!steps)
    steps = node.createI64Constant(SmallVector<int64_t>(count, 1));
  Builder &b = node.getBuilder();
  if (dynamicAxes) {
    // Axes computed at run time: weft.slice's `dynamic_axes` form.
    int64_t numAxes =
        cast<RankedTensorType>(dynamicAxes.getType()).getDimSize(0);
    if (numAxes != count)
      return node.emitError()
             << "has " << numAxes << " axes but " << count << " starts";
    SliceOp::Properties props;
    props.setAxes(b.getDenseI64ArrayAttr({}));
    return buildOutput<SliceOp>(
        node, {node.getInput(0), starts, ends, steps, dynamicAxes}, props);
  }
  if (!axes) {
    axes.emplace();
    for (int64_t i = 0; i < count; ++i)
      axes->push_back(i);
  }
  if (static_cast<int64_t>(axes->size()) != count)
    return node.emitError()
           << "has " << axes->size() << " axes but " << count << " starts";
  FailureOr<SmallVector<int64_t>> normalized =
      normalizeNodeAxes(node, *axes, rank);
  if (failed(normalized))
    return failure();
  SliceOp::Properties props;
  props.setAxes(b.getDenseI64ArrayAttr(*normalized));
  return buildOutput<SliceOp>(node, {node.getInput(0), starts, ends, steps},
                              props);
}

/// Gather and GatherElements: `axis`, default 0.
template <typename OpTy>
static LogicalResult importGatherLike(NodeImporter &node) {
  if (failed(node.checkKnownAttrs({"axis"})))
    return failure();
  int64_t rank = node.getInputType(0).getRank();
  if (rank == 0)
    return node.emitError() << "cannot gather from a 0-D tensor";
  FailureOr<int64_t> axisAttr = node.getInt("axis", 0);
  if (failed(axisAttr))
    return failure();
  FailureOr<int64_t> axis = normalizeNodeAxis(node, *axisAttr, rank);
  if (failed(axis))
    return failure();
  typename OpTy::Properties props;
  props.setAxis(node.getBuilder().getI64IntegerAttr(*axis));
  return buildOutput<OpTy>(node, {node.getInput(0), node.getInput(1)}, props);
}

//===----------------------------------------------------------------------===//
// Broadcasting, padding and repetition
//===----------------------------------------------------------------------===//

/// Expand: the shape is input 1 and may be computed at run time.
static LogicalResult importExpand(NodeImporter &node) {
  if (failed(node.checkKnownAttrs({})) ||
      failed(checkShapeInput(node, 1, "the shape input")))
    return failure();
  return buildOutput<ExpandOp>(node, {node.getInput(0), node.getInput(1)},
                               ExpandOp::Properties());
}

/// Pad: `pads` and `value` attributes before opset 11, inputs `pads` and
/// `constant_value` from then on, with `axes` from opset 18 and `wrap` mode
/// from opset 19.
static LogicalResult importPad(NodeImporter &node) {
  int64_t opset = node.getOpset();
  if (failed(node.checkKnownAttrs(
          opset < 11 ? ArrayRef<StringRef>{"mode", "pads", "value"}
                     : ArrayRef<StringRef>{"mode"})))
    return failure();
  RankedTensorType type = node.getInputType(0);
  int64_t rank = type.getRank();
  FailureOr<std::string> modeName = node.getString("mode", "constant");
  if (failed(modeName))
    return failure();
  std::optional<PadMode> mode = symbolizePadMode(*modeName);
  if (!mode || (*mode == PadMode::wrap && opset < 19))
    return node.emitError()
           << "unknown pad mode '" << *modeName << "' at opset " << opset;

  SmallVector<int64_t> pads;
  Value value, dynamicPads;
  if (opset < 11) {
    FailureOr<SmallVector<int64_t>> p = node.getInts("pads");
    if (failed(p))
      return failure();
    FailureOr<double> v = node.getFloat("value", 0.0);
    if (failed(v))
      return failure();
    pads = *p;
    if (*mode == PadMode::constant && *v != 0.0)
      value = node.createScalar(type.getElementType(), *v);
  } else {
    if (!node.hasInput(1))
      return node.emitError() << "the pads input is required";
    FailureOr<ListArgument> p = getListInput(node, 1, "pads");
    if (failed(p))
      return failure();
    if (p->values)
      pads = *p->values;
    dynamicPads = p->dynamic;
    if (*mode == PadMode::constant && node.hasInput(2))
      value = node.getInput(2);
    if (opset >= 18 && node.hasInput(3)) {
      FailureOr<SmallVector<int64_t>> axes =
          node.requireConstantInts(3, "axes");
      if (failed(axes))
        return failure();
      FailureOr<SmallVector<int64_t>> normalized =
          normalizeNodeAxes(node, *axes, rank);
      if (failed(normalized))
        return failure();
      if (dynamicPads) {
        // Pads computed at run time cannot be moved to their axes at compile
        // time: they must already be in the order of all dimensions.
        if (*normalized != llvm::to_vector(llvm::seq<int64_t>(0, rank)))
          return node.emitError()
                 << "pads computed at run time need axes that list every "
                    "dimension in order, got axes "
                 << formatShape(*axes);
      } else {
        if (pads.size() != 2 * normalized->size())
          return node.emitError()
                 << "has " << pads.size() << " pads for " << normalized->size()
                 << " axes (expected two per axis)";
        SmallVector<int64_t> full(2 * rank, 0);
        for (auto [i, axis] : llvm::enumerate(*normalized)) {
          full[axis] = pads[i];
          full[rank + axis] = pads[normalized->size() + i];
        }
        pads = full;
      }
    }
  }
  int64_t numPads =
      dynamicPads ? cast<RankedTensorType>(dynamicPads.getType()).getDimSize(0)
                  : static_cast<int64_t>(pads.size());
  if (numPads != 2 * rank)
    return node.emitError() << "has " << numPads << " pads for rank " << rank
                            << " (expected " << 2 * rank << ")";
  PadOp::Properties props;
  props.setMode(PadModeAttr::get(node.getContext(), *mode));
  props.setPads(node.getBuilder().getDenseI64ArrayAttr(pads));
  SmallVector<Value> operands = {node.getInput(0)};
  if (value)
    operands.push_back(value);
  // Pads computed at run time: weft.pad's `dynamic_pads` form.
  if (dynamicPads)
    operands.push_back(dynamicPads);
  props.operandSegmentSizes = {1, value ? 1 : 0, dynamicPads ? 1 : 0};
  return buildOutput<PadOp>(node, operands, props);
}

/// Tile: input 1 holds the repeats, which may be computed at run time.
static LogicalResult importTile(NodeImporter &node) {
  if (failed(node.checkKnownAttrs({})))
    return failure();
  if (failed(checkShapeInput(node, 1, "the repeats input")))
    return failure();
  return buildOutput<TileOp>(node, {node.getInput(0), node.getInput(1)},
                             TileOp::Properties());
}

/// Trilu: `upper` (default 1) and the optional 0-D input k (default 0),
/// which may be computed at run time.
static LogicalResult importTrilu(NodeImporter &node) {
  if (failed(node.checkKnownAttrs({"upper"})))
    return failure();
  FailureOr<int64_t> upper = node.getInt("upper", 1);
  if (failed(upper))
    return failure();
  Value k = node.hasInput(1)
                ? node.getInput(1)
                : node.createScalar(node.getBuilder().getI64Type(), 0);
  TriluOp::Properties props;
  if (*upper)
    props.setUpper(node.getBuilder().getUnitAttr());
  return buildOutput<TriluOp>(node, {node.getInput(0), k}, props);
}

//===----------------------------------------------------------------------===//
// Shape computation
//===----------------------------------------------------------------------===//

/// Shape: `start` and `end` from opset 15, negative values counting from the
/// end and both clamped to [0, rank].
static LogicalResult importShape(NodeImporter &node) {
  if (failed(node.checkKnownAttrs(node.getOpset() < 15
                                      ? ArrayRef<StringRef>{}
                                      : ArrayRef<StringRef>{"start", "end"})))
    return failure();
  int64_t rank = node.getInputType(0).getRank();
  FailureOr<int64_t> start = node.getInt("start", 0);
  if (failed(start))
    return failure();
  FailureOr<int64_t> end = node.getInt("end", rank);
  if (failed(end))
    return failure();
  auto clampIndex = [&](int64_t i) {
    if (i < 0)
      i += rank;
    return std::clamp<int64_t>(i, 0, rank);
  };
  Builder &b = node.getBuilder();
  ShapeOp::Properties props;
  props.setStart(b.getI64IntegerAttr(clampIndex(*start)));
  if (clampIndex(*end) != rank)
    props.setEnd(b.getI64IntegerAttr(clampIndex(*end)));
  return buildOutput<ShapeOp>(node, {node.getInput(0)}, props);
}

static LogicalResult importSize(NodeImporter &node) {
  if (failed(node.checkKnownAttrs({})))
    return failure();
  return buildOutput<SizeOp>(node, {node.getInput(0)}, SizeOp::Properties());
}

/// ConstantOfShape: `value` is a one-element tensor, a float 0 by default.
static LogicalResult importConstantOfShape(NodeImporter &node) {
  if (failed(node.checkKnownAttrs({"value"})) ||
      failed(checkShapeInput(node, 0, "the shape input")))
    return failure();
  TypedAttr value = node.getBuilder().getF32FloatAttr(0.0f);
  if (node.hasAttr("value")) {
    FailureOr<DenseElementsAttr> tensor = node.getTensor("value");
    if (failed(tensor))
      return failure();
    if (tensor->getNumElements() != 1)
      return node.emitError()
             << "value must have one element, got " << tensor->getType();
    value = cast<TypedAttr>(tensor->getSplatValue<Attribute>());
  }
  ConstantOfShapeOp::Properties props;
  props.setValue(value);
  return buildOutput<ConstantOfShapeOp>(node, {node.getInput(0)}, props);
}

/// Range: three scalars of one type, which may be computed at run time.
static LogicalResult importRange(NodeImporter &node) {
  if (failed(node.checkKnownAttrs({})))
    return failure();
  Type elementType = node.getInputType(0).getElementType();
  if (elementType.isInteger(1) || elementType.isInteger(8) ||
      elementType.isUnsignedInteger(8))
    return node.emitError()
           << "Range does not support element type " << elementType;
  return buildOutput<RangeOp>(
      node, {node.getInput(0), node.getInput(1), node.getInput(2)},
      RangeOp::Properties());
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

void mlir::weft::onnx_import::registerShapeImporters(
    OpImportRegistry &registry) {
  // {sinceOpset, minInputs, maxInputs, minOutputs, maxOutputs, handler}
  registry.add("Reshape", {5, 2, 2, 1, 1, importReshape});
  registry.add("Flatten", {1, 1, 1, 1, 1, importFlatten});
  registry.add("Squeeze", {1, 1, 2, 1, 1, importSqueeze});
  registry.add("Unsqueeze", {1, 1, 2, 1, 1, importUnsqueeze});
  registry.add("Transpose", {1, 1, 1, 1, 1, importTranspose});
  registry.add("Concat", {1, 1, -1, 1, 1, importConcat});
  registry.add("Split", {1, 1, 2, 1, -1, importSplit});
  registry.add("Slice", {1, 1, 5, 1, 1, importSlice});
  registry.add("Gather", {1, 2, 2, 1, 1, importGatherLike<GatherOp>});
  registry.add("GatherElements",
               {11, 2, 2, 1, 1, importGatherLike<GatherElementsOp>});
  registry.add("Expand", {8, 2, 2, 1, 1, importExpand});
  registry.add("Pad", {2, 1, 4, 1, 1, importPad});
  registry.add("Tile", {6, 2, 2, 1, 1, importTile});
  registry.add("Trilu", {14, 1, 2, 1, 1, importTrilu});
  registry.add("Shape", {1, 1, 1, 1, 1, importShape});
  registry.add("Size", {1, 1, 1, 1, 1, importSize});
  registry.add("ConstantOfShape", {9, 1, 1, 1, 1, importConstantOfShape});
  registry.add("Range", {11, 3, 3, 1, 1, importRange});
}
