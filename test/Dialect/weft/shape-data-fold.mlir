// RUN: weft-opt %s --canonicalize | FileCheck %s

// Folding of concat, split, slice, gather, gather_elements, pad, tile and
// trilu.

// Tests that concat of constants folds and a single input is the input.
// CHECK-LABEL: func.func @concat
// CHECK-SAME: (%[[X:.*]]: tensor<?x3xf32>)
// CHECK: %[[C:.*]] = weft.constant dense<{{\[}}[1, 2, 3, 7], [4, 5, 6, 8]]> : tensor<2x4xi32>
// CHECK: return %[[C]], %[[X]]
func.func @concat(%x: tensor<?x3xf32>) -> (tensor<2x4xi32>, tensor<?x3xf32>) {
  %a = weft.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %b = weft.constant dense<[[7], [8]]> : tensor<2x1xi32>
  %c = weft.concat %a, %b axis = 1 : (tensor<2x3xi32>, tensor<2x1xi32>) -> tensor<2x4xi32>
  %d = weft.concat %x axis = 0 : (tensor<?x3xf32>) -> tensor<?x3xf32>
  return %c, %d : tensor<2x4xi32>, tensor<?x3xf32>
}

// Tests that empty concat inputs are dropped.
// CHECK-LABEL: func.func @concat_empty
// CHECK-SAME: (%[[X:.*]]: tensor<?x3xf32>, %[[E:.*]]: tensor<0x3xf32>, %[[Y:.*]]: tensor<2x3xf32>)
// CHECK: weft.concat %[[X]], %[[Y]] axis = 0 : (tensor<?x3xf32>, tensor<2x3xf32>) -> tensor<?x3xf32>
func.func @concat_empty(%x: tensor<?x3xf32>, %e: tensor<0x3xf32>, %y: tensor<2x3xf32>) -> tensor<?x3xf32> {
  %c = weft.concat %x, %e, %y axis = 0 : (tensor<?x3xf32>, tensor<0x3xf32>, tensor<2x3xf32>) -> tensor<?x3xf32>
  return %c : tensor<?x3xf32>
}

// Tests that split of a constant folds, including ONNX 18's uneven last
// piece.
// CHECK-LABEL: func.func @split_constant
// CHECK-DAG: %[[A:.*]] = weft.constant dense<[1, 2, 3]> : tensor<3xi64>
// CHECK-DAG: %[[B:.*]] = weft.constant dense<[4, 5, 6]> : tensor<3xi64>
// CHECK-DAG: %[[C:.*]] = weft.constant dense<7> : tensor<1xi64>
// CHECK: return %[[A]], %[[B]], %[[C]]
func.func @split_constant() -> (tensor<3xi64>, tensor<3xi64>, tensor<1xi64>) {
  %a = weft.constant dense<[1, 2, 3, 4, 5, 6, 7]> : tensor<7xi64>
  %s:3 = weft.split %a axis = 0 {num_outputs = 3 : i64} : tensor<7xi64> -> tensor<3xi64>, tensor<3xi64>, tensor<1xi64>
  return %s#0, %s#1, %s#2 : tensor<3xi64>, tensor<3xi64>, tensor<1xi64>
}

// Tests that an even split of a static dimension gets explicit sizes and a
// one-piece split is the input.
// CHECK-LABEL: func.func @split_sizes
// CHECK-SAME: (%[[X:.*]]: tensor<?x6xf32>)
// CHECK: %[[S:.*]]:2 = weft.split %[[X]] axis = 1 {sizes = array<i64: 3, 3>} : tensor<?x6xf32> -> tensor<?x3xf32>, tensor<?x3xf32>
// CHECK: return %[[S]]#0, %[[S]]#1, %[[X]]
func.func @split_sizes(%x: tensor<?x6xf32>) -> (tensor<?x3xf32>, tensor<?x3xf32>, tensor<?x6xf32>) {
  %s:2 = weft.split %x axis = 1 {num_outputs = 2 : i64} : tensor<?x6xf32> -> tensor<?x3xf32>, tensor<?x3xf32>
  %o = weft.split %x axis = 0 {num_outputs = 1 : i64} : tensor<?x6xf32> -> tensor<?x6xf32>
  return %s#0, %s#1, %o : tensor<?x3xf32>, tensor<?x3xf32>, tensor<?x6xf32>
}

// Tests slice folding with negative steps, clamping and INT64_MIN ends.
// CHECK-LABEL: func.func @slice_constant
// CHECK: %[[C:.*]] = weft.constant dense<{{\[}}[6, 4], [3, 1]]> : tensor<2x2xi32>
// CHECK: return %[[C]]
func.func @slice_constant() -> tensor<2x2xi32> {
  %a = weft.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %st = weft.constant dense<[-1, 100]> : tensor<2xi64>
  %en = weft.constant dense<[-100, -9223372036854775808]> : tensor<2xi64>
  %sp = weft.constant dense<[-1, -2]> : tensor<2xi64>
  %s = weft.slice %a[%st, %en, %sp] axes = [0, 1]
      : (tensor<2x3xi32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<2x2xi32>
  return %s : tensor<2x2xi32>
}

// Tests that slices taking whole dimensions (dynamic up to INT64_MAX, or
// static, with i32 bounds) are the input.
// CHECK-LABEL: func.func @slice_identity
// CHECK-SAME: (%[[X:.*]]: tensor<?x4xf32>)
// CHECK-NOT: weft.slice
// CHECK: return %[[X]], %[[X]]
func.func @slice_identity(%x: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>) {
  %st = weft.constant dense<[0]> : tensor<1xi32>
  %en = weft.constant dense<[4]> : tensor<1xi32>
  %sp = weft.constant dense<[1]> : tensor<1xi32>
  %t = weft.slice %x[%st, %en, %sp] axes = [1]
      : (tensor<?x4xf32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<?x4xf32>
  %st64 = weft.constant dense<[0]> : tensor<1xi64>
  %en64 = weft.constant dense<[9223372036854775807]> : tensor<1xi64>
  %sp64 = weft.constant dense<[1]> : tensor<1xi64>
  %s = weft.slice %x[%st64, %en64, %sp64] axes = [0]
      : (tensor<?x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4xf32>
  return %s, %t : tensor<?x4xf32>, tensor<?x4xf32>
}

// Tests gather and gather_elements of constants with negative indices.
// CHECK-LABEL: func.func @gather_constant
// CHECK-DAG: %[[G:.*]] = weft.constant dense<{{\[}}[3, 1], [6, 4]]> : tensor<2x2xi32>
// CHECK-DAG: %[[E:.*]] = weft.constant dense<{{\[}}[3, 1], [6, 5]]> : tensor<2x2xi32>
// CHECK: return %[[G]], %[[E]]
func.func @gather_constant() -> (tensor<2x2xi32>, tensor<2x2xi32>) {
  %a = weft.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %gi = weft.constant dense<[-1, 0]> : tensor<2xi64>
  %g = weft.gather %a[%gi] axis = 1 : (tensor<2x3xi32>, tensor<2xi64>) -> tensor<2x2xi32>
  %ei = weft.constant dense<[[2, 0], [-1, 1]]> : tensor<2x2xi32>
  %e = weft.gather_elements %a[%ei] axis = 1 : (tensor<2x3xi32>, tensor<2x2xi32>) -> tensor<2x2xi32>
  return %g, %e : tensor<2x2xi32>, tensor<2x2xi32>
}

// Tests that out-of-range indices do not fold.
// CHECK-LABEL: func.func @gather_out_of_range
// CHECK: weft.gather
func.func @gather_out_of_range() -> tensor<i32> {
  %a = weft.constant dense<[1, 2, 3]> : tensor<3xi32>
  %i = weft.constant dense<3> : tensor<i64>
  %g = weft.gather %a[%i] axis = 0 : (tensor<3xi32>, tensor<i64>) -> tensor<i32>
  return %g : tensor<i32>
}

// Tests the four pad modes on a constant, with negative pads and a value.
// CHECK-LABEL: func.func @pad_constant
// CHECK-DAG: %[[C:.*]] = weft.constant dense<{{\[}}[9, 1, 2], [9, 4, 5], [9, 9, 9]]> : tensor<3x3xi32>
// CHECK-DAG: %[[R:.*]] = weft.constant dense<{{\[}}[3, 2, 1, 2, 3, 2, 1], [6, 5, 4, 5, 6, 5, 4]]> : tensor<2x7xi32>
// CHECK-DAG: %[[E:.*]] = weft.constant dense<{{\[}}[1, 1, 2, 3], [1, 1, 2, 3], [4, 4, 5, 6]]> : tensor<3x4xi32>
// CHECK-DAG: %[[W:.*]] = weft.constant dense<{{\[}}[3, 1, 2, 3, 1, 2, 3], [6, 4, 5, 6, 4, 5, 6]]> : tensor<2x7xi32>
// CHECK: return %[[C]], %[[R]], %[[E]], %[[W]]
func.func @pad_constant() -> (tensor<3x3xi32>, tensor<2x7xi32>, tensor<3x4xi32>, tensor<2x7xi32>) {
  %a = weft.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %v = weft.constant dense<9> : tensor<i32>
  %c = weft.pad constant %a, %v pads = [0, 1, 1, -1] : (tensor<2x3xi32>, tensor<i32>) -> tensor<3x3xi32>
  %r = weft.pad reflect %a pads = [0, 2, 0, 2] : (tensor<2x3xi32>) -> tensor<2x7xi32>
  %e = weft.pad edge %a pads = [1, 1, 0, 0] : (tensor<2x3xi32>) -> tensor<3x4xi32>
  %w = weft.pad wrap %a pads = [0, 1, 0, 3] : (tensor<2x3xi32>) -> tensor<2x7xi32>
  return %c, %r, %e, %w : tensor<3x3xi32>, tensor<2x7xi32>, tensor<3x4xi32>, tensor<2x7xi32>
}

// Tests that zero pads, repeats of one and a trilu keeping everything are
// the input.
// CHECK-LABEL: func.func @identities
// CHECK-SAME: (%[[X:.*]]: tensor<?x3xf32>, %[[Y:.*]]: tensor<3x3xf32>)
// CHECK-NOT: weft.pad
// CHECK-NOT: weft.tile
// CHECK-NOT: weft.trilu
// CHECK: return %[[X]], %[[X]], %[[Y]]
func.func @identities(%x: tensor<?x3xf32>, %y: tensor<3x3xf32>)
    -> (tensor<?x3xf32>, tensor<?x3xf32>, tensor<3x3xf32>) {
  %p = weft.pad constant %x pads = [0, 0, 0, 0] : (tensor<?x3xf32>) -> tensor<?x3xf32>
  %r = weft.constant dense<[1, 1]> : tensor<2xi64>
  %t = weft.tile %x, %r : (tensor<?x3xf32>, tensor<2xi64>) -> tensor<?x3xf32>
  %k = weft.constant dense<-2> : tensor<i64>
  %u = weft.trilu upper %y, %k : (tensor<3x3xf32>, tensor<i64>) -> tensor<3x3xf32>
  return %p, %t, %u : tensor<?x3xf32>, tensor<?x3xf32>, tensor<3x3xf32>
}

// Tests tile and trilu of constants, with bool and bf16 elements.
// CHECK-LABEL: func.func @tile_trilu_constant
// CHECK-DAG: %[[T:.*]] = weft.constant dense<{{\[}}[true, false, true, false], [false, true, false, true]]> : tensor<2x4xi1>
// CHECK-DAG: %[[U:.*]] = weft.constant dense<{{\[}}[0.000000e+00, 2.000000e+00, 3.000000e+00], [0.000000e+00, 0.000000e+00, 6.000000e+00]]> : tensor<2x3xbf16>
// CHECK-DAG: %[[L:.*]] = weft.constant dense<{{\[}}[true, false], [true, true]]> : tensor<2x2xi1>
// CHECK: return %[[T]], %[[U]], %[[L]]
func.func @tile_trilu_constant() -> (tensor<2x4xi1>, tensor<2x3xbf16>, tensor<2x2xi1>) {
  %b = weft.constant dense<[[true, false], [false, true]]> : tensor<2x2xi1>
  %r = weft.constant dense<[1, 2]> : tensor<2xi64>
  %t = weft.tile %b, %r : (tensor<2x2xi1>, tensor<2xi64>) -> tensor<2x4xi1>
  %f = weft.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xbf16>
  %k1 = weft.constant dense<1> : tensor<i64>
  %u = weft.trilu upper %f, %k1 : (tensor<2x3xbf16>, tensor<i64>) -> tensor<2x3xbf16>
  %o = weft.constant dense<true> : tensor<2x2xi1>
  %k0 = weft.constant dense<0> : tensor<i64>
  %l = weft.trilu %o, %k0 : (tensor<2x2xi1>, tensor<i64>) -> tensor<2x2xi1>
  return %t, %u, %l : tensor<2x4xi1>, tensor<2x3xbf16>, tensor<2x2xi1>
}
