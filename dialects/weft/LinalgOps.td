//===- LinalgOps.td - Weft LinalgOps ---------------------------------*- tablegen -*-===//
//
// (Filled in by the op family's author.)
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECT_WEFT_LINALGOPS_TD
#define WEFT_DIALECT_WEFT_LINALGOPS_TD

include "weft/WeftBase.td"

#endif // WEFT_DIALECT_WEFT_LINALGOPS_TD
