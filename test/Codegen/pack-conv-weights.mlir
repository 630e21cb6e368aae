// RUN: weft-opt %s --weft-pack-conv-weights | FileCheck %s

// Tests that a channels-last 1x1 convolution's model weight, 64 output
// channels, stored 64 x 96 x 1 x 1 and seen kernel-first, becomes panels:
// the same bytes viewed as 2 x 32 x 96 and permuted to 2 x 96 x 32, and
// the convolution says packed_weight instead of kernel_first_weight.
// CHECK-LABEL: func.func @packs
// CHECK: %[[W:.*]] = weft.weight "w" from "m.onnx" offset 128 size 24576 checksum "0123456789abcdef" permuted [0, 2, 1] : tensor<2x96x32xf32>
// CHECK-NOT: weft.weight
// CHECK: weft.conv %{{.*}}, %[[W]], %{{.*}} strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] clamp_min 0.000000e+00 channels_last_input channels_last_result packed_weight : (tensor<1x7x7x96xf32>, tensor<2x96x32xf32>, tensor<64xf32>) -> tensor<1x7x7x64xf32>
func.func @packs(%x: tensor<1x7x7x96xf32>, %b: tensor<64xf32>) -> tensor<1x7x7x64xf32> {
  %w = weft.weight "w" from "m.onnx" offset 128 size 24576
         checksum "0123456789abcdef" permuted [2, 3, 1, 0] : tensor<1x1x96x64xf32>
  %y = weft.conv %x, %w, %b strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
         clamp_min 0.0 channels_last_input channels_last_result kernel_first_weight
         : (tensor<1x7x7x96xf32>, tensor<1x1x96x64xf32>, tensor<64xf32>) -> tensor<1x7x7x64xf32>
  return %y : tensor<1x7x7x64xf32>
}

// Tests that a weight stored as the convolution sees it (no permutation,
// no kernel_first_weight) packs the same way, and that a weight another op
// also reads stays for it.
// CHECK-LABEL: func.func @packs_plain_and_keeps_shared
// CHECK-DAG: %[[P:.*]] = weft.weight "w" {{.*}} permuted [0, 2, 1] : tensor<1x16x32xf32>
// CHECK-DAG: %[[W:.*]] = weft.weight "w" {{.*}} : tensor<32x16x1x1xf32>
// CHECK: weft.conv %{{.*}}, %[[P]] {{.*}} packed_weight
// CHECK: weft.conv %{{.*}}, %[[W]] strides
func.func @packs_plain_and_keeps_shared(%x: tensor<1x4x4x16xf32>, %n: tensor<1x16x4x4xf32>)
    -> (tensor<1x4x4x32xf32>, tensor<1x32x4x4xf32>) {
  %w = weft.weight "w" from "m.onnx" offset 0 size 2048
         checksum "0123456789abcdef" : tensor<32x16x1x1xf32>
  %y = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
         channels_last_input channels_last_result
         : (tensor<1x4x4x16xf32>, tensor<32x16x1x1xf32>) -> tensor<1x4x4x32xf32>
  %z = weft.conv %n, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
         : (tensor<1x16x4x4xf32>, tensor<32x16x1x1xf32>) -> tensor<1x32x4x4xf32>
  return %y, %z : tensor<1x4x4x32xf32>, tensor<1x32x4x4xf32>
}

// Tests what stays as it is: 24 output channels (not whole panels), a
// weight that is not the model's, a device's block of a weight, a
// channels-first output, a depthwise convolution.
// CHECK-LABEL: func.func @leaves
// CHECK-NOT: packed_weight
// CHECK-NOT: permuted [0, 2, 1]
// CHECK: return
func.func @leaves(%x: tensor<1x7x7x96xf32>, %a: tensor<1x1x96x64xf32>)
    -> (tensor<1x7x7x24xf32>, tensor<1x7x7x64xf32>, tensor<1x7x7x32xf32>,
        tensor<1x64x7x7xf32>, tensor<1x7x7x96xf32>) {
  %w24 = weft.weight "w24" from "m.onnx" offset 0 size 9216
           checksum "0123456789abcdef" permuted [2, 3, 1, 0] : tensor<1x1x96x24xf32>
  %0 = weft.conv %x, %w24 strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
         channels_last_input channels_last_result kernel_first_weight
         : (tensor<1x7x7x96xf32>, tensor<1x1x96x24xf32>) -> tensor<1x7x7x24xf32>
  %1 = weft.conv %x, %a strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
         channels_last_input channels_last_result kernel_first_weight
         : (tensor<1x7x7x96xf32>, tensor<1x1x96x64xf32>) -> tensor<1x7x7x64xf32>
  %wb = weft.weight "wb" from "m.onnx" offset 0 size 24576
          checksum "0123456789abcdef" block [32, 0, 0, 0] of [64, 96, 1, 1]
          : tensor<32x96x1x1xf32>
  %2 = weft.conv %x, %wb strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
         channels_last_input channels_last_result
         : (tensor<1x7x7x96xf32>, tensor<32x96x1x1xf32>) -> tensor<1x7x7x32xf32>
  %wf = weft.weight "wf" from "m.onnx" offset 0 size 24576
          checksum "0123456789abcdef" : tensor<64x96x1x1xf32>
  %3 = weft.conv %x, %wf strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
         channels_last_input
         : (tensor<1x7x7x96xf32>, tensor<64x96x1x1xf32>) -> tensor<1x64x7x7xf32>
  %wd = weft.weight "wd" from "m.onnx" offset 0 size 3456
          checksum "0123456789abcdef" permuted [2, 3, 1, 0] : tensor<3x3x1x96xf32>
  %4 = weft.conv %x, %wd strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1]
         group 96 channels_last_input channels_last_result kernel_first_weight
         : (tensor<1x7x7x96xf32>, tensor<3x3x1x96xf32>) -> tensor<1x7x7x96xf32>
  return %0, %1, %2, %3, %4 : tensor<1x7x7x24xf32>, tensor<1x7x7x64xf32>,
      tensor<1x7x7x32xf32>, tensor<1x64x7x7xf32>, tensor<1x7x7x96xf32>
}
