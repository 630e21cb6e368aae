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

namespace {
/// Follows the batch through one op; records its results' batch dims.
class BatchFollower {
public:
  BatchFollower(BatchDims &dims) : dims(dims) {}

  LogicalResult follow(Operation *op) {
    SmallVector<unsigned> batched;
    for (auto [i, operand] : llvm::enumerate(op->getOperands()))
      if (dims.dimOf.count(operand))
        batched.push_back(static_cast<unsigned>(i));
    if (batched.empty())
      return success(); // Weights, constants, shapes: no batch.
    // A shape read off a batched value is a compile-time constant of the
    // microbatch's model: it carries no batch rows.
    if (isa<ShapeOp, SizeOp>(op))
      return success();
    std::optional<LoopSpace> space = getLoopSpace(op);
    if (!space)
      return refuse(op, "has no data-parallel rule, so its batch rows cannot "
                        "be computed apart");
    int loop = -1;
    for (unsigned i : batched) {
      if (!space->operandIsData[i])
        return refuse(op, "reads operand #" + std::to_string(i) +
                              ", which carries the batch, as a shape or "
                              "index list");
      int at = space->operandDims[i][dims.dimOf[op->getOperand(i)]];
      if (at < 0)
        return refuse(op, "needs operand #" + std::to_string(i) +
                              " whole along its batch dimension: it mixes "
                              "batch rows");
      if (loop >= 0 && at != loop)
        return refuse(op, "pairs the batch rows of its operands with other "
                          "dimensions");
      loop = at;
    }
    if (space->kinds[loop] != LoopKind::Parallel)
      return refuse(op, "sums over the batch dimension: it mixes batch rows");
    if (space->sizes[loop] != dims.batch)
      return refuse(op, "folds the batch dimension together with another "
                        "one, so that a microbatch's rows are not a block of "
                        "the result");
    // An operand that is not batched but spans the batch loop (a constant
    // the size of the batch) would need cutting too.
    for (auto [i, operandDims] : llvm::enumerate(space->operandDims)) {
      if (dims.dimOf.count(op->getOperand(i)) || !space->operandIsData[i])
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
      dims.dimOf[result] = at - resultDims.begin();
    }
    return success();
  }

private:
  LogicalResult refuse(Operation *op, const std::string &why) {
    return op->emitError() << "--microbatches: " << describeOp(op) << " "
                           << why
                           << "; compile without --microbatches, or with "
                              "the batch as its own requests (weft-run "
                              "--stream with batch 1)";
  }

  BatchDims &dims;
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
    dims.dimOf[arg] = 0;
  }
  if (dims.batch % microbatches != 0)
    return main.emitError("--microbatches=")
           << microbatches << " does not divide the batch " << dims.batch
           << " (dimension 0 of the inputs)";
  BatchFollower follower(dims);
  Block &body = main.getBody().front();
  for (Operation &op : body.without_terminator())
    if (failed(follower.follow(&op)))
      return failure();
  for (auto [i, output] :
       llvm::enumerate(body.getTerminator()->getOperands())) {
    auto at = dims.dimOf.find(output);
    if (at != dims.dimOf.end() && at->second == 0)
      continue;
    std::string where = at == dims.dimOf.end()
                            ? "does not depend on the batch rows"
                            : "carries the batch in dimension " +
                                  std::to_string(at->second);
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
    if (auto at = dims.dimOf.find(v); at != dims.dimOf.end())
      shape[at->second] /= microbatches;
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
        if (expected(fullValue) != microValue.getType())
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
