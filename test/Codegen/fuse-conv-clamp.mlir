// RUN: weft-opt %s --weft-fuse-conv-clamp --split-input-file | FileCheck %s

// Relu after a convolution: clamp_min 0.
// CHECK-LABEL: func.func @relu
// CHECK: %[[Y:.*]] = weft.conv %arg0, %arg1, %arg2 strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1] clamp_min 0.000000e+00 :
// CHECK-NOT: weft.unary
// CHECK: return %[[Y]]
func.func @relu(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>,
                %b: tensor<8xf32>) -> tensor<1x8x8x8xf32> {
  %y = weft.conv %x, %w, %b strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1]
         : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>, tensor<8xf32>)
         -> tensor<1x8x8x8xf32>
  %r = weft.unary relu %y : tensor<1x8x8x8xf32> -> tensor<1x8x8x8xf32>
  return %r : tensor<1x8x8x8xf32>
}

// -----

// Relu6 (Clip 0..6) after a depthwise convolution, and a Clip with only an
// upper bound.
// CHECK-LABEL: func.func @relu6
// CHECK: weft.conv {{.*}} group 4 clamp_min 0.000000e+00 clamp_max 6.000000e+00 :
// CHECK-NOT: weft.clip
// CHECK-LABEL: func.func @upper_only
// CHECK: weft.conv {{.*}} dilations [1, 1] clamp_max 2.500000e+00 :
func.func @relu6(%x: tensor<1x4x8x8xf32>, %w: tensor<4x1x3x3xf32>)
    -> tensor<1x4x8x8xf32> {
  %lo = weft.constant dense<0.0> : tensor<f32>
  %hi = weft.constant dense<6.0> : tensor<f32>
  %y = weft.conv %x, %w strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1]
         group 4 : (tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32>)
         -> tensor<1x4x8x8xf32>
  %r = weft.clip %y min %lo max %hi
         : (tensor<1x4x8x8xf32>, tensor<f32>, tensor<f32>) -> tensor<1x4x8x8xf32>
  return %r : tensor<1x4x8x8xf32>
}
func.func @upper_only(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x1x1xf32>)
    -> tensor<1x4x8x8xf32> {
  %hi = weft.constant dense<2.5> : tensor<f32>
  %y = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
         : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %r = weft.clip %y max %hi
         : (tensor<1x4x8x8xf32>, tensor<f32>) -> tensor<1x4x8x8xf32>
  return %r : tensor<1x4x8x8xf32>
}

// -----

// ONNX Clip with min > max gives max everywhere: both bounds are max.
// CHECK-LABEL: func.func @crossed_bounds
// CHECK: weft.conv {{.*}} clamp_min 1.000000e+00 clamp_max 1.000000e+00 :
func.func @crossed_bounds(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x1x1xf32>)
    -> tensor<1x4x8x8xf32> {
  %lo = weft.constant dense<3.0> : tensor<f32>
  %hi = weft.constant dense<1.0> : tensor<f32>
  %y = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
         : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %r = weft.clip %y min %lo max %hi
         : (tensor<1x4x8x8xf32>, tensor<f32>, tensor<f32>) -> tensor<1x4x8x8xf32>
  return %r : tensor<1x4x8x8xf32>
}

// -----

// Not fused: a second user of the convolution, bounds that are not
// constants, and other activations.
// CHECK-LABEL: func.func @not_fused
// CHECK-NOT: clamp_m
// CHECK: weft.unary relu
// CHECK: weft.clip
// CHECK: weft.unary sigmoid
func.func @not_fused(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x1x1xf32>,
                     %hi: tensor<f32>)
    -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>,
        tensor<1x4x8x8xf32>) {
  %y = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
         : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %r = weft.unary relu %y : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  %z = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
         : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %c = weft.clip %z max %hi
         : (tensor<1x4x8x8xf32>, tensor<f32>) -> tensor<1x4x8x8xf32>
  %v = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
         : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %s = weft.unary sigmoid %v : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  return %y, %r, %c, %s : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>,
                          tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
}

// -----

// A residual Add after a convolution (ResNet: then a Relu) becomes its
// addend, then the Relu its clamp; the fused convolution takes the Add's
// place, after the addend's definition. The Add's operands may come in
// either order.
// CHECK-LABEL: func.func @residual_relu
// CHECK: %[[R:.*]] = weft.unary neg %arg3
// CHECK: %[[Y:.*]] = weft.conv %arg0, %arg1, %arg2 addend %[[R]] strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1] clamp_min 0.000000e+00 :
// CHECK-NOT: weft.binary
// CHECK-NOT: weft.unary relu
// CHECK: return %[[Y]]
// CHECK-LABEL: func.func @addend_first
// CHECK: %[[Z:.*]] = weft.conv %arg0, %arg1 addend %arg2 strides
// CHECK-NOT: weft.binary
// CHECK: return %[[Z]]
func.func @residual_relu(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>,
                         %b: tensor<4xf32>, %s: tensor<1x4x8x8xf32>)
    -> tensor<1x4x8x8xf32> {
  %y = weft.conv %x, %w, %b strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1]
         : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<4xf32>)
         -> tensor<1x4x8x8xf32>
  %r = weft.unary neg %s : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  %a = weft.binary add %y, %r
         : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %z = weft.unary relu %a : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  return %z : tensor<1x4x8x8xf32>
}
func.func @addend_first(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x1x1xf32>,
                        %s: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %y = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
         : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %a = weft.binary add %s, %y
         : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  return %a : tensor<1x4x8x8xf32>
}

// -----

// What stays: an Add that broadcasts, a convolution with another user, an
// Add after a clamp (the clamp would have to come after it), a Sub.
// CHECK-LABEL: func.func @not_fused
// CHECK-NOT: addend
// CHECK: weft.binary add
// CHECK: weft.binary add
// CHECK: weft.conv {{.*}} clamp_min 0.000000e+00 :
// CHECK: weft.binary add
// CHECK: weft.binary sub
func.func @not_fused(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x1x1xf32>,
                     %s: tensor<1x4x8x8xf32>, %c: tensor<1x4x1x1xf32>)
    -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>,
        tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) {
  %y0 = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
          : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %a0 = weft.binary add %y0, %c
          : (tensor<1x4x8x8xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %y1 = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
          : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %a1 = weft.binary add %y1, %s
          : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %y2 = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
          : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %r2 = weft.unary relu %y2 : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  %a2 = weft.binary add %r2, %s
          : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %y3 = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1]
          : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %a3 = weft.binary sub %y3, %s
          : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  return %a0, %a1, %y1, %a2, %a3 : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>,
      tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
}
