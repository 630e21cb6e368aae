// RUN: weft-opt %s --canonicalize | FileCheck %s

// Tests that constant run-time axes become the attribute form, normalized
// and sorted, and that the result type is then refined.
// CHECK-LABEL: func.func @fold_constant_dynamic_axes
// CHECK-SAME: (%[[X:.*]]: tensor<3x4x5xf32>)
func.func @fold_constant_dynamic_axes(%x: tensor<3x4x5xf32>) -> (tensor<?x?x?xf32>, tensor<?xf32>) {
  // CHECK-DAG: %[[KEEP:.*]] = weft.reduce sum %[[X]] axes [1] keepdims : tensor<3x4x5xf32> -> tensor<3x1x5xf32>
  // CHECK-DAG: %[[DROP:.*]] = weft.reduce max %[[X]] axes [0, 2] : tensor<3x4x5xf32> -> tensor<4xf32>
  // CHECK-NOT: weft.constant
  %a = weft.constant dense<[-2]> : tensor<1xi64>
  %b = weft.constant dense<[2, 0]> : tensor<2xi64>
  %keep = weft.reduce sum %x axes %a keepdims : tensor<3x4x5xf32>, tensor<1xi64> -> tensor<?x?x?xf32>
  %drop = weft.reduce max %x axes %b : tensor<3x4x5xf32>, tensor<2xi64> -> tensor<?xf32>
  return %keep, %drop : tensor<?x?x?xf32>, tensor<?xf32>
}

// Tests that axes computed from constants fold to the attribute form and
// that the reduction of a constant then folds too.
// CHECK-LABEL: func.func @fold_computed_dynamic_axes
func.func @fold_computed_dynamic_axes() -> tensor<?xi32> {
  // CHECK: %[[C:.*]] = weft.constant dense<[3, 12]> : tensor<2xi32>
  // CHECK-NOT: weft.reduce
  // CHECK: %[[CAST:.*]] = tensor.cast %[[C]] : tensor<2xi32> to tensor<?xi32>
  // CHECK: return %[[CAST]]
  %c = weft.constant dense<[[1, 2], [3, 4], [-1, 6]]> : tensor<3x2xi32>
  %shape = weft.shape %c : tensor<3x2xi32> -> tensor<2xi64>
  %i = weft.constant dense<[-1]> : tensor<1xi64>
  %rank = weft.gather %shape[%i] axis = 0 : (tensor<2xi64>, tensor<1xi64>) -> tensor<1xi64>
  %one = weft.constant dense<[1]> : tensor<1xi64>
  %axis = weft.binary sub %rank, %one : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %zero = weft.binary sub %axis, %one : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %r = weft.reduce sum %c axes %zero : tensor<3x2xi32>, tensor<1xi64> -> tensor<?xi32>
  return %r : tensor<?xi32>
}

// Tests that run-time axes that are not constant stay, and that folds of
// the attribute form (here: reducing size-1 dimensions) do not apply to
// them.
// CHECK-LABEL: func.func @keep_dynamic_axes
// CHECK-SAME: (%[[X:.*]]: tensor<?x?xf32>, %[[A:.*]]: tensor<1xi64>)
func.func @keep_dynamic_axes(%x: tensor<?x?xf32>, %a: tensor<1xi64>) -> tensor<?x?xf32> {
  // CHECK: %[[R:.*]] = weft.reduce sum %[[X]] axes %[[A]] keepdims : tensor<?x?xf32>, tensor<1xi64> -> tensor<?x?xf32>
  // CHECK: return %[[R]]
  %r = weft.reduce sum %x axes %a keepdims : tensor<?x?xf32>, tensor<1xi64> -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// Tests that a constant input with run-time axes is not folded.
// CHECK-LABEL: func.func @keep_dynamic_axes_of_constant
// CHECK-SAME: (%[[A:.*]]: tensor<1xi64>)
func.func @keep_dynamic_axes_of_constant(%a: tensor<1xi64>) -> tensor<?xf32> {
  // CHECK: %[[C:.*]] = weft.constant
  // CHECK: %[[R:.*]] = weft.reduce sum %[[C]] axes %[[A]] : tensor<2x3xf32>, tensor<1xi64> -> tensor<?xf32>
  // CHECK: return %[[R]]
  %c = weft.constant dense<1.0> : tensor<2x3xf32>
  %r = weft.reduce sum %c axes %a : tensor<2x3xf32>, tensor<1xi64> -> tensor<?xf32>
  return %r : tensor<?xf32>
}
