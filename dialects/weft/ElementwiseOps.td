//===- ElementwiseOps.td - Weft ElementwiseOps ---------------------------------*- tablegen -*-===//
//
// (Filled in by the op family's author.)
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECT_WEFT_ELEMENTWISEOPS_TD
#define WEFT_DIALECT_WEFT_ELEMENTWISEOPS_TD

include "weft/WeftBase.td"

#endif // WEFT_DIALECT_WEFT_ELEMENTWISEOPS_TD
