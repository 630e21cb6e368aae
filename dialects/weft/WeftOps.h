//===- WeftOps.h - Weft dialect operations -----------------------*- C++ -*-===//
//
// Declares the ops, enums and attributes of the weft dialect.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECT_WEFT_WEFTOPS_H
#define WEFT_DIALECT_WEFT_WEFTOPS_H

#include "weft/ConvLayout.h"
#include "weft/WeftDialect.h"
#include "weft/WeftTypeUtils.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "weft/WeftEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "weft/WeftAttrs.h.inc"

#define GET_OP_CLASSES
#include "weft/WeftOps.h.inc"

namespace mlir::weft {
/// Checks `sharding` against the mesh it names (looked up from `op`, through
/// `tables` when given) and the rank of the value it describes.
LogicalResult verifyShardingFor(Operation *op, ShardingAttr sharding,
                                RankedTensorType type,
                                SymbolTableCollection *tables);

/// How a broadcast (weft.broadcast_send, weft.broadcast_recv) cuts a tensor
/// of `shape` into chunks: {rows, elements per row}, the rows being the
/// outermost dimension longer than one (every dimension before it is 1),
/// as the resharding planner cuts a chain's tile. {0, 1} for an empty
/// tensor, {1, 1} for one element.
std::pair<int64_t, int64_t> broadcastRows(ArrayRef<int64_t> shape);
} // namespace mlir::weft

#endif // WEFT_DIALECT_WEFT_WEFTOPS_H
