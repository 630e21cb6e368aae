//===- ShardedMemory.h - Memory of a sharded program -------*- C++ -*-===//
//
// The peak bytes one device holds when it runs the partitioned form of a
// function annotated by weft-auto-shard, counted as weft-spmd-partition will
// build it: weights and inputs throughout, each op's local results from
// definition to last use, the buffers resharding creates (a sliced weight
// or input, a gathered or all-to-all'ed activation) for as long as their
// users need them, and the inputs and whole outputs, which have buffers of
// their own for the whole run. The ILP's live
// sets price one size per op strategy and so cannot see the resharding
// buffers, which depend on two ops' choices; the planner checks its plan
// with this count.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TRANSFORMS_SHARDEDMEMORY_H
#define WEFT_TRANSFORMS_SHARDEDMEMORY_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::weft {

/// Per device: the largest device's peak, each buffer rounded up to the
/// runtime's 64-byte alignment.
struct ShardedMemory {
  /// Weights, constants, inputs and outputs (live throughout).
  double residentBytes = 0;
  /// The most bytes live at once, resident bytes included.
  double peakBytes = 0;
  /// Of the peak: buffers that resharding made.
  double reshardBytesAtPeak = 0;
};

/// On an argument of a pipeline stage's function: the value arrives by a
/// receive, which has a staging buffer of the same size for the whole run
/// (weft-stage-receives), so the argument counts twice.
inline constexpr llvm::StringLiteral kReceivedArgAttr = "weft.received";

/// Counts `func`'s memory from its weft.sharding / weft.operand_sharding
/// annotations, which name the mesh `meshSymbol` of `meshShape` (a value
/// without one is whole on it). An argument marked kReceivedArgAttr counts
/// twice.
ShardedMemory countShardedMemory(func::FuncOp func, llvm::StringRef meshSymbol,
                                 ArrayRef<int64_t> meshShape);

} // namespace mlir::weft

#endif // WEFT_TRANSFORMS_SHARDEDMEMORY_H
