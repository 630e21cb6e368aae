// RUN: weft-opt %s -split-input-file -verify-diagnostics

// Tests that a reshape shape operand must have a static length.
func.func @reshape_dynamic_length(%x: tensor<2x3xf32>, %s: tensor<?xi64>) {
  // expected-error @+2 {{shape operand must be 1-D with a static length, got 'tensor<?xi64>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.reshape %x, %s : (tensor<2x3xf32>, tensor<?xi64>) -> tensor<?x?xf32>
  return
}

// -----

// Tests that shape entries below -1 are refused.
func.func @reshape_negative(%x: tensor<2x3xf32>) {
  %s = weft.constant dense<[-2, 3]> : tensor<2xi64>
  // expected-error @+2 {{shape entry -2 at index 0 is invalid (expected >= -1)}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.reshape %x, %s : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<?x3xf32>
  return
}

// -----

// Tests that at most one entry is inferred.
func.func @reshape_two_inferred(%x: tensor<2x3xf32>) {
  %s = weft.constant dense<[-1, -1]> : tensor<2xi64>
  // expected-error @+2 {{shape has more than one -1 entry}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.reshape %x, %s : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return
}

// -----

// Tests that a copied dimension must exist in the input.
func.func @reshape_copy_out_of_range(%x: tensor<6xf32>) {
  %s = weft.constant dense<[6, 0]> : tensor<2xi64>
  // expected-error @+2 {{shape entry 0 at index 1 copies a dimension that the input of rank 1 does not have}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.reshape %x, %s : (tensor<6xf32>, tensor<2xi64>) -> tensor<6x?xf32>
  return
}

// -----

// Tests that allowzero refuses 0 together with -1.
func.func @reshape_allowzero_infer(%x: tensor<0x3xf32>) {
  %s = weft.constant dense<[0, -1]> : tensor<2xi64>
  // expected-error @+2 {{shape has both 0 and -1 entries while allowzero is set}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.reshape %x, %s allowzero : (tensor<0x3xf32>, tensor<2xi64>) -> tensor<0x?xf32>
  return
}

// -----

// Tests that -1 must divide the element count.
func.func @reshape_indivisible(%x: tensor<2x3xf32>) {
  %s = weft.constant dense<[4, -1]> : tensor<2xi64>
  // expected-error @+2 {{cannot reshape 2x3 with -1 in shape 4x?: 6 elements do not divide by 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.reshape %x, %s : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x?xf32>
  return
}

// -----

// Tests that static element counts must agree.
func.func @reshape_count(%x: tensor<2x3xf32>) {
  %s = weft.constant dense<[4, 2]> : tensor<2xi64>
  // expected-error @+2 {{cannot reshape 2x3 (6 elements) into 4x2 (8 elements)}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.reshape %x, %s : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x2xf32>
  return
}

// -----

// Tests that a result type conflicting with the inferred one is refused.
func.func @reshape_wrong_result(%x: tensor<2x3xf32>) {
  %s = weft.constant dense<[3, 2]> : tensor<2xi64>
  // expected-error @+2 {{'weft.reshape' op inferred type(s) 'tensor<3x2xf32>' are incompatible with return type(s) of operation 'tensor<2x3xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.reshape %x, %s : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  return
}

// -----

// Tests that the flatten axis may be the rank but not more.
func.func @flatten_axis(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{axis 3 is out of range for rank 2 (expected [0, 2])}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.flatten %x axis = 3 : tensor<2x3xf32> -> tensor<6x1xf32>
  return
}

// -----

// Tests that squeeze refuses a static dimension other than 1.
func.func @squeeze_not_one(%x: tensor<2x1xf32>) {
  // expected-error @+2 {{cannot squeeze dimension 0 of size 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.squeeze %x axes = [0] : tensor<2x1xf32> -> tensor<1xf32>
  return
}

// -----

// Tests that squeeze axes are in range.
func.func @squeeze_axis(%x: tensor<2x1xf32>) {
  // expected-error @+2 {{axis 2 is out of range for rank 2 (expected [0, 2))}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.squeeze %x axes = [2] : tensor<2x1xf32> -> tensor<2x1xf32>
  return
}

// -----

// Tests that squeeze axes are distinct.
func.func @squeeze_duplicate(%x: tensor<2x1xf32>) {
  // expected-error @+2 {{axes contain axis 1 twice}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.squeeze %x axes = [1, 1] : tensor<2x1xf32> -> tensor<2xf32>
  return
}

// -----

// Tests that unsqueeze axes are in range of the result.
func.func @unsqueeze_axis(%x: tensor<2xf32>) {
  // expected-error @+2 {{axis 2 is out of range for result rank 2 (expected [0, 2))}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.unsqueeze %x axes = [2] : tensor<2xf32> -> tensor<2x1xf32>
  return
}

// -----

// Tests that transpose needs a permutation.
func.func @transpose_perm(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{perm [0, 0] is not a permutation of the 2 dimensions of the input}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.transpose %x perm = [0, 0] : tensor<2x3xf32> -> tensor<2x2xf32>
  return
}

// -----

// Tests that concat refuses 0-D inputs.
func.func @concat_scalar(%x: tensor<f32>) {
  // expected-error @+2 {{cannot concatenate 0-D tensors}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.concat %x, %x axis = 0 : (tensor<f32>, tensor<f32>) -> tensor<2xf32>
  return
}

// -----

// Tests that the concat axis is in range.
func.func @concat_axis(%x: tensor<2xf32>) {
  // expected-error @+2 {{axis 1 is out of range for rank 1 (expected [0, 1))}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.concat %x, %x axis = 1 : (tensor<2xf32>, tensor<2xf32>) -> tensor<4xf32>
  return
}

// -----

// Tests that concat inputs share the element type.
func.func @concat_types(%x: tensor<2xf32>, %y: tensor<2xi64>) {
  // expected-error @+2 {{input 1 has type 'tensor<2xi64>', incompatible with input 0 of type 'tensor<2xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.concat %x, %y axis = 0 : (tensor<2xf32>, tensor<2xi64>) -> tensor<4xf32>
  return
}

// -----

// Tests that concat inputs agree off the axis.
func.func @concat_sizes(%x: tensor<2x3xf32>, %y: tensor<2x4xf32>) {
  // expected-error @+2 {{input 1 has size 4 in dimension 1 where input 0 has 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.concat %x, %y axis = 0 : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x3xf32>
  return
}

// -----

// Tests that split needs exactly one of sizes and num_outputs.
func.func @split_both(%x: tensor<4xf32>) {
  // expected-error @+2 {{split needs exactly one of sizes and num_outputs}}
  // expected-error @+1 {{failed to infer returned types}}
  %r:2 = weft.split %x axis = 0 {sizes = array<i64: 2, 2>, num_outputs = 2 : i64} : tensor<4xf32> -> tensor<2xf32>, tensor<2xf32>
  return
}

// -----

// Tests that split sizes add up to the dimension.
func.func @split_sum(%x: tensor<4xf32>) {
  // expected-error @+2 {{split sizes add up to 3, not to the dimension size 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %r:2 = weft.split %x axis = 0 {sizes = array<i64: 1, 2>} : tensor<4xf32> -> tensor<1xf32>, tensor<2xf32>
  return
}

// -----

// Tests that split sizes are not negative.
func.func @split_negative(%x: tensor<?xf32>) {
  // expected-error @+2 {{split size -1 is negative}}
  // expected-error @+1 {{failed to infer returned types}}
  %r:2 = weft.split %x axis = 0 {sizes = array<i64: -1, 2>} : tensor<?xf32> -> tensor<?xf32>, tensor<2xf32>
  return
}

// -----

// Tests that an even split cannot leave a negative last piece.
func.func @split_too_many(%x: tensor<5xf32>) {
  // expected-error @+2 {{cannot split dimension of size 5 into 4 pieces of 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %r:4 = weft.split %x axis = 0 {num_outputs = 4 : i64} : tensor<5xf32> -> tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<?xf32>
  return
}

// -----

// Tests that the split result count matches the attributes.
func.func @split_count(%x: tensor<4xf32>) {
  // expected-error @+2 {{'weft.split' op inferred type(s)}}
  // expected-error @+1 {{failed to infer returned types}}
  %r:3 = weft.split %x axis = 0 {num_outputs = 2 : i64} : tensor<4xf32> -> tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
  return
}
