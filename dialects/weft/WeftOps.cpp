//===- WeftOps.cpp - Weft generated op, enum and attribute definitions ----===//
//
// Instantiates the ODS-generated code of all op families. Hand-written
// methods live in one file per family (ElementwiseOps.cpp, ...).
//
//===----------------------------------------------------------------------===//

#include "weft/WeftOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::weft;

#include "weft/WeftEnums.cpp.inc"

#define GET_OP_CLASSES
#include "weft/WeftOps.cpp.inc"
