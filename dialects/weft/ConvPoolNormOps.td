//===- ConvPoolNormOps.td - Weft ConvPoolNormOps ---------------------------------*- tablegen -*-===//
//
// (Filled in by the op family's author.)
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECT_WEFT_CONVPOOLNORMOPS_TD
#define WEFT_DIALECT_WEFT_CONVPOOLNORMOPS_TD

include "weft/WeftBase.td"

#endif // WEFT_DIALECT_WEFT_CONVPOOLNORMOPS_TD
