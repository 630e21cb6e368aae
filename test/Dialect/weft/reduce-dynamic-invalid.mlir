// RUN: weft-opt %s -split-input-file -verify-diagnostics

// Tests that the attribute and the operand do not both give axes.
func.func @reduce_both_axes(%x: tensor<2x3xf32>, %a: tensor<1xi64>) {
  // expected-error @+2 {{axes [1] must be empty when dynamic_axes is given}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = "weft.reduce"(%x, %a) <{axes = array<i64: 1>, kind = 1 : i32}> : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<?xf32>
  return
}

// -----

// Tests that run-time axes have a static length (it sets the result rank).
func.func @reduce_dynamic_axes_length(%x: tensor<2x3xf32>, %a: tensor<?xi64>) {
  // expected-error @+2 {{dynamic_axes must be 1-D with a static length, got 'tensor<?xi64>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.reduce sum %x axes %a keepdims : tensor<2x3xf32>, tensor<?xi64> -> tensor<?x?xf32>
  return
}

// -----

// Tests that run-time axes are 1-D.
func.func @reduce_dynamic_axes_rank(%x: tensor<2x3xf32>, %a: tensor<i64>) {
  // expected-error @+2 {{dynamic_axes must be 1-D with a static length, got 'tensor<i64>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.reduce sum %x axes %a : tensor<2x3xf32>, tensor<i64> -> tensor<?xf32>
  return
}

// -----

// Tests that an empty run-time axes list is refused (the attribute form
// says "no axes").
func.func @reduce_dynamic_axes_empty(%x: tensor<2x3xf32>, %a: tensor<0xi64>) {
  // expected-error @+2 {{dynamic_axes has 0 entries, expected 1 to 2 (one per reduced dimension)}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.reduce sum %x axes %a keepdims : tensor<2x3xf32>, tensor<0xi64> -> tensor<2x3xf32>
  return
}

// -----

// Tests that there are no more run-time axes than dimensions.
func.func @reduce_dynamic_axes_too_many(%x: tensor<2x3xf32>, %a: tensor<3xi64>) {
  // expected-error @+2 {{dynamic_axes has 3 entries, expected 1 to 2 (one per reduced dimension)}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.reduce sum %x axes %a keepdims : tensor<2x3xf32>, tensor<3xi64> -> tensor<?x?xf32>
  return
}

// -----

// Tests that constant run-time axes are checked: out of range.
func.func @reduce_constant_dynamic_axes_range(%x: tensor<2x3xf32>) {
  %a = weft.constant dense<[-3]> : tensor<1xi64>
  // expected-error @+2 {{dynamic_axes value -3 is out of range for rank 2 (expected [-2, 2))}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.reduce sum %x axes %a : tensor<2x3xf32>, tensor<1xi64> -> tensor<?xf32>
  return
}

// -----

// Tests that constant run-time axes are checked: duplicates (after
// normalization).
func.func @reduce_constant_dynamic_axes_twice(%x: tensor<2x3xf32>) {
  %a = weft.constant dense<[1, -1]> : tensor<2xi64>
  // expected-error @+2 {{dynamic_axes contain axis 1 twice}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.reduce sum %x axes %a : tensor<2x3xf32>, tensor<2xi64> -> tensor<f32>
  return
}

// -----

// Tests that a result conflicting with the known sizes is refused.
func.func @reduce_dynamic_axes_result(%x: tensor<3x1x2xf32>, %a: tensor<1xi64>) {
  // expected-error @+2 {{inferred type(s) 'tensor<?x1x?xf32>' are incompatible with return type(s) of operation 'tensor<3x2x2xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.reduce sum %x axes %a keepdims : tensor<3x1x2xf32>, tensor<1xi64> -> tensor<3x2x2xf32>
  return
}

// -----

// Tests that run-time axes do not lift the i1 restriction.
func.func @reduce_dynamic_axes_bool(%x: tensor<2x3xi1>, %a: tensor<1xi64>) {
  // expected-error @+2 {{reduction 'sum' does not accept i1 elements (only max and min do)}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.reduce sum %x axes %a : tensor<2x3xi1>, tensor<1xi64> -> tensor<?xi1>
  return
}

// -----

// Tests that run-time axes are i64.
func.func @reduce_dynamic_axes_i32(%x: tensor<2x3xf32>, %a: tensor<1xi32>) {
  // expected-error @+1 {{operand #1 must be ranked tensor of 64-bit signless integer values}}
  %r = weft.reduce sum %x axes %a : tensor<2x3xf32>, tensor<1xi32> -> tensor<?xf32>
  return
}
