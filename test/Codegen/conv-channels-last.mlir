// RUN: weft-opt %s --weft-conv-channels-last --split-input-file | FileCheck %s
// RUN: weft-opt %s --weft-conv-channels-last --split-input-file | weft-opt --weft-conv-channels-last | FileCheck %s

// Two MobileNetV2 blocks (expansion, depthwise, projection, the second with
// the residual Add fused) and a third expansion and depthwise layer. The
// tensors between the convolutions go channels-last, the residual stream
// too (it only feeds convolutions, and an addend of a channels-last
// result); the first convolution reads the channels-first input. The last
// depthwise convolution writes the result, channels-first, so it keeps the
// channels-first layout on both sides, and the expansion before it changes
// the layout (with its weight as it is: a 1x1 convolution writing
// channels-first reads M x C directly). Constant weights are permuted to
// kernel-first here, weights from the model file are stored permuted, any
// other is permuted by a weft.transpose.
// CHECK-LABEL: func.func @blocks
// The weights as they were are gone (weftc would lay them out too).
// CHECK-NOT: tensor<2x2x1x1xf32>
// CHECK-NOT: tensor<2x1x3x3xf32>
// CHECK: %[[W1:.*]] = weft.constant dense<{{\[\[\[\[}}1.000000e+00, 3.000000e+00], [2.000000e+00, 4.000000e+00]]]]> : tensor<1x1x2x2xf32>
// CHECK: %[[E:.*]] = weft.conv %arg0, %[[W1]] {{.*}} clamp_min 0.000000e+00 clamp_max 6.000000e+00 channels_last_result kernel_first_weight : (tensor<1x2x8x8xf32>, tensor<1x1x2x2xf32>) -> tensor<1x8x8x2xf32>
// CHECK: %[[WD:.*]] = weft.weight "dw" from "m.onnx" offset 0 size 72 checksum "0123456789abcdef" permuted [2, 3, 1, 0] : tensor<3x3x1x2xf32>
// CHECK: %[[D:.*]] = weft.conv %[[E]], %[[WD]] strides [2, 2] {{.*}} group 2 clamp_min 0.000000e+00 clamp_max 6.000000e+00 channels_last_input channels_last_result kernel_first_weight : (tensor<1x8x8x2xf32>, tensor<3x3x1x2xf32>) -> tensor<1x4x4x2xf32>
// CHECK: %[[P:.*]] = weft.conv %[[D]], %{{.*}} channels_last_input channels_last_result kernel_first_weight : (tensor<1x4x4x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x4x4x4xf32>
// CHECK: %[[E2:.*]] = weft.conv %[[P]], %{{.*}} channels_last_input channels_last_result kernel_first_weight : (tensor<1x4x4x4xf32>, tensor<1x1x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK: %[[D2:.*]] = weft.conv %[[E2]], %{{.*}} group 8 channels_last_input channels_last_result kernel_first_weight :
// CHECK: %[[R:.*]] = weft.conv %[[D2]], %{{.*}} addend %[[P]] {{.*}} channels_last_input channels_last_result kernel_first_weight : (tensor<1x4x4x8xf32>, tensor<1x1x8x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
// CHECK: %[[E3:.*]] = weft.conv %[[R]], %arg2 {{.*}} channels_last_input : (tensor<1x4x4x4xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x4x4xf32>
// CHECK: %[[D3:.*]] = weft.conv %[[E3]], %arg3 {{.*}} group 8 : (tensor<1x8x4x4xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x4x4xf32>
// CHECK: return %[[D3]] : tensor<1x8x4x4xf32>
func.func @blocks(%x: tensor<1x2x8x8xf32>, %w3: tensor<4x2x1x1xf32>,
                  %w4: tensor<8x4x1x1xf32>, %w5: tensor<8x1x3x3xf32>,
                  %w6: tensor<4x8x1x1xf32>) -> tensor<1x8x4x4xf32> {
  %w1 = weft.constant dense<[[[[1.0]], [[2.0]]], [[[3.0]], [[4.0]]]]> : tensor<2x2x1x1xf32>
  %w2 = weft.weight "dw" from "m.onnx" offset 0 size 72
          checksum "0123456789abcdef" : tensor<2x1x3x3xf32>
  %e = weft.conv %x, %w1 strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
         clamp_min 0.0 clamp_max 6.0
         : (tensor<1x2x8x8xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x8x8xf32>
  %d = weft.conv %e, %w2 strides [2, 2] pads [1, 1, 1, 1] dilations [1, 1]
         group 2 clamp_min 0.0 clamp_max 6.0
         : (tensor<1x2x8x8xf32>, tensor<2x1x3x3xf32>) -> tensor<1x2x4x4xf32>
  %p = weft.conv %d, %w3 strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
         : (tensor<1x2x4x4xf32>, tensor<4x2x1x1xf32>) -> tensor<1x4x4x4xf32>
  %e2 = weft.conv %p, %w4 strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
          : (tensor<1x4x4x4xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x4x4xf32>
  %d2 = weft.conv %e2, %w5 strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1]
          group 8 : (tensor<1x8x4x4xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x4x4xf32>
  %r = weft.conv %d2, %w6 addend %p strides [1, 1] pads [0, 0, 0, 0]
         dilations [1, 1]
         : (tensor<1x8x4x4xf32>, tensor<4x8x1x1xf32>, tensor<1x4x4x4xf32>)
         -> tensor<1x4x4x4xf32>
  %e3 = weft.conv %r, %w4 strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
          : (tensor<1x4x4x4xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x4x4xf32>
  %d3 = weft.conv %e3, %w5 strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1]
          group 8 : (tensor<1x8x4x4xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x4x4xf32>
  return %d3 : tensor<1x8x4x4xf32>
}

// -----

// What stays channels-first:
// - a chain of 1x1 convolutions with no depthwise one (nothing to gain);
// - a tensor the function returns, and so the depthwise convolution after
//   it (it keeps its layout) and the tensors around that one;
// - what a 3x3 convolution of group 1 reads (the kernel has no
//   channels-last form for it), with the same effect;
// - an addend whose convolution writes a channels-first result, while the
//   tensors around the depthwise convolution still go channels-last.
// CHECK-LABEL: func.func @pointwise_only
// CHECK-NOT: channels_last
// CHECK-LABEL: func.func @returned
// CHECK-NOT: channels_last
// CHECK-LABEL: func.func @dense_3x3
// CHECK-NOT: channels_last
// CHECK-LABEL: func.func @addend_of_channels_first
// CHECK: %[[S:.*]] = weft.conv %arg0, %arg1 {{.*}} dilations [1, 1] : (tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x6x6xf32>
// CHECK: %[[E:.*]] = weft.conv %[[S]], %{{.*}} channels_last_result kernel_first_weight : (tensor<1x4x6x6xf32>, tensor<1x1x4x4xf32>) -> tensor<1x6x6x4xf32>
// CHECK: %[[D:.*]] = weft.conv %[[E]], %{{.*}} group 4 channels_last_input channels_last_result kernel_first_weight : (tensor<1x6x6x4xf32>, tensor<3x3x1x4xf32>) -> tensor<1x6x6x4xf32>
// CHECK: weft.conv %[[D]], %arg1 addend %[[S]] {{.*}} channels_last_input : (tensor<1x6x6x4xf32>, tensor<4x4x1x1xf32>, tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
func.func @pointwise_only(%x: tensor<1x4x6x6xf32>, %w: tensor<4x4x1x1xf32>)
    -> tensor<1x4x6x6xf32> {
  %0 = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
         : (tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x6x6xf32>
  %1 = weft.conv %0, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
         : (tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x6x6xf32>
  return %1 : tensor<1x4x6x6xf32>
}
func.func @returned(%x: tensor<1x4x6x6xf32>, %w: tensor<4x4x1x1xf32>,
                    %d: tensor<4x1x3x3xf32>)
    -> (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) {
  %0 = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
         : (tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x6x6xf32>
  %1 = weft.conv %0, %d strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1]
         group 4 : (tensor<1x4x6x6xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32>
  %2 = weft.conv %1, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
         : (tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x6x6xf32>
  return %0, %2 : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>
}
func.func @dense_3x3(%x: tensor<1x4x6x6xf32>, %w: tensor<4x4x1x1xf32>,
                     %d: tensor<4x1x3x3xf32>, %k: tensor<4x4x3x3xf32>)
    -> tensor<1x4x6x6xf32> {
  %0 = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
         : (tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x6x6xf32>
  %1 = weft.conv %0, %d strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1]
         group 4 : (tensor<1x4x6x6xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32>
  %2 = weft.conv %1, %k strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1]
         : (tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %2 : tensor<1x4x6x6xf32>
}
func.func @addend_of_channels_first(%x: tensor<1x4x6x6xf32>,
                                    %w: tensor<4x4x1x1xf32>,
                                    %d: tensor<4x1x3x3xf32>)
    -> tensor<1x4x6x6xf32> {
  %s = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
         : (tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x6x6xf32>
  %e = weft.conv %s, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
         : (tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x6x6xf32>
  %1 = weft.conv %e, %d strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1]
         group 4 : (tensor<1x4x6x6xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32>
  %2 = weft.conv %1, %w addend %s strides [1, 1] pads [0, 0, 0, 0]
         dilations [1, 1]
         : (tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32>, tensor<1x4x6x6xf32>)
         -> tensor<1x4x6x6xf32>
  return %2 : tensor<1x4x6x6xf32>
}

// -----

// Weights that are neither constants nor model weights (arguments here)
// are permuted by a weft.transpose.
// CHECK-LABEL: func.func @argument_weights
// CHECK: %[[T:.*]] = weft.transpose %arg1 perm = [2, 3, 1, 0] : tensor<4x1x3x3xf32> -> tensor<3x3x1x4xf32>
// CHECK: weft.conv %{{.*}}, %[[T]] {{.*}} group 4 channels_last_input channels_last_result kernel_first_weight
func.func @argument_weights(%x: tensor<1x2x6x6xf32>, %w: tensor<4x1x3x3xf32>,
                            %e: tensor<4x2x1x1xf32>, %p: tensor<2x4x1x1xf32>)
    -> tensor<1x2x6x6xf32> {
  %0 = weft.conv %x, %e strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
         : (tensor<1x2x6x6xf32>, tensor<4x2x1x1xf32>) -> tensor<1x4x6x6xf32>
  %1 = weft.conv %0, %w strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1]
         group 4 : (tensor<1x4x6x6xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32>
  %2 = weft.conv %1, %p strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
         : (tensor<1x4x6x6xf32>, tensor<2x4x1x1xf32>) -> tensor<1x2x6x6xf32>
  return %2 : tensor<1x2x6x6xf32>
}

// -----

// A network's head: the last 1x1 convolution feeds a global pool (a
// reduction over the spatial dimensions) only, so its result goes
// channels-last too; the reduction's axes move to where the channels-last
// tensor has them, and with keepdims a reshape gives its users the N x C x
// 1 x 1 they read (the same elements in the same order). A reduction over
// other axes keeps its input channels-first (the 1x1 convolution writing
// it changes the layout).
// CHECK-LABEL: func.func @head
// CHECK: %[[D:.*]] = weft.conv {{.*}} group 4 channels_last_input channels_last_result kernel_first_weight
// CHECK: %[[H:.*]] = weft.conv %[[D]], {{.*}} channels_last_input channels_last_result kernel_first_weight : (tensor<1x6x6x4xf32>, tensor<1x1x4x8xf32>) -> tensor<1x6x6x8xf32>
// CHECK: %[[M:.*]] = weft.reduce mean %[[H]] axes [1, 2] keepdims : tensor<1x6x6x8xf32> -> tensor<1x1x1x8xf32>
// CHECK: %[[S:.*]] = weft.constant dense<[1, 8, 1, 1]> : tensor<4xi64>
// CHECK: %[[R:.*]] = weft.reshape %[[M]], %[[S]] : (tensor<1x1x1x8xf32>, tensor<4xi64>) -> tensor<1x8x1x1xf32>
// CHECK: %[[X:.*]] = weft.reduce max %[[H]] axes [1, 2] : tensor<1x6x6x8xf32> -> tensor<1x8xf32>
// CHECK: %[[C:.*]] = weft.conv %{{.*}} channels_last_input : (tensor<1x6x6x4xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x6x6xf32>
// CHECK: weft.reduce sum %[[C]] axes [1] keepdims : tensor<1x8x6x6xf32> -> tensor<1x1x6x6xf32>
// CHECK: return %[[R]], %[[X]]
func.func @head(%x: tensor<1x2x6x6xf32>, %e: tensor<4x2x1x1xf32>,
                %w: tensor<4x1x3x3xf32>, %h: tensor<8x4x1x1xf32>)
    -> (tensor<1x8x1x1xf32>, tensor<1x8xf32>, tensor<1x1x6x6xf32>) {
  %0 = weft.conv %x, %e strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
         : (tensor<1x2x6x6xf32>, tensor<4x2x1x1xf32>) -> tensor<1x4x6x6xf32>
  %1 = weft.conv %0, %w strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1]
         group 4 : (tensor<1x4x6x6xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32>
  %2 = weft.conv %1, %h strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
         clamp_min 0.0 clamp_max 6.0
         : (tensor<1x4x6x6xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x6x6xf32>
  %m = weft.reduce mean %2 axes [2, 3] keepdims
         : tensor<1x8x6x6xf32> -> tensor<1x8x1x1xf32>
  %x2 = weft.reduce max %2 axes [2, 3]
         : tensor<1x8x6x6xf32> -> tensor<1x8xf32>
  %c = weft.conv %0, %h strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
         : (tensor<1x4x6x6xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x6x6xf32>
  %s = weft.reduce sum %c axes [1] keepdims
         : tensor<1x8x6x6xf32> -> tensor<1x1x6x6xf32>
  return %m, %x2, %s : tensor<1x8x1x1xf32>, tensor<1x8xf32>, tensor<1x1x6x6xf32>
}
