// RUN: weft-opt %s --canonicalize | FileCheck %s

// Folding and canonicalization of reshape, flatten, squeeze, unsqueeze,
// transpose and expand.

// Tests that a reshape to the input's own static type is the input.
// CHECK-LABEL: func.func @reshape_identity
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NOT: weft.reshape
// CHECK: return %[[X]]
func.func @reshape_identity(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %s = weft.constant dense<[-1, 3]> : tensor<2xi64>
  %r = weft.reshape %x, %s : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}

// Tests that a reshape copying every dynamic dimension is the input.
// CHECK-LABEL: func.func @reshape_identity_dynamic
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x8xf32>)
// CHECK-NOT: weft.reshape
// CHECK: return %[[X]]
func.func @reshape_identity_dynamic(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  %s = weft.constant dense<[0, -1, 8]> : tensor<3xi64>
  %r = weft.reshape %x, %s : (tensor<?x?x8xf32>, tensor<3xi64>) -> tensor<?x?x8xf32>
  return %r : tensor<?x?x8xf32>
}

// Tests that -1 is inferred next to copied dynamic dimensions, refining the
// result type.
// CHECK-LABEL: func.func @reshape_infer_with_copies
// CHECK: %[[R:.*]] = weft.reshape %{{.*}}, %{{.*}} : (tensor<?x4x6xf32>, tensor<2xi64>) -> tensor<?x24xf32>
// CHECK: tensor.cast %[[R]] : tensor<?x24xf32> to tensor<?x?xf32>
func.func @reshape_infer_with_copies(%x: tensor<?x4x6xf32>) -> tensor<?x?xf32> {
  %s = weft.constant dense<[0, -1]> : tensor<2xi64>
  %r = weft.reshape %x, %s : (tensor<?x4x6xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// Tests that reshapes of constants fold, including bool and f16 elements.
// CHECK-LABEL: func.func @reshape_constant
// CHECK-DAG: weft.constant dense<{{\[}}[true, false], [false, true]]> : tensor<2x2xi1>
// CHECK-DAG: weft.constant dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf16>
// CHECK-NOT: weft.reshape
func.func @reshape_constant() -> (tensor<2x2xi1>, tensor<2x2xf16>) {
  %b = weft.constant dense<[true, false, false, true]> : tensor<4xi1>
  %h = weft.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf16>
  %s = weft.constant dense<[2, 2]> : tensor<2xi64>
  %rb = weft.reshape %b, %s : (tensor<4xi1>, tensor<2xi64>) -> tensor<2x2xi1>
  %rh = weft.reshape %h, %s : (tensor<4xf16>, tensor<2xi64>) -> tensor<2x2xf16>
  return %rb, %rh : tensor<2x2xi1>, tensor<2x2xf16>
}

// Tests that a reshape of a reshape becomes one reshape.
// CHECK-LABEL: func.func @reshape_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<?x6xf32>, %[[S:.*]]: tensor<2xi64>)
// CHECK: %[[C:.*]] = weft.constant dense<[-1, 2]> : tensor<2xi64>
// CHECK: %[[R:.*]] = weft.reshape %[[X]], %[[C]] : (tensor<?x6xf32>, tensor<2xi64>) -> tensor<?x2xf32>
// CHECK: return %[[R]]
func.func @reshape_reshape(%x: tensor<?x6xf32>, %s: tensor<2xi64>) -> tensor<?x2xf32> {
  %a = weft.reshape %x, %s : (tensor<?x6xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  %c = weft.constant dense<[-1, 2]> : tensor<2xi64>
  %b = weft.reshape %a, %c : (tensor<?x?xf32>, tensor<2xi64>) -> tensor<?x2xf32>
  return %b : tensor<?x2xf32>
}

// Tests that a reshape whose static result comes from a copied dimension of
// another reshape gets a constant shape and skips the inner reshape.
// CHECK-LABEL: func.func @reshape_reshape_copy
// CHECK-SAME: (%[[X:.*]]: tensor<4x6xf32>)
// CHECK: %[[C:.*]] = weft.constant dense<[2, 12]> : tensor<2xi64>
// CHECK: %[[R:.*]] = weft.reshape %[[X]], %[[C]] : (tensor<4x6xf32>, tensor<2xi64>) -> tensor<2x12xf32>
// CHECK: return %[[R]]
func.func @reshape_reshape_copy(%x: tensor<4x6xf32>) -> tensor<2x12xf32> {
  %c1 = weft.constant dense<[2, 2, 6]> : tensor<3xi64>
  %a = weft.reshape %x, %c1 : (tensor<4x6xf32>, tensor<3xi64>) -> tensor<2x2x6xf32>
  %c2 = weft.constant dense<[0, -1]> : tensor<2xi64>
  %b = weft.reshape %a, %c2 : (tensor<2x2x6xf32>, tensor<2xi64>) -> tensor<2x12xf32>
  return %b : tensor<2x12xf32>
}

// Tests that a run-time shape operand is replaced once the result is static.
// CHECK-LABEL: func.func @reshape_static_result
// CHECK-SAME: (%[[X:.*]]: tensor<2x6xf32>, %[[S:.*]]: tensor<2xi64>)
// CHECK: %[[C:.*]] = weft.constant dense<[3, 4]> : tensor<2xi64>
// CHECK: weft.reshape %[[X]], %[[C]] : (tensor<2x6xf32>, tensor<2xi64>) -> tensor<3x4xf32>
func.func @reshape_static_result(%x: tensor<2x6xf32>, %s: tensor<2xi64>) -> tensor<3x4xf32> {
  %r = weft.reshape %x, %s : (tensor<2x6xf32>, tensor<2xi64>) -> tensor<3x4xf32>
  return %r : tensor<3x4xf32>
}

// Tests that flatten, squeeze and unsqueeze with static results become
// reshapes to constant shapes.
// CHECK-LABEL: func.func @static_to_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<2x1x3xf32>)
// CHECK-DAG: %[[C6:.*]] = weft.constant dense<[2, 3]> : tensor<2xi64>
// CHECK-DAG: %[[C4:.*]] = weft.constant dense<[1, 2, 1, 3]> : tensor<4xi64>
// CHECK-DAG: %[[C1:.*]] = weft.constant dense<[1, 6]> : tensor<2xi64>
// CHECK-DAG: %[[F:.*]] = weft.reshape %[[X]], %[[C1]] : (tensor<2x1x3xf32>, tensor<2xi64>) -> tensor<1x6xf32>
// CHECK-DAG: %[[S:.*]] = weft.reshape %[[X]], %[[C6]] : (tensor<2x1x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
// CHECK-DAG: %[[U:.*]] = weft.reshape %[[X]], %[[C4]] : (tensor<2x1x3xf32>, tensor<4xi64>) -> tensor<1x2x1x3xf32>
// CHECK: return %[[F]], %[[S]], %[[U]]
func.func @static_to_reshape(%x: tensor<2x1x3xf32>)
    -> (tensor<1x6xf32>, tensor<2x3xf32>, tensor<1x2x1x3xf32>) {
  %f = weft.flatten %x axis = 0 : tensor<2x1x3xf32> -> tensor<1x6xf32>
  %s = weft.squeeze %x axes = [1] : tensor<2x1x3xf32> -> tensor<2x3xf32>
  %u = weft.unsqueeze %x axes = [0] : tensor<2x1x3xf32> -> tensor<1x2x1x3xf32>
  return %f, %s, %u : tensor<1x6xf32>, tensor<2x3xf32>, tensor<1x2x1x3xf32>
}

// Tests that dynamic flatten, squeeze and unsqueeze stay and that
// squeeze(unsqueeze(x)) with the same axes is x.
// CHECK-LABEL: func.func @dynamic_reshapes
// CHECK-SAME: (%[[X:.*]]: tensor<?x?xf32>)
// CHECK: %[[F:.*]] = weft.flatten %[[X]] axis = 0 : tensor<?x?xf32> -> tensor<1x?xf32>
// CHECK: %[[U:.*]] = weft.unsqueeze %[[X]] axes = [0, 2] : tensor<?x?xf32> -> tensor<1x?x1x?xf32>
// CHECK: return %[[F]], %[[U]], %[[X]], %[[X]]
func.func @dynamic_reshapes(%x: tensor<?x?xf32>)
    -> (tensor<1x?xf32>, tensor<1x?x1x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) {
  %f = weft.flatten %x axis = 0 : tensor<?x?xf32> -> tensor<1x?xf32>
  %u = weft.unsqueeze %x axes = [0, 2] : tensor<?x?xf32> -> tensor<1x?x1x?xf32>
  %s = weft.squeeze %u axes = [2, 0] : tensor<1x?x1x?xf32> -> tensor<?x?xf32>
  %i = weft.flatten %x axis = 1 : tensor<?x?xf32> -> tensor<?x?xf32>
  return %f, %u, %s, %i : tensor<1x?xf32>, tensor<1x?x1x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
}

// Tests that an identity transpose is the input and that two transposes
// compose.
// CHECK-LABEL: func.func @transpose
// CHECK-SAME: (%[[X:.*]]: tensor<?x2x3xf32>)
// CHECK: %[[T:.*]] = weft.transpose %[[X]] perm = [2, 0, 1] : tensor<?x2x3xf32> -> tensor<3x?x2xf32>
// CHECK: return %[[X]], %[[T]]
func.func @transpose(%x: tensor<?x2x3xf32>) -> (tensor<?x2x3xf32>, tensor<3x?x2xf32>) {
  %i = weft.transpose %x perm = [0, 1, 2] : tensor<?x2x3xf32> -> tensor<?x2x3xf32>
  %a = weft.transpose %x perm = [0, 2, 1] : tensor<?x2x3xf32> -> tensor<?x3x2xf32>
  %b = weft.transpose %a perm = [1, 0, 2] : tensor<?x3x2xf32> -> tensor<3x?x2xf32>
  return %i, %b : tensor<?x2x3xf32>, tensor<3x?x2xf32>
}

// Tests that a transpose of a constant folds.
// CHECK-LABEL: func.func @transpose_constant
// CHECK: weft.constant dense<{{\[}}[1, 4], [2, 5], [3, 6]]> : tensor<3x2xi8>
func.func @transpose_constant() -> tensor<3x2xi8> {
  %a = weft.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi8>
  %t = weft.transpose %a perm = [1, 0] : tensor<2x3xi8> -> tensor<3x2xi8>
  return %t : tensor<3x2xi8>
}

// Tests that an expand to the input's shape is the input, also with a
// shape of ones on dynamic dimensions.
// CHECK-LABEL: func.func @expand_identity
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>, %[[Y:.*]]: tensor<?x3xf32>)
// CHECK-NOT: weft.expand
// CHECK: return %[[X]], %[[Y]]
func.func @expand_identity(%x: tensor<2x3xf32>, %y: tensor<?x3xf32>)
    -> (tensor<2x3xf32>, tensor<?x3xf32>) {
  %s = weft.constant dense<[2, 1]> : tensor<2xi64>
  %e = weft.expand %x, %s : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  %o = weft.constant dense<[1, 1]> : tensor<2xi64>
  %f = weft.expand %y, %o : (tensor<?x3xf32>, tensor<2xi64>) -> tensor<?x3xf32>
  return %e, %f : tensor<2x3xf32>, tensor<?x3xf32>
}

// Tests that expand of constants folds (splats however large, others
// elementwise).
// CHECK-LABEL: func.func @expand_constant
// CHECK-DAG: weft.constant dense<0xFF800000> : tensor<512x512xf32>
// CHECK-DAG: weft.constant dense<{{\[}}[1, 1, 1], [2, 2, 2]]> : tensor<2x3xi32>
func.func @expand_constant() -> (tensor<512x512xf32>, tensor<2x3xi32>) {
  %inf = weft.constant dense<0xFF800000> : tensor<1x1xf32>
  %s = weft.constant dense<[512, 512]> : tensor<2xi64>
  %e = weft.expand %inf, %s : (tensor<1x1xf32>, tensor<2xi64>) -> tensor<512x512xf32>
  %col = weft.constant dense<[[1], [2]]> : tensor<2x1xi32>
  %t = weft.constant dense<[3]> : tensor<1xi64>
  %f = weft.expand %col, %t : (tensor<2x1xi32>, tensor<1xi64>) -> tensor<2x3xi32>
  return %e, %f : tensor<512x512xf32>, tensor<2x3xi32>
}

// Tests that an expand with a static result gets a constant shape.
// CHECK-LABEL: func.func @expand_static_result
// CHECK-SAME: (%[[X:.*]]: tensor<3x1xf32>, %[[S:.*]]: tensor<2xi64>)
// CHECK: %[[C:.*]] = weft.constant dense<[3, 4]> : tensor<2xi64>
// CHECK: weft.expand %[[X]], %[[C]] : (tensor<3x1xf32>, tensor<2xi64>) -> tensor<3x4xf32>
func.func @expand_static_result(%x: tensor<3x1xf32>, %s: tensor<2xi64>) -> tensor<3x4xf32> {
  %e = weft.expand %x, %s : (tensor<3x1xf32>, tensor<2xi64>) -> tensor<3x4xf32>
  return %e : tensor<3x4xf32>
}
