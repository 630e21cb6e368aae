// RUN: weft-opt %s | weft-opt | FileCheck %s

// Tests that a 2-D convolution with bias, strides and pads round-trips and
// that default group and auto_pad are elided.
// CHECK-LABEL: func.func @conv_2d
// CHECK-SAME: (%[[X:.*]]: tensor<?x3x224x224xf32>, %[[W:.*]]: tensor<64x3x7x7xf32>, %[[B:.*]]: tensor<64xf32>)
// CHECK: weft.conv %[[X]], %[[W]], %[[B]] strides [2, 2] pads [3, 3, 3, 3] dilations [1, 1] : (tensor<?x3x224x224xf32>, tensor<64x3x7x7xf32>, tensor<64xf32>) -> tensor<?x64x112x112xf32>
func.func @conv_2d(%x: tensor<?x3x224x224xf32>, %w: tensor<64x3x7x7xf32>, %b: tensor<64xf32>) -> tensor<?x64x112x112xf32> {
  %0 = weft.conv %x, %w, %b strides [2, 2] pads [3, 3, 3, 3] dilations [1, 1] group 1
         : (tensor<?x3x224x224xf32>, tensor<64x3x7x7xf32>, tensor<64xf32>) -> tensor<?x64x112x112xf32>
  return %0 : tensor<?x64x112x112xf32>
}

// Tests 1-D and 3-D convolutions, groups, dilations and asymmetric pads.
// CHECK-LABEL: func.func @conv_forms
// CHECK: weft.conv %{{.*}}, %{{.*}} strides [1] pads [0, 2] dilations [2] group 2 : (tensor<1x4x10xf32>, tensor<6x2x3xf32>) -> tensor<1x6x8xf32>
// CHECK: weft.conv %{{.*}}, %{{.*}} strides [1, 2, 1] pads [1, 0, 1, 1, 0, 1] dilations [1, 1, 1] : (tensor<2x1x4x5x6xf64>, tensor<3x1x3x3x3xf64>) -> tensor<2x3x4x2x6xf64>
func.func @conv_forms(%x1: tensor<1x4x10xf32>, %w1: tensor<6x2x3xf32>,
                      %x3: tensor<2x1x4x5x6xf64>, %w3: tensor<3x1x3x3x3xf64>) {
  %0 = weft.conv %x1, %w1 strides [1] pads [0, 2] dilations [2] group 2
         : (tensor<1x4x10xf32>, tensor<6x2x3xf32>) -> tensor<1x6x8xf32>
  %1 = weft.conv %x3, %w3 strides [1, 2, 1] pads [1, 0, 1, 1, 0, 1] dilations [1, 1, 1]
         : (tensor<2x1x4x5x6xf64>, tensor<3x1x3x3x3xf64>) -> tensor<2x3x4x2x6xf64>
  return
}

// Tests that auto_pad is kept for dynamic spatial sizes, with output size
// ceil(input / stride) where the input is static.
// CHECK-LABEL: func.func @conv_auto_pad
// CHECK: weft.conv %{{.*}}, %{{.*}} strides [2, 2] pads [0, 0, 0, 0] dilations [1, 1] auto_pad same_lower : (tensor<1x3x?x9xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x?x5xf32>
func.func @conv_auto_pad(%x: tensor<1x3x?x9xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<1x8x?x5xf32> {
  %0 = weft.conv %x, %w strides [2, 2] pads [0, 0, 0, 0] dilations [1, 1] auto_pad same_lower
         : (tensor<1x3x?x9xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x?x5xf32>
  return %0 : tensor<1x8x?x5xf32>
}

// Tests max and average pooling with ceil_mode, count_include_pad and
// dilations, and integer max pooling.
// CHECK-LABEL: func.func @pool
// CHECK: weft.pool max %{{.*}} kernel_shape [3, 3] strides [2, 2] pads [1, 1, 1, 1] dilations [1, 1] : tensor<?x64x112x112xf32> -> tensor<?x64x56x56xf32>
// CHECK: weft.pool average %{{.*}} kernel_shape [3, 3] strides [2, 2] pads [0, 0, 0, 0] dilations [1, 1] ceil_mode count_include_pad : tensor<1x1x4x4xf32> -> tensor<1x1x2x2xf32>
// CHECK: weft.pool average %{{.*}} kernel_shape [2] strides [1] pads [0, 0] dilations [2] : tensor<1x2x5xf32> -> tensor<1x2x3xf32>
// CHECK: weft.pool max %{{.*}} kernel_shape [2, 2] strides [2, 2] pads [0, 0, 0, 0] dilations [1, 1] : tensor<1x1x4x4xi8> -> tensor<1x1x2x2xi8>
func.func @pool(%x: tensor<?x64x112x112xf32>, %y: tensor<1x1x4x4xf32>, %z: tensor<1x2x5xf32>, %i: tensor<1x1x4x4xi8>) {
  %0 = weft.pool max %x kernel_shape [3, 3] strides [2, 2] pads [1, 1, 1, 1] dilations [1, 1]
         : tensor<?x64x112x112xf32> -> tensor<?x64x56x56xf32>
  %1 = weft.pool average %y kernel_shape [3, 3] strides [2, 2] pads [0, 0, 0, 0] dilations [1, 1] ceil_mode count_include_pad
         : tensor<1x1x4x4xf32> -> tensor<1x1x2x2xf32>
  %2 = weft.pool average %z kernel_shape [2] strides [1] pads [0, 0] dilations [2]
         : tensor<1x2x5xf32> -> tensor<1x2x3xf32>
  %3 = weft.pool max %i kernel_shape [2, 2] strides [2, 2] pads [0, 0, 0, 0] dilations [1, 1]
         : tensor<1x1x4x4xi8> -> tensor<1x1x2x2xi8>
  return
}

// Tests max pooling with the Indices result, in row-major and column-major
// order.
// CHECK-LABEL: func.func @pool_indices
// CHECK-SAME: (%[[X:.*]]: tensor<?x1x5x5xf32>)
func.func @pool_indices(%x: tensor<?x1x5x5xf32>) -> (tensor<?x1x2x2xf32>, tensor<?x1x2x2xi64>, tensor<?x1x2x2xi64>) {
  // CHECK: %[[M:.*]], %[[I:.*]] = weft.pool max %[[X]] kernel_shape [2, 2] strides [2, 2] pads [0, 0, 0, 0] dilations [1, 1] with_indices : tensor<?x1x5x5xf32> -> tensor<?x1x2x2xf32>, tensor<?x1x2x2xi64>
  %m, %i = weft.pool max %x kernel_shape [2, 2] strides [2, 2] pads [0, 0, 0, 0] dilations [1, 1] with_indices
             : tensor<?x1x5x5xf32> -> tensor<?x1x2x2xf32>, tensor<?x1x2x2xi64>
  // CHECK: %{{.*}}, %[[J:.*]] = weft.pool max %[[X]] kernel_shape [2, 2] strides [2, 2] pads [0, 0, 0, 0] dilations [1, 1] with_indices column_major : tensor<?x1x5x5xf32> -> tensor<?x1x2x2xf32>, tensor<?x1x2x2xi64>
  %n, %j = weft.pool max %x kernel_shape [2, 2] strides [2, 2] pads [0, 0, 0, 0] dilations [1, 1] with_indices column_major
             : tensor<?x1x5x5xf32> -> tensor<?x1x2x2xf32>, tensor<?x1x2x2xi64>
  // CHECK: return %[[M]], %[[I]], %[[J]]
  return %m, %i, %j : tensor<?x1x2x2xf32>, tensor<?x1x2x2xi64>, tensor<?x1x2x2xi64>
}

// Tests ceil_mode: windows start at 0, 2, 4 (4 < 5, kept) in the first
// op; in the second the third window would start at 6, past the input and
// its begin padding (5), and is dropped.
// CHECK-LABEL: func.func @pool_ceil_mode
// CHECK: weft.pool max %{{.*}} kernel_shape [2] strides [2] pads [0, 1] dilations [1] ceil_mode : tensor<1x1x5xf32> -> tensor<1x1x3xf32>
// CHECK: weft.pool max %{{.*}} kernel_shape [1] strides [3] pads [0, 2] dilations [1] ceil_mode : tensor<1x1x5xf32> -> tensor<1x1x2xf32>
func.func @pool_ceil_mode(%x: tensor<1x1x5xf32>) {
  %0 = weft.pool max %x kernel_shape [2] strides [2] pads [0, 1] dilations [1] ceil_mode
         : tensor<1x1x5xf32> -> tensor<1x1x3xf32>
  %1 = weft.pool max %x kernel_shape [1] strides [3] pads [0, 2] dilations [1] ceil_mode
         : tensor<1x1x5xf32> -> tensor<1x1x2xf32>
  return
}

// Tests batch normalization with per-channel and per-element parameters and
// statistics in a different float type than the input.
// CHECK-LABEL: func.func @batch_norm
// CHECK: weft.batch_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} epsilon 1.000000e-05 : (tensor<?x4x8x8xf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xf64>, tensor<4xf64>) -> tensor<?x4x8x8xf16>
// CHECK: weft.batch_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} epsilon 1.000000e-03 : (tensor<2x4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<2x4x3xf32>
func.func @batch_norm(%x: tensor<?x4x8x8xf16>, %s: tensor<4xf32>, %m: tensor<4xf64>,
                      %y: tensor<2x4x3xf32>, %p: tensor<4x3xf32>) {
  %0 = weft.batch_norm %x, %s, %s, %m, %m epsilon 1.0e-05
         : (tensor<?x4x8x8xf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xf64>, tensor<4xf64>) -> tensor<?x4x8x8xf16>
  %1 = weft.batch_norm %y, %p, %p, %p, %p epsilon 1.0e-03
         : (tensor<2x4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<2x4x3xf32>
  return
}

// Tests layer normalization with its statistics in the stash type, without
// a bias, and instance normalization.
// CHECK-LABEL: func.func @normalize
// CHECK: %[[Y:.*]], %[[MEAN:.*]], %[[INV:.*]] = weft.normalize layer %{{.*}}, %{{.*}}, %{{.*}} axis 2 epsilon 1.000000e-05 {stash_type = f32} : (tensor<?x128x768xf16>, tensor<768xf16>, tensor<768xf16>) -> (tensor<?x128x768xf16>, tensor<?x128x1xf32>, tensor<?x128x1xf32>)
// CHECK: weft.normalize layer %{{.*}}, %{{.*}} axis 0 epsilon 1.000000e-05 : (tensor<3x4xf32>, tensor<1x4xf32>) -> (tensor<3x4xf32>, tensor<1x1xf32>, tensor<1x1xf32>)
// CHECK: weft.normalize instance %{{.*}}, %{{.*}}, %{{.*}} axis 2 epsilon 1.000000e-05 : (tensor<2x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x5x5xf32>, tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>)
func.func @normalize(%x: tensor<?x128x768xf16>, %g: tensor<768xf16>, %a: tensor<3x4xf32>,
                     %s: tensor<1x4xf32>, %i: tensor<2x3x5x5xf32>, %c: tensor<3xf32>) {
  %y, %mean, %inv = weft.normalize layer %x, %g, %g axis 2 epsilon 1.0e-05 {stash_type = f32}
         : (tensor<?x128x768xf16>, tensor<768xf16>, tensor<768xf16>)
         -> (tensor<?x128x768xf16>, tensor<?x128x1xf32>, tensor<?x128x1xf32>)
  %0:3 = weft.normalize layer %a, %s axis 0 epsilon 1.0e-05
         : (tensor<3x4xf32>, tensor<1x4xf32>) -> (tensor<3x4xf32>, tensor<1x1xf32>, tensor<1x1xf32>)
  %1:3 = weft.normalize instance %i, %c, %c axis 2 epsilon 1.0e-05
         : (tensor<2x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>)
         -> (tensor<2x3x5x5xf32>, tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>)
  return
}

// Tests that a fused residual Add (`addend`, set by codegen's
// weft-fuse-conv-clamp) round-trips, with and without a bias, and with a
// clamp.
// CHECK-LABEL: func.func @conv_addend
// CHECK: weft.conv %{{.*}}, %{{.*}}, %{{.*}} addend %{{.*}} strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>, tensor<8xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
// CHECK: weft.conv %{{.*}}, %{{.*}} addend %{{.*}} strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] clamp_min 0.000000e+00 : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
func.func @conv_addend(%x: tensor<1x8x4x4xf32>, %w: tensor<8x8x1x1xf32>, %b: tensor<8xf32>, %r: tensor<1x8x4x4xf32>) -> (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) {
  %0 = weft.conv %x, %w, %b addend %r strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>, tensor<8xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %1 = weft.conv %x, %w addend %r strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] clamp_min 0.0 : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  return %0, %1 : tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>
}

// Tests that a fused clamp (set by codegen's weft-fuse-conv-clamp)
// round-trips, with one bound or both.
// CHECK-LABEL: func.func @conv_clamp
// CHECK: weft.conv %{{.*}}, %{{.*}} strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1] group 4 clamp_min 0.000000e+00 clamp_max 6.000000e+00 :
// CHECK: weft.conv %{{.*}}, %{{.*}} strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1] group 4 clamp_min 0.000000e+00 :
func.func @conv_clamp(%x: tensor<1x4x8x8xf32>, %w: tensor<4x1x3x3xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) {
  %0 = weft.conv %x, %w strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1] group 4 clamp_min 0.0 clamp_max 6.0 : (tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x8x8xf32>
  %1 = weft.conv %x, %w strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1] group 4 clamp_min 0.0 : (tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x8x8xf32>
  return %0, %1 : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
}

// Tests that a packed weight (M/32 x C x 32) round-trips and the result
// has M = 32 x the panels.
// CHECK-LABEL: func.func @conv_packed_weight
// CHECK: weft.conv %{{.*}}, %{{.*}}, %{{.*}} strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] channels_last_input channels_last_result packed_weight : (tensor<2x7x7x96xf32>, tensor<3x96x32xf32>, tensor<96xf32>) -> tensor<2x7x7x96xf32>
func.func @conv_packed_weight(%x: tensor<2x7x7x96xf32>, %w: tensor<3x96x32xf32>,
                              %b: tensor<96xf32>) -> tensor<2x7x7x96xf32> {
  %0 = weft.conv %x, %w, %b strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
         channels_last_input channels_last_result packed_weight
         : (tensor<2x7x7x96xf32>, tensor<3x96x32xf32>, tensor<96xf32>) -> tensor<2x7x7x96xf32>
  return %0 : tensor<2x7x7x96xf32>
}

// Tests the layout attributes: a channels-last input and result and a
// kernel-first weight round-trip, and the result type follows them.
// CHECK-LABEL: func.func @conv_channels_last
// CHECK: weft.conv %{{.*}}, %{{.*}}, %{{.*}} strides [2, 2] pads [1, 1, 1, 1] dilations [1, 1] group 8 channels_last_input channels_last_result kernel_first_weight : (tensor<1x9x9x8xf32>, tensor<3x3x1x8xf32>, tensor<8xf32>) -> tensor<1x5x5x8xf32>
// CHECK: weft.conv %{{.*}}, %{{.*}} addend %{{.*}} strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] channels_last_input kernel_first_weight : (tensor<1x5x5x8xf32>, tensor<1x1x8x4xf32>, tensor<1x4x5x5xf32>) -> tensor<1x4x5x5xf32>
// CHECK: weft.conv %{{.*}}, %{{.*}} strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] channels_last_result : (tensor<1x4x5x5xf32>, tensor<6x4x1x1xf32>) -> tensor<1x5x5x6xf32>
func.func @conv_channels_last(%x: tensor<1x9x9x8xf32>, %w: tensor<3x3x1x8xf32>,
                              %b: tensor<8xf32>, %p: tensor<1x1x8x4xf32>,
                              %skip: tensor<1x4x5x5xf32>,
                              %e: tensor<6x4x1x1xf32>) -> tensor<1x5x5x6xf32> {
  %0 = weft.conv %x, %w, %b strides [2, 2] pads [1, 1, 1, 1] dilations [1, 1]
         group 8 channels_last_input channels_last_result kernel_first_weight
         : (tensor<1x9x9x8xf32>, tensor<3x3x1x8xf32>, tensor<8xf32>) -> tensor<1x5x5x8xf32>
  %1 = weft.conv %0, %p addend %skip strides [1, 1] pads [0, 0, 0, 0]
         dilations [1, 1] channels_last_input kernel_first_weight
         : (tensor<1x5x5x8xf32>, tensor<1x1x8x4xf32>, tensor<1x4x5x5xf32>) -> tensor<1x4x5x5xf32>
  %2 = weft.conv %1, %e strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
         channels_last_result
         : (tensor<1x4x5x5xf32>, tensor<6x4x1x1xf32>) -> tensor<1x5x5x6xf32>
  return %2 : tensor<1x5x5x6xf32>
}

// -----

// Tests the channel-blocked layouts: a blocked input and result (N x C/16 x
// spatial x 16), a plain result with a blocked addend and the reverse, and
// a blocked pool, round-trip; the types follow the attributes.
// CHECK-LABEL: func.func @conv_pool_blocked
// CHECK: weft.conv %{{.*}}, %{{.*}}, %{{.*}} strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1] clamp_min 0.000000e+00 blocked_input blocked_result : (tensor<1x2x8x8x16xf32>, tensor<32x32x3x3xf32>, tensor<32xf32>) -> tensor<1x2x8x8x16xf32>
// CHECK: weft.conv %{{.*}}, %{{.*}} addend %{{.*}} strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1] blocked_input blocked_addend : (tensor<1x2x8x8x16xf32>, tensor<32x32x3x3xf32>, tensor<1x2x8x8x16xf32>) -> tensor<1x32x8x8xf32>
// CHECK: weft.conv %{{.*}}, %{{.*}} addend %{{.*}} strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1] blocked_result : (tensor<1x32x8x8xf32>, tensor<32x32x3x3xf32>, tensor<1x32x8x8xf32>) -> tensor<1x2x8x8x16xf32>
// CHECK: weft.pool max %{{.*}} kernel_shape [2, 2] strides [2, 2] pads [0, 0, 0, 0] dilations [1, 1] blocked : tensor<1x2x8x8x16xf32> -> tensor<1x2x4x4x16xf32>
func.func @conv_pool_blocked(%x: tensor<1x2x8x8x16xf32>,
                             %w: tensor<32x32x3x3xf32>, %b: tensor<32xf32>)
    -> tensor<1x2x4x4x16xf32> {
  %0 = weft.conv %x, %w, %b strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1]
         clamp_min 0.0 blocked_input blocked_result
         : (tensor<1x2x8x8x16xf32>, tensor<32x32x3x3xf32>, tensor<32xf32>)
         -> tensor<1x2x8x8x16xf32>
  %1 = weft.conv %0, %w addend %0 strides [1, 1] pads [1, 1, 1, 1]
         dilations [1, 1] blocked_input blocked_addend
         : (tensor<1x2x8x8x16xf32>, tensor<32x32x3x3xf32>,
            tensor<1x2x8x8x16xf32>) -> tensor<1x32x8x8xf32>
  %2 = weft.conv %1, %w addend %1 strides [1, 1] pads [1, 1, 1, 1]
         dilations [1, 1] blocked_result
         : (tensor<1x32x8x8xf32>, tensor<32x32x3x3xf32>,
            tensor<1x32x8x8xf32>) -> tensor<1x2x8x8x16xf32>
  %3 = weft.pool max %2 kernel_shape [2, 2] strides [2, 2] pads [0, 0, 0, 0]
         dilations [1, 1] blocked
         : tensor<1x2x8x8x16xf32> -> tensor<1x2x4x4x16xf32>
  return %3 : tensor<1x2x4x4x16xf32>
}
