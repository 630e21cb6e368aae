// Tests that weft.constant and weft.weight round-trip.
// RUN: weft-opt %s | weft-opt | FileCheck %s

// CHECK-LABEL: func.func @constants
func.func @constants() -> (tensor<2xi64>, tensor<f32>, tensor<2x2xi1>) {
  // CHECK: weft.constant dense<[1, 2]> : tensor<2xi64>
  %a = weft.constant dense<[1, 2]> : tensor<2xi64>
  // CHECK: weft.constant dense<5.000000e-01> : tensor<f32>
  %b = weft.constant dense<0.5> : tensor<f32>
  // CHECK: weft.constant dense<true> : tensor<2x2xi1>
  %c = weft.constant dense<true> : tensor<2x2xi1>
  return %a, %b, %c : tensor<2xi64>, tensor<f32>, tensor<2x2xi1>
}

// CHECK-LABEL: func.func @weights
func.func @weights() -> (tensor<256x784xf32>, tensor<3xi1>) {
  // CHECK: weft.weight "fc1.weight" from "mlp.onnx" offset 1024 size 802816 checksum "9f2a44b0c3e1d7a8" : tensor<256x784xf32>
  %w = weft.weight "fc1.weight" from "mlp.onnx" offset 1024 size 802816
         checksum "9f2a44b0c3e1d7a8" : tensor<256x784xf32>
  // Booleans take one byte each, as ONNX stores them.
  // CHECK: weft.weight "mask" from "sub/data.bin" offset 0 size 3
  %m = weft.weight "mask" from "sub/data.bin" offset 0 size 3
         checksum "0000000000000000" : tensor<3xi1>
  return %w, %m : tensor<256x784xf32>, tensor<3xi1>
}
