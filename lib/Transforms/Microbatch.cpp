//===- Microbatch.cpp - Splitting a model's batch into microbatches -------===//

#include "weft/Transforms/Microbatch.h"
#include "weft/Transforms/ShardingRules.h"

#include "weft/WeftOps.h"
#include "weft/WeftTypeUtils.h"

using namespace mlir;
using namespace mlir::weft;

/// "weft.softmax", for messages emitted on the op (whose location names
/// its ONNX node).
static std::string describeOp(Operation *op) {
  return op->getName().getStringRef().str();
}

static std::string nameAttr(func::FuncOp main, bool input, unsigned index) {
  auto name = input ? main.getArgAttrOfType<StringAttr>(index, "weft.name")
                    : main.getResultAttrOfType<StringAttr>(index, "weft.name");
  return name ? name.str() : "#" + std::to_string(index);
}

static int64_t dimSize(Value v, int64_t dim) {
  return cast<RankedTensorType>(v.getType()).getDimSize(dim);
}

/// A tensor with one value everywhere (a splat constant, a filled shape):
/// every microbatch's block of it is the same, so it needs no cutting.
static bool isUniform(Value v) {
  if (isa_and_present<ConstantOfShapeOp>(v.getDefiningOp()))
    return true;
  if (auto constant = v.getDefiningOp<ConstantOp>())
    if (auto dense = dyn_cast<DenseElementsAttr>(constant.getValue()))
      return dense.isSplat();
  return false;
}

namespace {
/// Follows the batch through one op; records its results' batch places.
class BatchFollower {
public:
  BatchFollower(BatchDims &dims, int64_t microbatches)
      : dims(dims), microbatches(microbatches) {}

  LogicalResult follow(Operation *op) {
    SmallVector<unsigned> batched;
    for (auto [i, operand] : llvm::enumerate(op->getOperands()))
      if (dims.placeOf.count(operand))
        batched.push_back(static_cast<unsigned>(i));
    if (batched.empty())
      return success(); // Weights, constants, shapes: no batch.
    // A shape read off a batched value is a compile-time constant of the
    // microbatch's model: it carries no batch rows.
    if (isa<ShapeOp, SizeOp>(op))
      return success();
    if (isa<ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp>(op))
      return followReshape(op);
    return followLoops(op, batched);
  }

private:
  /// A reshape keeps the elements' row-major order: the batch is a run of
  /// digits of the mixed-radix index of the operand's elements, and it
  /// lands inside one result dimension when no result dimension's boundary
  /// cuts that run.
  LogicalResult followReshape(Operation *op) {
    Value input = op->getOperand(0), result = op->getResult(0);
    const BatchPlace &in = dims.placeOf[input];
    auto inType = cast<RankedTensorType>(input.getType());
    auto outType = cast<RankedTensorType>(result.getType());
    // Elements before the batch's digits (all dims before its own, and its
    // own outer factor) and the batch run's end.
    int64_t before = in.outer;
    for (int64_t d = 0; d < in.dim; ++d)
      before *= inType.getDimSize(d);
    int64_t end = before * dims.batch;
    int64_t prefix = 1;
    for (int64_t d = 0; d < outType.getRank(); ++d) {
      int64_t size = outType.getDimSize(d);
      if (before % prefix == 0 && (prefix * size) % end == 0) {
        dims.placeOf[result] = {d, before / prefix,
                                prefix * size / end};
        return success();
      }
      prefix *= size;
    }
    return refuse(op, "splits the batch dimension across result "
                      "dimensions: it mixes batch rows");
  }

  LogicalResult followLoops(Operation *op, ArrayRef<unsigned> batched) {
    std::optional<LoopSpace> space = getLoopSpace(op);
    if (!space)
      return refuse(op, "has no data-parallel rule, so its batch rows cannot "
                        "be computed apart");
    int loop = -1;
    BatchPlace place;
    for (unsigned i : batched) {
      if (!space->operandIsData[i])
        return refuse(op, "reads operand #" + std::to_string(i) +
                              ", which carries the batch, as a shape or "
                              "index list");
      Value operand = op->getOperand(i);
      const BatchPlace &at = dims.placeOf[operand];
      int l = space->operandDims[i][at.dim];
      if (l < 0)
        return refuse(op, "needs operand #" + std::to_string(i) +
                              " whole along its batch dimension: it mixes "
                              "batch rows");
      // The loop covers the whole dimension (no broadcast of it), so the
      // batch's factors carry over to the result.
      if (space->sizes[l] != dimSize(operand, at.dim) ||
          (loop >= 0 && (l != loop || at.outer != place.outer ||
                         at.inner != place.inner)))
        return refuse(op, "pairs the batch rows of its operands with other "
                          "rows");
      loop = l;
      place = at;
    }
    if (space->kinds[loop] != LoopKind::Parallel)
      return refuse(op, "sums over the batch dimension: it mixes batch rows");
    // An operand that is not batched but spans the batch loop (a constant
    // the size of the batch) would need cutting too.
    for (auto [i, operandDims] : llvm::enumerate(space->operandDims)) {
      if (dims.placeOf.count(op->getOperand(i)) || !space->operandIsData[i] ||
          isUniform(op->getOperand(i)))
        continue;
      if (llvm::is_contained(operandDims, loop))
        return refuse(op, "combines the batch with operand #" +
                              std::to_string(i) +
                              ", which is sized by the batch but does not "
                              "come from the inputs (a baked-in batch)");
    }
    for (auto [r, result] : llvm::enumerate(op->getResults())) {
      const SmallVector<int> &resultDims = space->resultDims[r];
      auto at = llvm::find(resultDims, loop);
      if (at == resultDims.end())
        return refuse(op, "does not keep the batch dimension in result #" +
                              std::to_string(r) + ": it mixes batch rows");
      int64_t dim = at - resultDims.begin();
      if (dimSize(result, dim) != space->sizes[loop])
        return refuse(op, "pairs the batch rows of its operands with other "
                          "rows");
      dims.placeOf[result] = {dim, place.outer, place.inner};
    }
    return success();
  }

  LogicalResult refuse(Operation *op, const std::string &why) {
    return op->emitError() << "--microbatches: " << describeOp(op) << " "
                           << why
                           << "; compile without --microbatches, or with "
                              "the batch as its own requests (weft-run "
                              "--stream with batch 1)";
  }

  BatchDims &dims;
  int64_t microbatches;
};
} // namespace

FailureOr<BatchDims> mlir::weft::analyzeBatchSplit(func::FuncOp main,
                                                   int64_t microbatches) {
  BatchDims dims;
  if (main.getNumArguments() == 0)
    return main.emitError("--microbatches: the model has no inputs, so no "
                          "batch dimension to split");
  for (BlockArgument arg : main.getArguments()) {
    std::string name = nameAttr(main, true, arg.getArgNumber());
    auto type = cast<RankedTensorType>(arg.getType());
    if (type.getRank() == 0)
      return main.emitError("--microbatches: input '")
             << name << "' is a scalar; every input needs the batch in "
             << "dimension 0";
    if (arg.getArgNumber() == 0)
      dims.batch = type.getDimSize(0);
    if (type.getDimSize(0) != dims.batch)
      return main.emitError("--microbatches: input '")
             << name << "' has " << type.getDimSize(0) << " in dimension 0, "
             << "but the batch (dimension 0 of '" << nameAttr(main, true, 0)
             << "') is " << dims.batch
             << "; every input needs the batch in dimension 0";
    dims.placeOf[arg] = {0, 1, 1};
  }
  if (dims.batch % microbatches != 0)
    return main.emitError("--microbatches=")
           << microbatches << " does not divide the batch " << dims.batch
           << " (dimension 0 of the inputs)";
  BatchFollower follower(dims, microbatches);
  Block &body = main.getBody().front();
  for (Operation &op : body.without_terminator())
    if (failed(follower.follow(&op)))
      return failure();
  for (auto [i, output] :
       llvm::enumerate(body.getTerminator()->getOperands())) {
    auto at = dims.placeOf.find(output);
    if (at != dims.placeOf.end() && at->second.dim == 0 &&
        at->second.outer == 1)
      continue;
    std::string where =
        at == dims.placeOf.end()
            ? "does not depend on the batch rows"
        : at->second.dim != 0
            ? "carries the batch in dimension " +
                  std::to_string(at->second.dim)
            : "carries the batch inside dimension 0, after a factor of " +
                  std::to_string(at->second.outer);
    return main.emitError("--microbatches: output '")
           << nameAttr(main, false, i) << "' " << where
           << ", so the microbatches' outputs cannot be joined in "
              "dimension 0";
  }
  return dims;
}

LogicalResult mlir::weft::checkMicrobatchModel(func::FuncOp full,
                                               const BatchDims &dims,
                                               func::FuncOp micro,
                                               int64_t microbatches) {
  int64_t small = dims.batch / microbatches;
  auto expected = [&](Value v) -> Type {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type)
      return v.getType();
    SmallVector<int64_t> shape(type.getShape());
    if (auto at = dims.placeOf.find(v); at != dims.placeOf.end())
      shape[at->second.dim] /= microbatches;
    return RankedTensorType::get(shape, type.getElementType());
  };
  auto differs = [&](Operation *at, Value fullValue, Value microValue) {
    return at->emitError("--microbatches: at batch ")
           << small << ", " << describeOp(at) << " computes "
           << microValue.getType() << " instead of " << expected(fullValue)
           << ": the model computes something else for a microbatch (a "
              "baked-in batch size)";
  };
  Block &a = full.getBody().front(), &b = micro.getBody().front();
  bool sameOps = a.getOperations().size() == b.getOperations().size() &&
                 llvm::all_of(llvm::zip(a, b), [](auto pair) {
                   auto &[x, y] = pair;
                   return x.getName() == y.getName() &&
                          x.getNumResults() == y.getNumResults();
                 });
  if (sameOps) {
    for (auto [x, y] : llvm::zip(a, b))
      for (auto [fullValue, microValue] :
           llvm::zip(x.getResults(), y.getResults()))
        // A uniform tensor may take the microbatch's size (a splat the
        // importer sized by the batch): its blocks are all alike.
        if (expected(fullValue) != microValue.getType() &&
            !isUniform(fullValue))
          return differs(&y, fullValue, microValue);
  }
  // The outputs, whatever the ops (folding may differ with the batch size).
  Operation *fullReturn = a.getTerminator(), *microReturn = b.getTerminator();
  for (auto [fullValue, microValue] :
       llvm::zip(fullReturn->getOperands(), microReturn->getOperands()))
    if (expected(fullValue) != microValue.getType())
      return differs(microReturn, fullValue, microValue);
  return success();
}
