// RUN: weft-opt %s --weft-expose-program-abi --weft-bufferize --canonicalize | FileCheck %s

// Tests the parameter block of convolutions in other layouts: the sizes
// are given channels-first whatever the layout (N, C, M, group, input,
// kernel, strides, dilations, pads, output, then the clamp), and the last
// word says how each tensor is stored: 1 a channels-last input, 2 a
// channels-last output, 4 a kernel-first weight, 64 a packed weight.
// CHECK-DAG: memref.global "private" constant @__weft_params_conv : memref<24xi64> = dense<[1, 2, 1, 8, 8, 8, 9, 9, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 5, 5, 0, 0, 0, 7]>
// CHECK-DAG: memref.global "private" constant @__weft_params_conv_0 : memref<24xi64> = dense<[1, 2, 1, 8, 4, 1, 5, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 5, 5, 0, 0, 0, 5]>
// CHECK-DAG: memref.global "private" constant @__weft_params_conv_1 : memref<24xi64> = dense<[1, 2, 1, 4, 6, 1, 5, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 5, 5, 0, 0, 0, 0]>
// CHECK-DAG: memref.global "private" constant @__weft_params_conv_2 : memref<24xi64> = dense<[1, 2, 1, 8, 64, 1, 5, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 5, 5, 0, 0, 0, 67]>
module {
  func.func @main(%x: tensor<1x9x9x8xf32>, %w: tensor<3x3x1x8xf32>,
                  %p: tensor<1x1x8x4xf32>, %e: tensor<6x4x1x1xf32>,
                  %q: tensor<2x8x32xf32>)
      -> (tensor<1x6x5x5xf32>, tensor<1x5x5x64xf32>) {
    %0 = weft.conv %x, %w strides [2, 2] pads [1, 1, 1, 1] dilations [1, 1]
           group 8 channels_last_input channels_last_result kernel_first_weight
           : (tensor<1x9x9x8xf32>, tensor<3x3x1x8xf32>) -> tensor<1x5x5x8xf32>
    %1 = weft.conv %0, %p strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
           channels_last_input kernel_first_weight
           : (tensor<1x5x5x8xf32>, tensor<1x1x8x4xf32>) -> tensor<1x4x5x5xf32>
    %2 = weft.conv %1, %e strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
           : (tensor<1x4x5x5xf32>, tensor<6x4x1x1xf32>) -> tensor<1x6x5x5xf32>
    %3 = weft.conv %0, %q strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
           channels_last_input channels_last_result packed_weight
           : (tensor<1x5x5x8xf32>, tensor<2x8x32xf32>) -> tensor<1x5x5x64xf32>
    return %2, %3 : tensor<1x6x5x5xf32>, tensor<1x5x5x64xf32>
  }
}
