// RUN: weft-opt %s -split-input-file -verify-diagnostics

// Tests that operands of different element types are rejected.
func.func @matmul_element_types(%a: tensor<2x3xf32>, %b: tensor<3x4xf16>) {
  // expected-error @+2 {{rhs element type 'f16' differs from 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xf16>) -> tensor<2x4xf32>
  return
}

// -----

// Tests that scalars are rejected.
func.func @matmul_scalar(%a: tensor<f32>, %b: tensor<3x4xf32>) {
  // expected-error @+2 {{operands must have rank >= 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.matmul %a, %b : (tensor<f32>, tensor<3x4xf32>) -> tensor<4xf32>
  return
}

// -----

// Tests that a transposed operand must be a matrix.
func.func @matmul_transpose_vector(%a: tensor<3xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+2 {{transpose_a needs lhs of rank >= 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.matmul %a, %b {transpose_a} : (tensor<3xf32>, tensor<3x4xf32>) -> tensor<4xf32>
  return
}

// -----

// Tests that contracted dimensions must agree (after transposition).
func.func @matmul_contraction(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+2 {{contracted dimensions differ: lhs 'tensor<2x3xf32>' has 2, rhs 'tensor<3x4xf32>' has 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.matmul %a, %b {transpose_a} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  return
}

// -----

// Tests that batch dimensions must broadcast.
func.func @matmul_batch(%a: tensor<2x4x3xf32>, %b: tensor<5x3x4xf32>) {
  // expected-error @+2 {{cannot be broadcast}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.matmul %a, %b : (tensor<2x4x3xf32>, tensor<5x3x4xf32>) -> tensor<5x4x4xf32>
  return
}

// -----

// Tests that the bias must broadcast unidirectionally to the product.
func.func @matmul_bias(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %c: tensor<3xf32>) {
  // expected-error @+2 {{bias 'tensor<3xf32>' does not broadcast to the product's shape 2x4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.matmul %a, %b, %c : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x4xf32>
  return
}

// -----

// Tests that a bias of higher rank than the product is rejected.
func.func @matmul_bias_rank(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %c: tensor<1x2x4xf32>) {
  // expected-error @+2 {{bias 'tensor<1x2x4xf32>' does not broadcast}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.matmul %a, %b, %c : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<1x2x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

// Tests that integer products need whole scales.
func.func @matmul_int_alpha(%a: tensor<2x3xi32>, %b: tensor<3x4xi32>) {
  // expected-error @+1 {{alpha must be a whole number for integer operands, got 5.000000e-01}}
  %0 = weft.matmul %a, %b {alpha = 0.5 : f64} : (tensor<2x3xi32>, tensor<3x4xi32>) -> tensor<2x4xi32>
  return
}

// -----

// Tests that a result type conflicting with inference is rejected.
func.func @matmul_result(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<2x4xf32>' are incompatible with return type(s) of operation 'tensor<2x5xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x5xf32>
  return
}

// -----

// Tests that the equation needs one term per input.
func.func @einsum_terms(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{einsum equation 'ij,jk->ik' has 2 input terms but the op has 1 inputs}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.einsum "ij,jk->ik" %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

// Tests that labels must be letters.
func.func @einsum_character(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{einsum term 0 'i1' has invalid character '1'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.einsum "i1->i" %a : (tensor<2x3xf32>) -> tensor<2xf32>
  return
}

// -----

// Tests that a lone '.' is rejected.
func.func @einsum_dot(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{einsum term 0 '..ij' has a '.' that is not part of '...'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.einsum "..ij->ij" %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

// Tests that a term has at most one ellipsis.
func.func @einsum_two_ellipses(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{einsum term 0 '...i...' has more than one '...'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.einsum "...i..." %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

// Tests that a term names exactly its input's dimensions.
func.func @einsum_rank(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{einsum term 0 'ijk' names 3 dimensions but input 0 has rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.einsum "ijk->i" %a : (tensor<2x3xf32>) -> tensor<2xf32>
  return
}

// -----

// Tests that a term with an ellipsis cannot name more dimensions than the
// rank.
func.func @einsum_rank_ellipsis(%a: tensor<2xf32>) {
  // expected-error @+2 {{einsum term 0 '...ij' names 2 or more dimensions but input 0 has rank 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.einsum "...ij->i" %a : (tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

// Tests that output labels are distinct.
func.func @einsum_output_twice(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{einsum output 'ii' names label 'i' twice}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.einsum "ij->ii" %a : (tensor<2x3xf32>) -> tensor<2x2xf32>
  return
}

// -----

// Tests that output labels come from the inputs.
func.func @einsum_output_unknown(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{einsum output label 'k' does not occur in any input}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.einsum "ij->k" %a : (tensor<2x3xf32>) -> tensor<2xf32>
  return
}

// -----

// Tests that dimensions under '...' must appear in the output.
func.func @einsum_lost_ellipsis(%a: tensor<5x2x3xf32>) {
  // expected-error @+2 {{einsum equation '...ij->ij' has '...' covering 1 dimensions in an input but none in the output}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.einsum "...ij->ij" %a : (tensor<5x2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

// Tests that the equation has at most one arrow.
func.func @einsum_arrows(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{einsum equation 'ij->ij->ij' has more than one '->'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.einsum "ij->ij->ij" %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

// Tests that a diagonal needs equal sizes.
func.func @einsum_diagonal(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{einsum label 'i' names dimensions of sizes 2 and 3 in input 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.einsum "ii->i" %a : (tensor<2x3xf32>) -> tensor<2xf32>
  return
}

// -----

// Tests that a label's sizes agree across inputs (or are 1).
func.func @einsum_label_size(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{einsum label 'j' has size 3 in one input and 4 in input 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.einsum "ij,jk->ik" %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return
}

// -----

// Tests that the dimensions under '...' must broadcast.
func.func @einsum_ellipsis_broadcast(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) {
  // expected-error @+2 {{cannot be broadcast}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.einsum "...i,...i->..." %a, %b : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2xf32>
  return
}

// -----

// Tests that inputs share an element type.
func.func @einsum_element_types(%a: tensor<2x3xf32>, %b: tensor<3xf64>) {
  // expected-error @+2 {{input 1 element type 'f64' differs from 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.einsum "ij,j->i" %a, %b : (tensor<2x3xf32>, tensor<3xf64>) -> tensor<2xf32>
  return
}

// -----

// Tests that einsum needs an input.
func.func @einsum_no_input() {
  // expected-error @+2 {{einsum needs at least one input}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.einsum "->" : () -> tensor<f32>
  return
}
