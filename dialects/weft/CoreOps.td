//===- CoreOps.td - Weft constants and weights -------------*- tablegen -*-===//
//
// Values that do not come from computation: inline constants and weights that
// live in a side file.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECT_WEFT_COREOPS_TD
#define WEFT_DIALECT_WEFT_COREOPS_TD

include "weft/WeftBase.td"

def Weft_ConstantOp : Weft_Op<"constant", [ConstantLike]> {
  let summary = "Small constant tensor held in the IR";
  let description = [{
    A tensor whose value is written in the IR: scalars, shapes, axes and other
    small tensors (ONNX `Constant` and small initializers). Folding produces
    these. Large tensors are `weft.weight` instead.

    ```mlir
    %shape = weft.constant dense<[1, 128, 2, 64]> : tensor<4xi64>
    ```

    **Constraints:**
    - the value is a dense elements attribute of a supported element type.
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
  let hasVerifier = 1;
}

def Weft_WeightOp : Op<Weft_Dialect, "weight", [Pure]> {
  let summary = "Tensor read from a side file of raw weights";
  let description = [{
    A weight whose bytes are not in the IR: `size` raw little-endian bytes at
    byte `offset` of `file`, laid out row-major in the result's element type.
    `file` is a path relative to the directory of the model the IR was
    imported from, or absolute. `checksum` is the XXH3-64 hash of the bytes in
    hex, so a stale or edited side file is detected when the bytes are
    loaded. The file is memory-mapped, never copied into the IR, so a model
    with gigabytes of weights prints as a few kilobytes of IR and round-trips.

    ```mlir
    %w = weft.weight "fc1.weight" from "mlp.onnx" offset 1024 size 802816
           checksum "9f2a44b0c3e1d7a8" : tensor<256x784xf32>
    ```

    A device's shard of a weight is a block of it: with `block OFFSETS of
    SHAPE` the stored tensor has shape `SHAPE` (`size` and `checksum` are
    those of the whole tensor) and the result is its block starting at
    `OFFSETS`. The SPMD partitioner writes these; a package's weights file
    then holds only the block.

    ```mlir
    %w = weft.weight "fc1.weight" from "mlp.onnx" offset 1024 size 802816
           checksum "9f2a44b0c3e1d7a8" block [128, 0] of [256, 784]
           : tensor<128x784xf32>
    ```

    With `permuted PERM` the result is the stored tensor (or its block)
    with its dimensions permuted as `weft.transpose` would (result
    dimension i is dimension PERM[i]): codegen stores a convolution's
    weight kernel-first this way (`weft-conv-channels-last`), and the
    device's weights file holds the permuted bytes, so nothing is permuted
    at run time.

    ```mlir
    %w = weft.weight "conv.weight" from "m.onnx" offset 4096 size 36864
           checksum "0123456789abcdef" permuted [2, 3, 1, 0]
           : tensor<1x1x96x96xf32>
    ```

    **Constraints:**
    - `offset` >= 0 and `size` equals the number of elements times the
      element size of the stored tensor (the result shape is static);
    - a block lies inside the stored tensor, of the same rank;
    - `permuted` is a permutation of [0, rank);
    - `checksum` is 16 hex digits.
  }];
  let arguments = (ins StrAttr:$name, StrAttr:$file, I64Attr:$offset,
                       I64Attr:$size, StrAttr:$checksum,
                       OptionalAttr<DenseI64ArrayAttr>:$block_offsets,
                       OptionalAttr<DenseI64ArrayAttr>:$full_shape,
                       OptionalAttr<DenseI64ArrayAttr>:$perm);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = [{
    $name `from` $file `offset` $offset `size` $size `checksum` $checksum
    (`block` $block_offsets^ `of` $full_shape)? (`permuted` $perm^)?
    attr-dict `:` type($result)
  }];
  let extraClassDeclaration = [{
    /// The shape of what is read from the file before `perm` applies: the
    /// block's, or the stored tensor's.
    ::llvm::SmallVector<int64_t> getUnpermutedShape();
  }];
  let hasVerifier = 1;
}

#endif // WEFT_DIALECT_WEFT_COREOPS_TD
