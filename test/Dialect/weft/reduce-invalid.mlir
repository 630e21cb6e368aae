// RUN: weft-opt %s -split-input-file -verify-diagnostics

// Tests that a reduced axis must be below the rank.
func.func @reduce_axis_out_of_range(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{axis 2 is out of range for an input of rank 2 (expected [0, 2))}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.reduce sum %x axes [2] : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

// Tests that axes are normalized: negative axes are rejected.
func.func @reduce_negative_axis(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{axis -1 is out of range for an input of rank 2 (expected [0, 2))}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.reduce sum %x axes [-1] : tensor<2x3xf32> -> tensor<2xf32>
  return
}

// -----

// Tests that axes must be sorted.
func.func @reduce_unsorted_axes(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{axes [1, 0] must be strictly increasing}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.reduce sum %x axes [1, 0] : tensor<2x3xf32> -> tensor<f32>
  return
}

// -----

// Tests that an axis may not be listed twice.
func.func @reduce_duplicate_axes(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{axes [1, 1] must be strictly increasing}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.reduce sum %x axes [1, 1] : tensor<2x3xf32> -> tensor<2xf32>
  return
}

// -----

// Tests that only max and min reduce booleans.
func.func @reduce_sum_of_i1(%x: tensor<2x3xi1>) {
  // expected-error @+2 {{reduction 'sum' does not accept i1 elements (only max and min do)}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.reduce sum %x axes [1] : tensor<2x3xi1> -> tensor<2xi1>
  return
}

// -----

// Tests that the result shape must match the reduced shape.
func.func @reduce_wrong_result_shape(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<2x1xf32>' are incompatible with return type(s) of operation 'tensor<2xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.reduce sum %x axes [1] keepdims : tensor<2x3xf32> -> tensor<2xf32>
  return
}

// -----

// Tests that the result keeps the element type.
func.func @reduce_wrong_element_type(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<2xf32>' are incompatible with return type(s) of operation 'tensor<2xf16>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.reduce max %x axes [1] : tensor<2x3xf32> -> tensor<2xf16>
  return
}

// -----

// Tests that arg_reduce needs an input of rank >= 1.
func.func @arg_reduce_scalar(%x: tensor<f32>) {
  // expected-error @+2 {{input must have rank >= 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.arg_reduce max %x axis 0 : tensor<f32> -> tensor<i64>
  return
}

// -----

// Tests that the arg_reduce axis must be below the rank.
func.func @arg_reduce_axis_out_of_range(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{axis 2 is out of range for an input of rank 2 (expected [0, 2))}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.arg_reduce min %x axis 2 : tensor<2x3xf32> -> tensor<2x3xi64>
  return
}

// -----

// Tests that arg_reduce rejects a statically empty axis.
func.func @arg_reduce_empty_axis(%x: tensor<2x0xf32>) {
  // expected-error @+2 {{dimension 1 of the input 2x0 is empty: there is no element to choose}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.arg_reduce max %x axis 1 : tensor<2x0xf32> -> tensor<2xi64>
  return
}

// -----

// Tests that arg_reduce gives i64 indices.
func.func @arg_reduce_i32_result(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{result #0 must be ranked tensor of 64-bit signless integer values}}
  %r = weft.arg_reduce max %x axis 1 : tensor<2x3xf32> -> tensor<2xi32>
  return
}

// -----

// Tests that arg_reduce does not take booleans.
func.func @arg_reduce_i1(%x: tensor<2x3xi1>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of}}
  %r = weft.arg_reduce max %x axis 1 : tensor<2x3xi1> -> tensor<2xi64>
  return
}

// -----

// Tests that softmax needs an input of rank >= 1.
func.func @softmax_scalar(%x: tensor<f32>) {
  // expected-error @+2 {{input must have rank >= 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.softmax %x axis 0 : tensor<f32> -> tensor<f32>
  return
}

// -----

// Tests that the softmax axis must be below the rank.
func.func @softmax_axis_out_of_range(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{axis 3 is out of range for an input of rank 2 (expected [0, 2))}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.softmax %x axis 3 : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

// Tests that softmax takes floating-point tensors only.
func.func @softmax_integer(%x: tensor<2x3xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of}}
  %r = weft.softmax %x axis 1 : tensor<2x3xi32> -> tensor<2x3xi32>
  return
}

// -----

// Tests that the softmax result keeps the input's shape.
func.func @softmax_wrong_shape(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<3x2xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.softmax log %x axis 1 : tensor<2x3xf32> -> tensor<3x2xf32>
  return
}

// -----

// Tests that an unknown reduce kind is rejected by the parser.
func.func @reduce_unknown_kind(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'kind'}}
  %r = weft.reduce avg %x axes [1] : tensor<2x3xf32> -> tensor<2xf32>
  return
}
