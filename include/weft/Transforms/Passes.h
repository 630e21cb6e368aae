//===- Passes.h - Weft transformation passes ---------------------*- C++ -*-===//
//
// Declarations and registration of weft's passes.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TRANSFORMS_PASSES_H
#define WEFT_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir::weft {

#define GEN_PASS_DECL
#include "weft/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "weft/Transforms/Passes.h.inc"

} // namespace mlir::weft

#endif // WEFT_TRANSFORMS_PASSES_H
