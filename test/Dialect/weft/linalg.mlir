// RUN: weft-opt %s | weft-opt | FileCheck %s

// Tests that a plain matrix product round-trips.
// CHECK-LABEL: func.func @matmul_2d
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8x16xf32>)
// CHECK: weft.matmul %[[A]], %[[B]] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
func.func @matmul_2d(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %r = weft.matmul %a, %b : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}

// Tests that 1-D operands drop their promoted dimension and that batch
// dimensions broadcast, with dynamic sizes kept.
// CHECK-LABEL: func.func @matmul_numpy
// CHECK: weft.matmul %{{.*}}, %{{.*}} : (tensor<8xf32>, tensor<3x8x16xf32>) -> tensor<3x16xf32>
// CHECK: weft.matmul %{{.*}}, %{{.*}} : (tensor<3x4x8xf32>, tensor<8xf32>) -> tensor<3x4xf32>
// CHECK: weft.matmul %{{.*}}, %{{.*}} : (tensor<8xf32>, tensor<8xf32>) -> tensor<f32>
// CHECK: weft.matmul %{{.*}}, %{{.*}} : (tensor<?x1x4x8xf32>, tensor<5x8x?xf32>) -> tensor<?x5x4x?xf32>
func.func @matmul_numpy(%v: tensor<8xf32>, %m: tensor<3x8x16xf32>, %n: tensor<3x4x8xf32>,
                        %d: tensor<?x1x4x8xf32>, %e: tensor<5x8x?xf32>) {
  %0 = weft.matmul %v, %m : (tensor<8xf32>, tensor<3x8x16xf32>) -> tensor<3x16xf32>
  %1 = weft.matmul %n, %v : (tensor<3x4x8xf32>, tensor<8xf32>) -> tensor<3x4xf32>
  %2 = weft.matmul %v, %v : (tensor<8xf32>, tensor<8xf32>) -> tensor<f32>
  %3 = weft.matmul %d, %e : (tensor<?x1x4x8xf32>, tensor<5x8x?xf32>) -> tensor<?x5x4x?xf32>
  return
}

// Tests that Gemm's flags, scales and bias round-trip, with default scales
// elided.
// CHECK-LABEL: func.func @matmul_gemm
// CHECK-SAME: (%[[A:.*]]: tensor<8x4xf32>, %[[B:.*]]: tensor<16x8xf32>, %[[C:.*]]: tensor<1x16xf32>)
// CHECK: weft.matmul %[[A]], %[[B]], %[[C]] {alpha = 2.500000e-01 : f64, beta = 3.000000e+00 : f64, transpose_a, transpose_b}
// CHECK-SAME: -> tensor<4x16xf32>
// CHECK: weft.matmul %[[A]], %[[B]] {transpose_a, transpose_b} :
func.func @matmul_gemm(%a: tensor<8x4xf32>, %b: tensor<16x8xf32>, %c: tensor<1x16xf32>) {
  %0 = weft.matmul %a, %b, %c {transpose_a, transpose_b, alpha = 0.25 : f64, beta = 3.0 : f64}
         : (tensor<8x4xf32>, tensor<16x8xf32>, tensor<1x16xf32>) -> tensor<4x16xf32>
  %1 = weft.matmul %a, %b {transpose_a, transpose_b, alpha = 1.0 : f64}
         : (tensor<8x4xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return
}

// Tests that integer products with whole scales are accepted and that a
// result type may be less static than the inferred one.
// CHECK-LABEL: func.func @matmul_int
// CHECK: weft.matmul %{{.*}}, %{{.*}}, %{{.*}} {alpha = 2.000000e+00 : f64} : (tensor<2x3xi32>, tensor<3x5xi32>, tensor<i32>) -> tensor<2x?xi32>
func.func @matmul_int(%a: tensor<2x3xi32>, %b: tensor<3x5xi32>, %c: tensor<i32>) -> tensor<2x?xi32> {
  %0 = weft.matmul %a, %b, %c {alpha = 2.0 : f64} : (tensor<2x3xi32>, tensor<3x5xi32>, tensor<i32>) -> tensor<2x?xi32>
  return %0 : tensor<2x?xi32>
}

// Tests einsum forms: batched product, implicit output, diagonal with
// ellipsis, full reduction, size-1 broadcasting of a label and of "...".
// CHECK-LABEL: func.func @einsum
// CHECK: weft.einsum "bij,bjk->bik" %{{.*}}, %{{.*}} : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
// CHECK: weft.einsum "ij,jk" %{{.*}}, %{{.*}} : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
// CHECK: weft.einsum "...ii->...i" %{{.*}} : (tensor<?x2x3x3xf32>) -> tensor<?x2x3xf32>
// CHECK: weft.einsum "ij->" %{{.*}} : (tensor<3x4xf32>) -> tensor<f32>
// CHECK: weft.einsum "i,i->i" %{{.*}}, %{{.*}} : (tensor<1xf32>, tensor<7xf32>) -> tensor<7xf32>
// CHECK: weft.einsum "...i,...i->..." %{{.*}}, %{{.*}} : (tensor<2x1x4xf32>, tensor<5x4xf32>) -> tensor<2x5xf32>
// CHECK: weft.einsum "Ba,aB" %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<f32>
func.func @einsum(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>, %c: tensor<3x4xf32>,
                  %d: tensor<4x5xf32>, %e: tensor<?x2x3x3xf32>, %f: tensor<1xf32>,
                  %g: tensor<7xf32>, %h: tensor<2x1x4xf32>, %i: tensor<5x4xf32>,
                  %j: tensor<2x3xf32>, %k: tensor<3x2xf32>) {
  %0 = weft.einsum "bij,bjk->bik" %a, %b : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %1 = weft.einsum "ij,jk" %c, %d : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  %2 = weft.einsum "...ii->...i" %e : (tensor<?x2x3x3xf32>) -> tensor<?x2x3xf32>
  %3 = weft.einsum "ij->" %c : (tensor<3x4xf32>) -> tensor<f32>
  %4 = weft.einsum "i,i->i" %f, %g : (tensor<1xf32>, tensor<7xf32>) -> tensor<7xf32>
  %5 = weft.einsum "...i,...i->..." %h, %i : (tensor<2x1x4xf32>, tensor<5x4xf32>) -> tensor<2x5xf32>
  %6 = weft.einsum "Ba,aB" %j, %k : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<f32>
  return
}

// Tests that implicit output with upper- and lower-case labels sorts in
// ASCII order (upper case first) and puts "..." first.
// CHECK-LABEL: func.func @einsum_implicit_order
// CHECK: weft.einsum "b...A" %{{.*}} : (tensor<2x7x3xf32>) -> tensor<7x3x2xf32>
func.func @einsum_implicit_order(%a: tensor<2x7x3xf32>) -> tensor<7x3x2xf32> {
  %0 = weft.einsum "b...A" %a : (tensor<2x7x3xf32>) -> tensor<7x3x2xf32>
  return %0 : tensor<7x3x2xf32>
}
