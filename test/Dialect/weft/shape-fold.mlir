// RUN: weft-opt %s --canonicalize | FileCheck %s

// Folding of the shape computations that exporters emit.

// Tests that Shape -> Gather -> Unsqueeze -> Concat -> Reshape of a static
// tensor folds to one reshape with a constant shape.
// CHECK-LABEL: func.func @split_heads
// CHECK-SAME: (%[[X:.*]]: tensor<2x128x768xf32>)
// CHECK-NOT: weft.shape
// CHECK-NOT: weft.gather
// CHECK-NOT: weft.concat
// CHECK: %[[S:.*]] = weft.constant dense<[2, 128, 12, 64]> : tensor<4xi64>
// CHECK: %[[R:.*]] = weft.reshape %[[X]], %[[S]] : (tensor<2x128x768xf32>, tensor<4xi64>) -> tensor<2x128x12x64xf32>
// CHECK: return %[[R]]
func.func @split_heads(%x: tensor<2x128x768xf32>) -> tensor<2x128x12x64xf32> {
  %s = weft.shape %x : tensor<2x128x768xf32> -> tensor<3xi64>
  %i0 = weft.constant dense<0> : tensor<i64>
  %i1 = weft.constant dense<1> : tensor<i64>
  %b = weft.gather %s[%i0] axis = 0 : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %q = weft.gather %s[%i1] axis = 0 : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %bu = weft.unsqueeze %b axes = [0] : tensor<i64> -> tensor<1xi64>
  %qu = weft.unsqueeze %q axes = [0] : tensor<i64> -> tensor<1xi64>
  %h = weft.constant dense<12> : tensor<1xi64>
  %d = weft.constant dense<64> : tensor<1xi64>
  %shape = weft.concat %bu, %qu, %h, %d axis = 0
      : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %r = weft.reshape %x, %shape : (tensor<2x128x768xf32>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  %c = tensor.cast %r : tensor<?x?x?x?xf32> to tensor<2x128x12x64xf32>
  return %c : tensor<2x128x12x64xf32>
}

// Tests that with dynamic batch and sequence the same chain keeps the
// dynamic sizes and still makes the known ones static.
// CHECK-LABEL: func.func @split_heads_dynamic
// CHECK: weft.shape
// CHECK: weft.reshape %{{.*}}, %{{.*}} : (tensor<?x?x768xf32>, tensor<4xi64>) -> tensor<?x?x12x64xf32>
func.func @split_heads_dynamic(%x: tensor<?x?x768xf32>) -> tensor<?x?x?x?xf32> {
  %s = weft.shape %x : tensor<?x?x768xf32> -> tensor<3xi64>
  %i0 = weft.constant dense<0> : tensor<i64>
  %i1 = weft.constant dense<1> : tensor<i64>
  %b = weft.gather %s[%i0] axis = 0 : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %q = weft.gather %s[%i1] axis = 0 : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %bu = weft.unsqueeze %b axes = [0] : tensor<i64> -> tensor<1xi64>
  %qu = weft.unsqueeze %q axes = [0] : tensor<i64> -> tensor<1xi64>
  %h = weft.constant dense<12> : tensor<1xi64>
  %d = weft.constant dense<64> : tensor<1xi64>
  %shape = weft.concat %bu, %qu, %h, %d axis = 0
      : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %r = weft.reshape %x, %shape : (tensor<?x?x768xf32>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  return %r : tensor<?x?x?x?xf32>
}

// Tests that gathering a static dimension of a partly dynamic tensor folds.
// CHECK-LABEL: func.func @gather_static_dim
// CHECK-NOT: weft.shape
// CHECK: %[[C:.*]] = weft.constant dense<768> : tensor<i64>
// CHECK: return %[[C]]
func.func @gather_static_dim(%x: tensor<?x?x768xf32>) -> tensor<i64> {
  %s = weft.shape %x : tensor<?x?x768xf32> -> tensor<3xi64>
  %i = weft.constant dense<-1> : tensor<i64>
  %g = weft.gather %s[%i] axis = 0 : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  return %g : tensor<i64>
}

// Tests that a dynamic dimension is not folded.
// CHECK-LABEL: func.func @gather_dynamic_dim
// CHECK: weft.shape
// CHECK: weft.gather
func.func @gather_dynamic_dim(%x: tensor<?x768xf32>) -> tensor<i64> {
  %s = weft.shape %x : tensor<?x768xf32> -> tensor<2xi64>
  %i = weft.constant dense<0> : tensor<i64>
  %g = weft.gather %s[%i] axis = 0 : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  return %g : tensor<i64>
}

// Tests that shape with start and end folds when that part is static.
// CHECK-LABEL: func.func @shape_part
// CHECK: %[[C:.*]] = weft.constant dense<[4, 5]> : tensor<2xi64>
// CHECK: return %[[C]]
func.func @shape_part(%x: tensor<?x4x5xf32>) -> tensor<2xi64> {
  %s = weft.shape %x {start = 1 : i64} : tensor<?x4x5xf32> -> tensor<2xi64>
  return %s : tensor<2xi64>
}

// Tests that a step-1 slice of a shape becomes a narrower shape, which folds.
// CHECK-LABEL: func.func @slice_of_shape
// CHECK-NOT: weft.slice
// CHECK: %[[C:.*]] = weft.constant dense<[4, 5]> : tensor<2xi64>
// CHECK: %[[CAST:.*]] = tensor.cast %[[C]] : tensor<2xi64> to tensor<?xi64>
// CHECK: return %[[CAST]]
func.func @slice_of_shape(%x: tensor<?x4x5xf32>) -> tensor<?xi64> {
  %s = weft.shape %x : tensor<?x4x5xf32> -> tensor<3xi64>
  %start = weft.constant dense<-2> : tensor<1xi64>
  %end = weft.constant dense<9223372036854775807> : tensor<1xi64>
  %step = weft.constant dense<1> : tensor<1xi64>
  %r = weft.slice %s[%start, %end, %step] axes = [0]
      : (tensor<3xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?xi64>
  return %r : tensor<?xi64>
}

// Tests that a slice of the dynamic part of a shape stays a shape op.
// CHECK-LABEL: func.func @slice_of_dynamic_shape
// CHECK: %[[S:.*]] = weft.shape %{{.*}} {end = 2 : i64} : tensor<?x?x5xf32> -> tensor<2xi64>
// CHECK: return %[[S]]
func.func @slice_of_dynamic_shape(%x: tensor<?x?x5xf32>) -> tensor<2xi64> {
  %s = weft.shape %x : tensor<?x?x5xf32> -> tensor<3xi64>
  %start = weft.constant dense<0> : tensor<1xi64>
  %end = weft.constant dense<2> : tensor<1xi64>
  %step = weft.constant dense<1> : tensor<1xi64>
  %r = weft.slice %s[%start, %end, %step] axes = [0]
      : (tensor<3xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  return %r : tensor<2xi64>
}

// Tests that size folds for static tensors only.
// CHECK-LABEL: func.func @size
// CHECK-DAG: %[[C:.*]] = weft.constant dense<24> : tensor<i64>
// CHECK-DAG: %[[D:.*]] = weft.size %{{.*}} : tensor<?x4xf32> -> tensor<i64>
// CHECK: return %[[C]], %[[D]]
func.func @size(%x: tensor<2x3x4xf32>, %y: tensor<?x4xf32>) -> (tensor<i64>, tensor<i64>) {
  %a = weft.size %x : tensor<2x3x4xf32> -> tensor<i64>
  %b = weft.size %y : tensor<?x4xf32> -> tensor<i64>
  return %a, %b : tensor<i64>, tensor<i64>
}

// Tests that Range over a gathered sequence length folds (position ids).
// CHECK-LABEL: func.func @range_positions
// CHECK-NOT: weft.range
// CHECK: %[[C:.*]] = weft.constant dense<[0, 1, 2, 3, 4]> : tensor<5xi64>
// CHECK: %[[CAST:.*]] = tensor.cast %[[C]] : tensor<5xi64> to tensor<?xi64>
// CHECK: return %[[CAST]]
func.func @range_positions(%x: tensor<2x5xf32>) -> tensor<?xi64> {
  %s = weft.shape %x : tensor<2x5xf32> -> tensor<2xi64>
  %zero = weft.constant dense<0> : tensor<i64>
  %one = weft.constant dense<1> : tensor<i64>
  %len = weft.gather %s[%one] axis = 0 : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %r = weft.range %zero, %len, %one : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  return %r : tensor<?xi64>
}

// Tests Range with a negative delta, an empty range and floats.
// CHECK-LABEL: func.func @range_kinds
// CHECK-DAG: weft.constant dense<[1.000000e+00, 1.250000e+00, 1.500000e+00, 1.750000e+00]> : tensor<4xf32>
// CHECK-DAG: weft.constant dense<> : tensor<0xi32>
// CHECK-DAG: weft.constant dense<[10, 7, 4]> : tensor<3xi32>
func.func @range_kinds() -> (tensor<?xi32>, tensor<?xi32>, tensor<?xf32>) {
  %ten = weft.constant dense<10> : tensor<i32>
  %two = weft.constant dense<2> : tensor<i32>
  %m3 = weft.constant dense<-3> : tensor<i32>
  %a = weft.range %ten, %two, %m3 : (tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<?xi32>
  %b = weft.range %two, %ten, %m3 : (tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<?xi32>
  %fs = weft.constant dense<1.0> : tensor<f32>
  %fl = weft.constant dense<2.0> : tensor<f32>
  %fd = weft.constant dense<0.25> : tensor<f32>
  %c = weft.range %fs, %fl, %fd : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<?xf32>
  return %a, %b, %c : tensor<?xi32>, tensor<?xi32>, tensor<?xf32>
}

// Tests that ConstantOfShape of a static shape folds to a splat, however
// large.
// CHECK-LABEL: func.func @constant_of_shape
// CHECK-NOT: weft.constant_of_shape
// CHECK: weft.constant dense<1> : tensor<1024x1024xi64>
func.func @constant_of_shape(%x: tensor<1024x1024xf32>) -> tensor<?x?xi64> {
  %s = weft.shape %x : tensor<1024x1024xf32> -> tensor<2xi64>
  %c = weft.constant_of_shape %s value = 1 : i64 : (tensor<2xi64>) -> tensor<?x?xi64>
  return %c : tensor<?x?xi64>
}

// Tests that ConstantOfShape with a run-time shape keeps the known sizes.
// CHECK-LABEL: func.func @constant_of_shape_partial
// CHECK: weft.constant_of_shape %{{.*}} value = false : (tensor<2xi64>) -> tensor<?x7xi1>
func.func @constant_of_shape_partial(%x: tensor<?x7xf32>) -> tensor<?x?xi1> {
  %s = weft.shape %x : tensor<?x7xf32> -> tensor<2xi64>
  %c = weft.constant_of_shape %s value = false : (tensor<2xi64>) -> tensor<?x?xi1>
  return %c : tensor<?x?xi1>
}

// Tests the attention mask chain: Unsqueeze of a mask, Expand to a shape
// computed from Shape and Concat, all folding for static shapes.
// CHECK-LABEL: func.func @expand_mask
// CHECK-SAME: (%[[M:.*]]: tensor<2x5xf32>)
// CHECK-NOT: weft.shape
// CHECK-NOT: weft.concat
// CHECK: %[[S:.*]] = weft.constant dense<[2, 1, 5, 5]> : tensor<4xi64>
// CHECK: %[[C:.*]] = weft.constant dense<[2, 1, 1, 5]> : tensor<4xi64>
// CHECK: %[[R:.*]] = weft.reshape %[[M]], %[[C]]
// CHECK: weft.expand %[[R]], %[[S]] : (tensor<2x1x1x5xf32>, tensor<4xi64>) -> tensor<2x1x5x5xf32>
func.func @expand_mask(%m: tensor<2x5xf32>) -> tensor<?x?x?x?xf32> {
  %u = weft.unsqueeze %m axes = [1, 2] : tensor<2x5xf32> -> tensor<2x1x1x5xf32>
  %s = weft.shape %m : tensor<2x5xf32> -> tensor<2xi64>
  %i0 = weft.constant dense<[0]> : tensor<1xi64>
  %i1 = weft.constant dense<[1]> : tensor<1xi64>
  %b = weft.gather %s[%i0] axis = 0 : (tensor<2xi64>, tensor<1xi64>) -> tensor<1xi64>
  %q = weft.gather %s[%i1] axis = 0 : (tensor<2xi64>, tensor<1xi64>) -> tensor<1xi64>
  %one = weft.constant dense<[1]> : tensor<1xi64>
  %shape = weft.concat %b, %one, %q, %q axis = 0
      : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %e = weft.expand %u, %shape : (tensor<2x1x1x5xf32>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  return %e : tensor<?x?x?x?xf32>
}
