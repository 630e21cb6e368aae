//===- ShardingOps.td - Meshes, shardings and collectives --*- tablegen -*-===//
//
// The vocabulary of multi-device programs: device meshes, the sharding of a
// value over a mesh, sharding constraints, and the collectives that the SPMD
// partitioner emits between per-device (local) ops.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECT_WEFT_SHARDINGOPS_TD
#define WEFT_DIALECT_WEFT_SHARDINGOPS_TD

include "weft/WeftBase.td"
include "mlir/IR/SymbolInterfaces.td"

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

def Weft_ShardingAttr : AttrDef<Weft_Dialect, "Sharding"> {
  let mnemonic = "sharding";
  let summary = "How a tensor is laid out over the devices of a mesh";
  let description = [{
    For each tensor dimension, the mesh axes it is split over (major to
    minor), and the mesh axes over which the value is a pending partial sum:
    the true value is the sum, over the devices of those axes, of the local
    values. A dimension of size n split over axes whose sizes multiply to p
    gives the member with group index g (the mixed-radix number of its
    coordinates on those axes, the first axis most significant) the block
    [g * ceil(n/p), min(n, (g + 1) * ceil(n/p))); blocks may be uneven or
    empty. An axis appears at most once in a sharding.

    ```mlir
    #weft.sharding<@mesh, [[], [1]]>              // columns split over axis 1
    #weft.sharding<@mesh, [[0], []], partial [1]> // rows over axis 0, partial
                                                  // sums over axis 1
    #weft.sharding<@mesh, [[0, 1]]>               // split over all 4 devices
    ```
  }];
  let parameters = (ins "::mlir::FlatSymbolRefAttr":$mesh,
                        ArrayRefParameter<"::mlir::DenseI16ArrayAttr">:$dims,
                        "::mlir::DenseI16ArrayAttr":$partial);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let builders = [
    AttrBuilderWithInferredContext<(ins
        "::mlir::FlatSymbolRefAttr":$mesh,
        "::llvm::ArrayRef<::llvm::SmallVector<int16_t>>":$dims,
        "::llvm::ArrayRef<int16_t>":$partial)>
  ];
  let extraClassDeclaration = [{
    /// Mesh axes of dimension `dim` (empty when it is not split).
    ::llvm::ArrayRef<int16_t> getDimAxes(unsigned dim) const {
      return dim < getDims().size() ? getDims()[dim].asArrayRef()
                                    : ::llvm::ArrayRef<int16_t>();
    }
    /// No dimension split and nothing partial.
    bool isReplicated() const;
    /// Every mesh axis the sharding uses (split or partial).
    ::llvm::SmallVector<int16_t> getUsedAxes() const;
    /// The replicated sharding of a rank-`rank` value on `mesh`.
    static ShardingAttr getReplicated(::mlir::FlatSymbolRefAttr mesh,
                                      unsigned rank);
  }];
}

//===----------------------------------------------------------------------===//
// Mesh and annotations
//===----------------------------------------------------------------------===//

def Weft_MeshOp : Op<Weft_Dialect, "mesh", [Symbol]> {
  let summary = "A logical mesh of devices";
  let description = [{
    Declares a logical device mesh at module level. Device d of the mesh is
    the one at row-major position d of `shape`; axis 0 is the outermost.
    Which physical devices these are comes from the cluster spec at compile
    time. A module may declare several meshes (one per pipeline stage);
    then `devices` gives the world rank (the cluster device index) of each
    mesh position, and meshes that appear together in a pipeline hold
    disjoint devices.

    ```mlir
    weft.mesh @mesh shape = [2, 2]
    weft.mesh @stage1 shape = [3] devices = [2, 3, 4]
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, DenseI64ArrayAttr:$shape,
                       OptionalAttr<DenseI64ArrayAttr>:$devices);
  let assemblyFormat =
      "$sym_name `shape` `=` $shape (`devices` `=` $devices^)? attr-dict";
  let builders = [
    OpBuilder<(ins "::llvm::StringRef":$name,
                   "::llvm::ArrayRef<int64_t>":$shape), [{
      build($_builder, $_state, name, shape, ::mlir::DenseI64ArrayAttr());
    }]>
  ];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getNumDevices() {
      int64_t n = 1;
      for (int64_t s : getShape())
        n *= s;
      return n;
    }
  }];
}

def Weft_ShardOp : Op<Weft_Dialect, "shard",
    [Pure, SameOperandsAndResultType,
     DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "A sharding constraint on a value";
  let description = [{
    The result is the operand, laid out as `sharding` says. A user's
    annotation (`--sharding-file`) becomes this op; the planner keeps the
    sharding fixed there, and the SPMD partitioner moves data to satisfy it.

    ```mlir
    %y = weft.shard %x to <@mesh, [[], [0]]> : tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Weft_Tensor:$input, Weft_ShardingAttr:$sharding);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = "$input `to` $sharding attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Collectives: on per-device (local) tensors after SPMD partitioning
//===----------------------------------------------------------------------===//

/// A collective over the group of devices of `mesh` that share every mesh
/// coordinate except those on `axes`. Not Pure: every device of a group must
/// reach it. Naming the mesh keeps a module of several meshes (a pipeline's
/// stages) unambiguous.
class Weft_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Op<Weft_Dialect, mnemonic,
         !listconcat(traits,
                     [DeclareOpInterfaceMethods<SymbolUserOpInterface>])> {
  let hasVerifier = 1;
}

def Weft_AllReduceOp : Weft_CollectiveOp<"all_reduce",
    [SameOperandsAndResultType]> {
  let summary = "Sums a value over the devices of a group";
  let description = [{
    Resolves a pending partial sum over `axes`: every member gets the sum of
    the members' operands.

    ```mlir
    %s = weft.all_reduce %p on @mesh over [1] : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Weft_NumericTensor:$input, FlatSymbolRefAttr:$mesh,
                       DenseI16ArrayAttr:$axes);
  let results = (outs Weft_NumericTensor:$result);
  let assemblyFormat =
      "$input `on` $mesh `over` $axes attr-dict `:` type($result)";
}

/// Collectives that gather, scatter or slice one dimension into blocks of
/// `sizes` (one per group member, in group order).
class Weft_BlockCollectiveOp<string mnemonic, string summaryText>
    : Weft_CollectiveOp<mnemonic> {
  let summary = summaryText;
  let arguments = (ins Weft_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       DenseI16ArrayAttr:$axes, I64Attr:$dim,
                       DenseI64ArrayAttr:$sizes);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `over` $axes `dim` $dim `sizes` $sizes attr-dict `:`
    type($input) `->` type($result)
  }];
}

def Weft_AllGatherOp : Weft_BlockCollectiveOp<"all_gather",
    "Concatenates the members' blocks along one dimension"> {
  let description = [{
    Member g holds block g (of `sizes[g]` along `dim`); every member gets
    the concatenation of all blocks in group order.

    ```mlir
    %f = weft.all_gather %b on @mesh over [1] dim 1 sizes [4, 4]
           : tensor<8x4xf32> -> tensor<8x8xf32>
    ```
  }];
}

def Weft_ReduceScatterOp : Weft_BlockCollectiveOp<"reduce_scatter",
    "Sums over a group and keeps each member's block"> {
  let description = [{
    The operands are partial sums of the whole dimension; member g gets
    block g of their sum.

    ```mlir
    %b = weft.reduce_scatter %p on @mesh over [0] dim 0 sizes [3, 2]
           : tensor<5x8xf32> -> tensor<3x8xf32>
    ```
  }];
}

def Weft_LocalSliceOp : Weft_BlockCollectiveOp<"local_slice",
    "Keeps this member's block of a replicated value"> {
  let description = [{
    No communication: member g keeps block g of its (replicated) operand.
    Which block is decided when the program runs, from the device's mesh
    coordinates, so that devices with equal blocks share one program. The
    result type is this device's block.

    ```mlir
    %b = weft.local_slice %x on @mesh over [0, 1] dim 0 sizes [2, 2, 2, 2]
           : tensor<8x16xf32> -> tensor<2x16xf32>
    ```
  }];
}

def Weft_AllToAllOp : Weft_CollectiveOp<"all_to_all"> {
  let summary = "Moves a split from one dimension to another";
  let description = [{
    The operand is split over the group along `gather_dim` (member g holds
    `gather_sizes[g]` of it) and whole along `split_dim`; the result is
    whole along `gather_dim` and split along `split_dim` (member g keeps
    `split_sizes[g]` of it).

    ```mlir
    %t = weft.all_to_all %x on @mesh over [0] split_dim 1 gather_dim 0
           split_sizes [4, 4] gather_sizes [2, 2]
           : tensor<2x8xf32> -> tensor<4x4xf32>
    ```
  }];
  let arguments = (ins Weft_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       DenseI16ArrayAttr:$axes,
                       I64Attr:$split_dim, I64Attr:$gather_dim,
                       DenseI64ArrayAttr:$split_sizes,
                       DenseI64ArrayAttr:$gather_sizes);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `over` $axes `split_dim` $split_dim
    `gather_dim` $gather_dim
    `split_sizes` $split_sizes `gather_sizes` $gather_sizes attr-dict `:`
    type($input) `->` type($result)
  }];
}

#endif // WEFT_DIALECT_WEFT_SHARDINGOPS_TD
