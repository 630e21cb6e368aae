// Tests that weft-print-summary lists inputs and outputs by their ONNX names,
// counts ops by kind, sums weight bytes and leaves the IR unchanged.
// RUN: weft-opt %s --weft-print-summary -o %t.mlir | FileCheck %s
// RUN: weft-opt %t.mlir | FileCheck %s --check-prefix=IR
// RUN: weft-opt %s --weft-print-summary=output=%t.txt -o /dev/null && FileCheck %s < %t.txt

// CHECK-LABEL: func @main
// CHECK-NEXT:   input  x : tensor<1x4xf32>
// CHECK-NEXT:   output y : tensor<1x4xf32>
// CHECK-NEXT:   output #1 : tensor<2xi64>
// CHECK-NEXT:   ops 0:
// CHECK-NEXT:   weights 1 (0.0 MB), constants 1
// IR: weft.weight "w" from "model.onnx" offset 64 size 16
func.func @main(%x: tensor<1x4xf32> {weft.name = "x"})
    -> (tensor<1x4xf32> {weft.name = "y"}, tensor<2xi64>) {
  %w = weft.weight "w" from "model.onnx" offset 64 size 16
         checksum "0123456789abcdef" : tensor<1x4xf32>
  %c = weft.constant dense<[1, 4]> : tensor<2xi64>
  return %w, %c : tensor<1x4xf32>, tensor<2xi64>
}
