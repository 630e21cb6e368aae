// RUN: weft-opt %s --weft-fuse-layer-norm --canonicalize --split-input-file | FileCheck %s

// LayerNorm as torch exports a hand-written one: Pow 2, eps on the right,
// gamma and beta of the normalized shape.
// CHECK-LABEL: func.func @written_out
// CHECK-SAME: (%[[X:.*]]: tensor<2x8x16xf32>, %[[G:.*]]: tensor<16xf32>, %[[B:.*]]: tensor<16xf32>)
// CHECK: %[[Y:.*]], %{{.*}}, %{{.*}} = weft.normalize layer %[[X]], %[[G]], %[[B]] axis 2 epsilon 9.9999997473787516E-6
// CHECK-NOT: weft.reduce
// CHECK-NOT: weft.binary
// CHECK: return %[[Y]]
func.func @written_out(%x: tensor<2x8x16xf32>, %gamma: tensor<16xf32>,
                       %beta: tensor<16xf32>) -> tensor<2x8x16xf32> {
  %two = weft.constant dense<2.0> : tensor<f32>
  %eps = weft.constant dense<1.0e-5> : tensor<f32>
  %mean = weft.reduce mean %x axes [2] keepdims : tensor<2x8x16xf32> -> tensor<2x8x1xf32>
  %d = weft.binary sub %x, %mean : (tensor<2x8x16xf32>, tensor<2x8x1xf32>) -> tensor<2x8x16xf32>
  %sq = weft.binary pow %d, %two : (tensor<2x8x16xf32>, tensor<f32>) -> tensor<2x8x16xf32>
  %var = weft.reduce mean %sq axes [2] keepdims : tensor<2x8x16xf32> -> tensor<2x8x1xf32>
  %ve = weft.binary add %var, %eps : (tensor<2x8x1xf32>, tensor<f32>) -> tensor<2x8x1xf32>
  %s = weft.unary sqrt %ve : tensor<2x8x1xf32> -> tensor<2x8x1xf32>
  %n = weft.binary div %d, %s : (tensor<2x8x16xf32>, tensor<2x8x1xf32>) -> tensor<2x8x16xf32>
  %g = weft.binary mul %n, %gamma : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  %y = weft.binary add %g, %beta : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// d * d, eps on the left, two trailing axes, no gamma or beta: gamma is ones.
// CHECK-LABEL: func.func @square_by_mul
// CHECK: %[[ONES:.*]] = weft.constant dense<1.000000e+00> : tensor<4x6xf32>
// CHECK: weft.normalize layer %arg0, %[[ONES]] axis 1 epsilon
// CHECK-NOT: weft.binary
func.func @square_by_mul(%x: tensor<3x4x6xf32>) -> tensor<3x4x6xf32> {
  %eps = weft.constant dense<1.0e-6> : tensor<1xf32>
  %mean = weft.reduce mean %x axes [1, 2] keepdims : tensor<3x4x6xf32> -> tensor<3x1x1xf32>
  %d = weft.binary sub %x, %mean : (tensor<3x4x6xf32>, tensor<3x1x1xf32>) -> tensor<3x4x6xf32>
  %sq = weft.binary mul %d, %d : (tensor<3x4x6xf32>, tensor<3x4x6xf32>) -> tensor<3x4x6xf32>
  %var = weft.reduce mean %sq axes [1, 2] keepdims : tensor<3x4x6xf32> -> tensor<3x1x1xf32>
  %ve = weft.binary add %eps, %var : (tensor<1xf32>, tensor<3x1x1xf32>) -> tensor<3x1x1xf32>
  %s = weft.unary sqrt %ve : tensor<3x1x1xf32> -> tensor<3x1x1xf32>
  %n = weft.binary div %d, %s : (tensor<3x4x6xf32>, tensor<3x1x1xf32>) -> tensor<3x4x6xf32>
  return %n : tensor<3x4x6xf32>
}

// -----

// A gamma that broadcasts (one value per row, not per element) stays a
// multiplication after the normalization.
// CHECK-LABEL: func.func @broadcast_gamma
// CHECK: %[[N:.*]], %{{.*}}, %{{.*}} = weft.normalize layer
// CHECK: weft.binary mul %[[N]], %arg1
func.func @broadcast_gamma(%x: tensor<8x16xf32>, %gamma: tensor<8x1xf32>)
    -> tensor<8x16xf32> {
  %two = weft.constant dense<2.0> : tensor<f32>
  %eps = weft.constant dense<1.0e-5> : tensor<f32>
  %mean = weft.reduce mean %x axes [1] keepdims : tensor<8x16xf32> -> tensor<8x1xf32>
  %d = weft.binary sub %x, %mean : (tensor<8x16xf32>, tensor<8x1xf32>) -> tensor<8x16xf32>
  %sq = weft.binary pow %d, %two : (tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xf32>
  %var = weft.reduce mean %sq axes [1] keepdims : tensor<8x16xf32> -> tensor<8x1xf32>
  %ve = weft.binary add %var, %eps : (tensor<8x1xf32>, tensor<f32>) -> tensor<8x1xf32>
  %s = weft.unary sqrt %ve : tensor<8x1xf32> -> tensor<8x1xf32>
  %n = weft.binary div %d, %s : (tensor<8x16xf32>, tensor<8x1xf32>) -> tensor<8x16xf32>
  %g = weft.binary mul %n, %gamma : (tensor<8x16xf32>, tensor<8x1xf32>) -> tensor<8x16xf32>
  return %g : tensor<8x16xf32>
}

// -----

// Not LayerNorm: the centered value has another user, the axes are not the
// trailing ones, the exponent is not 2.
// CHECK-LABEL: func.func @not_fused
// CHECK-NOT: weft.normalize
func.func @not_fused(%x: tensor<8x16xf32>, %y: tensor<8x16xf32>)
    -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) {
  %two = weft.constant dense<2.0> : tensor<f32>
  %three = weft.constant dense<3.0> : tensor<f32>
  %eps = weft.constant dense<1.0e-5> : tensor<f32>
  %mean = weft.reduce mean %x axes [1] keepdims : tensor<8x16xf32> -> tensor<8x1xf32>
  %d = weft.binary sub %x, %mean : (tensor<8x16xf32>, tensor<8x1xf32>) -> tensor<8x16xf32>
  %sq = weft.binary pow %d, %two : (tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xf32>
  %var = weft.reduce mean %sq axes [1] keepdims : tensor<8x16xf32> -> tensor<8x1xf32>
  %ve = weft.binary add %var, %eps : (tensor<8x1xf32>, tensor<f32>) -> tensor<8x1xf32>
  %s = weft.unary sqrt %ve : tensor<8x1xf32> -> tensor<8x1xf32>
  %n = weft.binary div %d, %s : (tensor<8x16xf32>, tensor<8x1xf32>) -> tensor<8x16xf32>

  %mean0 = weft.reduce mean %y axes [0] keepdims : tensor<8x16xf32> -> tensor<1x16xf32>
  %d0 = weft.binary sub %y, %mean0 : (tensor<8x16xf32>, tensor<1x16xf32>) -> tensor<8x16xf32>
  %sq0 = weft.binary pow %d0, %two : (tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xf32>
  %var0 = weft.reduce mean %sq0 axes [0] keepdims : tensor<8x16xf32> -> tensor<1x16xf32>
  %ve0 = weft.binary add %var0, %eps : (tensor<1x16xf32>, tensor<f32>) -> tensor<1x16xf32>
  %s0 = weft.unary sqrt %ve0 : tensor<1x16xf32> -> tensor<1x16xf32>
  %n0 = weft.binary div %d0, %s0 : (tensor<8x16xf32>, tensor<1x16xf32>) -> tensor<8x16xf32>

  %mean3 = weft.reduce mean %y axes [1] keepdims : tensor<8x16xf32> -> tensor<8x1xf32>
  %d3 = weft.binary sub %y, %mean3 : (tensor<8x16xf32>, tensor<8x1xf32>) -> tensor<8x16xf32>
  %cube = weft.binary pow %d3, %three : (tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xf32>
  %var3 = weft.reduce mean %cube axes [1] keepdims : tensor<8x16xf32> -> tensor<8x1xf32>
  %ve3 = weft.binary add %var3, %eps : (tensor<8x1xf32>, tensor<f32>) -> tensor<8x1xf32>
  %s3 = weft.unary sqrt %ve3 : tensor<8x1xf32> -> tensor<8x1xf32>
  %n3 = weft.binary div %d3, %s3 : (tensor<8x16xf32>, tensor<8x1xf32>) -> tensor<8x16xf32>
  return %n, %d, %n0, %n3 : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
}

// -----

// f16: the normalization kernels take f32 and f64 only, so the written-out
// form stays (it compiles as elementwise loops).
// CHECK-LABEL: func.func @half
// CHECK-NOT: weft.normalize
func.func @half(%x: tensor<8x16xf16>) -> tensor<8x16xf16> {
  %two = weft.constant dense<2.0> : tensor<f16>
  %eps = weft.constant dense<1.0e-3> : tensor<f16>
  %mean = weft.reduce mean %x axes [1] keepdims : tensor<8x16xf16> -> tensor<8x1xf16>
  %d = weft.binary sub %x, %mean : (tensor<8x16xf16>, tensor<8x1xf16>) -> tensor<8x16xf16>
  %sq = weft.binary pow %d, %two : (tensor<8x16xf16>, tensor<f16>) -> tensor<8x16xf16>
  %var = weft.reduce mean %sq axes [1] keepdims : tensor<8x16xf16> -> tensor<8x1xf16>
  %ve = weft.binary add %var, %eps : (tensor<8x1xf16>, tensor<f16>) -> tensor<8x1xf16>
  %s = weft.unary sqrt %ve : tensor<8x1xf16> -> tensor<8x1xf16>
  %n = weft.binary div %d, %s : (tensor<8x16xf16>, tensor<8x1xf16>) -> tensor<8x16xf16>
  return %n : tensor<8x16xf16>
}
