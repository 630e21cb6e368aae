//===- WeftOps.h - Weft dialect operations -----------------------*- C++ -*-===//
//
// Declares the ops, enums and attributes of the weft dialect.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECT_WEFT_WEFTOPS_H
#define WEFT_DIALECT_WEFT_WEFTOPS_H

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
} // namespace mlir::weft

#endif // WEFT_DIALECT_WEFT_WEFTOPS_H
