// RUN: weft-opt %s --weft-conv-channels-last | FileCheck %s --check-prefix=SMALL
// RUN: weft-opt %s --weft-conv-channels-last=max-plane=35 | FileCheck %s --check-prefix=LARGE

// Tests max-plane: a 6x6 plane (36 pixels) goes channels-last under the
// default limit (1024) but not under a limit of 35, where the channels-first
// kernels are kept.
// SMALL: channels_last_input channels_last_result kernel_first_weight : (tensor<1x6x6x4xf32>, tensor<3x3x1x4xf32>) -> tensor<1x6x6x4xf32>
// LARGE-NOT: channels_last
func.func @plane(%x: tensor<1x4x6x6xf32>, %w: tensor<4x4x1x1xf32>,
                 %d: tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
         : (tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x6x6xf32>
  %1 = weft.conv %0, %d strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1]
         group 4 : (tensor<1x4x6x6xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32>
  %2 = weft.conv %1, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
         : (tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x6x6xf32>
  return %2 : tensor<1x4x6x6xf32>
}
