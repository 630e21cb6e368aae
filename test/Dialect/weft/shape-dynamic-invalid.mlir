// RUN: weft-opt %s -split-input-file -verify-diagnostics

// Tests that squeeze does not take axes from both the attribute and the
// operand.
func.func @squeeze_both_axes(%x: tensor<1x3xf32>, %a: tensor<1xi64>) {
  // expected-error @+2 {{axes must be empty when dynamic_axes is given}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = "weft.squeeze"(%x, %a) <{axes = array<i64: 0>}> : (tensor<1x3xf32>, tensor<1xi64>) -> tensor<3xf32>
  return
}

// -----

// Tests that run-time squeeze axes have a static length.
func.func @squeeze_dynamic_axes_length(%x: tensor<1x3xf32>, %a: tensor<?xi64>) {
  // expected-error @+2 {{dynamic_axes must be 1-D with a static length, got 'tensor<?xi64>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.squeeze %x axes = %a : tensor<1x3xf32>, tensor<?xi64> -> tensor<?xf32>
  return
}

// -----

// Tests that squeeze needs as many dimensions that can be 1 as axes.
func.func @squeeze_dynamic_axes_not_ones(%x: tensor<1x3xf32>, %a: tensor<2xi64>) {
  // expected-error @+2 {{cannot squeeze 2 dimensions of 'tensor<1x3xf32>': only 1 can be 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.squeeze %x axes = %a : tensor<1x3xf32>, tensor<2xi64> -> tensor<f32>
  return
}

// -----

// Tests that constant run-time squeeze axes name dimensions of size 1.
func.func @squeeze_constant_dynamic_axes(%x: tensor<1x3x1xf32>) {
  %a = weft.constant dense<[-2]> : tensor<1xi64>
  // expected-error @+2 {{cannot squeeze dimension 1 of size 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.squeeze %x axes = %a : tensor<1x3x1xf32>, tensor<1xi64> -> tensor<?x?xf32>
  return
}

// -----

// Tests that constant run-time unsqueeze axes are checked against the
// result rank.
func.func @unsqueeze_constant_dynamic_axes(%x: tensor<3xf32>) {
  %a = weft.constant dense<[2]> : tensor<1xi64>
  // expected-error @+2 {{dynamic_axes value 2 is out of range for rank 2 (expected [-2, 2))}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.unsqueeze %x axes = %a : tensor<3xf32>, tensor<1xi64> -> tensor<?x?xf32>
  return
}

// -----

// Tests that an unsqueeze result conflicting with the known sizes is
// refused.
func.func @unsqueeze_dynamic_axes_result(%x: tensor<1x1xf32>, %a: tensor<1xi64>) {
  // expected-error @+2 {{inferred type(s) 'tensor<1x1x1xf32>' are incompatible with return type(s) of operation 'tensor<1x2x1xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.unsqueeze %x axes = %a : tensor<1x1xf32>, tensor<1xi64> -> tensor<1x2x1xf32>
  return
}

// -----

// Tests that run-time slice axes give one axis per bound.
func.func @slice_dynamic_axes_count(%x: tensor<4x10xf32>, %s: tensor<1xi64>, %a: tensor<2xi64>) {
  // expected-error @+2 {{starts must be 1-D with 2 entries (one per axis), got 'tensor<1xi64>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.slice %x[%s, %s, %s] axes = %a : (tensor<4x10xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<2xi64>) -> tensor<?x?xf32>
  return
}

// -----

// Tests that there are no more run-time slice axes than dimensions.
func.func @slice_dynamic_axes_too_many(%x: tensor<4xf32>, %s: tensor<2xi64>) {
  // expected-error @+2 {{dynamic_axes has 2 entries, expected 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.slice %x[%s, %s, %s] axes = %s : (tensor<4xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<?xf32>
  return
}

// -----

// Tests that constant run-time slice axes are checked.
func.func @slice_constant_dynamic_axes(%x: tensor<4x10xf32>, %s: tensor<2xi64>) {
  %a = weft.constant dense<[0, -2]> : tensor<2xi64>
  // expected-error @+2 {{dynamic_axes contain axis 0 twice}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.slice %x[%s, %s, %s] axes = %a : (tensor<4x10xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<?x?xf32>
  return
}

// -----

// Tests that split takes only one of the sizes forms.
func.func @split_sizes_twice(%x: tensor<6xf32>, %s: tensor<2xi64>) {
  // expected-error @+2 {{split needs exactly one of sizes, num_outputs and dynamic_sizes}}
  // expected-error @+1 {{failed to infer returned types}}
  %r:2 = weft.split %x axis = 0 sizes %s {num_outputs = 2 : i64} : tensor<6xf32>, tensor<2xi64> -> tensor<?xf32>, tensor<?xf32>
  return
}

// -----

// Tests that run-time split sizes give one size per result.
func.func @split_dynamic_sizes_count(%x: tensor<6xf32>, %s: tensor<3xi64>) {
  // expected-error @+2 {{inferred type(s) 'tensor<?xf32>', 'tensor<?xf32>', 'tensor<?xf32>' are incompatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %r:2 = weft.split %x axis = 0 sizes %s : tensor<6xf32>, tensor<3xi64> -> tensor<?xf32>, tensor<?xf32>
  return
}

// -----

// Tests that constant run-time split sizes add up to the dimension.
func.func @split_constant_dynamic_sizes(%x: tensor<6xf32>) {
  %s = weft.constant dense<[2, 3]> : tensor<2xi64>
  // expected-error @+2 {{split sizes add up to 5, not to the dimension size 6}}
  // expected-error @+1 {{failed to infer returned types}}
  %r:2 = weft.split %x axis = 0 sizes %s : tensor<6xf32>, tensor<2xi64> -> tensor<?xf32>, tensor<?xf32>
  return
}

// -----

// Tests that run-time pads give two entries per dimension.
func.func @pad_dynamic_pads_count(%x: tensor<2x3xf32>, %p: tensor<2xi64>) {
  // expected-error @+2 {{dynamic_pads has 2 entries, expected 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.pad edge %x pads = %p : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return
}

// -----

// Tests that pad does not take pads from both the attribute and the
// operand.
func.func @pad_both_pads(%x: tensor<2xf32>, %p: tensor<2xi64>) {
  // expected-error @+2 {{pads must be empty when dynamic_pads is given}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = "weft.pad"(%x, %p) <{mode = 0 : i32, pads = array<i64: 1, 1>, operandSegmentSizes = array<i32: 1, 0, 1>}> : (tensor<2xf32>, tensor<2xi64>) -> tensor<?xf32>
  return
}

// -----

// Tests that constant run-time pads are checked like the attribute.
func.func @pad_constant_dynamic_pads(%x: tensor<3xf32>) {
  %p = weft.constant dense<[3, 0]> : tensor<2xi64>
  // expected-error @+2 {{reflect pads 3 and 0 of dimension 0 of size 3 exceed 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.pad reflect %x pads = %p : (tensor<3xf32>, tensor<2xi64>) -> tensor<?xf32>
  return
}

// -----

// Tests that the pad value still needs constant mode with run-time pads.
func.func @pad_dynamic_pads_value(%x: tensor<3xf32>, %v: tensor<f32>, %p: tensor<2xi64>) {
  // expected-error @+2 {{a pad value needs constant mode}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = weft.pad edge %x, %v pads = %p : (tensor<3xf32>, tensor<f32>, tensor<2xi64>) -> tensor<?xf32>
  return
}
