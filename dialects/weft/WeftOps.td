//===- WeftOps.td - Weft dialect operations ----------------*- tablegen -*-===//
//
// Collects the op families of the weft dialect; each family has its own file.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECT_WEFT_WEFTOPS_TD
#define WEFT_DIALECT_WEFT_WEFTOPS_TD

include "weft/WeftBase.td"
include "weft/CoreOps.td"
include "weft/ElementwiseOps.td"
include "weft/LinalgOps.td"
include "weft/ConvPoolNormOps.td"
include "weft/ReduceOps.td"
include "weft/ShapeOps.td"
include "weft/ShardingOps.td"
include "weft/PipelineOps.td"

#endif // WEFT_DIALECT_WEFT_WEFTOPS_TD
