//===- SpmdPartition.h - Per-device programs from a sharded one -*- C++ -*-===//
//
// Rewrites a function whose ops carry shardings (weft-auto-shard's output)
// into one device's program: local ops on local blocks, with the
// collectives the resharding planner chooses wherever a value's sharding is
// not the one its user needs.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TRANSFORMS_SPMDPARTITION_H
#define WEFT_TRANSFORMS_SPMDPARTITION_H

#include "mlir/IR/BuiltinOps.h"

namespace mlir::weft {

/// Partitions `module`'s main function for mesh position `device` of the
/// module's weft.mesh `meshSymbol`. Weights become the device's blocks of
/// them. Inputs arrive and results leave whole, unless an argument or
/// result carries a `weft.sharding` attribute (a pipeline stage's boundary):
/// then that argument is the device's block in that sharding and that
/// result leaves as its block (partial sums reduced first). Device-dependent
/// choices are only the local shapes of uneven blocks and the weight blocks,
/// so devices with equal blocks get identical programs.
LogicalResult spmdPartition(ModuleOp module, int64_t device,
                            llvm::StringRef meshSymbol);

/// A key of everything device `device`'s partitioned program depends on
/// but its weights' block offsets: the local shape of every value in the
/// planned module. Devices with equal keys get programs that differ only in
/// which block of each weight they hold.
FailureOr<std::string> blockShapeKey(ModuleOp planned, int64_t device,
                                     llvm::StringRef meshSymbol);

/// Turns `partitioned`, the program spmdPartition gave a device with the
/// same blockShapeKey, into device `device`'s by moving its weights' blocks:
/// a 64-device mesh is partitioned once per distinct key, not 64 times.
LogicalResult retargetPartition(ModuleOp planned, ModuleOp partitioned,
                                int64_t device, llvm::StringRef meshSymbol);

} // namespace mlir::weft

#endif // WEFT_TRANSFORMS_SPMDPARTITION_H
