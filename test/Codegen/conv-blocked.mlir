// RUN: weft-opt %s --weft-conv-blocked --split-input-file | FileCheck %s
// RUN: weft-opt %s --weft-conv-blocked --split-input-file | weft-opt --weft-conv-blocked | FileCheck %s

// A ResNet-style stage: a first layer of 3 channels (not a oneDNN layer for
// the runtime: it stays channels-first, and so does the pool after it),
// two residual blocks of 3x3 convolutions, and a strided 3x3 convolution
// and a strided 1x1 projection that both read the stage's output. The
// tensors between the convolutions go blocked, the residual stream too
// where it only feeds convolutions (as an input or as an addend), the
// stage's output too (the strided 1x1 projection takes it); an addend that
// the pool wrote stays channels-first. The results of the strided
// convolutions are the function's: channels-first.
// CHECK-LABEL: func.func @stage
// CHECK: %[[STEM:.*]] = weft.conv %arg0, %arg1 {{.*}} : (tensor<1x3x16x16xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x16x16xf32>
// CHECK: %[[POOL:.*]] = weft.pool max %[[STEM]] {{.*}} dilations [1, 1] : tensor<1x16x16x16xf32> -> tensor<1x16x8x8xf32>
// CHECK: %[[A:.*]] = weft.conv %[[POOL]], %arg2 {{.*}} clamp_min 0.000000e+00 blocked_result : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x1x8x8x16xf32>
// CHECK: %[[B:.*]] = weft.conv %[[A]], %arg2 addend %[[POOL]] {{.*}} blocked_input blocked_result : (tensor<1x1x8x8x16xf32>, tensor<16x16x3x3xf32>, tensor<1x16x8x8xf32>) -> tensor<1x1x8x8x16xf32>
// CHECK: %[[C:.*]] = weft.conv %[[B]], %arg2 {{.*}} blocked_input blocked_result : (tensor<1x1x8x8x16xf32>, tensor<16x16x3x3xf32>) -> tensor<1x1x8x8x16xf32>
// CHECK: %[[D:.*]] = weft.conv %[[C]], %arg2 addend %[[B]] {{.*}} blocked_input blocked_result blocked_addend : (tensor<1x1x8x8x16xf32>, tensor<16x16x3x3xf32>, tensor<1x1x8x8x16xf32>) -> tensor<1x1x8x8x16xf32>
// CHECK: %[[S:.*]] = weft.conv %[[D]], %arg3 strides [2, 2] {{.*}} blocked_input : (tensor<1x1x8x8x16xf32>, tensor<32x16x3x3xf32>) -> tensor<1x32x4x4xf32>
// CHECK: %[[P:.*]] = weft.conv %[[D]], %arg4 strides [2, 2] {{.*}} blocked_input : (tensor<1x1x8x8x16xf32>, tensor<32x16x1x1xf32>) -> tensor<1x32x4x4xf32>
// CHECK: return %[[S]], %[[P]]
func.func @stage(%x: tensor<1x3x16x16xf32>, %w0: tensor<16x3x3x3xf32>,
                 %w: tensor<16x16x3x3xf32>, %ws: tensor<32x16x3x3xf32>,
                 %wp: tensor<32x16x1x1xf32>)
    -> (tensor<1x32x4x4xf32>, tensor<1x32x4x4xf32>) {
  %stem = weft.conv %x, %w0 strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1]
            : (tensor<1x3x16x16xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x16x16xf32>
  %pool = weft.pool max %stem kernel_shape [2, 2] strides [2, 2]
            pads [0, 0, 0, 0] dilations [1, 1]
            : tensor<1x16x16x16xf32> -> tensor<1x16x8x8xf32>
  %a = weft.conv %pool, %w strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1]
         clamp_min 0.0
         : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
  %b = weft.conv %a, %w addend %pool strides [1, 1] pads [1, 1, 1, 1]
         dilations [1, 1] clamp_min 0.0
         : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>, tensor<1x16x8x8xf32>)
         -> tensor<1x16x8x8xf32>
  %c = weft.conv %b, %w strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1]
         : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
  %d = weft.conv %c, %w addend %b strides [1, 1] pads [1, 1, 1, 1]
         dilations [1, 1]
         : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>, tensor<1x16x8x8xf32>)
         -> tensor<1x16x8x8xf32>
  %s = weft.conv %d, %ws strides [2, 2] pads [1, 1, 1, 1] dilations [1, 1]
         : (tensor<1x16x8x8xf32>, tensor<32x16x3x3xf32>) -> tensor<1x32x4x4xf32>
  %p = weft.conv %d, %wp strides [2, 2] pads [0, 0, 0, 0] dilations [1, 1]
         : (tensor<1x16x8x8xf32>, tensor<32x16x1x1xf32>) -> tensor<1x32x4x4xf32>
  return %s, %p : tensor<1x32x4x4xf32>, tensor<1x32x4x4xf32>
}

// -----

// A CRNN-style column: pools between blocked convolutions keep the layout
// (max and average), a 2x1 kernel and 1-D convolutions take it too. The
// first 2-D result feeds a pool only; the last tensor is read by a Squeeze
// (a reshape), which needs the channels-first layout, and so the
// convolution that writes it keeps it.
// CHECK-LABEL: func.func @column
// CHECK: %[[A:.*]] = weft.conv %arg0, %arg1 {{.*}} blocked_result : (tensor<1x16x8x8xf32>, tensor<32x16x3x3xf32>) -> tensor<1x2x8x8x16xf32>
// CHECK: %[[P:.*]] = weft.pool max %[[A]] {{.*}} blocked : tensor<1x2x8x8x16xf32> -> tensor<1x2x4x8x16xf32>
// CHECK: %[[B:.*]] = weft.conv %[[P]], %arg2 {{.*}} blocked_input blocked_result : (tensor<1x2x4x8x16xf32>, tensor<32x32x3x3xf32>) -> tensor<1x2x4x8x16xf32>
// CHECK: %[[Q:.*]] = weft.pool average %[[B]] {{.*}} blocked : tensor<1x2x4x8x16xf32> -> tensor<1x2x2x8x16xf32>
// CHECK: %[[C:.*]] = weft.conv %[[Q]], %arg3 {{.*}} blocked_input : (tensor<1x2x2x8x16xf32>, tensor<32x32x2x1xf32>) -> tensor<1x32x1x8xf32>
// CHECK: %[[R:.*]] = weft.reshape %[[C]]
// CHECK: %[[E:.*]] = weft.conv %[[R]], %arg4 {{.*}} blocked_result : (tensor<1x32x8xf32>, tensor<32x32x3xf32>) -> tensor<1x2x8x16xf32>
// CHECK: %[[F:.*]] = weft.conv %[[E]], %arg4 {{.*}} blocked_input : (tensor<1x2x8x16xf32>, tensor<32x32x3xf32>) -> tensor<1x32x8xf32>
// CHECK: return %[[F]]
func.func @column(%x: tensor<1x16x8x8xf32>, %w1: tensor<32x16x3x3xf32>,
                  %w2: tensor<32x32x3x3xf32>, %w3: tensor<32x32x2x1xf32>,
                  %w4: tensor<32x32x3xf32>, %shape: tensor<3xi64>)
    -> tensor<1x32x8xf32> {
  %a = weft.conv %x, %w1 strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1]
         : (tensor<1x16x8x8xf32>, tensor<32x16x3x3xf32>) -> tensor<1x32x8x8xf32>
  %p = weft.pool max %a kernel_shape [2, 1] strides [2, 1] pads [0, 0, 0, 0]
         dilations [1, 1] : tensor<1x32x8x8xf32> -> tensor<1x32x4x8xf32>
  %b = weft.conv %p, %w2 strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1]
         : (tensor<1x32x4x8xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x4x8xf32>
  %q = weft.pool average %b kernel_shape [2, 1] strides [2, 1]
         pads [0, 0, 0, 0] dilations [1, 1]
         : tensor<1x32x4x8xf32> -> tensor<1x32x2x8xf32>
  %c = weft.conv %q, %w3 strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
         : (tensor<1x32x2x8xf32>, tensor<32x32x2x1xf32>) -> tensor<1x32x1x8xf32>
  %r = weft.reshape %c, %shape : (tensor<1x32x1x8xf32>, tensor<3xi64>) -> tensor<1x32x8xf32>
  %e = weft.conv %r, %w4 strides [1] pads [1, 1] dilations [1]
         : (tensor<1x32x8xf32>, tensor<32x32x3xf32>) -> tensor<1x32x8xf32>
  %f = weft.conv %e, %w4 strides [1] pads [1, 1] dilations [1]
         : (tensor<1x32x8xf32>, tensor<32x32x3xf32>) -> tensor<1x32x8xf32>
  return %f : tensor<1x32x8xf32>
}

// -----

// Convolutions the runtime does not run on oneDNN, or cannot run blocked,
// keep every tensor channels-first: 8 channels (not a multiple of 16),
// group 2, a 1x1 convolution reading the result, a result read by an
// elementwise op, and a pool with indices.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: blocked
func.func @left_alone(%x: tensor<1x16x8x8xf32>, %w8: tensor<8x16x3x3xf32>,
                      %w16: tensor<16x8x3x3xf32>, %wg: tensor<16x8x3x3xf32>,
                      %w1: tensor<16x16x1x1xf32>, %w: tensor<16x16x3x3xf32>)
    -> (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>, tensor<1x16x4x4xi64>) {
  %a = weft.conv %x, %w8 strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1]
         : (tensor<1x16x8x8xf32>, tensor<8x16x3x3xf32>) -> tensor<1x8x8x8xf32>
  %b = weft.conv %a, %w16 strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1]
         : (tensor<1x8x8x8xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x8x8xf32>
  %c = weft.conv %b, %wg strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1]
         group 2
         : (tensor<1x16x8x8xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x8x8xf32>
  %d = weft.conv %c, %w strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1]
         : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
  %e = weft.conv %d, %w1 strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
         : (tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x8x8xf32>
  %f = weft.conv %e, %w strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1]
         : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
  %g = weft.binary add %f, %f : (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %h = weft.conv %g, %w strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1]
         : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
  %m, %i = weft.pool max %h kernel_shape [2, 2] strides [2, 2]
             pads [0, 0, 0, 0] dilations [1, 1] with_indices
             : tensor<1x16x8x8xf32> -> tensor<1x16x4x4xf32>, tensor<1x16x4x4xi64>
  return %g, %h, %i : tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>, tensor<1x16x4x4xi64>
}
