// RUN: weft-opt %s --canonicalize --split-input-file | FileCheck %s

// Splitting a packed projection (Q, K and V in one matmul, sliced apart)
// into one matmul per piece, whose weights are blocks of the packed one.

// Tests the bert/GPT form: matmul, bias add, three slices of the last axis.
// Each piece gets its weight block, its bias block (added in the original
// operand order) and its own matmul; no slice or packed matmul is left.
// CHECK-LABEL: func.func @packed_qkv_slices
// CHECK-DAG: %[[WQ:.*]] = weft.weight "qkv.w" {{.*}} block [0, 0] of [8, 24] : tensor<8x8xf32>
// CHECK-DAG: %[[WK:.*]] = weft.weight "qkv.w" {{.*}} block [0, 8] of [8, 24] : tensor<8x8xf32>
// CHECK-DAG: %[[WV:.*]] = weft.weight "qkv.w" {{.*}} block [0, 16] of [8, 24] : tensor<8x8xf32>
// CHECK-DAG: %[[BQ:.*]] = weft.weight "qkv.b" {{.*}} block [0] of [24] : tensor<8xf32>
// CHECK-DAG: %[[BV:.*]] = weft.weight "qkv.b" {{.*}} block [16] of [24] : tensor<8xf32>
// CHECK-DAG: %[[Q:.*]] = weft.matmul %arg0, %[[WQ]] : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
// CHECK-DAG: %[[V:.*]] = weft.matmul %arg0, %[[WV]] :
// CHECK-DAG: %[[QB:.*]] = weft.binary add %[[BQ]], %[[Q]] : (tensor<8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK-DAG: %[[VB:.*]] = weft.binary add %[[BV]], %[[V]]
// CHECK-NOT: weft.slice
// CHECK-NOT: tensor<8x24xf32>
// CHECK: return %[[QB]], %{{.*}}, %[[VB]]
func.func @packed_qkv_slices(%x: tensor<2x4x8xf32>)
    -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %w = weft.weight "qkv.w" from "m.onnx" offset 0 size 768 checksum "0123456789abcdef" : tensor<8x24xf32>
  %b = weft.weight "qkv.b" from "m.onnx" offset 768 size 96 checksum "0123456789abcdef" : tensor<24xf32>
  %c0 = weft.constant dense<0> : tensor<1xi64>
  %c8 = weft.constant dense<8> : tensor<1xi64>
  %c16 = weft.constant dense<16> : tensor<1xi64>
  %end = weft.constant dense<9223372036854775807> : tensor<1xi64>
  %c1 = weft.constant dense<1> : tensor<1xi64>
  %mm = weft.matmul %x, %w : (tensor<2x4x8xf32>, tensor<8x24xf32>) -> tensor<2x4x24xf32>
  %p = weft.binary add %b, %mm : (tensor<24xf32>, tensor<2x4x24xf32>) -> tensor<2x4x24xf32>
  %q = weft.slice %p[%c0, %c8, %c1] axes = [2] : (tensor<2x4x24xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x4x8xf32>
  %k = weft.slice %p[%c8, %c16, %c1] axes = [2] : (tensor<2x4x24xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x4x8xf32>
  %v = weft.slice %p[%c16, %end, %c1] axes = [2] : (tensor<2x4x24xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x4x8xf32>
  return %q, %k, %v : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// -----

// Tests a split instead of slices, a transposed weight (pieces are rows of
// it) and a per-column bias inside the matmul (Gemm's C).
// CHECK-LABEL: func.func @packed_split_transposed
// CHECK-DAG: %[[W0:.*]] = weft.weight "w" {{.*}} block [0, 0] of [6, 4] : tensor<2x4xf32>
// CHECK-DAG: %[[W1:.*]] = weft.weight "w" {{.*}} block [2, 0] of [6, 4] : tensor<4x4xf32>
// CHECK-DAG: %[[C0:.*]] = weft.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-DAG: %[[C1:.*]] = weft.constant dense<[3.000000e+00, 4.000000e+00, 5.000000e+00, 6.000000e+00]> : tensor<4xf32>
// CHECK-DAG: weft.matmul %arg0, %[[W0]], %[[C0]] {transpose_b} : (tensor<3x4xf32>, tensor<2x4xf32>, tensor<2xf32>) -> tensor<3x2xf32>
// CHECK-DAG: weft.matmul %arg0, %[[W1]], %[[C1]] {transpose_b} : (tensor<3x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
// CHECK-NOT: weft.split
func.func @packed_split_transposed(%x: tensor<3x4xf32>) -> (tensor<3x2xf32>, tensor<3x4xf32>) {
  %w = weft.weight "w" from "m.onnx" offset 0 size 96 checksum "0123456789abcdef" : tensor<6x4xf32>
  %c = weft.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]> : tensor<6xf32>
  %mm = weft.matmul %x, %w, %c {transpose_b} : (tensor<3x4xf32>, tensor<6x4xf32>, tensor<6xf32>) -> tensor<3x6xf32>
  %a, %b = weft.split %mm axis = 1 {sizes = array<i64: 2, 4>} : tensor<3x6xf32> -> tensor<3x2xf32>, tensor<3x4xf32>
  return %a, %b : tensor<3x2xf32>, tensor<3x4xf32>
}

// -----

// Tests what stays packed: a use of the whole product, a strided slice, a
// weight computed at run time (its pieces would be copies), and a slice of
// another axis.
// CHECK-LABEL: func.func @stays_packed
// CHECK-COUNT-4: weft.matmul %{{.*}} -> tensor<4x6xf32>
func.func @stays_packed(%x: tensor<4x4xf32>, %dyn: tensor<4x6xf32>)
    -> (tensor<4x6xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<2x6xf32>) {
  %w = weft.weight "w" from "m.onnx" offset 0 size 96 checksum "0123456789abcdef" : tensor<4x6xf32>
  %c0 = weft.constant dense<0> : tensor<1xi64>
  %c2 = weft.constant dense<2> : tensor<1xi64>
  %c3 = weft.constant dense<3> : tensor<1xi64>
  %c6 = weft.constant dense<6> : tensor<1xi64>
  %c1 = weft.constant dense<1> : tensor<1xi64>
  %whole = weft.matmul %x, %w : (tensor<4x4xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %s0 = weft.slice %whole[%c0, %c3, %c1] axes = [1] : (tensor<4x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x3xf32>
  %strided = weft.matmul %x, %w : (tensor<4x4xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %s1 = weft.slice %strided[%c0, %c6, %c2] axes = [1] : (tensor<4x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x3xf32>
  %runtime = weft.matmul %x, %dyn : (tensor<4x4xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %s2 = weft.slice %runtime[%c0, %c3, %c1] axes = [1] : (tensor<4x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x3xf32>
  %rows = weft.matmul %x, %w : (tensor<4x4xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %s3 = weft.slice %rows[%c0, %c2, %c1] axes = [0] : (tensor<4x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x6xf32>
  return %whole, %s0, %s1, %s2, %s3 : tensor<4x6xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<2x6xf32>
}

// -----

// Tests that a slice of a weight block is a block of the stored tensor.
// CHECK-LABEL: func.func @slice_of_block
// CHECK: %[[B:.*]] = weft.weight "w" {{.*}} block [3, 2] of [8, 8] : tensor<2x4xf32>
// CHECK-NEXT: return %[[B]]
func.func @slice_of_block() -> tensor<2x4xf32> {
  %w = weft.weight "w" from "m.onnx" offset 0 size 256 checksum "0123456789abcdef" block [2, 2] of [8, 8] : tensor<4x4xf32>
  %s = weft.constant dense<1> : tensor<1xi64>
  %e = weft.constant dense<3> : tensor<1xi64>
  %st = weft.constant dense<1> : tensor<1xi64>
  %r = weft.slice %w[%s, %e, %st] axes = [0] : (tensor<4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}

// -----

// Tests that a transpose of the last two dimensions folds into the matmul's
// transpose flag (toggling it, on either side, and twice for a transpose of
// a transpose) and the transposed copies go: a tied LM head (GPT-2:
// logits = h @ wte^T) reads the table itself. A transpose of other
// dimensions stays.
// CHECK-LABEL: func.func @transpose_into_matmul
// CHECK-SAME: (%[[H:.*]]: tensor<2x3x16xf32>, %[[K:.*]]: tensor<2x5x16xf32>, %[[Q:.*]]: tensor<2x16x3xf32>)
// CHECK: %[[WTE:.*]] = weft.weight "wte"
// CHECK-NEXT: %[[L:.*]] = weft.matmul %[[H]], %[[WTE]] {transpose_b} : (tensor<2x3x16xf32>, tensor<64x16xf32>) -> tensor<2x3x64xf32>
// CHECK-NEXT: %[[S:.*]] = weft.matmul %[[Q]], %[[K]] {transpose_a, transpose_b} : (tensor<2x16x3xf32>, tensor<2x5x16xf32>) -> tensor<2x3x5xf32>
// CHECK-NEXT: %[[O:.*]] = weft.transpose %[[K]] perm = [2, 1, 0]
// CHECK-NEXT: %[[T:.*]] = weft.matmul %[[H]], %[[WTE]] {transpose_b} : (tensor<2x3x16xf32>, tensor<64x16xf32>) -> tensor<2x3x64xf32>
// CHECK-NEXT: return %[[L]], %[[S]], %[[O]], %[[T]]
func.func @transpose_into_matmul(%h: tensor<2x3x16xf32>, %k: tensor<2x5x16xf32>, %q: tensor<2x16x3xf32>) -> (tensor<2x3x64xf32>, tensor<2x3x5xf32>, tensor<16x5x2xf32>, tensor<2x3x64xf32>) {
  %wte = weft.weight "wte" from "m.onnx" offset 0 size 4096 checksum "0123456789abcdef" : tensor<64x16xf32>
  %t = weft.transpose %wte perm = [1, 0] : tensor<64x16xf32> -> tensor<16x64xf32>
  %logits = weft.matmul %h, %t : (tensor<2x3x16xf32>, tensor<16x64xf32>) -> tensor<2x3x64xf32>
  %kt = weft.transpose %k perm = [0, 2, 1] : tensor<2x5x16xf32> -> tensor<2x16x5xf32>
  %qt = weft.transpose %q perm = [0, 2, 1] : tensor<2x16x3xf32> -> tensor<2x3x16xf32>
  %scores = weft.matmul %qt, %kt : (tensor<2x3x16xf32>, tensor<2x16x5xf32>) -> tensor<2x3x5xf32>
  %other = weft.transpose %k perm = [2, 1, 0] : tensor<2x5x16xf32> -> tensor<16x5x2xf32>
  %tt = weft.transpose %t perm = [1, 0] : tensor<16x64xf32> -> tensor<64x16xf32>
  %twice = weft.matmul %h, %tt {transpose_b} : (tensor<2x3x16xf32>, tensor<64x16xf32>) -> tensor<2x3x64xf32>
  return %logits, %scores, %other, %twice : tensor<2x3x64xf32>, tensor<2x3x5xf32>, tensor<16x5x2xf32>, tensor<2x3x64xf32>
}
