// RUN: weft-opt %s --canonicalize | FileCheck %s

// Tests that the product of a constant shape folds (shape arithmetic).
// CHECK-LABEL: func.func @fold_prod_of_shape
func.func @fold_prod_of_shape() -> tensor<1xi64> {
  // CHECK: %[[C:.*]] = weft.constant dense<24> : tensor<1xi64>
  // CHECK-NOT: weft.reduce
  // CHECK: return %[[C]]
  %shape = weft.constant dense<[2, 3, 4]> : tensor<3xi64>
  %n = weft.reduce prod %shape axes [0] keepdims : tensor<3xi64> -> tensor<1xi64>
  return %n : tensor<1xi64>
}

// Tests integer sum, max, min, l1 and sum_square folds along one axis.
// CHECK-LABEL: func.func @fold_integer_kinds
func.func @fold_integer_kinds() -> (tensor<2xi32>, tensor<2xi32>, tensor<3xi32>, tensor<2xi32>, tensor<2x1xi32>) {
  // CHECK-DAG: %[[SUM:.*]] = weft.constant dense<[2, -5]> : tensor<2xi32>
  // CHECK-DAG: %[[MAX:.*]] = weft.constant dense<[3, 5]> : tensor<2xi32>
  // CHECK-DAG: %[[MIN:.*]] = weft.constant dense<[-4, -6, 3]> : tensor<3xi32>
  // CHECK-DAG: %[[L1:.*]] = weft.constant dense<[6, 15]> : tensor<2xi32>
  // CHECK-DAG: %[[SSQ:.*]] = weft.constant dense<{{\[\[}}14], [77]]> : tensor<2x1xi32>
  // CHECK-NOT: weft.reduce
  // CHECK: return %[[SUM]], %[[MAX]], %[[MIN]], %[[L1]], %[[SSQ]]
  %c = weft.constant dense<[[1, -2, 3], [-4, -6, 5]]> : tensor<2x3xi32>
  %sum = weft.reduce sum %c axes [1] : tensor<2x3xi32> -> tensor<2xi32>
  %max = weft.reduce max %c axes [1] : tensor<2x3xi32> -> tensor<2xi32>
  %min = weft.reduce min %c axes [0] : tensor<2x3xi32> -> tensor<3xi32>
  %l1 = weft.reduce l1 %c axes [1] : tensor<2x3xi32> -> tensor<2xi32>
  %ssq = weft.reduce sum_square %c axes [1] keepdims : tensor<2x3xi32> -> tensor<2x1xi32>
  return %sum, %max, %min, %l1, %ssq : tensor<2xi32>, tensor<2xi32>, tensor<3xi32>, tensor<2xi32>, tensor<2x1xi32>
}

// Tests that unsigned values compare as unsigned and that sums wrap.
// CHECK-LABEL: func.func @fold_unsigned_and_wrapping
func.func @fold_unsigned_and_wrapping() -> (tensor<ui8>, tensor<i8>) {
  // CHECK-DAG: %[[MAX:.*]] = weft.constant dense<200> : tensor<ui8>
  // CHECK-DAG: %[[SUM:.*]] = weft.constant dense<-56> : tensor<i8>
  // CHECK: return %[[MAX]], %[[SUM]]
  %u = weft.constant dense<[7, 200, 100]> : tensor<3xui8>
  %max = weft.reduce max %u axes [0] : tensor<3xui8> -> tensor<ui8>
  %s = weft.constant dense<[100, 100]> : tensor<2xi8>
  %sum = weft.reduce sum %s axes [0] : tensor<2xi8> -> tensor<i8>
  return %max, %sum : tensor<ui8>, tensor<i8>
}

// Tests floating-point folds of mean, l1, l2, log_sum_exp and log_sum.
// CHECK-LABEL: func.func @fold_float_kinds
func.func @fold_float_kinds() -> (tensor<2xf32>, tensor<f32>, tensor<2xf32>, tensor<2xf64>, tensor<2xf64>) {
  // CHECK-DAG: %[[MEAN:.*]] = weft.constant dense<[-1.000000e+00, 3.000000e+00]> : tensor<2xf32>
  // CHECK-DAG: %[[L1:.*]] = weft.constant dense<1.000000e+01> : tensor<f32>
  // CHECK-DAG: %[[L2:.*]] = weft.constant dense<5.000000e+00> : tensor<2xf32>
  // CHECK-DAG: %[[LSE:.*]] = weft.constant dense<[0.69314718055994529, 1.000000e+03]> : tensor<2xf64>
  // CHECK-DAG: %[[LS:.*]] = weft.constant dense<[0.000000e+00, 0xFFF0000000000000]> : tensor<2xf64>
  // CHECK-NOT: weft.reduce
  // CHECK: return %[[MEAN]], %[[L1]], %[[L2]], %[[LSE]], %[[LS]]
  %c = weft.constant dense<[[1.0, -3.0], [3.0, 3.0]]> : tensor<2x2xf32>
  %mean = weft.reduce mean %c axes [1] : tensor<2x2xf32> -> tensor<2xf32>
  %abs = weft.reduce l1 %c axes [0, 1] : tensor<2x2xf32> -> tensor<f32>
  %v = weft.constant dense<[[3.0, 4.0], [-4.0, 3.0]]> : tensor<2x2xf32>
  %l2 = weft.reduce l2 %v axes [1] : tensor<2x2xf32> -> tensor<2xf32>
  // The maximum is subtracted first, so large values do not overflow.
  %d = weft.constant dense<[[0.0, 0.0], [1000.0, -1.0e300]]> : tensor<2x2xf64>
  %lse = weft.reduce log_sum_exp %d axes [1] : tensor<2x2xf64> -> tensor<2xf64>
  %z = weft.constant dense<[[0.25, 0.75], [0.0, 0.0]]> : tensor<2x2xf64>
  %ls = weft.reduce log_sum %z axes [1] : tensor<2x2xf64> -> tensor<2xf64>
  return %mean, %abs, %l2, %lse, %ls : tensor<2xf32>, tensor<f32>, tensor<2xf32>, tensor<2xf64>, tensor<2xf64>
}

// Tests that f16 folds round the exact result once.
// CHECK-LABEL: func.func @fold_f16_sum
func.func @fold_f16_sum() -> tensor<f16> {
  // CHECK: %[[C:.*]] = weft.constant dense<2.050000e+03> : tensor<f16>
  // CHECK: return %[[C]]
  %c = weft.constant dense<[2048.0, 1.0, 1.0]> : tensor<3xf16>
  %sum = weft.reduce sum %c axes [0] : tensor<3xf16> -> tensor<f16>
  return %sum : tensor<f16>
}

// Tests the values ONNX gives reductions of an empty set.
// CHECK-LABEL: func.func @fold_empty_set
func.func @fold_empty_set() -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xi32>, tensor<2xf32>, tensor<2xf32>, tensor<2xi64>) {
  // CHECK-DAG: %[[ZERO:.*]] = weft.constant dense<0.000000e+00> : tensor<2xf32>
  // CHECK-DAG: %[[ONE:.*]] = weft.constant dense<1.000000e+00> : tensor<2xf32>
  // CHECK-DAG: %[[NEGINF:.*]] = weft.constant dense<0xFF800000> : tensor<2xf32>
  // CHECK-DAG: %[[IMAX:.*]] = weft.constant dense<2147483647> : tensor<2xi32>
  // CHECK-DAG: %[[NAN:.*]] = weft.constant dense<0x7FC00000> : tensor<2xf32>
  // CHECK-DAG: %[[IMIN:.*]] = weft.constant dense<-9223372036854775808> : tensor<2xi64>
  // CHECK-NOT: weft.reduce
  // CHECK: return %[[ZERO]], %[[ONE]], %[[NEGINF]], %[[IMAX]], %[[NAN]], %[[NEGINF]], %[[IMIN]]
  %f = weft.constant dense<> : tensor<2x0xf32>
  %i = weft.constant dense<> : tensor<2x0xi32>
  %l = weft.constant dense<> : tensor<2x0xi64>
  %sum = weft.reduce sum %f axes [1] : tensor<2x0xf32> -> tensor<2xf32>
  %prod = weft.reduce prod %f axes [1] : tensor<2x0xf32> -> tensor<2xf32>
  %max = weft.reduce max %f axes [1] : tensor<2x0xf32> -> tensor<2xf32>
  %min = weft.reduce min %i axes [1] : tensor<2x0xi32> -> tensor<2xi32>
  %mean = weft.reduce mean %f axes [1] : tensor<2x0xf32> -> tensor<2xf32>
  %lse = weft.reduce log_sum_exp %f axes [1] : tensor<2x0xf32> -> tensor<2xf32>
  %imax = weft.reduce max %l axes [1] : tensor<2x0xi64> -> tensor<2xi64>
  return %sum, %prod, %max, %min, %mean, %lse, %imax : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xi32>, tensor<2xf32>, tensor<2xf32>, tensor<2xi64>
}

// Tests that max and min of booleans are "any" and "all".
// CHECK-LABEL: func.func @fold_bool
func.func @fold_bool() -> (tensor<2xi1>, tensor<2xi1>) {
  // CHECK-DAG: %[[ANY:.*]] = weft.constant dense<[true, false]> : tensor<2xi1>
  // CHECK-DAG: %[[ALL:.*]] = weft.constant dense<false> : tensor<2xi1>
  // CHECK: return %[[ANY]], %[[ALL]]
  %b = weft.constant dense<[[true, false], [false, false]]> : tensor<2x2xi1>
  %any = weft.reduce max %b axes [1] : tensor<2x2xi1> -> tensor<2xi1>
  %all = weft.reduce min %b axes [1] : tensor<2x2xi1> -> tensor<2xi1>
  return %any, %all : tensor<2xi1>, tensor<2xi1>
}

// Tests that reducing over no axes, or over size-1 axes kept as such, is the
// input for the kinds that leave a single element unchanged.
// CHECK-LABEL: func.func @fold_identity
// CHECK-SAME: (%[[X:.*]]: tensor<?x3xf32>, %[[Y:.*]]: tensor<?x8x1x1xf32>)
func.func @fold_identity(%x: tensor<?x3xf32>, %y: tensor<?x8x1x1xf32>) -> (tensor<?x3xf32>, tensor<?x8x1x1xf32>, tensor<?x3xf32>, tensor<?x8x1x1xf32>) {
  // CHECK: %[[L1:.*]] = weft.reduce l1 %[[X]] axes [] : tensor<?x3xf32> -> tensor<?x3xf32>
  // CHECK: %[[LOG:.*]] = weft.reduce log_sum %[[Y]] axes [2, 3] keepdims : tensor<?x8x1x1xf32> -> tensor<?x8x1x1xf32>
  // CHECK: return %[[X]], %[[Y]], %[[L1]], %[[LOG]]
  %noop = weft.reduce sum %x axes [] : tensor<?x3xf32> -> tensor<?x3xf32>
  %pool = weft.reduce mean %y axes [2, 3] keepdims : tensor<?x8x1x1xf32> -> tensor<?x8x1x1xf32>
  %abs = weft.reduce l1 %x axes [] : tensor<?x3xf32> -> tensor<?x3xf32>
  %log = weft.reduce log_sum %y axes [2, 3] keepdims : tensor<?x8x1x1xf32> -> tensor<?x8x1x1xf32>
  return %noop, %pool, %abs, %log : tensor<?x3xf32>, tensor<?x8x1x1xf32>, tensor<?x3xf32>, tensor<?x8x1x1xf32>
}

// Tests what does not fold: integer means, large constants and reductions
// that drop a size-1 dimension (a reshape, not an identity).
// CHECK-LABEL: func.func @no_fold
func.func @no_fold(%x: tensor<4x1xf32>) -> (tensor<i32>, tensor<f32>, tensor<4xf32>) {
  // CHECK: weft.reduce mean
  // CHECK: weft.reduce sum
  // CHECK: weft.reduce max
  %i = weft.constant dense<[1, 2]> : tensor<2xi32>
  %mean = weft.reduce mean %i axes [0] : tensor<2xi32> -> tensor<i32>
  %big = weft.constant dense<1.0> : tensor<65537xf32>
  %sum = weft.reduce sum %big axes [0] : tensor<65537xf32> -> tensor<f32>
  %drop = weft.reduce max %x axes [1] : tensor<4x1xf32> -> tensor<4xf32>
  return %mean, %sum, %drop : tensor<i32>, tensor<f32>, tensor<4xf32>
}

// Tests that trailing softmax over dimensions after the axis that are all of
// size 1 becomes the single-axis form, and stays otherwise.
// CHECK-LABEL: func.func @softmax_trailing
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x1x1xf32>)
func.func @softmax_trailing(%x: tensor<2x3x1x1xf32>) -> (tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>) {
  // CHECK: %[[LAST:.*]] = weft.softmax %[[X]] axis 3 : tensor<2x3x1x1xf32> -> tensor<2x3x1x1xf32>
  // CHECK: %[[ONES:.*]] = weft.softmax log %[[X]] axis 1 : tensor<2x3x1x1xf32> -> tensor<2x3x1x1xf32>
  // CHECK: %[[KEPT:.*]] = weft.softmax %[[X]] axis 0 trailing : tensor<2x3x1x1xf32> -> tensor<2x3x1x1xf32>
  // CHECK: return %[[LAST]], %[[ONES]], %[[KEPT]]
  %last = weft.softmax %x axis 3 trailing : tensor<2x3x1x1xf32> -> tensor<2x3x1x1xf32>
  %ones = weft.softmax log %x axis 1 trailing : tensor<2x3x1x1xf32> -> tensor<2x3x1x1xf32>
  %kept = weft.softmax %x axis 0 trailing : tensor<2x3x1x1xf32> -> tensor<2x3x1x1xf32>
  return %last, %ones, %kept : tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>
}
