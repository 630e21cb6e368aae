// RUN: weft-opt %s -split-input-file -verify-diagnostics

// Tests that slice axes are in range.
func.func @slice_axis(%x: tensor<4xf32>, %i: tensor<1xi64>) {
  // expected-error @+2 {{axis 1 is out of range for rank 1 (expected [0, 1))}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.slice %x[%i, %i, %i] axes = [1] : (tensor<4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?xf32>
  return
}

// -----

// Tests that slice bounds have one entry per axis.
func.func @slice_length(%x: tensor<4xf32>, %i: tensor<2xi64>) {
  // expected-error @+2 {{starts must be 1-D with 1 entries (one per axis), got 'tensor<2xi64>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.slice %x[%i, %i, %i] axes = [0] : (tensor<4xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<?xf32>
  return
}

// -----

// Tests that a known slice step of 0 is refused.
func.func @slice_step_zero(%x: tensor<4xf32>, %i: tensor<1xi64>) {
  %zero = weft.constant dense<0> : tensor<1xi64>
  // expected-error @+2 {{slice step must not be 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.slice %x[%i, %i, %zero] axes = [0] : (tensor<4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?xf32>
  return
}

// -----

// Tests that gather needs an input of rank >= 1.
func.func @gather_scalar(%x: tensor<f32>, %i: tensor<i64>) {
  // expected-error @+2 {{cannot gather from a 0-D tensor}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.gather %x[%i] axis = 0 : (tensor<f32>, tensor<i64>) -> tensor<f32>
  return
}

// -----

// Tests that the gather axis is in range.
func.func @gather_axis(%x: tensor<3xf32>, %i: tensor<i64>) {
  // expected-error @+2 {{axis 1 is out of range for rank 1 (expected [0, 1))}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.gather %x[%i] axis = 1 : (tensor<3xf32>, tensor<i64>) -> tensor<f32>
  return
}

// -----

// Tests that gather_elements indices have the input's rank.
func.func @gather_elements_rank(%x: tensor<3x4xf32>, %i: tensor<3xi64>) {
  // expected-error @+2 {{indices of rank 1 must have the input's rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.gather_elements %x[%i] axis = 0 : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<3xf32>
  return
}

// -----

// Tests that expand refuses negative sizes.
func.func @expand_negative(%x: tensor<3xf32>) {
  %s = weft.constant dense<[-1, 3]> : tensor<2xi64>
  // expected-error @+2 {{shape entry -1 at index 0 is negative}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.expand %x, %s : (tensor<3xf32>, tensor<2xi64>) -> tensor<?x3xf32>
  return
}

// -----

// Tests that expand refuses shapes that do not broadcast.
func.func @expand_broadcast(%x: tensor<3xf32>) {
  %s = weft.constant dense<[2, 4]> : tensor<2xi64>
  // expected-error @+2 {{shapes 3, 2x4 cannot be broadcast (dimension 1 of the result)}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.expand %x, %s : (tensor<3xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  return
}

// -----

// Tests that pads have two entries per dimension.
func.func @pad_count(%x: tensor<3xf32>) {
  // expected-error @+2 {{pads has 1 entries, expected 2 (two per dimension)}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.pad constant %x pads = [1] : (tensor<3xf32>) -> tensor<4xf32>
  return
}

// -----

// Tests that negative pads cannot remove more than the dimension.
func.func @pad_negative(%x: tensor<3xf32>) {
  // expected-error @+2 {{pads -2 and -2 leave a negative size in dimension 0 of size 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.pad constant %x pads = [-2, -2] : (tensor<3xf32>) -> tensor<?xf32>
  return
}

// -----

// Tests that a pad value needs constant mode.
func.func @pad_value_mode(%x: tensor<3xf32>, %v: tensor<f32>) {
  // expected-error @+2 {{a pad value needs constant mode}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.pad edge %x, %v pads = [1, 1] : (tensor<3xf32>, tensor<f32>) -> tensor<5xf32>
  return
}

// -----

// Tests that the pad value has the input's element type.
func.func @pad_value_type(%x: tensor<3xf32>, %v: tensor<f16>) {
  // expected-error @+2 {{pad value type 'tensor<f16>' does not match the input element type 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.pad constant %x, %v pads = [1, 1] : (tensor<3xf32>, tensor<f16>) -> tensor<5xf32>
  return
}

// -----

// Tests that the pad value has one element.
func.func @pad_value_count(%x: tensor<3xf32>, %v: tensor<2xf32>) {
  // expected-error @+2 {{pad value must have one element, got 'tensor<2xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.pad constant %x, %v pads = [1, 1] : (tensor<3xf32>, tensor<2xf32>) -> tensor<5xf32>
  return
}

// -----

// Tests that reflect pads stay below the dimension size.
func.func @pad_reflect(%x: tensor<3xf32>) {
  // expected-error @+2 {{reflect pads 3 and 0 of dimension 0 of size 3 exceed 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.pad reflect %x pads = [3, 0] : (tensor<3xf32>) -> tensor<6xf32>
  return
}

// -----

// Tests that edge padding needs elements to copy.
func.func @pad_edge_empty(%x: tensor<0xf32>) {
  // expected-error @+2 {{edge padding of the empty dimension 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.pad edge %x pads = [1, 0] : (tensor<0xf32>) -> tensor<1xf32>
  return
}

// -----

// Tests that tile has one repeat per dimension.
func.func @tile_count(%x: tensor<3xf32>, %r: tensor<2xi64>) {
  // expected-error @+2 {{repeats has 2 entries for an input of rank 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %t = weft.tile %x, %r : (tensor<3xf32>, tensor<2xi64>) -> tensor<?xf32>
  return
}

// -----

// Tests that tile refuses negative repeats.
func.func @tile_negative(%x: tensor<3xf32>) {
  %r = weft.constant dense<-1> : tensor<1xi64>
  // expected-error @+2 {{repeat -1 is negative}}
  // expected-error @+1 {{failed to infer returned types}}
  %t = weft.tile %x, %r : (tensor<3xf32>, tensor<1xi64>) -> tensor<?xf32>
  return
}

// -----

// Tests that trilu needs matrices.
func.func @trilu_rank(%x: tensor<3xf32>, %k: tensor<i64>) {
  // expected-error @+2 {{trilu needs rank >= 2, got 'tensor<3xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %t = weft.trilu %x, %k : (tensor<3xf32>, tensor<i64>) -> tensor<3xf32>
  return
}

// -----

// Tests that the trilu offset is 0-D.
func.func @trilu_k(%x: tensor<3x3xf32>, %k: tensor<1xi64>) {
  // expected-error @+2 {{k must be 0-D, got 'tensor<1xi64>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %t = weft.trilu %x, %k : (tensor<3x3xf32>, tensor<1xi64>) -> tensor<3x3xf32>
  return
}

// -----

// Tests that shape bounds are in range.
func.func @shape_bounds(%x: tensor<3x4xf32>) {
  // expected-error @+2 {{start 3 and end 2 must be in [0, 2]}}
  // expected-error @+1 {{failed to infer returned types}}
  %s = weft.shape %x {start = 3 : i64} : tensor<3x4xf32> -> tensor<0xi64>
  return
}

// -----

// Tests that constant_of_shape refuses negative sizes.
func.func @constant_of_shape_negative() {
  %s = weft.constant dense<[2, -3]> : tensor<2xi64>
  // expected-error @+2 {{shape entry -3 at index 1 is negative}}
  // expected-error @+1 {{failed to infer returned types}}
  %c = weft.constant_of_shape %s value = 0.0 : f32 : (tensor<2xi64>) -> tensor<2x?xf32>
  return
}

// -----

// Tests that constant_of_shape refuses unsupported element types.
func.func @constant_of_shape_type(%s: tensor<2xi64>) {
  // expected-error @+2 {{value type 'i16' is not a supported element type}}
  // expected-error @+1 {{failed to infer returned types}}
  %c = weft.constant_of_shape %s value = 0 : i16 : (tensor<2xi64>) -> tensor<?x?xf32>
  return
}

// -----

// Tests that range refuses a zero delta.
func.func @range_zero_delta() {
  %a = weft.constant dense<0> : tensor<i64>
  // expected-error @+2 {{range delta must not be 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.range %a, %a, %a : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  return
}

// -----

// Tests that range scalars share one type.
func.func @range_types(%a: tensor<i64>, %b: tensor<i32>) {
  // expected-error @+2 {{limit must be a 0-D tensor of 'i64', got 'tensor<i32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.range %a, %b, %a : (tensor<i64>, tensor<i32>, tensor<i64>) -> tensor<?xi64>
  return
}
