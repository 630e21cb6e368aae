// RUN: weft-opt %s | weft-opt | FileCheck %s

// Tests that every reduce kind round-trips, with and without keepdims.
// CHECK-LABEL: func.func @reduce_kinds
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
func.func @reduce_kinds(%x: tensor<2x3x4xf32>) {
  // CHECK: weft.reduce mean %[[X]] axes [1] keepdims : tensor<2x3x4xf32> -> tensor<2x1x4xf32>
  %mean = weft.reduce mean %x axes [1] keepdims : tensor<2x3x4xf32> -> tensor<2x1x4xf32>
  // CHECK: weft.reduce sum %[[X]] axes [0, 2] : tensor<2x3x4xf32> -> tensor<3xf32>
  %sum = weft.reduce sum %x axes [0, 2] : tensor<2x3x4xf32> -> tensor<3xf32>
  // CHECK: weft.reduce max %[[X]] axes [2] : tensor<2x3x4xf32> -> tensor<2x3xf32>
  %max = weft.reduce max %x axes [2] : tensor<2x3x4xf32> -> tensor<2x3xf32>
  // CHECK: weft.reduce min %[[X]] axes [0] keepdims : tensor<2x3x4xf32> -> tensor<1x3x4xf32>
  %min = weft.reduce min %x axes [0] keepdims : tensor<2x3x4xf32> -> tensor<1x3x4xf32>
  // CHECK: weft.reduce prod %[[X]] axes [0, 1, 2] : tensor<2x3x4xf32> -> tensor<f32>
  %prod = weft.reduce prod %x axes [0, 1, 2] : tensor<2x3x4xf32> -> tensor<f32>
  // CHECK: weft.reduce l1 %[[X]] axes [0, 1, 2] keepdims : tensor<2x3x4xf32> -> tensor<1x1x1xf32>
  %l1 = weft.reduce l1 %x axes [0, 1, 2] keepdims : tensor<2x3x4xf32> -> tensor<1x1x1xf32>
  // CHECK: weft.reduce l2 %[[X]] axes [1, 2] : tensor<2x3x4xf32> -> tensor<2xf32>
  %l2 = weft.reduce l2 %x axes [1, 2] : tensor<2x3x4xf32> -> tensor<2xf32>
  // CHECK: weft.reduce log_sum_exp %[[X]] axes [2] keepdims : tensor<2x3x4xf32> -> tensor<2x3x1xf32>
  %lse = weft.reduce log_sum_exp %x axes [2] keepdims : tensor<2x3x4xf32> -> tensor<2x3x1xf32>
  // CHECK: weft.reduce sum_square %[[X]] axes [1] : tensor<2x3x4xf32> -> tensor<2x4xf32>
  %ss = weft.reduce sum_square %x axes [1] : tensor<2x3x4xf32> -> tensor<2x4xf32>
  // CHECK: weft.reduce log_sum %[[X]] axes [0] : tensor<2x3x4xf32> -> tensor<3x4xf32>
  %ls = weft.reduce log_sum %x axes [0] : tensor<2x3x4xf32> -> tensor<3x4xf32>
  return
}

// Tests that unreduced dynamic dimensions stay dynamic and that a result
// type may be less static than the inferred one.
// CHECK-LABEL: func.func @reduce_dynamic
// CHECK-SAME: (%[[X:.*]]: tensor<?x64x7x7xf32>)
func.func @reduce_dynamic(%x: tensor<?x64x7x7xf32>) -> (tensor<?x64x1x1xf32>, tensor<?x?xf32>) {
  // CHECK: %[[POOL:.*]] = weft.reduce mean %[[X]] axes [2, 3] keepdims : tensor<?x64x7x7xf32> -> tensor<?x64x1x1xf32>
  %pool = weft.reduce mean %x axes [2, 3] keepdims : tensor<?x64x7x7xf32> -> tensor<?x64x1x1xf32>
  // CHECK: %[[LOOSE:.*]] = weft.reduce max %[[X]] axes [2, 3] : tensor<?x64x7x7xf32> -> tensor<?x?xf32>
  %loose = weft.reduce max %x axes [2, 3] : tensor<?x64x7x7xf32> -> tensor<?x?xf32>
  // CHECK: return %[[POOL]], %[[LOOSE]]
  return %pool, %loose : tensor<?x64x1x1xf32>, tensor<?x?xf32>
}

// Tests reductions over no axes, of scalars, of integers and of booleans.
// CHECK-LABEL: func.func @reduce_edge_cases
// CHECK-SAME: (%[[X:.*]]: tensor<3x4xi32>, %[[S:.*]]: tensor<f16>, %[[B:.*]]: tensor<2x3xi1>)
func.func @reduce_edge_cases(%x: tensor<3x4xi32>, %s: tensor<f16>, %b: tensor<2x3xi1>) {
  // CHECK: weft.reduce sum_square %[[X]] axes [] : tensor<3x4xi32> -> tensor<3x4xi32>
  %noop = weft.reduce sum_square %x axes [] : tensor<3x4xi32> -> tensor<3x4xi32>
  // CHECK: weft.reduce l2 %[[S]] axes [] keepdims : tensor<f16> -> tensor<f16>
  %scalar = weft.reduce l2 %s axes [] keepdims : tensor<f16> -> tensor<f16>
  // CHECK: weft.reduce max %[[B]] axes [1] : tensor<2x3xi1> -> tensor<2xi1>
  %any = weft.reduce max %b axes [1] : tensor<2x3xi1> -> tensor<2xi1>
  // CHECK: weft.reduce min %[[B]] axes [0, 1] : tensor<2x3xi1> -> tensor<i1>
  %all = weft.reduce min %b axes [0, 1] : tensor<2x3xi1> -> tensor<i1>
  return
}

// Tests that arg_reduce round-trips with its flags and gives i64.
// CHECK-LABEL: func.func @arg_reduce
// CHECK-SAME: (%[[X:.*]]: tensor<?x1000xf32>, %[[Y:.*]]: tensor<3x4xui8>)
func.func @arg_reduce(%x: tensor<?x1000xf32>, %y: tensor<3x4xui8>) -> tensor<?x1xi64> {
  // CHECK: %[[AMAX:.*]] = weft.arg_reduce max %[[X]] axis 1 keepdims : tensor<?x1000xf32> -> tensor<?x1xi64>
  %amax = weft.arg_reduce max %x axis 1 keepdims : tensor<?x1000xf32> -> tensor<?x1xi64>
  // CHECK: weft.arg_reduce min %[[X]] axis 0 select_last_index : tensor<?x1000xf32> -> tensor<1000xi64>
  %amin = weft.arg_reduce min %x axis 0 select_last_index : tensor<?x1000xf32> -> tensor<1000xi64>
  // CHECK: weft.arg_reduce max %[[Y]] axis 1 keepdims select_last_index : tensor<3x4xui8> -> tensor<3x1xi64>
  %both = weft.arg_reduce max %y axis 1 keepdims select_last_index : tensor<3x4xui8> -> tensor<3x1xi64>
  // CHECK: return %[[AMAX]]
  return %amax : tensor<?x1xi64>
}

// Tests that softmax round-trips along one axis and over trailing axes.
// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x32000xf32>, %[[Y:.*]]: tensor<4x3x5xbf16>)
func.func @softmax(%x: tensor<?x?x32000xf32>, %y: tensor<4x3x5xbf16>) {
  // CHECK: weft.softmax %[[X]] axis 2 : tensor<?x?x32000xf32> -> tensor<?x?x32000xf32>
  %p = weft.softmax %x axis 2 : tensor<?x?x32000xf32> -> tensor<?x?x32000xf32>
  // CHECK: weft.softmax log %[[X]] axis 0 : tensor<?x?x32000xf32> -> tensor<?x?x32000xf32>
  %lp = weft.softmax log %x axis 0 : tensor<?x?x32000xf32> -> tensor<?x?x32000xf32>
  // CHECK: weft.softmax %[[Y]] axis 1 trailing : tensor<4x3x5xbf16> -> tensor<4x3x5xbf16>
  %t = weft.softmax %y axis 1 trailing : tensor<4x3x5xbf16> -> tensor<4x3x5xbf16>
  // CHECK: weft.softmax log %[[Y]] axis 0 trailing : tensor<4x3x5xbf16> -> tensor<4x?x5xbf16>
  %lt = weft.softmax log %y axis 0 trailing : tensor<4x3x5xbf16> -> tensor<4x?x5xbf16>
  return
}
