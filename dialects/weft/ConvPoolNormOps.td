//===- ConvPoolNormOps.td - Weft conv, pooling, norms -----*- tablegen -*-===//
//
// Windowed ops over the spatial dimensions of NCHW-style tensors (ONNX Conv,
// MaxPool, AveragePool) and the normalizations (BatchNormalization,
// LayerNormalization, InstanceNormalization).
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECT_WEFT_CONVPOOLNORMOPS_TD
#define WEFT_DIALECT_WEFT_CONVPOOLNORMOPS_TD

include "weft/WeftBase.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Weft_AutoPad : I32EnumAttr<"AutoPad",
    "how a windowed op pads its spatial dimensions", [
    I32EnumAttrCase<"notset", 0>,
    I32EnumAttrCase<"same_upper", 1>,
    I32EnumAttrCase<"same_lower", 2>
  ]> {
  let cppNamespace = "::mlir::weft";
}

def Weft_PoolKind : I32EnumAttr<"PoolKind", "what weft.pool computes", [
    I32EnumAttrCase<"max", 0>,
    I32EnumAttrCase<"average", 1>
  ]> {
  let cppNamespace = "::mlir::weft";
}

def Weft_NormKind : I32EnumAttr<"NormKind",
    "which normalization weft.normalize computes", [
    I32EnumAttrCase<"layer", 0>,
    I32EnumAttrCase<"instance", 1>
  ]> {
  let cppNamespace = "::mlir::weft";
}

//===----------------------------------------------------------------------===//
// ConvOp
//===----------------------------------------------------------------------===//

def Weft_ConvOp : Weft_OpWithDecls<"conv", [AttrSizedOperandSegments], [{
    /// Pads (all begins, then all ends) that make a windowed op's output
    /// size ceil(input / stride) in each spatial dimension, as ONNX's
    /// SAME_UPPER (`upper`: the larger half at the end) and SAME_LOWER
    /// define them. Nullopt when a size is dynamic.
    static std::optional<::llvm::SmallVector<int64_t>>
    getSamePads(::llvm::ArrayRef<int64_t> inputSizes,
                ::llvm::ArrayRef<int64_t> kernelSizes,
                ::llvm::ArrayRef<int64_t> strides,
                ::llvm::ArrayRef<int64_t> dilations, bool upper);
    /// The operands' and the result's sizes in channels-first order
    /// (N x C x D..., M x C/group x K..., N x M x O...), whatever layout
    /// the layout attributes give each.
    ::mlir::weft::ConvDims getDims();
    /// Whether this is a depthwise convolution: one output channel per
    /// input channel (group == C == M).
    bool isDepthwise() {
      ::mlir::weft::ConvDims dims = getDims();
      int64_t group = getGroup();
      return group > 1 && dims.input[1] == group && dims.weight[0] == group;
    }
    /// Whether any tensor is stored in other than its default layout.
    bool hasNonDefaultLayout() {
      return getChannelsLastInput() || getChannelsLastResult() ||
             getKernelFirstWeight() || getPackedWeight() ||
             hasChannelBlockedLayout();
    }
    /// Whether any tensor is channel-blocked.
    bool hasChannelBlockedLayout() {
      return getBlockedInput() || getBlockedResult() || getBlockedAddend();
    }
  }]> {
  let summary = "N-dimensional grouped convolution with optional bias";
  let description = [{
    Convolves `input` (N x C x D1 x ... x Dn) with `weight`
    (M x C/group x K1 x ... x Kn) and adds `bias` (M) to each output channel,
    as ONNX Conv (a cross-correlation, no kernel flip). Channels split into
    `group` groups; output channel m sees the input channels of group
    m / (M / group).

    `strides`, `dilations` (n values each) and `pads` (n begins, then n ends)
    are explicit. Output size in dimension i, with effective kernel
    `e = dilations[i] * (K_i - 1) + 1`:

        floor((D_i + pads[i] + pads[n + i] - e) / strides[i]) + 1

    With `auto_pad` `same_upper` or `same_lower` (only kept when spatial
    sizes were not static at import), `pads` are all zero and the padding is
    chosen so that the output size is ceil(D_i / strides[i]), the odd unit at
    the end (upper) or at the start (lower); canonicalization resolves it to
    explicit pads once the sizes are static. ONNX `VALID` is zero pads.

    ```mlir
    %y = weft.conv %x, %w, %b strides [2, 2] pads [3, 3, 3, 3]
           dilations [1, 1]
           : (tensor<?x3x224x224xf32>, tensor<64x3x7x7xf32>, tensor<64xf32>)
           -> tensor<?x64x112x112xf32>
    ```

    **Constraints:**
    - `input` has rank n + 2 >= 3 and `weight` the same rank; `input`,
      `weight` and `bias` share a float element type;
    - `strides` and `dilations` have n values >= 1, `pads` 2n values >= 0,
      `group` >= 1; with `auto_pad` other than `notset`, `pads` are zero;
    - M is divisible by `group` and C equals `group` times weight dimension 1;
    - `bias` has shape (M);
    - every output size is >= 1 (the kernel fits in the padded input);
    - the result is N x M x (output sizes) with the input's element type;
    - `clamp_min` and `clamp_max` are finite, and `clamp_min <= clamp_max`
      when both are present;
    - `addend`, when present, has the result's type.

    `clamp_min` and `clamp_max` limit every output element after the bias,
    as `weft.clip` would (`min(max(y, clamp_min), clamp_max)`; NaN stays
    NaN). Codegen sets them when it fuses a following Relu (`clamp_min
    0.0`), Relu6 or Clip into the convolution (`weft-fuse-conv-clamp`), so
    that the kernel clamps while the output is still in cache; the importer
    never does.

    `addend`, when present, has the result's type and is added to every
    output element after the bias and before the clamp: `min(max(conv(x) +
    bias + addend, clamp_min), clamp_max)`. Codegen sets it when it fuses the
    residual Add that follows a convolution (`weft-fuse-conv-clamp`: a
    ResNet block's Add and Relu, a MobileNetV2 block's Add after its
    projection); the importer never does.

    ```mlir
    %res = weft.conv %x, %w, %b addend %skip strides [1, 1] pads [0, 0, 0, 0]
             dilations [1, 1] clamp_min 0.0
             : (tensor<1x24x56x56xf32>, tensor<24x144x1x1xf32>,
                tensor<24xf32>, tensor<1x24x56x56xf32>)
             -> tensor<1x24x56x56xf32>
    ```

    ```mlir
    %r6 = weft.conv %x, %w, %b strides [1, 1] pads [1, 1, 1, 1]
            dilations [1, 1] group 32 clamp_min 0.0 clamp_max 6.0
            : (tensor<1x32x112x112xf32>, tensor<32x1x3x3xf32>,
               tensor<32xf32>) -> tensor<1x32x112x112xf32>
    ```

    **Layouts.** By default every tensor is channels-first, as ONNX has
    them. Three unit attributes change that, each for one tensor; codegen
    sets them (`weft-conv-channels-last`) so that a chain of convolutions
    runs without transposes between them; the importer never does:
    - `channels_last_input`: `input` is N x D1 x ... x Dn x C;
    - `channels_last_result`: the result, and `addend`, are
      N x (output sizes) x M;
    - `kernel_first_weight`: `weight` is K1 x ... x Kn x C/group x M.
    The convolution computed is the same; only where each element is
    stored changes.

    ```mlir
    %d = weft.conv %e, %w, %b strides [2, 2] pads [1, 1, 1, 1]
           dilations [1, 1] group 144 clamp_min 0.0 clamp_max 6.0
           channels_last_input channels_last_result kernel_first_weight
           : (tensor<1x56x56x144xf32>, tensor<3x3x1x144xf32>,
              tensor<144xf32>) -> tensor<1x28x28x144xf32>
    ```

    Three more store a tensor channel-blocked, N x C/16 x D1 x ... x Dn x 16
    (oneDNN's nChw16c: element (n, c, d...) at [n, c / 16, d..., c % 16]),
    so that a chain of convolutions that oneDNN runs in that layout (ResNet's
    3x3 ones) needs no reorders between them (`weft-conv-blocked`):
    - `blocked_input`: `input`, whose C is then a multiple of 16;
    - `blocked_result`: the result, whose M is then a multiple of 16;
    - `blocked_addend`: `addend`, independently of the result's layout.
    They need `group` 1 and exclude the three above; without
    `blocked_addend` the addend is channels-first (or channels-last with
    `channels_last_result`).

    ```mlir
    %y = weft.conv %x, %w, %b addend %skip strides [1, 1] pads [1, 1, 1, 1]
           dilations [1, 1] clamp_min 0.0 blocked_input blocked_result
           : (tensor<1x4x56x56x16xf32>, tensor<64x64x3x3xf32>,
              tensor<64xf32>, tensor<1x64x56x56xf32>)
           -> tensor<1x4x56x56x16xf32>
    ```

    `packed_weight` stores the weight of a 2-D 1x1 convolution (group 1,
    strides 1, no pads) between channels-last tensors as M/32 x C x 32:
    output channel m's weight for input channel c at [m / 32, c, m % 32],
    the panels that the CPU kernel's tiles read in order (M is then a
    multiple of 32). It needs `channels_last_input` and
    `channels_last_result` and excludes `kernel_first_weight` and the
    channel-blocked layouts; `weft-conv-channels-last` sets it where the
    weight is the model's, and the weights file then holds it packed.

    ```mlir
    %p = weft.conv %e, %w, %b strides [1, 1] pads [0, 0, 0, 0]
           dilations [1, 1] channels_last_input channels_last_result
           packed_weight
           : (tensor<1x7x7x960xf32>, tensor<10x960x32xf32>,
              tensor<320xf32>) -> tensor<1x7x7x320xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$input, Weft_FloatTensor:$weight,
                       Optional<Weft_FloatTensor>:$bias,
                       Optional<Weft_FloatTensor>:$addend,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group,
                       DefaultValuedAttr<Weft_AutoPad,
                           "::mlir::weft::AutoPad::notset">:$auto_pad,
                       OptionalAttr<F64Attr>:$clamp_min,
                       OptionalAttr<F64Attr>:$clamp_max,
                       UnitAttr:$channels_last_input,
                       UnitAttr:$channels_last_result,
                       UnitAttr:$kernel_first_weight,
                       UnitAttr:$blocked_input, UnitAttr:$blocked_result,
                       UnitAttr:$blocked_addend, UnitAttr:$packed_weight);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? (`addend` $addend^)? `strides` $strides
    `pads` $pads
    `dilations` $dilations (`group` $group^)? (`auto_pad` $auto_pad^)?
    (`clamp_min` $clamp_min^)? (`clamp_max` $clamp_max^)?
    (`channels_last_input` $channels_last_input^)?
    (`channels_last_result` $channels_last_result^)?
    (`kernel_first_weight` $kernel_first_weight^)?
    (`blocked_input` $blocked_input^)? (`blocked_result` $blocked_result^)?
    (`blocked_addend` $blocked_addend^)?
    (`packed_weight` $packed_weight^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasCanonicalizeMethod = 1;
}

//===----------------------------------------------------------------------===//
// PoolOp
//===----------------------------------------------------------------------===//

def Weft_PoolOp : Weft_Op<"pool"> {
  let summary = "Max or average pooling over N-dimensional windows";
  let description = [{
    Slides a window of `kernel_shape` over the spatial dimensions of `input`
    (N x C x D1 x ... x Dn) and takes the maximum (`max`) or the mean
    (`average`) of each window, per batch and channel, as ONNX MaxPool and
    AveragePool. `strides`, `dilations` and `pads` (n begins, then n ends)
    are as for `weft.conv`. Padding never wins a maximum; for `average`,
    padded positions count in the divisor only with `count_include_pad`.

    Output size in dimension i, with `e = dilations[i] * (kernel_shape[i] -
    1) + 1` and `P = pads[i] + pads[n + i]`:

        floor((D_i + P - e) / strides[i]) + 1              (default)
        ceil((D_i + P - e) / strides[i]) + 1               (ceil_mode)

    With `ceil_mode`, a last window that would start past the input and its
    begin padding is dropped (the rule of current ONNX and PyTorch); windows
    that overhang the end padding take only their in-bounds positions
    (`count_include_pad` counts the explicit padding, not the overhang).
    `auto_pad` is as for `weft.conv`: output size ceil(D_i / strides[i]).

    With `with_indices`, a `max` pool has a second result, `indices`
    (MaxPool's Indices output): for each maximum, the flat index of the input
    element it came from (the first such element of the window in row-major
    order when several hold the maximum). The index counts whole N x C
    planes, then the spatial position in row-major order, or in column-major
    order with `column_major` (ONNX's `storage_order = 1`): for a 2-D pool
    it is `(n * C + c) * H * W + h * W + w`, or `... + w * H + h`. Padding
    is never the maximum's origin. Canonicalization drops an unused
    `indices` result.

    ```mlir
    %p = weft.pool max %x kernel_shape [3, 3] strides [2, 2]
           pads [1, 1, 1, 1] dilations [1, 1]
           : tensor<?x64x112x112xf32> -> tensor<?x64x56x56xf32>
    %m, %i = weft.pool max %x kernel_shape [2, 2] strides [2, 2]
           pads [0, 0, 0, 0] dilations [1, 1] with_indices
           : tensor<1x1x4x4xf32> -> tensor<1x1x2x2xf32>, tensor<1x1x2x2xi64>
    ```

    **Constraints:**
    - `input` has rank n + 2 >= 3 where n is the length of `kernel_shape`;
    - `kernel_shape`, `strides` and `dilations` have n values >= 1, `pads`
      2n values >= 0; with `auto_pad` other than `notset`, `pads` are zero;
    - `average` needs a float element type; `count_include_pad` is only for
      `average`;
    - every output size is >= 1 (the window fits in the padded input);
    - the result is N x C x (output sizes) with the input's element type;
    - `with_indices` is only for `max`, and gives `indices`, i64 with the
      result's shape; `column_major` needs `with_indices`.

    With `blocked` (set by `weft-conv-blocked`, never by the importer),
    `input` and the result are channel-blocked, N x C/16 x D... x 16 as
    `weft.conv`'s `blocked_input` has them, so that a pool between two
    blocked convolutions keeps their layout; C is then a multiple of 16 and
    `with_indices` is not allowed.
  }];
  let arguments = (ins Weft_NumericTensor:$input, Weft_PoolKind:$kind,
                       DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations, UnitAttr:$ceil_mode,
                       UnitAttr:$count_include_pad,
                       DefaultValuedAttr<Weft_AutoPad,
                           "::mlir::weft::AutoPad::notset">:$auto_pad,
                       UnitAttr:$with_indices, UnitAttr:$column_major,
                       UnitAttr:$blocked);
  let results = (outs Weft_NumericTensor:$result,
                      Optional<Weft_I64Tensor>:$indices);
  let assemblyFormat = [{
    $kind $input `kernel_shape` $kernel_shape `strides` $strides `pads` $pads
    `dilations` $dilations (`ceil_mode` $ceil_mode^)?
    (`count_include_pad` $count_include_pad^)? (`auto_pad` $auto_pad^)?
    (`with_indices` $with_indices^)? (`column_major` $column_major^)?
    (`blocked` $blocked^)?
    attr-dict `:` type($input) `->` type($result) (`,` type($indices)^)?
  }];
  let hasCanonicalizeMethod = 1;
}

//===----------------------------------------------------------------------===//
// BatchNormOp
//===----------------------------------------------------------------------===//

def Weft_BatchNormOp : Weft_Op<"batch_norm"> {
  let summary = "Batch normalization with given statistics (inference)";
  let description = [{
    Normalizes `input` (N x C x D1 x ... x Dn) with the given statistics:

        result = scale * (input - mean) / sqrt(var + epsilon) + bias

    as ONNX BatchNormalization in inference mode. The parameters either all
    have shape (C), applied per channel (dimension 1), or all have the
    shape of `input` without its first dimension (C x D1 x ... x Dn), applied
    per element (ONNX opset 7-8 with `spatial = 0`); for a rank-2 input the
    two are the same. `scale` and `bias` share a float element type, `mean`
    and `var` share one (ONNX 15 lets them differ from the input's).

    Statistics computed from the input (training) are not supported; they
    would be `weft.normalize`'s business.

    ```mlir
    %y = weft.batch_norm %x, %scale, %bias, %mean, %var epsilon 1.0e-05
           : (tensor<?x64x56x56xf32>, tensor<64xf32>, tensor<64xf32>,
              tensor<64xf32>, tensor<64xf32>) -> tensor<?x64x56x56xf32>
    ```

    **Constraints:**
    - `input` has rank >= 2;
    - `scale`, `bias`, `mean` and `var` all have shape (C) or all the shape
      of `input` without dimension 0 (sizes agreeing where static);
    - `scale` and `bias`, and `mean` and `var`, have the same element type;
    - the result has the input's type.
  }];
  let arguments = (ins Weft_FloatTensor:$input, Weft_FloatTensor:$scale,
                       Weft_FloatTensor:$bias, Weft_FloatTensor:$mean,
                       Weft_FloatTensor:$var, F64Attr:$epsilon);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias `,` $mean `,` $var `epsilon` $epsilon
    attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// NormalizeOp
//===----------------------------------------------------------------------===//

def Weft_NormalizeOp : Weft_Op<"normalize"> {
  let summary = "Layer or instance normalization with its statistics";
  let description = [{
    Normalizes `input` by the mean and variance computed over the
    dimensions `axis` .. rank-1 (for each index of the dimensions before
    `axis`), then scales and shifts:

        mean        = mean(input over axes [axis, rank))
        inv_std_dev = 1 / sqrt(mean((input - mean)^2) + epsilon)
        result      = (input - mean) * inv_std_dev * scale + bias

    The variance is the biased one (divided by the element count). `kind`
    says how `scale` and the optional `bias` apply:

    - `layer` (ONNX LayerNormalization): they broadcast unidirectionally to
      the input's shape (usually the shape of dimensions `axis` ..);
    - `instance` (ONNX InstanceNormalization): `axis` is 2 and they have
      shape (C), one value per channel (dimension 1).

    One op serves both because both normalize by statistics over trailing
    dimensions and differ only in where the affine parameters apply; the
    lowering shares the reduction. (`weft.batch_norm`, which takes its
    statistics as operands, is a different computation.)

    `mean` and `inv_std_dev` have the input's shape with dimensions `axis`
    .. set to 1 (ONNX LayerNormalization's optional outputs); their element
    type, also the type the statistics are computed in, is `stash_type`
    when given, else the input's.

    ```mlir
    %y, %mean, %inv = weft.normalize layer %x, %gamma, %beta axis 2
           epsilon 1.0e-05 {stash_type = f32}
           : (tensor<?x128x768xf16>, tensor<768xf16>, tensor<768xf16>)
           -> (tensor<?x128x768xf16>, tensor<?x128x1xf32>,
               tensor<?x128x1xf32>)
    ```

    **Constraints:**
    - `axis` is in [0, rank) of `input`;
    - `layer`: `scale` and `bias` broadcast unidirectionally to the input's
      shape;
    - `instance`: the input has rank >= 3, `axis` is 2, and `scale` and
      `bias` have shape (C);
    - `scale` and `bias` have the input's element type;
    - `result` has the input's type; `mean` and `inv_std_dev` the shape
      above and the element type `stash_type` (or the input's).
  }];
  let arguments = (ins Weft_FloatTensor:$input, Weft_FloatTensor:$scale,
                       Optional<Weft_FloatTensor>:$bias, Weft_NormKind:$kind,
                       I64Attr:$axis, F64Attr:$epsilon,
                       OptionalAttr<TypeAttrOf<AnyFloat>>:$stash_type);
  let results = (outs Weft_FloatTensor:$result, Weft_FloatTensor:$mean,
                      Weft_FloatTensor:$inv_std_dev);
  let assemblyFormat = [{
    $kind $input `,` $scale (`,` $bias^)? `axis` $axis `epsilon` $epsilon
    attr-dict `:` functional-type(operands, results)
  }];
}

#endif // WEFT_DIALECT_WEFT_CONVPOOLNORMOPS_TD
