// RUN: weft-opt %s --weft-expose-program-abi --weft-bufferize -split-input-file -verify-diagnostics

// Tests that an element type without a CPU kernel is refused by name.
func.func @main(%x: tensor<1x1x4x4xf64>, %w: tensor<1x1x3x3xf64>) -> tensor<1x1x2x2xf64> {
  // expected-error @+2 {{'weft.conv' op on f64 is not supported by the CPU backend (its kernel takes f32)}}
  // expected-error @+1 {{failed to bufferize op}}
  %y = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] : (tensor<1x1x4x4xf64>, tensor<1x1x3x3xf64>) -> tensor<1x1x2x2xf64>
  return %y : tensor<1x1x2x2xf64>
}

// -----

// Tests that weights must have been laid out (64-byte aligned) first.
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{is not 64-byte aligned in the weights file}}
  // expected-error @+1 {{failed to bufferize op}}
  %w = weft.weight "w" from "model.onnx" offset 13 size 16 checksum "0000000000000000" : tensor<4xf32>
  %r = weft.softmax %w axis 0 : tensor<4xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// Tests that a weft op with neither a lowering nor a bufferization model
// (weft.range here, too long to fold: weft-lower-to-linalg, which lowers it,
// does not run) is reported by name as a bug in Weft, before one-shot
// bufferization.
func.func @main() -> tensor<70000xi64> {
  %start = arith.constant dense<0> : tensor<i64>
  %limit = arith.constant dense<70000> : tensor<i64>
  %delta = arith.constant dense<1> : tensor<i64>
  // expected-error @+1 {{internal: weft.range has no lowering for this target; this is a bug in Weft, please report it with the model}}
  %r = weft.range %start, %limit, %delta : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<70000xi64>
  return %r : tensor<70000xi64>
}

// -----

// Tests that a channels-last convolution the CPU kernel has no form for (a
// 3x3 convolution of group 1) is refused by name.
func.func @main(%x: tensor<1x6x6x4xf32>, %w: tensor<3x3x4x8xf32>) -> tensor<1x8x4x4xf32> {
  // expected-error @+2 {{'weft.conv' op with a channels-last or kernel-first layout is supported by the CPU backend for 2-D 1x1 convolutions (group 1, stride 1, no pads) and 2-D depthwise ones only}}
  // expected-error @+1 {{failed to bufferize op}}
  %y = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] channels_last_input kernel_first_weight : (tensor<1x6x6x4xf32>, tensor<3x3x4x8xf32>) -> tensor<1x8x4x4xf32>
  return %y : tensor<1x8x4x4xf32>
}

// -----

// Tests that a weight stored permuted must have been laid out first (the
// weights file permutes it).
func.func @main(%x: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  // expected-error @+2 {{is stored permuted, which the weights file does only once weftc lays weights out}}
  // expected-error @+1 {{failed to bufferize op}}
  %w = weft.weight "w" from "model.onnx" offset 0 size 64 checksum "0000000000000000" permuted [2, 3, 1, 0] : tensor<1x1x4x4xf32>
  %y = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] channels_last_input channels_last_result kernel_first_weight : (tensor<1x4x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x4x4x4xf32>
  return %y : tensor<1x4x4x4xf32>
}
