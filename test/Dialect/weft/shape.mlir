// RUN: weft-opt %s | weft-opt | FileCheck %s

// Round trip of the shape and data movement ops, with dynamic dimensions.

// Tests that reshape prints its shape operand and allowzero.
// CHECK-LABEL: func.func @reshape
// CHECK-SAME: (%[[X:.*]]: tensor<?x128x768xf32>, %[[S:.*]]: tensor<4xi64>)
func.func @reshape(%x: tensor<?x128x768xf32>, %s: tensor<4xi64>)
    -> (tensor<?x128x12x64xf32>, tensor<?x?x?x?xf32>) {
  // CHECK: %[[C:.*]] = weft.constant dense<[0, 0, 12, 64]> : tensor<4xi64>
  // CHECK: weft.reshape %[[X]], %[[C]] : (tensor<?x128x768xf32>, tensor<4xi64>) -> tensor<?x128x12x64xf32>
  %c = weft.constant dense<[0, 0, 12, 64]> : tensor<4xi64>
  %r = weft.reshape %x, %c : (tensor<?x128x768xf32>, tensor<4xi64>) -> tensor<?x128x12x64xf32>
  // CHECK: weft.reshape %[[X]], %[[S]] allowzero : (tensor<?x128x768xf32>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  %d = weft.reshape %x, %s allowzero : (tensor<?x128x768xf32>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  return %r, %d : tensor<?x128x12x64xf32>, tensor<?x?x?x?xf32>
}

// Tests that a reshape result may be less static than inferred.
// CHECK-LABEL: func.func @reshape_less_static
func.func @reshape_less_static(%x: tensor<2x6xf32>) -> tensor<?x?xf32> {
  %c = weft.constant dense<[3, 4]> : tensor<2xi64>
  // CHECK: weft.reshape %{{.*}}, %{{.*}} : (tensor<2x6xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  %r = weft.reshape %x, %c : (tensor<2x6xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// Tests flatten, squeeze and unsqueeze.
// CHECK-LABEL: func.func @flatten_squeeze_unsqueeze
// CHECK-SAME: (%[[X:.*]]: tensor<?x1x4xf32>)
func.func @flatten_squeeze_unsqueeze(%x: tensor<?x1x4xf32>)
    -> (tensor<?x4xf32>, tensor<?x4xf32>, tensor<1x?x1x4x1xf32>) {
  // CHECK: weft.flatten %[[X]] axis = 1 : tensor<?x1x4xf32> -> tensor<?x4xf32>
  %f = weft.flatten %x axis = 1 : tensor<?x1x4xf32> -> tensor<?x4xf32>
  // CHECK: weft.squeeze %[[X]] axes = [1] : tensor<?x1x4xf32> -> tensor<?x4xf32>
  %s = weft.squeeze %x axes = [1] : tensor<?x1x4xf32> -> tensor<?x4xf32>
  // CHECK: weft.unsqueeze %[[X]] axes = [0, 4] : tensor<?x1x4xf32> -> tensor<1x?x1x4x1xf32>
  %u = weft.unsqueeze %x axes = [0, 4] : tensor<?x1x4xf32> -> tensor<1x?x1x4x1xf32>
  return %f, %s, %u : tensor<?x4xf32>, tensor<?x4xf32>, tensor<1x?x1x4x1xf32>
}

// Tests transpose.
// CHECK-LABEL: func.func @transpose
func.func @transpose(%x: tensor<?x128x12x64xf32>) -> tensor<?x12x128x64xf32> {
  // CHECK: weft.transpose %{{.*}} perm = [0, 2, 1, 3] : tensor<?x128x12x64xf32> -> tensor<?x12x128x64xf32>
  %t = weft.transpose %x perm = [0, 2, 1, 3] : tensor<?x128x12x64xf32> -> tensor<?x12x128x64xf32>
  return %t : tensor<?x12x128x64xf32>
}

// Tests concat and both forms of split.
// CHECK-LABEL: func.func @concat_split
// CHECK-SAME: (%[[A:.*]]: tensor<?x3xf32>, %[[B:.*]]: tensor<2x?xf32>)
func.func @concat_split(%a: tensor<?x3xf32>, %b: tensor<2x?xf32>)
    -> (tensor<?x3xf32>, tensor<1x3xf32>, tensor<?x3xf32>, tensor<?x3xf32>) {
  // CHECK: weft.concat %[[A]], %[[B]] axis = 0 : (tensor<?x3xf32>, tensor<2x?xf32>) -> tensor<?x3xf32>
  %c = weft.concat %a, %b axis = 0 : (tensor<?x3xf32>, tensor<2x?xf32>) -> tensor<?x3xf32>
  // CHECK: weft.split %[[A]] axis = 0 {sizes = array<i64: 1, 2>} : tensor<?x3xf32> -> tensor<1x3xf32>, tensor<2x3xf32>
  %s:2 = weft.split %a axis = 0 {sizes = array<i64: 1, 2>} : tensor<?x3xf32> -> tensor<1x3xf32>, tensor<2x3xf32>
  // CHECK: weft.split %[[A]] axis = 0 {num_outputs = 2 : i64} : tensor<?x3xf32> -> tensor<?x3xf32>, tensor<?x3xf32>
  %e:2 = weft.split %a axis = 0 {num_outputs = 2 : i64} : tensor<?x3xf32> -> tensor<?x3xf32>, tensor<?x3xf32>
  return %c, %s#0, %e#0, %e#1 : tensor<?x3xf32>, tensor<1x3xf32>, tensor<?x3xf32>, tensor<?x3xf32>
}

// Tests slice with constant and run-time bounds.
// CHECK-LABEL: func.func @slice
// CHECK-SAME: (%[[X:.*]]: tensor<4x10xf32>, %[[E:.*]]: tensor<1xi64>)
func.func @slice(%x: tensor<4x10xf32>, %e: tensor<1xi64>)
    -> (tensor<4x3xf32>, tensor<4x?xf32>) {
  %start = weft.constant dense<9> : tensor<1xi64>
  %end = weft.constant dense<3> : tensor<1xi64>
  %step = weft.constant dense<-2> : tensor<1xi64>
  // CHECK: weft.slice %[[X]][%{{.*}}, %{{.*}}, %{{.*}}] axes = [1] : (tensor<4x10xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x3xf32>
  %s = weft.slice %x[%start, %end, %step] axes = [1]
      : (tensor<4x10xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x3xf32>
  // CHECK: weft.slice %[[X]][%{{.*}}, %[[E]], %{{.*}}] axes = [1]
  %d = weft.slice %x[%start, %e, %step] axes = [1]
      : (tensor<4x10xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x?xf32>
  return %s, %d : tensor<4x3xf32>, tensor<4x?xf32>
}

// Tests gather and gather_elements.
// CHECK-LABEL: func.func @gather
// CHECK-SAME: (%[[X:.*]]: tensor<5x?xf32>, %[[I:.*]]: tensor<2x3xi32>, %[[J:.*]]: tensor<5x2xi64>)
func.func @gather(%x: tensor<5x?xf32>, %i: tensor<2x3xi32>, %j: tensor<5x2xi64>)
    -> (tensor<2x3x?xf32>, tensor<5x2xf32>) {
  // CHECK: weft.gather %[[X]][%[[I]]] axis = 0 : (tensor<5x?xf32>, tensor<2x3xi32>) -> tensor<2x3x?xf32>
  %g = weft.gather %x[%i] axis = 0 : (tensor<5x?xf32>, tensor<2x3xi32>) -> tensor<2x3x?xf32>
  // CHECK: weft.gather_elements %[[X]][%[[J]]] axis = 1 : (tensor<5x?xf32>, tensor<5x2xi64>) -> tensor<5x2xf32>
  %e = weft.gather_elements %x[%j] axis = 1 : (tensor<5x?xf32>, tensor<5x2xi64>) -> tensor<5x2xf32>
  return %g, %e : tensor<2x3x?xf32>, tensor<5x2xf32>
}

// Tests expand and tile with run-time shapes.
// CHECK-LABEL: func.func @expand_tile
// CHECK-SAME: (%[[X:.*]]: tensor<3x1xf32>, %[[S:.*]]: tensor<3xi64>, %[[R:.*]]: tensor<2xi64>)
func.func @expand_tile(%x: tensor<3x1xf32>, %s: tensor<3xi64>, %r: tensor<2xi64>)
    -> (tensor<?x3x?xf32>, tensor<?x?xf32>) {
  // CHECK: weft.expand %[[X]], %[[S]] : (tensor<3x1xf32>, tensor<3xi64>) -> tensor<?x3x?xf32>
  %e = weft.expand %x, %s : (tensor<3x1xf32>, tensor<3xi64>) -> tensor<?x3x?xf32>
  // CHECK: weft.tile %[[X]], %[[R]] : (tensor<3x1xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  %t = weft.tile %x, %r : (tensor<3x1xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return %e, %t : tensor<?x3x?xf32>, tensor<?x?xf32>
}

// Tests the pad modes, with and without a value.
// CHECK-LABEL: func.func @pad
// CHECK-SAME: (%[[X:.*]]: tensor<?x3xf32>, %[[V:.*]]: tensor<f32>)
func.func @pad(%x: tensor<?x3xf32>, %v: tensor<f32>)
    -> (tensor<?x5xf32>, tensor<?x5xf32>, tensor<?x2xf32>, tensor<?x6xf32>) {
  // CHECK: weft.pad constant %[[X]], %[[V]] pads = [0, 1, 0, 1] : (tensor<?x3xf32>, tensor<f32>) -> tensor<?x5xf32>
  %c = weft.pad constant %x, %v pads = [0, 1, 0, 1] : (tensor<?x3xf32>, tensor<f32>) -> tensor<?x5xf32>
  // CHECK: weft.pad reflect %[[X]] pads = [0, 2, 0, 0] : (tensor<?x3xf32>) -> tensor<?x5xf32>
  %r = weft.pad reflect %x pads = [0, 2, 0, 0] : (tensor<?x3xf32>) -> tensor<?x5xf32>
  // CHECK: weft.pad edge %[[X]] pads = [1, -1, 0, 0] : (tensor<?x3xf32>) -> tensor<?x2xf32>
  %e = weft.pad edge %x pads = [1, -1, 0, 0] : (tensor<?x3xf32>) -> tensor<?x2xf32>
  // CHECK: weft.pad wrap %[[X]] pads = [0, 3, 0, 0] : (tensor<?x3xf32>) -> tensor<?x6xf32>
  %w = weft.pad wrap %x pads = [0, 3, 0, 0] : (tensor<?x3xf32>) -> tensor<?x6xf32>
  return %c, %r, %e, %w : tensor<?x5xf32>, tensor<?x5xf32>, tensor<?x2xf32>, tensor<?x6xf32>
}

// Tests trilu in both directions, with a run-time k.
// CHECK-LABEL: func.func @trilu
// CHECK-SAME: (%[[X:.*]]: tensor<?x4x5xf32>, %[[K:.*]]: tensor<i64>)
func.func @trilu(%x: tensor<?x4x5xf32>, %k: tensor<i64>) -> (tensor<?x4x5xf32>, tensor<?x4x5xf32>) {
  // CHECK: weft.trilu upper %[[X]], %[[K]] : (tensor<?x4x5xf32>, tensor<i64>) -> tensor<?x4x5xf32>
  %u = weft.trilu upper %x, %k : (tensor<?x4x5xf32>, tensor<i64>) -> tensor<?x4x5xf32>
  // CHECK: weft.trilu %[[X]], %[[K]] : (tensor<?x4x5xf32>, tensor<i64>) -> tensor<?x4x5xf32>
  %l = weft.trilu %x, %k : (tensor<?x4x5xf32>, tensor<i64>) -> tensor<?x4x5xf32>
  return %u, %l : tensor<?x4x5xf32>, tensor<?x4x5xf32>
}

// Tests shape (whole and sliced) and size.
// CHECK-LABEL: func.func @shape_size
func.func @shape_size(%x: tensor<?x128x768xf32>)
    -> (tensor<3xi64>, tensor<1xi64>, tensor<i64>) {
  // CHECK: weft.shape %{{.*}} : tensor<?x128x768xf32> -> tensor<3xi64>
  %s = weft.shape %x : tensor<?x128x768xf32> -> tensor<3xi64>
  // CHECK: weft.shape %{{.*}} {end = 2 : i64, start = 1 : i64} : tensor<?x128x768xf32> -> tensor<1xi64>
  %t = weft.shape %x {start = 1 : i64, end = 2 : i64} : tensor<?x128x768xf32> -> tensor<1xi64>
  // CHECK: weft.size %{{.*}} : tensor<?x128x768xf32> -> tensor<i64>
  %n = weft.size %x : tensor<?x128x768xf32> -> tensor<i64>
  return %s, %t, %n : tensor<3xi64>, tensor<1xi64>, tensor<i64>
}

// Tests constant_of_shape and range with run-time operands.
// CHECK-LABEL: func.func @constant_of_shape_range
// CHECK-SAME: (%[[S:.*]]: tensor<2xi64>, %[[L:.*]]: tensor<i64>)
func.func @constant_of_shape_range(%s: tensor<2xi64>, %l: tensor<i64>)
    -> (tensor<?x?xi1>, tensor<?xi64>) {
  // CHECK: weft.constant_of_shape %[[S]] value = true : (tensor<2xi64>) -> tensor<?x?xi1>
  %c = weft.constant_of_shape %s value = true : (tensor<2xi64>) -> tensor<?x?xi1>
  %zero = weft.constant dense<0> : tensor<i64>
  %one = weft.constant dense<1> : tensor<i64>
  // CHECK: weft.range %{{.*}}, %[[L]], %{{.*}} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %r = weft.range %zero, %l, %one : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  return %c, %r : tensor<?x?xi1>, tensor<?xi64>
}
