// RUN: weft-opt %s --canonicalize | FileCheck %s

// Tests that SAME_UPPER padding becomes explicit pads (the odd unit at the
// end) once the spatial sizes are static.
// CHECK-LABEL: func.func @conv_same_upper
// CHECK: weft.conv %{{.*}}, %{{.*}} strides [2, 2] pads [0, 0, 1, 1] dilations [1, 1] :
// CHECK-NOT: auto_pad
func.func @conv_same_upper(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32> {
  %0 = weft.conv %x, %w strides [2, 2] pads [0, 0, 0, 0] dilations [1, 1] auto_pad same_upper
         : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// Tests that SAME_LOWER puts the odd unit at the start, with dilation.
// CHECK-LABEL: func.func @conv_same_lower_dilated
// CHECK: weft.conv %{{.*}}, %{{.*}} strides [1, 2] pads [2, 1, 2, 0] dilations [2, 1] :
func.func @conv_same_lower_dilated(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x8x4xf32> {
  %0 = weft.conv %x, %w strides [1, 2] pads [0, 0, 0, 0] dilations [2, 1] auto_pad same_lower
         : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x4xf32>
  return %0 : tensor<1x4x8x4xf32>
}

// Tests that SAME padding of a channels-last convolution reads the spatial
// sizes of its channels-last input and kernel-first weight (8x6 input, 3x1
// kernel: pads [1, 0, 1, 0]; read channels-first they would be wrong).
// CHECK-LABEL: func.func @conv_same_channels_last
// CHECK: weft.conv %{{.*}}, %{{.*}} strides [1, 1] pads [1, 0, 1, 0] dilations [1, 1] channels_last_input channels_last_result kernel_first_weight :
func.func @conv_same_channels_last(%x: tensor<1x8x6x3xf32>, %w: tensor<3x1x3x4xf32>) -> tensor<1x8x6x4xf32> {
  %0 = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] auto_pad same_upper
         channels_last_input channels_last_result kernel_first_weight
         : (tensor<1x8x6x3xf32>, tensor<3x1x3x4xf32>) -> tensor<1x8x6x4xf32>
  return %0 : tensor<1x8x6x4xf32>
}

// Tests that auto_pad stays while a spatial size is dynamic.
// CHECK-LABEL: func.func @conv_same_dynamic
// CHECK: weft.conv %{{.*}}, %{{.*}} strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] auto_pad same_upper :
func.func @conv_same_dynamic(%x: tensor<1x3x?x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x?x8xf32> {
  %0 = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] auto_pad same_upper
         : (tensor<1x3x?x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x?x8xf32>
  return %0 : tensor<1x4x?x8xf32>
}

// Tests that pooling resolves SAME_LOWER too, and that a result type left
// dynamic is refined to the inferred size.
// CHECK-LABEL: func.func @pool_same_lower
// CHECK: %[[P:.*]] = weft.pool max %{{.*}} kernel_shape [2] strides [1] pads [1, 0] dilations [1] : tensor<1x2x5xf32> -> tensor<1x2x5xf32>
// CHECK: %[[C:.*]] = tensor.cast %[[P]] : tensor<1x2x5xf32> to tensor<1x2x?xf32>
// CHECK: return %[[C]]
func.func @pool_same_lower(%x: tensor<1x2x5xf32>) -> tensor<1x2x?xf32> {
  %0 = weft.pool max %x kernel_shape [2] strides [1] pads [0, 0] dilations [1] auto_pad same_lower
         : tensor<1x2x5xf32> -> tensor<1x2x?xf32>
  return %0 : tensor<1x2x?xf32>
}

// Tests that an Indices result nobody reads is dropped, and one that is read
// is kept.
// CHECK-LABEL: func.func @pool_unused_indices
// CHECK-SAME: (%[[X:.*]]: tensor<1x1x4x4xf32>)
// CHECK: %[[P:.*]] = weft.pool max %[[X]] kernel_shape [2, 2] strides [2, 2] pads [0, 0, 0, 0] dilations [1, 1] : tensor<1x1x4x4xf32> -> tensor<1x1x2x2xf32>
// CHECK: %{{.*}}, %[[I:.*]] = weft.pool max %[[X]] kernel_shape [2, 2] strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] with_indices column_major : tensor<1x1x4x4xf32> -> tensor<1x1x3x3xf32>, tensor<1x1x3x3xi64>
// CHECK: return %[[P]], %[[I]]
func.func @pool_unused_indices(%x: tensor<1x1x4x4xf32>) -> (tensor<1x1x2x2xf32>, tensor<1x1x3x3xi64>) {
  %m, %unused = weft.pool max %x kernel_shape [2, 2] strides [2, 2] pads [0, 0, 0, 0] dilations [1, 1] with_indices column_major
                  : tensor<1x1x4x4xf32> -> tensor<1x1x2x2xf32>, tensor<1x1x2x2xi64>
  %n, %i = weft.pool max %x kernel_shape [2, 2] strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] with_indices column_major
             : tensor<1x1x4x4xf32> -> tensor<1x1x3x3xf32>, tensor<1x1x3x3xi64>
  return %m, %i : tensor<1x1x2x2xf32>, tensor<1x1x3x3xi64>
}
