// RUN: weft-opt %s | weft-opt | FileCheck %s

// Tests squeeze and unsqueeze with axes given at run time: dimensions are
// static where every choice of axes gives the same size.
// CHECK-LABEL: func.func @squeeze_unsqueeze_dynamic_axes
// CHECK-SAME: (%[[X:.*]]: tensor<1x3x1x5xf32>, %[[Y:.*]]: tensor<1x1xf32>, %[[A:.*]]: tensor<1xi64>, %[[B:.*]]: tensor<2xi64>)
func.func @squeeze_unsqueeze_dynamic_axes(%x: tensor<1x3x1x5xf32>, %y: tensor<1x1xf32>, %a: tensor<1xi64>, %b: tensor<2xi64>) {
  // CHECK: weft.squeeze %[[X]] axes = %[[A]] : tensor<1x3x1x5xf32>, tensor<1xi64> -> tensor<?x?x?xf32>
  %s = weft.squeeze %x axes = %a : tensor<1x3x1x5xf32>, tensor<1xi64> -> tensor<?x?x?xf32>
  // The two dimensions that can be 1 are the axes.
  // CHECK: weft.squeeze %[[X]] axes = %[[B]] : tensor<1x3x1x5xf32>, tensor<2xi64> -> tensor<3x5xf32>
  %t = weft.squeeze %x axes = %b : tensor<1x3x1x5xf32>, tensor<2xi64> -> tensor<3x5xf32>
  // CHECK: weft.unsqueeze %[[X]] axes = %[[B]] : tensor<1x3x1x5xf32>, tensor<2xi64> -> tensor<1x?x?x?x?x?xf32>
  %u = weft.unsqueeze %x axes = %b : tensor<1x3x1x5xf32>, tensor<2xi64> -> tensor<1x?x?x?x?x?xf32>
  // CHECK: weft.unsqueeze %[[Y]] axes = %[[A]] : tensor<1x1xf32>, tensor<1xi64> -> tensor<1x1x1xf32>
  %v = weft.unsqueeze %y axes = %a : tensor<1x1xf32>, tensor<1xi64> -> tensor<1x1x1xf32>
  return
}

// Tests squeeze with dynamic dimensions, which can be 1, and constant
// run-time axes.
// CHECK-LABEL: func.func @squeeze_dynamic_dims
// CHECK-SAME: (%[[X:.*]]: tensor<?x4x?xf32>, %[[A:.*]]: tensor<1xi64>)
func.func @squeeze_dynamic_dims(%x: tensor<?x4x?xf32>, %a: tensor<1xi64>) {
  // CHECK: weft.squeeze %[[X]] axes = %[[A]] : tensor<?x4x?xf32>, tensor<1xi64> -> tensor<?x?xf32>
  %s = weft.squeeze %x axes = %a : tensor<?x4x?xf32>, tensor<1xi64> -> tensor<?x?xf32>
  // CHECK: %[[C:.*]] = weft.constant dense<-1> : tensor<1xi64>
  %c = weft.constant dense<-1> : tensor<1xi64>
  // CHECK: weft.squeeze %[[X]] axes = %[[C]] : tensor<?x4x?xf32>, tensor<1xi64> -> tensor<?x4xf32>
  %t = weft.squeeze %x axes = %c : tensor<?x4x?xf32>, tensor<1xi64> -> tensor<?x4xf32>
  return
}

// Tests slice with axes given at run time: every non-empty dimension is
// dynamic.
// CHECK-LABEL: func.func @slice_dynamic_axes
// CHECK-SAME: (%[[X:.*]]: tensor<20x0x5xf32>, %[[S:.*]]: tensor<2xi64>, %[[E:.*]]: tensor<2xi32>, %[[A:.*]]: tensor<2xi64>)
func.func @slice_dynamic_axes(%x: tensor<20x0x5xf32>, %s: tensor<2xi64>, %e: tensor<2xi32>, %a: tensor<2xi64>) {
  // CHECK: weft.slice %[[X]][%[[S]], %[[E]], %[[S]]] axes = %[[A]] : (tensor<20x0x5xf32>, tensor<2xi64>, tensor<2xi32>, tensor<2xi64>, tensor<2xi64>) -> tensor<?x0x?xf32>
  %r = weft.slice %x[%s, %e, %s] axes = %a
         : (tensor<20x0x5xf32>, tensor<2xi64>, tensor<2xi32>, tensor<2xi64>, tensor<2xi64>) -> tensor<?x0x?xf32>
  return
}

// Tests split with sizes given at run time: pieces are dynamic along the
// axis, except for an empty dimension or a single piece.
// CHECK-LABEL: func.func @split_dynamic_sizes
// CHECK-SAME: (%[[X:.*]]: tensor<2x6xf32>, %[[Z:.*]]: tensor<0xf32>, %[[A:.*]]: tensor<2xi64>, %[[B:.*]]: tensor<3xi64>, %[[C:.*]]: tensor<1xi64>)
func.func @split_dynamic_sizes(%x: tensor<2x6xf32>, %z: tensor<0xf32>, %a: tensor<2xi64>, %b: tensor<3xi64>, %c: tensor<1xi64>) {
  // CHECK: weft.split %[[X]] axis = 1 sizes %[[A]] : tensor<2x6xf32>, tensor<2xi64> -> tensor<2x?xf32>, tensor<2x?xf32>
  %p:2 = weft.split %x axis = 1 sizes %a : tensor<2x6xf32>, tensor<2xi64> -> tensor<2x?xf32>, tensor<2x?xf32>
  // CHECK: weft.split %[[Z]] axis = 0 sizes %[[B]] : tensor<0xf32>, tensor<3xi64> -> tensor<0xf32>, tensor<0xf32>, tensor<0xf32>
  %q:3 = weft.split %z axis = 0 sizes %b : tensor<0xf32>, tensor<3xi64> -> tensor<0xf32>, tensor<0xf32>, tensor<0xf32>
  // CHECK: weft.split %[[X]] axis = 0 sizes %[[C]] : tensor<2x6xf32>, tensor<1xi64> -> tensor<2x6xf32>
  %r = weft.split %x axis = 0 sizes %c : tensor<2x6xf32>, tensor<1xi64> -> tensor<2x6xf32>
  return
}

// Tests pad with pads given at run time, with and without a pad value.
// CHECK-LABEL: func.func @pad_dynamic_pads
// CHECK-SAME: (%[[X:.*]]: tensor<1x3x4x5xf32>, %[[V:.*]]: tensor<f32>, %[[P:.*]]: tensor<8xi64>)
func.func @pad_dynamic_pads(%x: tensor<1x3x4x5xf32>, %v: tensor<f32>, %p: tensor<8xi64>) {
  // CHECK: weft.pad constant %[[X]], %[[V]] pads = %[[P]] : (tensor<1x3x4x5xf32>, tensor<f32>, tensor<8xi64>) -> tensor<?x?x?x?xf32>
  %c = weft.pad constant %x, %v pads = %p : (tensor<1x3x4x5xf32>, tensor<f32>, tensor<8xi64>) -> tensor<?x?x?x?xf32>
  // CHECK: weft.pad reflect %[[X]] pads = %[[P]] : (tensor<1x3x4x5xf32>, tensor<8xi64>) -> tensor<?x?x?x?xf32>
  %r = weft.pad reflect %x pads = %p : (tensor<1x3x4x5xf32>, tensor<8xi64>) -> tensor<?x?x?x?xf32>
  // CHECK: weft.pad constant %[[X]], %[[V]] pads = [0, 0, 1, 1, 0, 0, 1, 1] : (tensor<1x3x4x5xf32>, tensor<f32>) -> tensor<1x3x6x7xf32>
  %s = weft.pad constant %x, %v pads = [0, 0, 1, 1, 0, 0, 1, 1] : (tensor<1x3x4x5xf32>, tensor<f32>) -> tensor<1x3x6x7xf32>
  return
}
