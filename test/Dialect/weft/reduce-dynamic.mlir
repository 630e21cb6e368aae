// RUN: weft-opt %s | weft-opt | FileCheck %s

// Tests that reductions over axes given at run time round-trip, with result
// dimensions static only where every choice of axes gives the same size.
// CHECK-LABEL: func.func @reduce_dynamic_axes
// CHECK-SAME: (%[[X:.*]]: tensor<3x1x2xf32>, %[[A:.*]]: tensor<1xi64>, %[[B:.*]]: tensor<2xi64>)
func.func @reduce_dynamic_axes(%x: tensor<3x1x2xf32>, %a: tensor<1xi64>, %b: tensor<2xi64>) {
  // CHECK: weft.reduce sum %[[X]] axes %[[A]] keepdims : tensor<3x1x2xf32>, tensor<1xi64> -> tensor<?x1x?xf32>
  %keep = weft.reduce sum %x axes %a keepdims : tensor<3x1x2xf32>, tensor<1xi64> -> tensor<?x1x?xf32>
  // CHECK: weft.reduce max %[[X]] axes %[[B]] : tensor<3x1x2xf32>, tensor<2xi64> -> tensor<?xf32>
  %drop = weft.reduce max %x axes %b : tensor<3x1x2xf32>, tensor<2xi64> -> tensor<?xf32>
  // CHECK: weft.reduce l2 %[[X]] axes %[[A]] : tensor<3x1x2xf32>, tensor<1xi64> -> tensor<?x?xf32>
  %l2 = weft.reduce l2 %x axes %a : tensor<3x1x2xf32>, tensor<1xi64> -> tensor<?x?xf32>
  return
}

// Tests the sizes known with axes given at run time: equal dimensions,
// every dimension reduced, and a result less static than inferred.
// CHECK-LABEL: func.func @reduce_dynamic_axes_known_sizes
// CHECK-SAME: (%[[X:.*]]: tensor<4x4x4xi32>, %[[A:.*]]: tensor<1xi64>, %[[C:.*]]: tensor<3xi64>)
func.func @reduce_dynamic_axes_known_sizes(%x: tensor<4x4x4xi32>, %a: tensor<1xi64>, %c: tensor<3xi64>) {
  // CHECK: weft.reduce sum %[[X]] axes %[[A]] : tensor<4x4x4xi32>, tensor<1xi64> -> tensor<4x4xi32>
  %same = weft.reduce sum %x axes %a : tensor<4x4x4xi32>, tensor<1xi64> -> tensor<4x4xi32>
  // CHECK: weft.reduce min %[[X]] axes %[[C]] keepdims : tensor<4x4x4xi32>, tensor<3xi64> -> tensor<1x1x1xi32>
  %all = weft.reduce min %x axes %c keepdims : tensor<4x4x4xi32>, tensor<3xi64> -> tensor<1x1x1xi32>
  // CHECK: weft.reduce prod %[[X]] axes %[[C]] : tensor<4x4x4xi32>, tensor<3xi64> -> tensor<i32>
  %scalar = weft.reduce prod %x axes %c : tensor<4x4x4xi32>, tensor<3xi64> -> tensor<i32>
  // CHECK: weft.reduce sum %[[X]] axes %[[A]] : tensor<4x4x4xi32>, tensor<1xi64> -> tensor<?x?xi32>
  %loose = weft.reduce sum %x axes %a : tensor<4x4x4xi32>, tensor<1xi64> -> tensor<?x?xi32>
  return
}

// Tests that constant run-time axes give the attribute form's shape
// (negative and unsorted axes are normalized for inference).
// CHECK-LABEL: func.func @reduce_constant_dynamic_axes
// CHECK-SAME: (%[[X:.*]]: tensor<3x4x5xf32>)
func.func @reduce_constant_dynamic_axes(%x: tensor<3x4x5xf32>) -> tensor<4xf32> {
  // CHECK: %[[A:.*]] = weft.constant dense<[-1, 0]> : tensor<2xi64>
  %a = weft.constant dense<[-1, 0]> : tensor<2xi64>
  // CHECK: %[[R:.*]] = weft.reduce mean %[[X]] axes %[[A]] : tensor<3x4x5xf32>, tensor<2xi64> -> tensor<4xf32>
  %r = weft.reduce mean %x axes %a : tensor<3x4x5xf32>, tensor<2xi64> -> tensor<4xf32>
  // CHECK: return %[[R]]
  return %r : tensor<4xf32>
}
