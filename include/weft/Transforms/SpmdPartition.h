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
/// module's weft.mesh. Weights become the device's blocks of them; inputs
/// arrive whole on every device and results leave whole. Device-dependent
/// choices are only the local shapes of uneven blocks and the weight blocks,
/// so devices with equal blocks get identical programs.
LogicalResult spmdPartition(ModuleOp module, int64_t device);

} // namespace mlir::weft

#endif // WEFT_TRANSFORMS_SPMDPARTITION_H
