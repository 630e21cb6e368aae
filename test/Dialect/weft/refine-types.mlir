// Tests the dialect-wide canonicalization that refines result types once
// inference knows more: through chains of weft ops, and with a tensor.cast
// for users outside the dialect, which keep the old type.
// RUN: weft-opt %s --canonicalize --allow-unregistered-dialect | FileCheck %s

// CHECK-LABEL: func.func @refine_chain
// CHECK-SAME: (%[[X:.*]]: tensor<2x6xf32>) -> tensor<?x?xf32>
func.func @refine_chain(%x: tensor<2x6xf32>) -> tensor<?x?xf32> {
  // CHECK: %[[R:.*]] = weft.reshape %[[X]], %{{.*}} : (tensor<2x6xf32>, tensor<2xi64>) -> tensor<3x4xf32>
  // CHECK: %[[E:.*]] = weft.unary exp %[[R]] : tensor<3x4xf32> -> tensor<3x4xf32>
  // CHECK: %[[CAST:.*]] = tensor.cast %[[E]] : tensor<3x4xf32> to tensor<?x?xf32>
  // CHECK: "test.use"(%[[CAST]]) : (tensor<?x?xf32>) -> ()
  // CHECK: return %[[CAST]] : tensor<?x?xf32>
  %s = weft.constant dense<[3, 4]> : tensor<2xi64>
  %r = weft.reshape %x, %s : (tensor<2x6xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  %e = weft.unary exp %r : tensor<?x?xf32> -> tensor<?x?xf32>
  "test.use"(%e) : (tensor<?x?xf32>) -> ()
  return %e : tensor<?x?xf32>
}

// Tests that an op from an unregistered dialect among weft ops is left alone.
// CHECK-LABEL: func.func @foreign_producer
func.func @foreign_producer() -> tensor<?xf32> {
  // CHECK: %[[F:.*]] = "test.make"() : () -> tensor<?xf32>
  // CHECK: weft.unary relu %[[F]] : tensor<?xf32> -> tensor<?xf32>
  %f = "test.make"() : () -> tensor<?xf32>
  %r = weft.unary relu %f : tensor<?xf32> -> tensor<?xf32>
  return %r : tensor<?xf32>
}
