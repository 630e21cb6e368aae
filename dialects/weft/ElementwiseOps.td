//===- ElementwiseOps.td - Weft elementwise ops ------------*- tablegen -*-===//
//
// Elementwise math of ONNX: unary functions and activations, clipping,
// casts, binary arithmetic, comparisons and logic with numpy broadcasting,
// and selection (ONNX Where).
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECT_WEFT_ELEMENTWISEOPS_TD
#define WEFT_DIALECT_WEFT_ELEMENTWISEOPS_TD

include "weft/WeftBase.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Weft_UnaryKind : I32EnumAttr<"UnaryKind", "elementwise unary function", [
  I32EnumAttrCase<"Relu", 0, "relu">,
  I32EnumAttrCase<"Sigmoid", 1, "sigmoid">,
  I32EnumAttrCase<"Tanh", 2, "tanh">,
  I32EnumAttrCase<"Erf", 3, "erf">,
  I32EnumAttrCase<"Exp", 4, "exp">,
  I32EnumAttrCase<"Log", 5, "log">,
  I32EnumAttrCase<"Sqrt", 6, "sqrt">,
  I32EnumAttrCase<"Reciprocal", 7, "reciprocal">,
  I32EnumAttrCase<"Neg", 8, "neg">,
  I32EnumAttrCase<"Abs", 9, "abs">,
  I32EnumAttrCase<"Floor", 10, "floor">,
  I32EnumAttrCase<"Ceil", 11, "ceil">,
  I32EnumAttrCase<"Sign", 12, "sign">,
  I32EnumAttrCase<"Sin", 13, "sin">,
  I32EnumAttrCase<"Cos", 14, "cos">,
  I32EnumAttrCase<"Not", 15, "not">,
  I32EnumAttrCase<"LeakyRelu", 16, "leaky_relu">,
  I32EnumAttrCase<"Elu", 17, "elu">,
  I32EnumAttrCase<"Selu", 18, "selu">,
  I32EnumAttrCase<"Celu", 19, "celu">,
  I32EnumAttrCase<"ThresholdedRelu", 20, "thresholded_relu">,
  I32EnumAttrCase<"HardSigmoid", 21, "hard_sigmoid">,
  I32EnumAttrCase<"HardSwish", 22, "hard_swish">,
  I32EnumAttrCase<"Softplus", 23, "softplus">,
  I32EnumAttrCase<"Softsign", 24, "softsign">,
  I32EnumAttrCase<"Gelu", 25, "gelu">,
  I32EnumAttrCase<"GeluTanh", 26, "gelu_tanh">
]> {
  let cppNamespace = "::mlir::weft";
}

def Weft_BinaryKind : I32EnumAttr<"BinaryKind",
                                  "elementwise binary function", [
  I32EnumAttrCase<"Add", 0, "add">,
  I32EnumAttrCase<"Sub", 1, "sub">,
  I32EnumAttrCase<"Mul", 2, "mul">,
  I32EnumAttrCase<"Div", 3, "div">,
  I32EnumAttrCase<"Mod", 4, "mod">,
  I32EnumAttrCase<"Fmod", 5, "fmod">,
  I32EnumAttrCase<"Pow", 6, "pow">,
  I32EnumAttrCase<"Max", 7, "max">,
  I32EnumAttrCase<"Min", 8, "min">,
  I32EnumAttrCase<"Prelu", 9, "prelu">,
  I32EnumAttrCase<"Equal", 10, "equal">,
  I32EnumAttrCase<"Less", 11, "less">,
  I32EnumAttrCase<"LessEqual", 12, "less_equal">,
  I32EnumAttrCase<"Greater", 13, "greater">,
  I32EnumAttrCase<"GreaterEqual", 14, "greater_equal">,
  I32EnumAttrCase<"And", 15, "and">,
  I32EnumAttrCase<"Or", 16, "or">,
  I32EnumAttrCase<"Xor", 17, "xor">
]> {
  let cppNamespace = "::mlir::weft";
}

//===----------------------------------------------------------------------===//
// UnaryOp
//===----------------------------------------------------------------------===//

def Weft_UnaryOp : Weft_Op<"unary"> {
  let summary = "Elementwise unary function or activation";
  let description = [{
    Applies `kind` to every element of `input`. The parameters of the
    activations are explicit attributes (the importer writes ONNX's defaults).
    Kinds, the ONNX ops they import and the element types they accept:

    - `relu`, `neg` (Relu, Neg): floats and signed integers;
    - `abs`, `sign` (Abs, Sign): floats and integers;
    - `not` (Not): i1;
    - `sigmoid`, `tanh`, `erf`, `exp`, `log`, `sqrt`, `reciprocal`, `floor`,
      `ceil`, `sin`, `cos`, `softplus`, `softsign`, `hard_swish`: floats;
    - `leaky_relu`, `elu`, `celu`, `thresholded_relu` (LeakyRelu, Elu, Celu,
      ThresholdedRelu): floats, parameter `alpha`;
    - `selu` (Selu): floats, parameters `alpha` and `gamma`;
    - `hard_sigmoid` (HardSigmoid): floats, parameters `alpha` and `beta`;
    - `gelu`, `gelu_tanh` (Gelu with approximate = "none" / "tanh"): floats.

    Signed integers are the signless i8, i32 and i64 (ONNX's signed types);
    ui8 is unsigned. ONNX also defines Erf on integers; weft does not. The
    result has the type of the input. Constant inputs fold (float math is
    done in f64 and rounded once to the element type; integer neg and abs
    wrap around).

    ```mlir
    %r = weft.unary relu %x : tensor<2x?xf32> -> tensor<2x?xf32>
    %l = weft.unary leaky_relu %x alpha = 0.01 : tensor<4xf32> -> tensor<4xf32>
    %h = weft.unary hard_sigmoid %x alpha = 0.2 beta = 0.5
           : tensor<4xf16> -> tensor<4xf16>
    ```

    **Constraints:**
    - the element type is allowed for `kind` (list above);
    - exactly the parameters listed for `kind` are present;
    - the result has the input's element type and shape.
  }];
  let arguments = (ins Weft_UnaryKind:$kind, Weft_Tensor:$input,
                       OptionalAttr<F64Attr>:$alpha,
                       OptionalAttr<F64Attr>:$beta,
                       OptionalAttr<F64Attr>:$gamma);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = [{
    $kind $input (`alpha` `=` $alpha^)? (`beta` `=` $beta^)?
    (`gamma` `=` $gamma^)? attr-dict `:` type($input) `->` type($result)
  }];
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// ClipOp
//===----------------------------------------------------------------------===//

def Weft_ClipOp : Weft_Op<"clip", [AttrSizedOperandSegments]> {
  let summary = "Clamps every element between optional bounds";
  let description = [{
    `min(max(input, min), max)` elementwise (ONNX Clip), where an absent bound
    does not clamp. When `min` is greater than `max`, every element becomes
    `max`, as in ONNX. A NaN input stays NaN.

    ```mlir
    %c = weft.clip %x min %lo max %hi
           : (tensor<2x3xf32>, tensor<f32>, tensor<f32>) -> tensor<2x3xf32>
    %r6 = weft.clip %x max %six : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
    ```

    **Constraints:**
    - `input` is numeric (not i1);
    - `min` and `max`, when present, have the input's element type and one
      element: rank 0 or every dimension 1, of rank at most the input's;
    - the result has the input's type.
  }];
  let arguments = (ins Weft_Tensor:$input, Optional<Weft_Tensor>:$min,
                       Optional<Weft_Tensor>:$max);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = [{
    $input (`min` $min^)? (`max` $max^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// CastOp
//===----------------------------------------------------------------------===//

def Weft_CastOp : Weft_Op<"cast"> {
  let summary = "Converts every element to another element type";
  let description = [{
    ONNX Cast and CastLike. The result has the input's shape and element type
    `to`. Conversions follow ONNX (and C):
    - float to integer truncates toward zero; NaN, infinities and values out
      of the target's range are undefined (such constants are not folded);
    - integer to narrower integer keeps the low bits; ui8 and i1 extend with
      zeros, signed types with the sign;
    - to i1: nonzero (and NaN) is true; from i1: false is 0, true is 1;
    - float to float rounds to nearest even (overflow gives infinity).

    ```mlir
    %i = weft.cast %x to i64 : tensor<4xf32> -> tensor<4xi64>
    ```

    **Constraints:**
    - `to` is a supported element type;
    - the result has the input's shape and element type `to`.
  }];
  let arguments = (ins Weft_Tensor:$input, TypeAttrOf<Weft_ElementType>:$to);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = [{
    $input `to` $to attr-dict `:` type($input) `->` type($result)
  }];
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// BinaryOp
//===----------------------------------------------------------------------===//

def Weft_BinaryOp : Weft_Op<"binary"> {
  let summary = "Elementwise binary function with numpy broadcasting";
  let description = [{
    Applies `kind` to `lhs` and `rhs` broadcast against each other (numpy
    rules; ONNX opset 7 and later). Variadic ONNX ops (Sum, Mean, Max, Min)
    import as chains of this op.

    Kinds, the ONNX ops they import, and their element types:

    - `add`, `sub`, `mul`, `div`, `max`, `min` (Add, Sub, Mul, Div, Max,
      Min): operands of one numeric type, which the result has;
    - `mod` (Mod, fmod = 0): one integer type; `fmod` (Mod, fmod = 1): one
      numeric type;
    - `pow` (Pow): a numeric base and a numeric exponent, which may be of
      another type; the result has the base's type;
    - `prelu` (PRelu): one numeric type; `rhs` (the slope) broadcasts to the
      shape of `lhs`, and the result has `lhs`'s type;
    - `equal` (Equal): one type, i1 included; the result is i1;
    - `less`, `less_equal`, `greater`, `greater_equal` (Less, LessOrEqual,
      Greater, GreaterOrEqual): one numeric type; the result is i1;
    - `and`, `or`, `xor` (And, Or, Xor): i1.

    Integer semantics: `add`, `sub`, `mul` wrap around; `div` truncates
    toward zero (ONNX's reference computes numpy's true division and casts
    back, which truncates; C and onnxruntime agree); `mod` takes the sign of
    the divisor (Python `%`), `fmod` the sign of the dividend (C `%`);
    `pow` with a negative integer exponent is undefined. Division by zero of
    integers is undefined: such constants are not folded. Float `max` and
    `min` propagate NaN, as numpy's `maximum` and `minimum` do.

    ```mlir
    %s = weft.binary add %x, %b
           : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %e = weft.binary equal %shape, %minus_one
           : (tensor<4xi64>, tensor<i64>) -> tensor<4xi1>
    ```

    **Constraints:**
    - the operand shapes broadcast (for `prelu`, `rhs` broadcasts to `lhs`'s
      shape without growing it);
    - the element types are allowed for `kind` (list above);
    - the result has the broadcast shape and the element type listed.
  }];
  let arguments = (ins Weft_BinaryKind:$kind, Weft_Tensor:$lhs,
                       Weft_Tensor:$rhs);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = [{
    $kind $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// SelectOp
//===----------------------------------------------------------------------===//

def Weft_SelectOp : Weft_Op<"select"> {
  let summary = "Picks elements of two tensors by a boolean mask";
  let description = [{
    ONNX Where: `condition ? true_value : false_value` elementwise, with the
    three operands broadcast against each other (numpy rules).

    ```mlir
    %r = weft.select %mask, %x, %fill
           : (tensor<1x1x4x4xi1>, tensor<2x8x4x4xf32>, tensor<f32>)
             -> tensor<2x8x4x4xf32>
    ```

    **Constraints:**
    - `condition` is i1;
    - `true_value` and `false_value` have the same element type;
    - the three shapes broadcast; the result has the broadcast shape and the
      values' element type.
  }];
  let arguments = (ins Weft_BoolTensor:$condition, Weft_Tensor:$true_value,
                       Weft_Tensor:$false_value);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = [{
    $condition `,` $true_value `,` $false_value attr-dict `:`
    functional-type(operands, results)
  }];
  let hasFolder = 1;
}

#endif // WEFT_DIALECT_WEFT_ELEMENTWISEOPS_TD
