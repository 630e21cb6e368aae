//===- ShapeOps.td - Weft shape and data movement ops ------*- tablegen -*-===//
//
// Ops that move data without arithmetic (reshape, transpose, concat, slice,
// gather, pad, ...) and the ops that compute shapes at run time (shape, size,
// range, constant_of_shape). Their folders remove the shape arithmetic that
// exporters emit once input shapes are static.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECT_WEFT_SHAPEOPS_TD
#define WEFT_DIALECT_WEFT_SHAPEOPS_TD

include "weft/WeftBase.td"

//===----------------------------------------------------------------------===//
// Reshapes
//===----------------------------------------------------------------------===//

def Weft_ReshapeOp : Weft_Op<"reshape"> {
  let summary = "Reshape to a shape given as a tensor (ONNX Reshape)";
  let description = [{
    Returns `input` with the same elements in row-major order and the shape
    held by `shape`, with ONNX's conventions: an entry `-1` is inferred from
    the element count (at most one), and an entry `0` copies the input's
    dimension at the same index unless `allowzero` is set, in which case it
    is a real zero. `shape` may be computed at run time; its entries that are
    not known at compile time give dynamic result dimensions, and folding its
    computation to a constant makes them static.

    ```mlir
    %r = weft.reshape %x, %shape
           : (tensor<?x128x768xf32>, tensor<4xi64>) -> tensor<?x128x12x64xf32>
    ```

    **Constraints:**
    - `shape` is 1-D with a static length (the result rank);
    - known entries are >= -1, with at most one -1, and no -1 together with a
      0 when `allowzero` is set;
    - a copied (0) entry indexes a dimension of the input;
    - with static sizes, the element counts of input and result agree.
  }];
  let arguments = (ins Weft_Tensor:$input, Weft_I64Tensor:$shape,
                       UnitAttr:$allowzero);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $shape (`allowzero` $allowzero^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Weft_FlattenOp : Weft_Op<"flatten"> {
  let summary = "Collapse to 2-D around an axis (ONNX Flatten)";
  let description = [{
    Collapses the dimensions before `axis` into the first result dimension
    and those from `axis` on into the second. `axis` is in [0, rank]; an
    empty product is 1. Canonicalization turns it into `weft.reshape` once
    the result shape is static.

    ```mlir
    %r = weft.flatten %x axis = 1 : tensor<?x3x4xf32> -> tensor<?x12xf32>
    ```

    **Constraints:**
    - 0 <= `axis` <= rank of `input`.
  }];
  let arguments = (ins Weft_Tensor:$input, I64Attr:$axis);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = [{
    $input `axis` `=` $axis attr-dict `:` type($input) `->` type($result)
  }];
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Weft_SqueezeOp : Weft_Op<"squeeze"> {
  let summary = "Remove dimensions of size 1 (ONNX Squeeze)";
  let description = [{
    Removes the listed dimensions, each of which must have size 1 (a dynamic
    one must be 1 at run time). `axes` are in [0, rank), distinct. The
    importer turns ONNX's "no axes: all size-1 dimensions" into an explicit
    list, which needs the input's size-1 dimensions to be static.

    The axes may instead be computed at run time (ONNX's `axes` input from
    opset 13): the 1-D i64 operand `dynamic_axes` then holds them, each in
    [-rank, rank) (negative ones counting from the end), distinct, in any
    order, and the attribute `axes` stays empty. Its static length n >= 1
    gives the result rank, rank - n. When the input has exactly n dimensions
    that can be 1, those are the axes; folding then, or when `dynamic_axes`
    is a constant, turns the op into the attribute form.

    ```mlir
    %r = weft.squeeze %x axes = [0, 2] : tensor<1x?x1xf32> -> tensor<?xf32>
    %s = weft.squeeze %x axes = %axes
           : tensor<1x3x1xf32>, tensor<1xi64> -> tensor<?x?xf32>
    ```

    **Constraints:**
    - `axes` are distinct and in [0, rank of `input`);
    - no listed dimension has a static size other than 1;
    - with `dynamic_axes`, `axes` is empty, `dynamic_axes` is 1-D with a
      static length n in [1, rank], at least n dimensions of the input can
      be 1, and constant entries are valid axes as above (before
      normalization).
  }];
  let arguments = (ins Weft_Tensor:$input,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$axes,
                       Optional<Weft_I64Tensor>:$dynamic_axes);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = [{
    $input `axes` `=` ($dynamic_axes^):($axes)? attr-dict `:` type($input)
    (`,` type($dynamic_axes)^)? `->` type($result)
  }];
  // The attribute form's builders, with the signatures they had before
  // `dynamic_axes` existed.
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input,
                   "::llvm::ArrayRef<int64_t>":$axes), [{
      build($_builder, $_state, input, axes, /*dynamic_axes=*/::mlir::Value());
    }]>,
    OpBuilder<(ins "::mlir::Type":$result, "::mlir::Value":$input,
                   "::llvm::ArrayRef<int64_t>":$axes), [{
      build($_builder, $_state, result, input, axes,
            /*dynamic_axes=*/::mlir::Value());
    }]>
  ];
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Weft_UnsqueezeOp : Weft_Op<"unsqueeze"> {
  let summary = "Insert dimensions of size 1 (ONNX Unsqueeze)";
  let description = [{
    Inserts dimensions of size 1 so that they sit at `axes` of the result.
    `axes` are in [0, result rank), distinct.

    The axes may instead be computed at run time (ONNX's `axes` input from
    opset 13): the 1-D i64 operand `dynamic_axes` then holds them, each in
    [-r, r) for the result rank r (negative ones counting from the end),
    distinct, in any order, and the attribute `axes` stays empty. Its static
    length n >= 1 gives the result rank, rank + n. Folding turns a constant
    `dynamic_axes` into the attribute form.

    ```mlir
    %r = weft.unsqueeze %x axes = [0, 3]
           : tensor<?x4xf32> -> tensor<1x?x4x1xf32>
    %s = weft.unsqueeze %x axes = %axes
           : tensor<1x1xf32>, tensor<1xi64> -> tensor<1x1x1xf32>
    ```

    **Constraints:**
    - `axes` are distinct and in [0, rank of `input` + number of `axes`);
    - with `dynamic_axes`, `axes` is empty, `dynamic_axes` is 1-D with a
      static length n >= 1, and constant entries are valid axes as above
      (before normalization) for the result rank rank + n.
  }];
  let arguments = (ins Weft_Tensor:$input,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$axes,
                       Optional<Weft_I64Tensor>:$dynamic_axes);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = [{
    $input `axes` `=` ($dynamic_axes^):($axes)? attr-dict `:` type($input)
    (`,` type($dynamic_axes)^)? `->` type($result)
  }];
  // The attribute form's builders, with the signatures they had before
  // `dynamic_axes` existed.
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input,
                   "::llvm::ArrayRef<int64_t>":$axes), [{
      build($_builder, $_state, input, axes, /*dynamic_axes=*/::mlir::Value());
    }]>,
    OpBuilder<(ins "::mlir::Type":$result, "::mlir::Value":$input,
                   "::llvm::ArrayRef<int64_t>":$axes), [{
      build($_builder, $_state, result, input, axes,
            /*dynamic_axes=*/::mlir::Value());
    }]>
  ];
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Weft_TransposeOp : Weft_Op<"transpose"> {
  let summary = "Permute dimensions (ONNX Transpose)";
  let description = [{
    Result dimension `i` is input dimension `perm[i]`.

    ```mlir
    %r = weft.transpose %x perm = [0, 2, 1, 3]
           : tensor<?x128x12x64xf32> -> tensor<?x12x128x64xf32>
    ```

    **Constraints:**
    - `perm` is a permutation of [0, rank of `input`).
  }];
  let arguments = (ins Weft_Tensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = [{
    $input `perm` `=` $perm attr-dict `:` type($input) `->` type($result)
  }];
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

//===----------------------------------------------------------------------===//
// Joining and splitting
//===----------------------------------------------------------------------===//

def Weft_ConcatOp : Weft_Op<"concat"> {
  let summary = "Join tensors along an axis (ONNX Concat)";
  let description = [{
    Concatenates `inputs` along `axis`; all other dimensions agree.

    ```mlir
    %r = weft.concat %a, %b axis = 0
           : (tensor<2xi64>, tensor<2xi64>) -> tensor<4xi64>
    ```

    **Constraints:**
    - at least one input; all inputs have the same element type and rank
      (at least 1);
    - 0 <= `axis` < rank;
    - static sizes of the other dimensions agree.
  }];
  let arguments = (ins Variadic<Weft_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = [{
    $inputs `axis` `=` $axis attr-dict `:` functional-type($inputs, $result)
  }];
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Weft_SplitOp : Weft_Op<"split"> {
  let summary = "Split a tensor into pieces along an axis (ONNX Split)";
  let description = [{
    Splits `input` along `axis` into consecutive pieces, one per result.
    With `sizes`, result `i` has `sizes[i]` elements along the axis. With
    `num_outputs` instead, the pieces are ceil(d / num_outputs) long and the
    last one holds the rest (ONNX's even split; opset 18's uneven last
    chunk). Canonicalization turns the second form into the first once the
    dimension is static.

    The sizes may instead be computed at run time (ONNX's `split` input from
    opset 13): the 1-D i64 operand `dynamic_sizes`, with one entry per
    result, then holds them, and neither attribute is set. The pieces are
    dynamic along the axis (unless the dimension is 0, or there is one
    piece). Folding turns a constant `dynamic_sizes` into `sizes`.

    ```mlir
    %qkv:3 = weft.split %x axis = 2 {num_outputs = 3 : i64}
      : tensor<?x?x2304xf32> -> tensor<?x?x768xf32>, tensor<?x?x768xf32>,
                                tensor<?x?x768xf32>
    %a, %b = weft.split %y axis = 0 sizes %sizes
      : tensor<6xf32>, tensor<2xi64> -> tensor<?xf32>, tensor<?xf32>
    ```

    **Constraints:**
    - exactly one of `sizes`, `num_outputs` and `dynamic_sizes`, which gives
      the number of results (at least 1);
    - `sizes` are >= 0 and add up to a static dimension;
    - an even split of a static dimension d leaves a last piece >= 0;
    - `dynamic_sizes` is 1-D with a static length, and its entries, when
      constant, are valid `sizes`.
  }];
  let arguments = (ins Weft_Tensor:$input, I64Attr:$axis,
                       OptionalAttr<DenseI64ArrayAttr>:$sizes,
                       OptionalAttr<I64Attr>:$num_outputs,
                       Optional<Weft_I64Tensor>:$dynamic_sizes);
  let results = (outs Variadic<Weft_Tensor>:$results);
  let assemblyFormat = [{
    $input `axis` `=` $axis (`sizes` $dynamic_sizes^)? attr-dict `:`
    type($input) (`,` type($dynamic_sizes)^)? `->` type($results)
  }];
  // The attribute forms' builder, with the signature it had before
  // `dynamic_sizes` existed.
  let builders = [
    OpBuilder<(ins "::mlir::TypeRange":$results, "::mlir::Value":$input,
                   "uint64_t":$axis, "::mlir::DenseI64ArrayAttr":$sizes,
                   "::mlir::IntegerAttr":$num_outputs), [{
      build($_builder, $_state, results, input, axis, sizes, num_outputs,
            /*dynamic_sizes=*/::mlir::Value());
    }]>
  ];
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

//===----------------------------------------------------------------------===//
// Indexing
//===----------------------------------------------------------------------===//

def Weft_SliceOp : Weft_Op<"slice"> {
  let summary = "Strided slice along some axes (ONNX Slice)";
  let description = [{
    For each `axes[i]` takes the elements from `starts[i]` towards
    `ends[i]` (exclusive) in steps of `steps[i]`, with ONNX's rules: negative
    starts and ends count from the end, then both are clamped to the
    dimension ([0, d] for positive steps, [-1, d - 1] for negative ones), so
    INT64_MAX means "to the end". Other dimensions are unchanged. The
    bounds may be computed at run time (the sliced dimensions are then
    dynamic).

    The axes may be computed at run time too (ONNX's `axes` input from opset
    10): the 1-D i64 operand `dynamic_axes` then holds them, each in
    [-rank, rank) (negative ones counting from the end), distinct, and the
    attribute `axes` stays empty. Every dimension of the result but the
    empty ones is then dynamic. Folding turns a constant `dynamic_axes` into
    the attribute form.

    ```mlir
    %r = weft.slice %x [%starts, %ends, %steps] axes = [1]
           : (tensor<4x10xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>)
             -> tensor<4x3xf32>
    %s = weft.slice %x [%starts, %ends, %steps] axes = %axes
           : (tensor<4x10xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>,
              tensor<1xi64>) -> tensor<?x?xf32>
    ```

    **Constraints:**
    - `axes` are distinct and in [0, rank of `input`);
    - `starts`, `ends` and `steps` are 1-D with one entry per axis;
    - known steps are not 0;
    - with `dynamic_axes`, `axes` is empty, `dynamic_axes` is 1-D with a
      static length n in [1, rank] (the number of axes), and its entries,
      when constant, are valid axes as above (before normalization).
  }];
  let arguments = (ins Weft_Tensor:$input, Weft_IndexTensor:$starts,
                       Weft_IndexTensor:$ends, Weft_IndexTensor:$steps,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$axes,
                       Optional<Weft_I64Tensor>:$dynamic_axes);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = [{
    $input `[` $starts `,` $ends `,` $steps `]` `axes` `=`
    ($dynamic_axes^):($axes)? attr-dict `:` functional-type(operands, results)
  }];
  // The attribute form's builders, with the signatures they had before
  // `dynamic_axes` existed.
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "::mlir::Value":$starts,
                   "::mlir::Value":$ends, "::mlir::Value":$steps,
                   "::llvm::ArrayRef<int64_t>":$axes), [{
      build($_builder, $_state, input, starts, ends, steps, axes,
            /*dynamic_axes=*/::mlir::Value());
    }]>,
    OpBuilder<(ins "::mlir::Type":$result, "::mlir::Value":$input,
                   "::mlir::Value":$starts, "::mlir::Value":$ends,
                   "::mlir::Value":$steps, "::llvm::ArrayRef<int64_t>":$axes),
    [{
      build($_builder, $_state, result, input, starts, ends, steps, axes,
            /*dynamic_axes=*/::mlir::Value());
    }]>
  ];
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Weft_GatherOp : Weft_Op<"gather"> {
  let summary = "Take slices at indices along an axis (ONNX Gather)";
  let description = [{
    The result is `input` with dimension `axis` replaced by the dimensions
    of `indices`: `result[i..., j..., k...] = input[i..., indices[j...],
    k...]`. Negative indices count from the end of the axis.

    ```mlir
    %d = weft.gather %shape[%idx] axis = 0
           : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
    ```

    **Constraints:**
    - `input` has rank >= 1 and 0 <= `axis` < its rank.
  }];
  let arguments = (ins Weft_Tensor:$input, Weft_IndexTensor:$indices,
                       I64Attr:$axis);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = [{
    $input `[` $indices `]` `axis` `=` $axis attr-dict `:`
    functional-type(operands, results)
  }];
  let hasFolder = 1;
}

def Weft_GatherElementsOp : Weft_Op<"gather_elements"> {
  let summary = "Gather single elements along an axis (ONNX GatherElements)";
  let description = [{
    `result[i_0, ..., i_axis, ...] = input[i_0, ..., indices[i_0, ...],
    ...]`: the result has the shape of `indices`. Negative indices count from
    the end of the axis.

    ```mlir
    %r = weft.gather_elements %x[%idx] axis = 1
           : (tensor<3x4xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
    ```

    **Constraints:**
    - `input` and `indices` have the same rank, at least 1;
    - 0 <= `axis` < rank.
  }];
  let arguments = (ins Weft_Tensor:$input, Weft_IndexTensor:$indices,
                       I64Attr:$axis);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = [{
    $input `[` $indices `]` `axis` `=` $axis attr-dict `:`
    functional-type(operands, results)
  }];
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Broadcasting, padding and repetition
//===----------------------------------------------------------------------===//

def Weft_ExpandOp : Weft_Op<"expand"> {
  let summary = "Broadcast to a shape given as a tensor (ONNX Expand)";
  let description = [{
    Broadcasts `input` and a tensor of shape `shape` against each other
    (numpy rules, in both directions: an entry 1 in `shape` keeps the
    input's dimension). `shape` may be computed at run time.

    ```mlir
    %r = weft.expand %mask, %shape
           : (tensor<?x1x1x?xi1>, tensor<4xi64>) -> tensor<?x1x?x?xi1>
    ```

    **Constraints:**
    - `shape` is 1-D with a static length;
    - known entries of `shape` are >= 0 and broadcast with the input.
  }];
  let arguments = (ins Weft_Tensor:$input, Weft_I64Tensor:$shape);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $shape attr-dict `:` functional-type(operands, results)
  }];
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Weft_PadMode : I32EnumAttr<"PadMode", "How weft.pad fills the border", [
  I32EnumAttrCase<"constant", 0>,
  I32EnumAttrCase<"reflect", 1>,
  I32EnumAttrCase<"edge", 2>,
  I32EnumAttrCase<"wrap", 3>
]> {
  let cppNamespace = "::mlir::weft";
}

def Weft_PadOp : Weft_Op<"pad", [AttrSizedOperandSegments]> {
  let summary = "Pad or crop the borders of a tensor (ONNX Pad)";
  let description = [{
    Adds `pads[i]` elements before and `pads[rank + i]` after dimension `i`
    (negative pads remove elements). The new elements are `value` (0 when
    absent) in `constant` mode, the mirror image without the edge in
    `reflect` mode, copies of the edge in `edge` mode and the other end of
    the dimension in `wrap` mode.

    The pads may instead be computed at run time (ONNX's `pads` input from
    opset 11): the 1-D i64 operand `dynamic_pads` of static length 2 * rank
    then holds them, in the same order, and the attribute `pads` stays
    empty. Every dimension of the result is then dynamic. Folding turns a
    constant `dynamic_pads` into the attribute form.

    ```mlir
    %r = weft.pad constant %x, %zero pads = [0, 1, 0, 1]
           : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x5xf32>
    %s = weft.pad edge %x pads = %pads
           : (tensor<2x3xf32>, tensor<4xi64>) -> tensor<?x?xf32>
    ```

    **Constraints:**
    - `pads` has 2 * rank entries;
    - static result sizes are >= 0;
    - `value` (constant mode only) has one element of the input's type;
    - `reflect` pads of a static dimension are smaller than it, and
      `reflect`, `edge` and `wrap` do not pad an empty dimension;
    - with `dynamic_pads`, `pads` is empty, `dynamic_pads` is 1-D with
      2 * rank entries, and its entries, when constant, are valid `pads`.
  }];
  let arguments = (ins Weft_PadMode:$mode, Weft_Tensor:$input,
                       Optional<Weft_Tensor>:$value,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$pads,
                       Optional<Weft_I64Tensor>:$dynamic_pads);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = [{
    $mode $input (`,` $value^)? `pads` `=` ($dynamic_pads^):($pads)?
    attr-dict `:` functional-type(operands, results)
  }];
  // The attribute form's builders, with the signatures they had before
  // `dynamic_pads` existed.
  let builders = [
    OpBuilder<(ins "::mlir::weft::PadMode":$mode, "::mlir::Value":$input,
                   "::mlir::Value":$value, "::llvm::ArrayRef<int64_t>":$pads),
    [{
      build($_builder, $_state, mode, input, value, pads,
            /*dynamic_pads=*/::mlir::Value());
    }]>,
    OpBuilder<(ins "::mlir::Type":$result, "::mlir::weft::PadMode":$mode,
                   "::mlir::Value":$input, "::mlir::Value":$value,
                   "::llvm::ArrayRef<int64_t>":$pads), [{
      build($_builder, $_state, result, mode, input, value, pads,
            /*dynamic_pads=*/::mlir::Value());
    }]>
  ];
  let hasFolder = 1;
}

def Weft_TileOp : Weft_Op<"tile"> {
  let summary = "Repeat a tensor along each dimension (ONNX Tile)";
  let description = [{
    Dimension `i` of the result is `repeats[i]` copies of the input along
    that dimension. `repeats` may be computed at run time.

    ```mlir
    %r = weft.tile %x, %repeats
           : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x3xf32>
    ```

    **Constraints:**
    - `repeats` is 1-D with one entry per input dimension;
    - known repeats are >= 0.
  }];
  let arguments = (ins Weft_Tensor:$input, Weft_I64Tensor:$repeats);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $repeats attr-dict `:` functional-type(operands, results)
  }];
  let hasFolder = 1;
}

def Weft_TriluOp : Weft_Op<"trilu"> {
  let summary = "Keep the upper or lower triangle of matrices (ONNX Trilu)";
  let description = [{
    For the last two dimensions (i, j), keeps the elements with
    `j - i >= k` when `upper` is set and `j - i <= k` otherwise, and zeroes
    the rest. The diagonal offset `k` is a 0-D i64 tensor that may be
    computed at run time.

    ```mlir
    %r = weft.trilu upper %x, %k
           : (tensor<?x4x4xf32>, tensor<i64>) -> tensor<?x4x4xf32>
    ```

    **Constraints:**
    - `input` has rank >= 2;
    - `k` is 0-D.
  }];
  let arguments = (ins UnitAttr:$upper, Weft_Tensor:$input,
                       Weft_I64Tensor:$k);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = [{
    (`upper` $upper^)? $input `,` $k attr-dict `:`
    functional-type(operands, results)
  }];
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Shape computation
//===----------------------------------------------------------------------===//

def Weft_ShapeOp : Weft_Op<"shape"> {
  let summary = "The dimensions of a tensor as an i64 vector (ONNX Shape)";
  let description = [{
    Returns dimensions [`start`, `end`) of `input` (all of them by default)
    as a 1-D i64 tensor. Folds to a constant when those dimensions are
    static.

    ```mlir
    %s = weft.shape %x {start = 1 : i64}
           : tensor<?x128x768xf32> -> tensor<2xi64>
    ```

    **Constraints:**
    - 0 <= `start` <= rank and 0 <= `end` <= rank (the importer applies
      ONNX's negative values and clamping); `end` < `start` gives an empty
      vector.
  }];
  let arguments = (ins Weft_Tensor:$input,
                       DefaultValuedAttr<I64Attr, "0">:$start,
                       OptionalAttr<I64Attr>:$end);
  let results = (outs Weft_I64Tensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type($result)
  }];
  let hasFolder = 1;
}

def Weft_SizeOp : Weft_Op<"size"> {
  let summary = "The element count of a tensor (ONNX Size)";
  let description = [{
    Returns the number of elements of `input` as a 0-D i64 tensor.

    ```mlir
    %n = weft.size %x : tensor<?x4xf32> -> tensor<i64>
    ```

    **Constraints:**
    - none beyond the types.
  }];
  let arguments = (ins Weft_Tensor:$input);
  let results = (outs Weft_I64Tensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type($result)
  }];
  let hasFolder = 1;
}

def Weft_ConstantOfShapeOp : Weft_Op<"constant_of_shape"> {
  let summary = "A tensor filled with one value (ONNX ConstantOfShape)";
  let description = [{
    A tensor of the shape held by `shape` whose elements all equal `value`;
    the element type is the type of `value`. `shape` may be computed at run
    time.

    ```mlir
    %m = weft.constant_of_shape %shape value = 1 : i64
           : (tensor<2xi64>) -> tensor<?x?xi64>
    ```

    **Constraints:**
    - `shape` is 1-D with a static length; its known entries are >= 0;
    - `value` is an integer or float attribute of a supported element type.
  }];
  let arguments = (ins Weft_I64Tensor:$shape, TypedAttrInterface:$value);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = [{
    $shape `value` `=` $value attr-dict `:` functional-type(operands, results)
  }];
  let hasFolder = 1;
}

def Weft_RangeOp : Weft_Op<"range"> {
  let summary = "Arithmetic progression (ONNX Range)";
  let description = [{
    The 1-D tensor `start, start + delta, ...` of max(ceil((limit - start) /
    delta), 0) elements. The three scalars may be computed at run time (the
    length is then dynamic).

    ```mlir
    %r = weft.range %start, %limit, %delta
           : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
    ```

    **Constraints:**
    - `start`, `limit` and `delta` are 0-D of one numeric type, which is the
      result's element type;
    - a known `delta` is not 0.
  }];
  let arguments = (ins Weft_NumericTensor:$start, Weft_NumericTensor:$limit,
                       Weft_NumericTensor:$delta);
  let results = (outs Weft_NumericTensor:$result);
  let assemblyFormat = [{
    $start `,` $limit `,` $delta attr-dict `:`
    functional-type(operands, results)
  }];
  let hasFolder = 1;
}

#endif // WEFT_DIALECT_WEFT_SHAPEOPS_TD
