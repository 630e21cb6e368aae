//===- ReduceOps.td - Weft reductions and softmax ----------*- tablegen -*-===//
//
// Reductions over sets of axes (ONNX Reduce*, GlobalAveragePool,
// GlobalMaxPool), the index of the extreme value along an axis (ArgMax,
// ArgMin) and normalization along axes (Softmax, LogSoftmax).
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECT_WEFT_REDUCEOPS_TD
#define WEFT_DIALECT_WEFT_REDUCEOPS_TD

include "weft/WeftBase.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Weft_ReduceKind : I32EnumAttr<"ReduceKind",
    "how weft.reduce combines values", [
    I32EnumAttrCase<"mean", 0>,
    I32EnumAttrCase<"sum", 1>,
    I32EnumAttrCase<"max", 2>,
    I32EnumAttrCase<"min", 3>,
    I32EnumAttrCase<"prod", 4>,
    I32EnumAttrCase<"l1", 5>,
    I32EnumAttrCase<"l2", 6>,
    I32EnumAttrCase<"log_sum_exp", 7>,
    I32EnumAttrCase<"sum_square", 8>,
    I32EnumAttrCase<"log_sum", 9>
  ]> {
  let cppNamespace = "::mlir::weft";
}

def Weft_ArgReduceKind : I32EnumAttr<"ArgReduceKind",
    "which extreme value weft.arg_reduce looks for", [
    I32EnumAttrCase<"max", 0>,
    I32EnumAttrCase<"min", 1>
  ]> {
  let cppNamespace = "::mlir::weft";
}

//===----------------------------------------------------------------------===//
// ReduceOp
//===----------------------------------------------------------------------===//

def Weft_ReduceOp : Weft_Op<"reduce"> {
  let summary = "Reduction of a tensor over a set of axes";
  let description = [{
    Combines the elements of `input` along every axis in `axes` with `kind`:

    | kind          | result over the reduced set S |
    |---------------|-------------------------------|
    | `sum`         | sum(x)                        |
    | `mean`        | sum(x) / size(S)              |
    | `max`, `min`  | max(x), min(x)                |
    | `prod`        | product(x)                    |
    | `l1`          | sum(abs(x))                   |
    | `l2`          | sqrt(sum(x * x))              |
    | `sum_square`  | sum(x * x)                    |
    | `log_sum_exp` | log(sum(exp(x)))              |
    | `log_sum`     | log(sum(x))                   |

    `axes` are distinct dimensions in [0, rank), sorted. With `keepdims` a
    reduced dimension stays as size 1, otherwise it is removed. Reducing over
    no axes combines each element with itself alone: the result is the input
    for `sum`, `mean`, `max`, `min`, `prod` and `log_sum_exp`, and abs(x),
    abs(x), x * x and log(x) for `l1`, `l2`, `sum_square` and `log_sum`
    (ONNX's `noop_with_empty_axes`). Dynamic dimensions that are not reduced
    stay dynamic.

    A reduced dimension of size 0 gives the value of the empty set, as ONNX
    defines it: 0 for `sum`, `l1`, `l2` and `sum_square`, 1 for `prod`, -inf
    for `max`, `log_sum_exp` and `log_sum`, +inf for `min` (on integers: the
    type's lowest and highest values for `max` and `min`, undefined for the
    logarithms); `mean` of nothing is undefined (NaN for floats). Integers
    wrap on overflow; `mean` of integers rounds toward zero. On `i1`, `max`
    is "any" and `min` is "all".

    ONNX ReduceMean, ReduceSum, ReduceMax, ReduceMin, ReduceProd, ReduceL1,
    ReduceL2, ReduceLogSumExp, ReduceLogSum and ReduceSumSquare map to this
    op, and so do GlobalAveragePool and GlobalMaxPool (`mean` and `max` over
    dimensions 2.. with `keepdims`).

    The axes may instead be computed at run time (ONNX's `axes` input from
    opset 13 or 18): the 1-D i64 operand `dynamic_axes` then holds them,
    with ONNX's conventions (each in [-rank, rank), negative ones counting
    from the end, distinct, in any order), and the attribute `axes` stays
    empty. Its static length n >= 1 is the number of reduced axes, so the
    result has rank `rank` with `keepdims` and `rank - n` without; a result
    dimension is static where every choice of axes gives the same size.
    Folding turns a constant `dynamic_axes` into the attribute form, so for
    static models later passes only ever see `axes`.

    ```mlir
    %m = weft.reduce mean %x axes [2, 3] keepdims
           : tensor<?x64x7x7xf32> -> tensor<?x64x1x1xf32>
    %s = weft.reduce sum %x axes [0, 1, 2, 3]
           : tensor<?x64x7x7xf32> -> tensor<f32>
    %r = weft.reduce sum %x axes %axes keepdims
           : tensor<3x1xf32>, tensor<1xi64> -> tensor<?x1xf32>
    ```

    **Constraints:**
    - every axis is in [0, rank), and `axes` are strictly increasing;
    - the element type is `i1` only for `max` and `min`;
    - the result has the input's element type and its shape with the axes
      in `axes` removed (or, with `keepdims`, set to 1);
    - with `dynamic_axes`, `axes` is empty, `dynamic_axes` is 1-D with a
      static length in [1, rank], and its entries, when constant, are valid
      axes as above (before normalization).
  }];
  let arguments = (ins Weft_Tensor:$input, Weft_ReduceKind:$kind,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$axes,
                       UnitAttr:$keepdims,
                       Optional<Weft_I64Tensor>:$dynamic_axes);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = [{
    $kind $input `axes` ($dynamic_axes^):($axes)? (`keepdims` $keepdims^)?
    attr-dict `:` type($input) (`,` type($dynamic_axes)^)? `->` type($result)
  }];
  // The attribute form's builders, with the signatures they had before
  // `dynamic_axes` existed.
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "::mlir::weft::ReduceKind":$kind,
                   "::llvm::ArrayRef<int64_t>":$axes, "bool":$keepdims), [{
      build($_builder, $_state, input, kind, axes, keepdims,
            /*dynamic_axes=*/::mlir::Value());
    }]>,
    OpBuilder<(ins "::mlir::Type":$result, "::mlir::Value":$input,
                   "::mlir::weft::ReduceKind":$kind,
                   "::llvm::ArrayRef<int64_t>":$axes, "bool":$keepdims), [{
      build($_builder, $_state, result, input, kind, axes, keepdims,
            /*dynamic_axes=*/::mlir::Value());
    }]>
  ];
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// ArgReduceOp
//===----------------------------------------------------------------------===//

def Weft_ArgReduceOp : Weft_Op<"arg_reduce"> {
  let summary = "Index of the largest or smallest element along an axis";
  let description = [{
    For each position of the other dimensions, the index along `axis` of the
    largest (`max`) or smallest (`min`) element of `input`, as i64. Ties give
    the first such index, or the last with `select_last_index`. With
    `keepdims` the reduced dimension stays as size 1, otherwise it is
    removed. ONNX ArgMax and ArgMin.

    ```mlir
    %i = weft.arg_reduce max %logits axis 1 keepdims
           : tensor<?x1000xf32> -> tensor<?x1xi64>
    ```

    **Constraints:**
    - the input has rank >= 1 and `axis` is in [0, rank);
    - the dimension `axis` is not statically 0 (no element to choose);
    - the result is i64 with the input's shape, `axis` removed (or, with
      `keepdims`, set to 1).
  }];
  let arguments = (ins Weft_NumericTensor:$input, Weft_ArgReduceKind:$kind,
                       I64Attr:$axis, UnitAttr:$keepdims,
                       UnitAttr:$select_last_index);
  let results = (outs Weft_I64Tensor:$result);
  let assemblyFormat = [{
    $kind $input `axis` $axis (`keepdims` $keepdims^)?
    (`select_last_index` $select_last_index^)? attr-dict `:`
    type($input) `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// SoftmaxOp
//===----------------------------------------------------------------------===//

def Weft_SoftmaxOp : Weft_Op<"softmax"> {
  let summary = "Softmax or log-softmax along an axis or a run of axes";
  let description = [{
    Normalizes `input` along dimension `axis`:
    `exp(x) / sum(exp(x))`, or with `log`, `x - log(sum(exp(x)))`. With
    `trailing`, the normalized set is every element whose indices agree on
    the dimensions before `axis`, i.e. dimensions [axis, rank) together; this
    is ONNX Softmax and LogSoftmax before opset 13, which view the input as a
    2-D matrix split at `axis`. From opset 13 ONNX normalizes along `axis`
    alone. The result has the input's type.

    ```mlir
    %p = weft.softmax %logits axis 2
           : tensor<?x?x32000xf32> -> tensor<?x?x32000xf32>
    %q = weft.softmax log %x axis 1 trailing
           : tensor<4x3x5xf32> -> tensor<4x3x5xf32>
    ```

    **Constraints:**
    - the input has rank >= 1 and `axis` is in [0, rank);
    - the result has the input's type (up to less static dimensions).
  }];
  let arguments = (ins Weft_FloatTensor:$input, I64Attr:$axis,
                       UnitAttr:$log, UnitAttr:$trailing);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = [{
    (`log` $log^)? $input `axis` $axis (`trailing` $trailing^)? attr-dict `:`
    type($input) `->` type($result)
  }];
  let hasFolder = 1;
}

#endif // WEFT_DIALECT_WEFT_REDUCEOPS_TD
