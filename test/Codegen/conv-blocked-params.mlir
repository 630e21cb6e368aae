// RUN: weft-opt %s --weft-expose-program-abi --weft-bufferize --canonicalize | FileCheck %s

// Tests the parameter blocks of channel-blocked convolutions and pools: the
// sizes are given channels-first whatever the layout, and the last word
// says how each tensor is stored: for a convolution 8 a blocked input, 16 a
// blocked output, 32 a blocked addend; for a pool 1 a blocked input and
// output.
// CHECK-DAG: memref.global "private" constant @__weft_params_conv : memref<24xi64> = dense<[1, 2, 1, 32, 32, 1, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 8, 8, 1, 0, 9218868437227405312, 16]>
// CHECK-DAG: memref.global "private" constant @__weft_params_conv_add : memref<24xi64> = dense<[1, 2, 1, 32, 32, 1, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 8, 8, 0, 0, 0, 56]>
// CHECK-DAG: memref.global "private" constant @__weft_params_pool : memref<21xi64> = dense<[1, 0, 0, 2, 1, 32, 8, 8, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 4, 4, 1]>
module {
  func.func @main(%x: tensor<1x32x8x8xf32>, %w: tensor<32x32x3x3xf32>)
      -> tensor<1x2x4x4x16xf32> {
    %0 = weft.conv %x, %w strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1]
           clamp_min 0.0 blocked_result
           : (tensor<1x32x8x8xf32>, tensor<32x32x3x3xf32>)
           -> tensor<1x2x8x8x16xf32>
    %1 = weft.conv %0, %w addend %0 strides [1, 1] pads [1, 1, 1, 1]
           dilations [1, 1] blocked_input blocked_result blocked_addend
           : (tensor<1x2x8x8x16xf32>, tensor<32x32x3x3xf32>,
              tensor<1x2x8x8x16xf32>) -> tensor<1x2x8x8x16xf32>
    %2 = weft.pool max %1 kernel_shape [2, 2] strides [2, 2]
           pads [0, 0, 0, 0] dilations [1, 1] blocked
           : tensor<1x2x8x8x16xf32> -> tensor<1x2x4x4x16xf32>
    return %2 : tensor<1x2x4x4x16xf32>
  }
}
