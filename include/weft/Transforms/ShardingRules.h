//===- ShardingRules.h - How each weft op may be split ----------*- C++ -*-===//
//
// An op's sharding rule is its loop space, as MLIR's ShardingInterface
// describes ops: the loops of its computation (parallel, or reductions whose
// partial results add up), and for every operand and result which loop
// indexes each dimension. A strategy assigns mesh axes to loops; the
// shardings of the operands and results follow from the maps. Ops without a
// rule run replicated.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TRANSFORMS_SHARDINGRULES_H
#define WEFT_TRANSFORMS_SHARDINGRULES_H

#include "weft/Plan/Cluster.h"
#include "weft/Plan/Sharding.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace mlir::weft {

namespace plan = ::weft::plan;

enum class LoopKind {
  /// Every member computes its block of the results.
  Parallel,
  /// Splitting leaves each member a partial sum of the results.
  ReductionSum,
};

/// The loop space of one op.
struct LoopSpace {
  /// Trip count and kind of each loop.
  llvm::SmallVector<int64_t> sizes;
  llvm::SmallVector<LoopKind> kinds;
  /// Loops that may only be split evenly (a reshape's merged dimensions:
  /// uneven blocks would not line up on both sides).
  llvm::SmallVector<bool> evenOnly;
  /// For each operand, the loop of each dimension, -1 for a dimension that
  /// must be whole (broadcast, a normalized axis, ...). An operand that is no
  /// tensor data (a shape, slice bounds) has no entry list (`isData` false)
  /// and stays as it is.
  llvm::SmallVector<llvm::SmallVector<int>> operandDims;
  llvm::SmallVector<bool> operandIsData;
  /// Operands the op reads only in part, about as many elements as its
  /// result has (a gather's table): the cost model counts those bytes, not
  /// the whole operand's. Empty: every operand is read whole.
  llvm::SmallVector<bool> operandReadInPart;
  llvm::SmallVector<llvm::SmallVector<int>> resultDims;
  /// Work of the whole op (FLOPs; element operations count as one each).
  double flops = 0;
};

/// The op's loop space; nullopt when it has no rule (it runs replicated).
std::optional<LoopSpace> getLoopSpace(Operation *op);

/// The cost model's dtype of a shaped type's elements (F32 for a type the
/// cost model has no rate for, and for a type that is not shaped).
::weft::plan::DType costDTypeOf(Type type);

/// What codegen makes of an op's memory traffic, for the cost model (the
/// planner's op costs and the simulator's, which must agree):
/// - reshape-like ops (reshape, flatten, squeeze, unsqueeze) are views of
///   their operand and move nothing;
/// - elementwise ops (unary, binary, clip, cast, select) fuse with a
///   single-use elementwise producer into one loop (linalg elementwise
///   fusion), so such an operand is never read from memory, and a result
///   whose only user is elementwise is never written.
bool isCostFreeView(Operation *op);
/// A Relu or constant Clip that CPU codegen runs inside the convolution
/// before it (weft/ConvClamp.h): no pass of its own on CPU devices.
bool isClampFusedIntoConv(Operation *op);
bool operandStaysInRegisters(Operation *op, unsigned operand);
bool resultStaysInRegisters(Value result);

/// The kernel class the backends run `op` with, whose rate the cluster
/// spec may give apart from the GEMM's (DeviceKind::kernelRates): a
/// weft.conv with one input channel per group is depthwise; otherwise a
/// 1x1 window is pointwise, a 3x3 one of stride 1, dilation 1 and one group
/// Conv3x3, and any other Conv. Every other op is Generic.
::weft::plan::KernelClass kernelClassOf(Operation *op);

/// A strategy: for each loop the mesh axes it is split over.
using LoopAxes = llvm::SmallVector<plan::AxisList>;

/// Every strategy of `space` on a mesh of `meshShape`: each mesh axis goes to
/// one loop or to none; a loop's axes are in increasing order; a loop is
/// split over at most its size; even-only loops only evenly. The replicated
/// strategy (no axis used) comes first.
std::vector<LoopAxes> enumerateStrategies(const LoopSpace &space,
                                          llvm::ArrayRef<int64_t> meshShape);

/// Shardings implied by a strategy on the mesh whose symbol is `mesh`.
plan::TensorSharding operandSharding(const LoopSpace &space, unsigned operand,
                                     const LoopAxes &strategy,
                                     llvm::StringRef mesh);
plan::TensorSharding resultSharding(const LoopSpace &space, unsigned result,
                                    const LoopAxes &strategy,
                                    llvm::StringRef mesh);
/// Devices that share the work (product of the group sizes of used axes).
int64_t parallelism(const LoopAxes &strategy,
                    llvm::ArrayRef<int64_t> meshShape);

} // namespace mlir::weft

#endif // WEFT_TRANSFORMS_SHARDINGRULES_H
