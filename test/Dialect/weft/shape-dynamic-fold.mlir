// RUN: weft-opt %s --canonicalize | FileCheck %s

// Tests that constant run-time squeeze axes become the attribute form
// (normalized and sorted); with a static result it then becomes a reshape.
// CHECK-LABEL: func.func @fold_squeeze_constant_axes
// CHECK-SAME: (%[[X:.*]]: tensor<1x?x1xf32>)
func.func @fold_squeeze_constant_axes(%x: tensor<1x?x1xf32>) -> tensor<?x?xf32> {
  // CHECK: %[[R:.*]] = weft.squeeze %[[X]] axes = [2] : tensor<1x?x1xf32> -> tensor<1x?xf32>
  // CHECK: %[[C:.*]] = tensor.cast %[[R]]
  // CHECK: return %[[C]]
  %a = weft.constant dense<[-1]> : tensor<1xi64>
  %r = weft.squeeze %x axes = %a : tensor<1x?x1xf32>, tensor<1xi64> -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// Tests that a squeeze whose input has exactly as many dimensions that can
// be 1 as there are axes takes those axes, whatever the operand holds (its
// result is then static, so it goes on to become a reshape).
// CHECK-LABEL: func.func @fold_squeeze_axes_from_shape
// CHECK-SAME: (%[[X:.*]]: tensor<?x3x1xf32>, %[[A:.*]]: tensor<2xi64>)
func.func @fold_squeeze_axes_from_shape(%x: tensor<?x3x1xf32>, %a: tensor<2xi64>) -> tensor<?xf32> {
  // CHECK-NOT: weft.squeeze
  // CHECK: %[[R:.*]] = weft.reshape %[[X]], %{{.*}} : (tensor<?x3x1xf32>, tensor<1xi64>) -> tensor<3xf32>
  // CHECK: %[[C:.*]] = tensor.cast %[[R]]
  // CHECK: return %[[C]]
  %r = weft.squeeze %x axes = %a : tensor<?x3x1xf32>, tensor<2xi64> -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// Tests that squeeze and unsqueeze keep axes that are not known.
// CHECK-LABEL: func.func @keep_squeeze_unsqueeze_dynamic_axes
// CHECK-SAME: (%[[X:.*]]: tensor<1x?x1xf32>, %[[A:.*]]: tensor<1xi64>)
func.func @keep_squeeze_unsqueeze_dynamic_axes(%x: tensor<1x?x1xf32>, %a: tensor<1xi64>) -> (tensor<?x?xf32>, tensor<?x?x?x?xf32>) {
  // CHECK: %[[S:.*]] = weft.squeeze %[[X]] axes = %[[A]] : tensor<1x?x1xf32>, tensor<1xi64> -> tensor<?x?xf32>
  // CHECK: %[[U:.*]] = weft.unsqueeze %[[X]] axes = %[[A]] : tensor<1x?x1xf32>, tensor<1xi64> -> tensor<1x?x?x1xf32>
  // CHECK: return %[[S]], %{{.*}}
  %s = weft.squeeze %x axes = %a : tensor<1x?x1xf32>, tensor<1xi64> -> tensor<?x?xf32>
  %u = weft.unsqueeze %x axes = %a : tensor<1x?x1xf32>, tensor<1xi64> -> tensor<?x?x?x?xf32>
  return %s, %u : tensor<?x?xf32>, tensor<?x?x?x?xf32>
}

// Tests that constant run-time unsqueeze axes (unsorted, negative) become
// the attribute form, which a static result then turns into a reshape.
// CHECK-LABEL: func.func @fold_unsqueeze_constant_axes
// CHECK-SAME: (%[[X:.*]]: tensor<3x4x5xf32>, %[[Y:.*]]: tensor<?x4xf32>)
func.func @fold_unsqueeze_constant_axes(%x: tensor<3x4x5xf32>, %y: tensor<?x4xf32>) -> (tensor<?x?x?x?x?x?xf32>, tensor<?x?x?xf32>) {
  // CHECK-DAG: %[[SHAPE:.*]] = weft.constant dense<[3, 4, 1, 5, 1, 1]> : tensor<6xi64>
  // CHECK-DAG: %[[R:.*]] = weft.reshape %[[X]], %[[SHAPE]]
  // CHECK-DAG: %[[U:.*]] = weft.unsqueeze %[[Y]] axes = [2] : tensor<?x4xf32> -> tensor<?x4x1xf32>
  // CHECK-NOT: weft.unsqueeze %[[X]]
  %a = weft.constant dense<[5, -2, 2]> : tensor<3xi64>
  %r = weft.unsqueeze %x axes = %a : tensor<3x4x5xf32>, tensor<3xi64> -> tensor<?x?x?x?x?x?xf32>
  %b = weft.constant dense<[-1]> : tensor<1xi64>
  %u = weft.unsqueeze %y axes = %b : tensor<?x4xf32>, tensor<1xi64> -> tensor<?x?x?xf32>
  return %r, %u : tensor<?x?x?x?x?x?xf32>, tensor<?x?x?xf32>
}

// Tests that constant run-time slice axes become the attribute form
// (normalized, in their order) and that the slice then folds as usual.
// CHECK-LABEL: func.func @fold_slice_constant_axes
// CHECK-SAME: (%[[X:.*]]: tensor<20x10x5xf32>)
func.func @fold_slice_constant_axes(%x: tensor<20x10x5xf32>) -> tensor<?x?x?xf32> {
  // CHECK: %[[R:.*]] = weft.slice %[[X]][%{{.*}}, %{{.*}}, %{{.*}}] axes = [2, 0] : {{.*}} -> tensor<3x10x1xf32>
  // CHECK: %[[C:.*]] = tensor.cast %[[R]]
  // CHECK: return %[[C]]
  %starts = weft.constant dense<[3, 2]> : tensor<2xi64>
  %ends = weft.constant dense<[4, 5]> : tensor<2xi64>
  %steps = weft.constant dense<[1, 1]> : tensor<2xi64>
  %axes = weft.constant dense<[-1, 0]> : tensor<2xi64>
  %r = weft.slice %x[%starts, %ends, %steps] axes = %axes
         : (tensor<20x10x5xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<?x?x?xf32>
  return %r : tensor<?x?x?xf32>
}

// Tests that a slice of a constant with run-time axes is not folded, and
// that a whole-range slice is not taken for the identity.
// CHECK-LABEL: func.func @keep_slice_dynamic_axes
// CHECK-SAME: (%[[X:.*]]: tensor<4x4xf32>, %[[A:.*]]: tensor<1xi64>)
func.func @keep_slice_dynamic_axes(%x: tensor<4x4xf32>, %a: tensor<1xi64>) -> tensor<?x?xf32> {
  // CHECK: %[[R:.*]] = weft.slice %[[X]][%{{.*}}, %{{.*}}, %{{.*}}] axes = %[[A]]
  // CHECK: return %[[R]]
  %zero = weft.constant dense<0> : tensor<1xi64>
  %two = weft.constant dense<2> : tensor<1xi64>
  %one = weft.constant dense<1> : tensor<1xi64>
  %r = weft.slice %x[%zero, %two, %one] axes = %a
         : (tensor<4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// Tests that constant run-time split sizes become the `sizes` attribute and
// that the split of a constant then folds.
// CHECK-LABEL: func.func @fold_split_constant_sizes
// CHECK-SAME: (%[[X:.*]]: tensor<2x6xf32>)
func.func @fold_split_constant_sizes(%x: tensor<2x6xf32>) -> (tensor<2x?xf32>, tensor<2x?xf32>, tensor<?xi64>) {
  // CHECK-DAG: %[[TAIL:.*]] = weft.constant dense<[3, 4]> : tensor<2xi64>
  // CHECK-DAG: %[[S:.*]]:2 = weft.split %[[X]] axis = 1 {sizes = array<i64: 2, 4>} : tensor<2x6xf32> -> tensor<2x2xf32>, tensor<2x4xf32>
  %sizes = weft.constant dense<[2, 4]> : tensor<2xi64>
  %a, %b = weft.split %x axis = 1 sizes %sizes : tensor<2x6xf32>, tensor<2xi64> -> tensor<2x?xf32>, tensor<2x?xf32>
  %c = weft.constant dense<[1, 2, 3, 4]> : tensor<4xi64>
  %split = weft.constant dense<[2, 2]> : tensor<2xi64>
  %head, %tail = weft.split %c axis = 0 sizes %split : tensor<4xi64>, tensor<2xi64> -> tensor<?xi64>, tensor<?xi64>
  return %a, %b, %tail : tensor<2x?xf32>, tensor<2x?xf32>, tensor<?xi64>
}

// Tests that run-time split sizes are known without their values when the
// dimension is empty (all pieces are) or there is one piece (all of it).
// CHECK-LABEL: func.func @fold_split_sizes_from_shape
// CHECK-SAME: (%[[Z:.*]]: tensor<0x2xf32>, %[[X:.*]]: tensor<6xf32>, %[[A:.*]]: tensor<3xi64>, %[[B:.*]]: tensor<1xi64>)
func.func @fold_split_sizes_from_shape(%z: tensor<0x2xf32>, %x: tensor<6xf32>, %a: tensor<3xi64>, %b: tensor<1xi64>) -> (tensor<0x2xf32>, tensor<6xf32>) {
  // CHECK: %[[P:.*]]:3 = weft.split %[[Z]] axis = 0 {sizes = array<i64: 0, 0, 0>} : tensor<0x2xf32> -> tensor<0x2xf32>, tensor<0x2xf32>, tensor<0x2xf32>
  // CHECK-NOT: weft.split
  // CHECK: return %[[P]]#1, %[[X]]
  %p:3 = weft.split %z axis = 0 sizes %a : tensor<0x2xf32>, tensor<3xi64> -> tensor<0x2xf32>, tensor<0x2xf32>, tensor<0x2xf32>
  %q = weft.split %x axis = 0 sizes %b : tensor<6xf32>, tensor<1xi64> -> tensor<6xf32>
  return %p#1, %q : tensor<0x2xf32>, tensor<6xf32>
}

// Tests that split sizes that are not known stay.
// CHECK-LABEL: func.func @keep_split_dynamic_sizes
// CHECK-SAME: (%[[X:.*]]: tensor<6xf32>, %[[S:.*]]: tensor<2xi64>)
func.func @keep_split_dynamic_sizes(%x: tensor<6xf32>, %s: tensor<2xi64>) -> tensor<?xf32> {
  // CHECK: %[[R:.*]]:2 = weft.split %[[X]] axis = 0 sizes %[[S]]
  // CHECK: return %[[R]]#1
  %a, %b = weft.split %x axis = 0 sizes %s : tensor<6xf32>, tensor<2xi64> -> tensor<?xf32>, tensor<?xf32>
  return %b : tensor<?xf32>
}

// Tests that constant run-time pads become the attribute form and that the
// pad of a constant then folds.
// CHECK-LABEL: func.func @fold_pad_constant_pads
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>, %[[V:.*]]: tensor<f32>)
func.func @fold_pad_constant_pads(%x: tensor<2x3xf32>, %v: tensor<f32>) -> (tensor<?x?xf32>, tensor<?xi32>) {
  // CHECK-DAG: %[[P:.*]] = weft.pad constant %[[X]], %[[V]] pads = [0, 1, 0, 2] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x6xf32>
  // CHECK-DAG: %[[F:.*]] = weft.constant dense<[1, 1, 2, 2]> : tensor<4xi32>
  %pads = weft.constant dense<[0, 1, 0, 2]> : tensor<4xi64>
  %p = weft.pad constant %x, %v pads = %pads : (tensor<2x3xf32>, tensor<f32>, tensor<4xi64>) -> tensor<?x?xf32>
  %c = weft.constant dense<[1, 2]> : tensor<2xi32>
  %edge = weft.constant dense<[1, 1]> : tensor<2xi64>
  %f = weft.pad edge %c pads = %edge : (tensor<2xi32>, tensor<2xi64>) -> tensor<?xi32>
  return %p, %f : tensor<?x?xf32>, tensor<?xi32>
}

// Tests that pads that are not known stay, even on an input the attribute
// form's folds would take for the identity.
// CHECK-LABEL: func.func @keep_pad_dynamic_pads
// CHECK-SAME: (%[[X:.*]]: tensor<?xf32>, %[[P:.*]]: tensor<2xi64>)
func.func @keep_pad_dynamic_pads(%x: tensor<?xf32>, %p: tensor<2xi64>) -> tensor<?xf32> {
  // CHECK: %[[R:.*]] = weft.pad edge %[[X]] pads = %[[P]] : (tensor<?xf32>, tensor<2xi64>) -> tensor<?xf32>
  // CHECK: return %[[R]]
  %r = weft.pad edge %x pads = %p : (tensor<?xf32>, tensor<2xi64>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}
