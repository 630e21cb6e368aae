// RUN: weft-opt %s -split-input-file -verify-diagnostics

// Tests that float-only unary kinds refuse integers.
func.func @unary_exp_int(%x: tensor<4xi32>) {
  // expected-error @+2 {{'exp' does not accept elements of 'i32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.unary exp %x : tensor<4xi32> -> tensor<4xi32>
  return
}

// -----

// Tests that neg refuses unsigned integers (ONNX Neg is signed only).
func.func @unary_neg_unsigned(%x: tensor<4xui8>) {
  // expected-error @+2 {{'neg' does not accept elements of 'ui8'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.unary neg %x : tensor<4xui8> -> tensor<4xui8>
  return
}

// -----

// Tests that not needs i1.
func.func @unary_not_float(%x: tensor<4xf32>) {
  // expected-error @+2 {{'not' does not accept elements of 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.unary not %x : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

// Tests that abs refuses i1.
func.func @unary_abs_bool(%x: tensor<4xi1>) {
  // expected-error @+2 {{'abs' does not accept elements of 'i1'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.unary abs %x : tensor<4xi1> -> tensor<4xi1>
  return
}

// -----

// Tests that an activation needs its parameters.
func.func @unary_missing_alpha(%x: tensor<4xf32>) {
  // expected-error @+2 {{'leaky_relu' needs parameter 'alpha'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.unary leaky_relu %x : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

// Tests that selu needs gamma as well as alpha.
func.func @unary_selu_missing_gamma(%x: tensor<4xf32>) {
  // expected-error @+2 {{'selu' needs parameter 'gamma'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.unary selu %x alpha = 1.6 : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

// Tests that a kind without parameters refuses one.
func.func @unary_extra_beta(%x: tensor<4xf32>) {
  // expected-error @+2 {{'relu' takes no parameter 'beta'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.unary relu %x beta = 1.0 : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

// Tests that the result keeps the input's element type.
func.func @unary_result_type(%x: tensor<4xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<4xf16>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.unary tanh %x : tensor<4xf32> -> tensor<4xf16>
  return
}

// -----

// Tests that clip refuses i1 inputs.
func.func @clip_bool(%x: tensor<4xi1>) {
  // expected-error @+2 {{clip does not accept elements of 'i1'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.clip %x : (tensor<4xi1>) -> tensor<4xi1>
  return
}

// -----

// Tests that a clip bound has the input's element type.
func.func @clip_bound_type(%x: tensor<4xf32>, %lo: tensor<f64>) {
  // expected-error @+2 {{min has element type 'f64' but the input has 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.clip %x min %lo : (tensor<4xf32>, tensor<f64>) -> tensor<4xf32>
  return
}

// -----

// Tests that a clip bound holds one element.
func.func @clip_bound_shape(%x: tensor<4xf32>, %hi: tensor<4xf32>) {
  // expected-error @+2 {{max must hold one element (rank 0 or sizes 1, rank at most the input's), got 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.clip %x max %hi : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// Tests that a clip bound of unknown size is refused.
func.func @clip_bound_dynamic(%x: tensor<4xf32>, %hi: tensor<?xf32>) {
  // expected-error @+2 {{max must hold one element (rank 0 or sizes 1, rank at most the input's), got ?}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.clip %x max %hi : (tensor<4xf32>, tensor<?xf32>) -> tensor<4xf32>
  return
}

// -----

// Tests that a cast's result element type is `to`.
func.func @cast_wrong_result(%x: tensor<4xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<4xi64>' are incompatible with return type(s) of operation 'tensor<4xi32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.cast %x to i64 : tensor<4xf32> -> tensor<4xi32>
  return
}

// -----

// Tests that a cast keeps the input's shape.
func.func @cast_wrong_shape(%x: tensor<4xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<4xf16>' are incompatible with return type(s) of operation 'tensor<5xf16>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.cast %x to f16 : tensor<4xf32> -> tensor<5xf16>
  return
}

// -----

// Tests that casts to unsupported element types do not parse.
func.func @cast_unsupported(%x: tensor<4xf32>) {
  // expected-error @+1 {{failed to satisfy constraint}}
  %r = weft.cast %x to i16 : tensor<4xf32> -> tensor<4xi16>
  return
}

// -----

// Tests that binary operands share an element type.
func.func @binary_mixed_types(%x: tensor<4xf32>, %y: tensor<4xf16>) {
  // expected-error @+2 {{'add' needs operands of one element type, got 'f32' and 'f16'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.binary add %x, %y : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

// Tests that shapes which do not broadcast are refused.
func.func @binary_broadcast(%x: tensor<2x3xf32>, %y: tensor<4xf32>) {
  // expected-error @+2 {{shapes 2x3, 4 cannot be broadcast (dimension 1 of the result)}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.binary mul %x, %y : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return
}

// -----

// Tests that the result of a broadcast has the broadcast shape.
func.func @binary_result_shape(%x: tensor<2x1xf32>, %y: tensor<3xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<2x1xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.binary sub %x, %y : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x1xf32>
  return
}

// -----

// Tests that arithmetic refuses i1.
func.func @binary_add_bool(%x: tensor<4xi1>) {
  // expected-error @+2 {{'add' does not accept elements of 'i1'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.binary add %x, %x : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  return
}

// -----

// Tests that mod (sign of the divisor) refuses floats.
func.func @binary_mod_float(%x: tensor<4xf32>) {
  // expected-error @+2 {{'mod' (sign of the divisor) needs integers; floats use 'fmod', got 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.binary mod %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// Tests that pow refuses a boolean exponent.
func.func @binary_pow_bool(%x: tensor<4xf32>, %e: tensor<i1>) {
  // expected-error @+2 {{'pow' does not accept elements of 'i1'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.binary pow %x, %e : (tensor<4xf32>, tensor<i1>) -> tensor<4xf32>
  return
}

// -----

// Tests that comparisons give i1.
func.func @binary_compare_result(%x: tensor<4xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<4xi1>' are incompatible with return type(s) of operation 'tensor<4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.binary less %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// Tests that ordering comparisons refuse i1.
func.func @binary_less_bool(%x: tensor<4xi1>) {
  // expected-error @+2 {{'less' does not accept elements of 'i1'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.binary less %x, %x : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  return
}

// -----

// Tests that logic needs i1.
func.func @binary_and_int(%x: tensor<4xi8>) {
  // expected-error @+2 {{'and' does not accept elements of 'i8'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.binary and %x, %x : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  return
}

// -----

// Tests that a PRelu slope may not grow the input (unidirectional broadcast).
func.func @binary_prelu_grow(%x: tensor<3xf32>, %s: tensor<2x3xf32>) {
  // expected-error @+2 {{slope of shape 2x3 does not broadcast to input of shape 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.binary prelu %x, %s : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

// Tests that a PRelu slope must match the input's sizes.
func.func @binary_prelu_mismatch(%x: tensor<2x3xf32>, %s: tensor<2xf32>) {
  // expected-error @+2 {{slope of shape 2 does not broadcast to input of shape 2x3}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.binary prelu %x, %s : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  return
}

// -----

// Tests that select's values share an element type.
func.func @select_mixed(%c: tensor<4xi1>, %x: tensor<4xf32>, %y: tensor<4xi32>) {
  // expected-error @+2 {{true and false values have different element types 'f32' and 'i32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.select %c, %x, %y : (tensor<4xi1>, tensor<4xf32>, tensor<4xi32>) -> tensor<4xf32>
  return
}

// -----

// Tests that select's three shapes must broadcast.
func.func @select_broadcast(%c: tensor<3xi1>, %x: tensor<4xf32>, %y: tensor<f32>) {
  // expected-error @+2 {{shapes 3, 4, scalar cannot be broadcast (dimension 0 of the result)}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.select %c, %x, %y : (tensor<3xi1>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

// Tests that select's condition is i1.
func.func @select_condition(%c: tensor<4xi8>, %x: tensor<4xf32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 1-bit signless integer values}}
  %r = weft.select %c, %x, %x : (tensor<4xi8>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}
