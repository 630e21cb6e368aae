// Tests the verifiers of weft.constant and weft.weight.
// RUN: weft-opt %s -split-input-file -verify-diagnostics

func.func @weight_size() -> tensor<4xf32> {
  // expected-error @+1 {{'weft.weight' op weight 'w' has size 8 bytes but 'tensor<4xf32>' needs 16}}
  %w = weft.weight "w" from "m.onnx" offset 0 size 8 checksum "0123456789abcdef" : tensor<4xf32>
  return %w : tensor<4xf32>
}

// -----

func.func @weight_dynamic() -> tensor<?xf32> {
  // expected-error @+1 {{'weft.weight' op weight 'w' must have a static shape, got 'tensor<?xf32>'}}
  %w = weft.weight "w" from "m.onnx" offset 0 size 8 checksum "0123456789abcdef" : tensor<?xf32>
  return %w : tensor<?xf32>
}

// -----

func.func @weight_offset() -> tensor<4xf32> {
  // expected-error @+1 {{'weft.weight' op weight 'w' has negative offset -16}}
  %w = weft.weight "w" from "m.onnx" offset -16 size 16 checksum "0123456789abcdef" : tensor<4xf32>
  return %w : tensor<4xf32>
}

// -----

func.func @weight_checksum() -> tensor<4xf32> {
  // expected-error @+1 {{'weft.weight' op checksum must be 16 hex digits, got 'xyz'}}
  %w = weft.weight "w" from "m.onnx" offset 0 size 16 checksum "xyz" : tensor<4xf32>
  return %w : tensor<4xf32>
}

// -----

func.func @weight_type() -> tensor<4xi16> {
  // expected-error @+1 {{'weft.weight' op result #0 must be ranked tensor}}
  %w = weft.weight "w" from "m.onnx" offset 0 size 8 checksum "0123456789abcdef" : tensor<4xi16>
  return %w : tensor<4xi16>
}

// -----

func.func @constant_type() -> tensor<2xi64> {
  // expected-error @+1 {{'weft.constant' op value type 'tensor<2xi32>' differs from result type 'tensor<2xi64>'}}
  %c = "weft.constant"() {value = dense<[1, 2]> : tensor<2xi32>} : () -> tensor<2xi64>
  return %c : tensor<2xi64>
}
