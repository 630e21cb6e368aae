//===- Microbatch.h - Splitting a model's batch into microbatches -*- C++ -*-===//
//
// `weftc --microbatches=M` compiles the model for batch B/M and the runtime
// runs M microbatches per batch, each one its own pass through the
// pipeline. That is only the model's computation when every op treats the
// batch rows apart, as a data-parallel split of the batch over M devices
// would with no collective but the final gather: the analysis here follows
// the batch dimension from the inputs (dimension 0 of each) through each
// op's loop space (ShardingRules.h) and refuses, naming the op, an op that
// mixes batch rows (a reduction or softmax over the batch, a matmul that
// contracts it, a reshape that folds it inside another dimension) or that
// has no rule. Baked-in batch sizes (a Reshape to a constant [8, ...]) are
// caught by comparing the model imported at batch B/M with this one.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TRANSFORMS_MICROBATCH_H
#define WEFT_TRANSFORMS_MICROBATCH_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::weft {

/// Where the batch is in a value: dimension `dim`, whose size is
/// outer x batch x inner (attention's [batch x heads, ...] has inner = heads;
/// a sequence-first [seq x batch, ...] has outer = seq).
struct BatchPlace {
  int64_t dim = 0;
  int64_t outer = 1;
  int64_t inner = 1;
};

/// The batch's place in every value that has one.
struct BatchDims {
  int64_t batch = 0;
  llvm::DenseMap<Value, BatchPlace> placeOf;
};

/// Follows dimension 0 of every input of `main` (the batch, the same size
/// in each) to the outputs; every output must carry it as dimension 0's
/// outermost factor and `microbatches` must divide it. Emits an error naming the op, input or
/// output on failure.
FailureOr<BatchDims> analyzeBatchSplit(func::FuncOp main,
                                       int64_t microbatches);

/// Checks that `micro` (the model imported at batch B/M) is `full` with
/// each batch dimension divided by M, op by op: anything else means the
/// model's computation depends on its batch size.
LogicalResult checkMicrobatchModel(func::FuncOp full, const BatchDims &dims,
                                   func::FuncOp micro, int64_t microbatches);

} // namespace mlir::weft

#endif // WEFT_TRANSFORMS_MICROBATCH_H
