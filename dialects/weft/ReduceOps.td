//===- ReduceOps.td - Weft ReduceOps ---------------------------------*- tablegen -*-===//
//
// (Filled in by the op family's author.)
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECT_WEFT_REDUCEOPS_TD
#define WEFT_DIALECT_WEFT_REDUCEOPS_TD

include "weft/WeftBase.td"

#endif // WEFT_DIALECT_WEFT_REDUCEOPS_TD
