//===- ShapeOps.td - Weft ShapeOps ---------------------------------*- tablegen -*-===//
//
// (Filled in by the op family's author.)
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECT_WEFT_SHAPEOPS_TD
#define WEFT_DIALECT_WEFT_SHAPEOPS_TD

include "weft/WeftBase.td"

#endif // WEFT_DIALECT_WEFT_SHAPEOPS_TD
