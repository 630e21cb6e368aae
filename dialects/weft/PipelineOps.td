//===- PipelineOps.td - Stages and the transfers between them -*- tablegen -*-===//
//
// The vocabulary of pipelines (inter-operator parallelism), modeled on
// Shardy MPMD's fragments and transfers: a stage is a region of the model
// that runs on one mesh; a transfer moves a value from one mesh and sharding
// to another. Per-device programs then carry point-to-point sends and
// receives between world ranks.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECT_WEFT_PIPELINEOPS_TD
#define WEFT_DIALECT_WEFT_PIPELINEOPS_TD

include "weft/WeftBase.td"
include "weft/ShardingOps.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

def Weft_StageOp : Op<Weft_Dialect, "stage",
    [IsolatedFromAbove, SingleBlockImplicitTerminator<"YieldOp">,
     DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "A part of the model that runs on one mesh";
  let description = [{
    The body computes the stage's results from its operands on the devices
    of `mesh`; it sees nothing from outside but its block arguments. A
    stage's operands are inputs of the model (every device has them whole)
    or values a `weft.transfer` brought to its mesh; its results leave only
    through transfers to other stages or as results of the model. Inside, the
    intra-operator planner gives each op a sharding on `mesh`.

    ```mlir
    weft.mesh @stage0 shape = [2] devices = [0, 1]
    %h = weft.stage @stage0 (%x) : (tensor<8x16xf32>) -> tensor<8x32xf32> {
    ^bb0(%in: tensor<8x16xf32>):
      %w = weft.weight "fc1.weight" ...
      %y = weft.matmul %in, %w ...
      weft.yield %y : tensor<8x32xf32>
    }
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, Variadic<Weft_Tensor>:$inputs);
  let results = (outs Variadic<Weft_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $mesh `(` $inputs `)` attr-dict `:` functional-type($inputs, $results)
    $body
  }];
  let hasVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [
    OpBuilder<(ins "::mlir::TypeRange":$resultTypes,
                   "::mlir::FlatSymbolRefAttr":$mesh,
                   "::mlir::ValueRange":$inputs)>
  ];
  let extraClassDeclaration = [{
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
  }];
}

def Weft_YieldOp : Op<Weft_Dialect, "yield",
    [Pure, HasParent<"StageOp">, ReturnLike, Terminator]> {
  let summary = "The results of a stage";
  let description = [{
    Ends a `weft.stage` body; its operands are the stage's results.

    ```mlir
    weft.yield %y, %z : tensor<8x32xf32>, tensor<8xf32>
    ```
  }];
  let arguments = (ins Variadic<Weft_Tensor>:$operands);
  let assemblyFormat = "($operands^ `:` type($operands))? attr-dict";
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, {}); }]>];
  let hasVerifier = 1;
}

def Weft_TransferOp : Op<Weft_Dialect, "transfer",
    [SameOperandsAndResultType,
     DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Moves a value from one mesh and sharding to another";
  let description = [{
    The result is the operand, laid out on the mesh of `target` as `target`
    says; the operand lies on the mesh of `source` as `source` says. The two
    meshes are different device sets, of any shapes and sizes. A partial sum
    on the source is reduced on the source mesh first; the target holds no
    partial sums. Lowered per device, each destination device receives each
    block it needs (the tile intersections of the two layouts) from one
    source device that holds it.

    ```mlir
    // columns over 2 devices before, rows over 3 after
    %b = weft.transfer %a from <@stage0, [[], [0]]> to <@stage1, [[0], []]>
           : tensor<6x4xf32>
    ```
  }];
  let arguments = (ins Weft_Tensor:$input, Weft_ShardingAttr:$source,
                       Weft_ShardingAttr:$target);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = [{
    $input `from` $source `to` $target attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def Weft_SendOp : Op<Weft_Dialect, "send"> {
  let summary = "Sends a local tensor to another rank of the job";
  let description = [{
    Point-to-point, in a per-device program: the whole operand goes to world
    rank `peer`, which must run the matching `weft.recv` with the same tag.
    Returns once the data has left this device's buffer (the buffer may then
    be reused). Not Pure: the order of sends and receives is the program's.

    ```mlir
    weft.send %block to 3 tag 7 : tensor<2x2xf32>
    ```

    With `slot` instead, the peer and the tag are data: entry `slot` of the
    rank's peer table, which weftc writes into each rank's weights file, so
    that ranks whose programs differ only in whom they talk to share one
    compiled program (docs/Pipelines.md, "One program for many ranks"):

    ```mlir
    weft.send %block to slot 0 : tensor<2x2xf32>
    ```
  }];
  let arguments = (ins Weft_Tensor:$input, OptionalAttr<I64Attr>:$peer,
                   OptionalAttr<I64Attr>:$tag, OptionalAttr<I64Attr>:$slot);
  let assemblyFormat = [{
    $input `to` (`slot` $slot^) : ($peer `tag` $tag)? attr-dict `:`
    type($input)
  }];
  let hasVerifier = 1;
}

def Weft_RecvOp : Op<Weft_Dialect, "recv"> {
  let summary = "Receives a tensor from another rank of the job";
  let description = [{
    Point-to-point, in a per-device program: waits for the matching
    `weft.send` of world rank `peer` with the same tag, whose tensor has
    exactly the result's type.

    ```mlir
    %b = weft.recv from 0 tag 7 : tensor<2x2xf32>
    ```

    With `slot` instead, the peer and the tag are entry `slot` of the rank's
    peer table (as for `weft.send`):

    ```mlir
    %b = weft.recv from slot 1 : tensor<2x2xf32>
    ```
  }];
  let arguments = (ins OptionalAttr<I64Attr>:$peer, OptionalAttr<I64Attr>:$tag,
                   OptionalAttr<I64Attr>:$slot);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = [{
    `from` (`slot` $slot^) : ($peer `tag` $tag)? attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

// The attributes both ends of a broadcast give alike.
defvar BroadcastArgs = (ins DenseI64ArrayAttr:$chain, I64Attr:$chunks,
                            I64Attr:$group, I64Attr:$tag);

def Weft_BroadcastSendOp : Op<Weft_Dialect, "broadcast_send"> {
  let summary = "Sends a local tensor down a broadcast chain of ranks";
  let description = [{
    The root of a broadcast, in a per-device program: the operand goes to
    every other world rank of `chain` (whose first rank is this one), which
    run the matching `weft.broadcast_recv` with the same attributes. The
    tensor moves as a pipelined chain in `chain`'s order, cut into `chunks`
    chunks of whole rows of its outermost dimension longer than one; each
    rank forwards a chunk as soon as it has it. `group` names the job's
    broadcast group (the sub-communicator of exactly `chain`'s ranks,
    created at start-up; the program's `weft.broadcast_groups`), or is -1
    for the same chain over the world. Returns once this rank's sends are
    done. Not Pure: the order of transfers is the program's.

    ```
      rank 0 ──chunk c──▶ rank 3 ──chunk c──▶ rank 4
               (rank 3 receives chunk c + 1 while it forwards chunk c)
    ```

    ```mlir
    weft.broadcast_send %tile along [0, 3, 4] chunks 4 group 0 tag 12
      : tensor<8x16xf32>
    ```

    **Constraints:**
    - `chain` has at least two distinct world ranks, none negative;
    - 1 <= `chunks` <= the rows the tensor is cut in (at least 1);
    - `group` >= -1, and 0 <= `tag` < 2^20.
  }];
  let arguments = !con((ins Weft_Tensor:$input), BroadcastArgs);
  let assemblyFormat = [{
    $input `along` $chain `chunks` $chunks `group` $group `tag` $tag attr-dict
    `:` type($input)
  }];
  let hasVerifier = 1;
}

def Weft_BroadcastRecvOp : Op<Weft_Dialect, "broadcast_recv"> {
  let summary = "Receives a tensor from a broadcast chain of ranks";
  let description = [{
    A rank of a broadcast other than its root, in a per-device program: it
    receives the root's tensor (of exactly the result's type) chunk by
    chunk from the rank before it in `chain` and forwards each chunk to the
    rank after it, if any, as the root's `weft.broadcast_send` with the
    same attributes describes. Returns once this rank's part is done.

    ```mlir
    %tile = weft.broadcast_recv along [0, 3, 4] chunks 4 group 0 tag 12
      : tensor<8x16xf32>
    ```

    **Constraints:**
    - those of `weft.broadcast_send`; the result has a static shape.
  }];
  let arguments = BroadcastArgs;
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = [{
    `along` $chain `chunks` $chunks `group` $group `tag` $tag attr-dict `:`
    type($result)
  }];
  let hasVerifier = 1;
}

#endif // WEFT_DIALECT_WEFT_PIPELINEOPS_TD
