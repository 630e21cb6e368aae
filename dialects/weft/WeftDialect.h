//===- WeftDialect.h - Weft dialect declaration ------------------*- C++ -*-===//
//
// Declares the weft dialect class.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECT_WEFT_WEFTDIALECT_H
#define WEFT_DIALECT_WEFT_WEFTDIALECT_H

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dialect.h"

#include "weft/WeftDialect.h.inc"

#endif // WEFT_DIALECT_WEFT_WEFTDIALECT_H
