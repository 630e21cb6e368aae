// RUN: weft-opt %s --canonicalize | FileCheck %s

// Tests that unary functions fold on float and integer constants.
// CHECK-LABEL: func.func @unary_constants
func.func @unary_constants() -> (tensor<4xf32>, tensor<3xi32>, tensor<3xui8>,
                                 tensor<2xi1>, tensor<2xf16>, tensor<2xf32>) {
  %f = weft.constant dense<[-2.0, -0.5, 0.0, 3.0]> : tensor<4xf32>
  %i = weft.constant dense<[-5, 0, -2147483648]> : tensor<3xi32>
  %u = weft.constant dense<[0, 7, 255]> : tensor<3xui8>
  %b = weft.constant dense<[true, false]> : tensor<2xi1>
  %h = weft.constant dense<[1.0, -1.0]> : tensor<2xf16>
  %g = weft.constant dense<[1.0, -3.0]> : tensor<2xf32>
  // CHECK-DAG: weft.constant dense<[0.000000e+00, 0.000000e+00, 0.000000e+00, 3.000000e+00]> : tensor<4xf32>
  %relu = weft.unary relu %f : tensor<4xf32> -> tensor<4xf32>
  // Neg wraps around like two's complement integers.
  // CHECK-DAG: weft.constant dense<[5, 0, -2147483648]> : tensor<3xi32>
  %neg = weft.unary neg %i : tensor<3xi32> -> tensor<3xi32>
  // CHECK-DAG: weft.constant dense<[0, 1, 1]> : tensor<3xui8>
  %sign = weft.unary sign %u : tensor<3xui8> -> tensor<3xui8>
  // CHECK-DAG: weft.constant dense<[false, true]> : tensor<2xi1>
  %not = weft.unary not %b : tensor<2xi1> -> tensor<2xi1>
  // exp(1) = 2.718... rounds to 2.71875 in f16.
  // CHECK-DAG: weft.constant dense<[2.718750e+00, 3.679200e-01]> : tensor<2xf16>
  %exp = weft.unary exp %h : tensor<2xf16> -> tensor<2xf16>
  // CHECK-DAG: weft.constant dense<[1.000000e+00, -3.000000e-01]> : tensor<2xf32>
  %leaky = weft.unary leaky_relu %g alpha = 0.1 : tensor<2xf32> -> tensor<2xf32>
  // CHECK-NOT: weft.unary
  return %relu, %neg, %sign, %not, %exp, %leaky
      : tensor<4xf32>, tensor<3xi32>, tensor<3xui8>, tensor<2xi1>,
        tensor<2xf16>, tensor<2xf32>
}

// Tests that a large splat folds to a splat and that a large fold which is
// not a splat is left alone (weights are not duplicated).
// CHECK-LABEL: func.func @fold_size_limit
func.func @fold_size_limit() -> (tensor<1024x1024xf32>, tensor<2x40000xf32>) {
  %s = weft.constant dense<4.0> : tensor<1024x1024xf32>
  // CHECK-DAG: %[[SPLAT:.*]] = weft.constant dense<2.000000e+00> : tensor<1024x1024xf32>
  %r = weft.unary sqrt %s : tensor<1024x1024xf32> -> tensor<1024x1024xf32>
  %col = weft.constant dense<[[1.0], [2.0]]> : tensor<2x1xf32>
  %row = weft.constant dense<3.0> : tensor<1x40000xf32>
  // CHECK-DAG: %[[BIG:.*]] = weft.binary add
  %big = weft.binary add %col, %row : (tensor<2x1xf32>, tensor<1x40000xf32>) -> tensor<2x40000xf32>
  // CHECK: return %[[SPLAT]], %[[BIG]]
  return %r, %big : tensor<1024x1024xf32>, tensor<2x40000xf32>
}

// Tests that clip folds with bounds, and without bounds is the identity.
// CHECK-LABEL: func.func @clip
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
func.func @clip(%x: tensor<4xf32>) -> (tensor<4xi64>, tensor<4xf32>, tensor<4xf32>) {
  %i = weft.constant dense<[-10, 0, 5, 100]> : tensor<4xi64>
  %lo = weft.constant dense<-1> : tensor<i64>
  %hi = weft.constant dense<[10]> : tensor<1xi64>
  // CHECK-DAG: weft.constant dense<[-1, 0, 5, 10]> : tensor<4xi64>
  %c = weft.clip %i min %lo max %hi : (tensor<4xi64>, tensor<i64>, tensor<1xi64>) -> tensor<4xi64>
  %f = weft.constant dense<[-3.0, 0.5, 0x7FC00000, 9.0]> : tensor<4xf32>
  %fhi = weft.constant dense<1.0> : tensor<f32>
  // NaN stays NaN.
  // CHECK-DAG: weft.constant dense<[-3.000000e+00, 5.000000e-01, 0x7FC00000, 1.000000e+00]> : tensor<4xf32>
  %cf = weft.clip %f max %fhi : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %none = weft.clip %x : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: return %{{.*}}, %{{.*}}, %[[X]]
  return %c, %cf, %none : tensor<4xi64>, tensor<4xf32>, tensor<4xf32>
}

// Tests cast folding: truncation toward zero, wrap-around, sign and zero
// extension, booleans and float rounding.
// CHECK-LABEL: func.func @cast
func.func @cast() -> (tensor<3xi64>, tensor<3xi1>, tensor<2xi32>, tensor<2xi32>,
                      tensor<2xi32>, tensor<2xf32>, tensor<2xf16>,
                      tensor<2xf32>) {
  %f = weft.constant dense<[-2.7, 0.0, 2.7]> : tensor<3xf32>
  // CHECK-DAG: weft.constant dense<[-2, 0, 2]> : tensor<3xi64>
  %toInt = weft.cast %f to i64 : tensor<3xf32> -> tensor<3xi64>
  %nan = weft.constant dense<[0.0, 0x7FC00000, -0.5]> : tensor<3xf32>
  // CHECK-DAG: weft.constant dense<[false, true, true]> : tensor<3xi1>
  %toBool = weft.cast %nan to i1 : tensor<3xf32> -> tensor<3xi1>
  %big = weft.constant dense<[4294967297, -1]> : tensor<2xi64>
  // CHECK-DAG: weft.constant dense<[1, -1]> : tensor<2xi32>
  %wrap = weft.cast %big to i32 : tensor<2xi64> -> tensor<2xi32>
  %u = weft.constant dense<[255, 1]> : tensor<2xui8>
  // CHECK-DAG: weft.constant dense<[255, 1]> : tensor<2xi32>
  %zext = weft.cast %u to i32 : tensor<2xui8> -> tensor<2xi32>
  %s = weft.constant dense<[-1, 127]> : tensor<2xi8>
  // CHECK-DAG: weft.constant dense<[-1, 127]> : tensor<2xi32>
  %sext = weft.cast %s to i32 : tensor<2xi8> -> tensor<2xi32>
  %b = weft.constant dense<[true, false]> : tensor<2xi1>
  // CHECK-DAG: weft.constant dense<[1.000000e+00, 0.000000e+00]> : tensor<2xf32>
  %fromBool = weft.cast %b to f32 : tensor<2xi1> -> tensor<2xf32>
  %d = weft.constant dense<[1.0e+5, 0.1]> : tensor<2xf64>
  // 1e5 overflows f16 to infinity; 0.1 rounds to nearest.
  // CHECK-DAG: weft.constant dense<[0x7C00, 9.997550e-02]> : tensor<2xf16>
  %narrow = weft.cast %d to f16 : tensor<2xf64> -> tensor<2xf16>
  // i64 to f32 rounds once: 2^24 + 1 becomes 2^24.
  %l = weft.constant dense<[16777217, -3]> : tensor<2xi64>
  // CHECK-DAG: weft.constant dense<[0x4B800000, -3.000000e+00]> : tensor<2xf32>
  %fromInt = weft.cast %l to f32 : tensor<2xi64> -> tensor<2xf32>
  // CHECK-NOT: weft.cast
  return %toInt, %toBool, %wrap, %zext, %sext, %fromBool, %narrow, %fromInt
      : tensor<3xi64>, tensor<3xi1>, tensor<2xi32>, tensor<2xi32>,
        tensor<2xi32>, tensor<2xf32>, tensor<2xf16>, tensor<2xf32>
}

// Tests that undefined casts (out of range, NaN to integer) do not fold and
// that a cast to the same type is the identity.
// CHECK-LABEL: func.func @cast_no_fold
// CHECK-SAME: (%[[X:.*]]: tensor<2xf32>)
func.func @cast_no_fold(%x: tensor<2xf32>) -> (tensor<2xi32>, tensor<2xui8>, tensor<2xf32>) {
  %f = weft.constant dense<[3.0e+9, 1.0]> : tensor<2xf32>
  // CHECK: %[[RANGE:.*]] = weft.cast %{{.*}} to i32
  %range = weft.cast %f to i32 : tensor<2xf32> -> tensor<2xi32>
  %neg = weft.constant dense<[-1.0, 0x7FC00000]> : tensor<2xf32>
  // CHECK: %[[NEG:.*]] = weft.cast %{{.*}} to ui8
  %u = weft.cast %neg to ui8 : tensor<2xf32> -> tensor<2xui8>
  %same = weft.cast %x to f32 : tensor<2xf32> -> tensor<2xf32>
  // CHECK: return %[[RANGE]], %[[NEG]], %[[X]]
  return %range, %u, %same : tensor<2xi32>, tensor<2xui8>, tensor<2xf32>
}

// Tests integer division and modulo semantics: Div truncates toward zero,
// mod takes the divisor's sign, fmod the dividend's.
// CHECK-LABEL: func.func @int_div_mod
func.func @int_div_mod() -> (tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<2xui8>) {
  %a = weft.constant dense<[7, -7, 7, -7]> : tensor<4xi64>
  %b = weft.constant dense<[2, 2, -3, -3]> : tensor<4xi64>
  // CHECK-DAG: weft.constant dense<[3, -3, -2, 2]> : tensor<4xi64>
  %div = weft.binary div %a, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  // CHECK-DAG: weft.constant dense<[1, 1, -2, -1]> : tensor<4xi64>
  %mod = weft.binary mod %a, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  // CHECK-DAG: weft.constant dense<[1, -1, 1, -1]> : tensor<4xi64>
  %fmod = weft.binary fmod %a, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %u = weft.constant dense<[250, 9]> : tensor<2xui8>
  %v = weft.constant dense<[7]> : tensor<1xui8>
  // Unsigned: 250 / 7 = 35, 9 / 7 = 1.
  // CHECK-DAG: weft.constant dense<[35, 1]> : tensor<2xui8>
  %udiv = weft.binary div %u, %v : (tensor<2xui8>, tensor<1xui8>) -> tensor<2xui8>
  // CHECK-NOT: weft.binary
  return %div, %mod, %fmod, %udiv : tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<2xui8>
}

// Tests that integer division by zero and negative integer exponents do not
// fold.
// CHECK-LABEL: func.func @int_undefined
func.func @int_undefined() -> (tensor<2xi32>, tensor<2xi32>, tensor<i32>) {
  %a = weft.constant dense<[1, 2]> : tensor<2xi32>
  %z = weft.constant dense<[1, 0]> : tensor<2xi32>
  // CHECK: weft.binary div
  %div = weft.binary div %a, %z : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  // CHECK: weft.binary mod
  %mod = weft.binary mod %a, %z : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  %m = weft.constant dense<-1> : tensor<i32>
  // CHECK: weft.binary pow
  %pow = weft.binary pow %m, %m : (tensor<i32>, tensor<i32>) -> tensor<i32>
  return %div, %mod, %pow : tensor<2xi32>, tensor<2xi32>, tensor<i32>
}

// Tests float arithmetic, pow with mixed element types and NaN-propagating
// max and min, with broadcasting.
// CHECK-LABEL: func.func @float_binary
func.func @float_binary() -> (tensor<2x3xf32>, tensor<3xf32>, tensor<3xi64>,
                              tensor<2xf32>, tensor<2xf32>) {
  %col = weft.constant dense<[[1.0], [2.0]]> : tensor<2x1xf32>
  %row = weft.constant dense<[10.0, 20.0, 30.0]> : tensor<3xf32>
  // CHECK-DAG: weft.constant dense<{{\[}}[1.100000e+01, 2.100000e+01, 3.100000e+01], [1.200000e+01, 2.200000e+01, 3.200000e+01]]> : tensor<2x3xf32>
  %add = weft.binary add %col, %row : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %e = weft.constant dense<2> : tensor<i8>
  // CHECK-DAG: weft.constant dense<[1.000000e+02, 4.000000e+02, 9.000000e+02]> : tensor<3xf32>
  %pow = weft.binary pow %row, %e : (tensor<3xf32>, tensor<i8>) -> tensor<3xf32>
  %base = weft.constant dense<[2, 3, -2]> : tensor<3xi64>
  %half = weft.constant dense<[10.0, 2.0, 3.0]> : tensor<3xf32>
  // CHECK-DAG: weft.constant dense<[1024, 9, -8]> : tensor<3xi64>
  %ipow = weft.binary pow %base, %half : (tensor<3xi64>, tensor<3xf32>) -> tensor<3xi64>
  %p = weft.constant dense<[1.0, 0x7FC00000]> : tensor<2xf32>
  %q = weft.constant dense<[2.0, 0.0]> : tensor<2xf32>
  // CHECK-DAG: weft.constant dense<[2.000000e+00, 0x7FC00000]> : tensor<2xf32>
  %max = weft.binary max %p, %q : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %neg = weft.constant dense<[-2.0, 3.0]> : tensor<2xf32>
  %slope = weft.constant dense<0.5> : tensor<f32>
  // CHECK-DAG: weft.constant dense<[-1.000000e+00, 3.000000e+00]> : tensor<2xf32>
  %prelu = weft.binary prelu %neg, %slope : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  // CHECK-NOT: weft.binary
  return %add, %pow, %ipow, %max, %prelu
      : tensor<2x3xf32>, tensor<3xf32>, tensor<3xi64>, tensor<2xf32>, tensor<2xf32>
}

// Tests comparisons and logic: NaN compares false; unsigned compares
// unsigned.
// CHECK-LABEL: func.func @compare
func.func @compare() -> (tensor<3xi1>, tensor<2xi1>, tensor<2xi1>, tensor<2xi1>) {
  %f = weft.constant dense<[1.0, 0x7FC00000, 3.0]> : tensor<3xf32>
  %g = weft.constant dense<1.0> : tensor<f32>
  // CHECK-DAG: weft.constant dense<[true, false, false]> : tensor<3xi1>
  %eq = weft.binary equal %f, %g : (tensor<3xf32>, tensor<f32>) -> tensor<3xi1>
  %u = weft.constant dense<[200, 1]> : tensor<2xui8>
  %v = weft.constant dense<100> : tensor<ui8>
  // CHECK-DAG: weft.constant dense<[true, false]> : tensor<2xi1>
  %gt = weft.binary greater %u, %v : (tensor<2xui8>, tensor<ui8>) -> tensor<2xi1>
  %a = weft.constant dense<[true, false]> : tensor<2xi1>
  %b = weft.constant dense<[true, true]> : tensor<2xi1>
  // CHECK-DAG: weft.constant dense<[false, true]> : tensor<2xi1>
  %xor = weft.binary xor %a, %b : (tensor<2xi1>, tensor<2xi1>) -> tensor<2xi1>
  %i = weft.constant dense<[-1, 5]> : tensor<2xi32>
  %j = weft.constant dense<[5, 5]> : tensor<2xi32>
  %le = weft.binary less_equal %i, %j : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi1>
  // CHECK-NOT: weft.binary
  return %eq, %gt, %xor, %le : tensor<3xi1>, tensor<2xi1>, tensor<2xi1>, tensor<2xi1>
}

// Tests identities that return an operand when the result type is the
// operand's type.
// CHECK-LABEL: func.func @identities
// CHECK-SAME: (%[[X:.*]]: tensor<4xi64>, %[[F:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xi1>)
func.func @identities(%x: tensor<4xi64>, %f: tensor<4xf32>, %b: tensor<4xi1>)
    -> (tensor<4xi64>, tensor<4xi64>, tensor<4xf32>, tensor<4xf32>,
        tensor<4xf32>, tensor<4xi1>, tensor<4xi64>) {
  %zero = weft.constant dense<0> : tensor<i64>
  %one = weft.constant dense<1> : tensor<i64>
  %fone = weft.constant dense<1.0> : tensor<f32>
  %fnegzero = weft.constant dense<-0.0> : tensor<f32>
  %true = weft.constant dense<true> : tensor<i1>
  %add = weft.binary add %zero, %x : (tensor<i64>, tensor<4xi64>) -> tensor<4xi64>
  %mul = weft.binary mul %x, %one : (tensor<4xi64>, tensor<i64>) -> tensor<4xi64>
  %div = weft.binary div %f, %fone : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %fadd = weft.binary add %f, %fnegzero : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %pow = weft.binary pow %f, %one : (tensor<4xf32>, tensor<i64>) -> tensor<4xf32>
  %and = weft.binary and %true, %b : (tensor<i1>, tensor<4xi1>) -> tensor<4xi1>
  %max = weft.binary max %x, %x : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  // CHECK-NOT: weft.binary
  // CHECK: return %[[X]], %[[X]], %[[F]], %[[F]], %[[F]], %[[B]], %[[X]]
  return %add, %mul, %div, %fadd, %pow, %and, %max
      : tensor<4xi64>, tensor<4xi64>, tensor<4xf32>, tensor<4xf32>,
        tensor<4xf32>, tensor<4xi1>, tensor<4xi64>
}

// Tests that identities do not fold when broadcasting changes the type, and
// that x + 0.0 does not fold for floats (-0.0 + 0.0 is +0.0).
// CHECK-LABEL: func.func @no_identities
func.func @no_identities(%x: tensor<4xi64>, %f: tensor<4xf32>)
    -> (tensor<2x4xi64>, tensor<4xf32>) {
  %zero = weft.constant dense<0> : tensor<2x1xi64>
  %fzero = weft.constant dense<0.0> : tensor<f32>
  // CHECK: weft.binary add
  %add = weft.binary add %x, %zero : (tensor<4xi64>, tensor<2x1xi64>) -> tensor<2x4xi64>
  // CHECK: weft.binary add
  %fadd = weft.binary add %f, %fzero : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %add, %fadd : tensor<2x4xi64>, tensor<4xf32>
}

// Tests select: a constant condition picks a branch of the result's type; all
// constant operands fold with broadcasting.
// CHECK-LABEL: func.func @select
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>, %[[Y:.*]]: tensor<4xf32>, %[[S:.*]]: tensor<f32>)
func.func @select(%x: tensor<4xf32>, %y: tensor<4xf32>, %s: tensor<f32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x2xi64>) {
  %true = weft.constant dense<true> : tensor<4xi1>
  %false = weft.constant dense<false> : tensor<i1>
  %a = weft.select %true, %x, %y : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = weft.select %false, %x, %y : (tensor<i1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  // The true branch is a scalar: picking it would change the type.
  // CHECK-DAG: %[[C:.*]] = weft.select
  %c = weft.select %true, %s, %y : (tensor<4xi1>, tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %m = weft.constant dense<[[true], [false]]> : tensor<2x1xi1>
  %p = weft.constant dense<[1, 2]> : tensor<2xi64>
  %q = weft.constant dense<-1> : tensor<i64>
  // CHECK-DAG: %[[D:.*]] = weft.constant dense<{{\[}}[1, 2], [-1, -1]]> : tensor<2x2xi64>
  %d = weft.select %m, %p, %q : (tensor<2x1xi1>, tensor<2xi64>, tensor<i64>) -> tensor<2x2xi64>
  // CHECK: return %[[X]], %[[Y]], %[[C]], %[[D]]
  return %a, %b, %c, %d : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x2xi64>
}

// Tests the shape arithmetic that exporters emit: a -1 in a constant shape
// replaced through Equal and Where, then scaled with integer Mul and Div.
// CHECK-LABEL: func.func @shape_arithmetic
func.func @shape_arithmetic() -> tensor<3xi64> {
  %shape = weft.constant dense<[2, -1, 64]> : tensor<3xi64>
  %minus = weft.constant dense<-1> : tensor<i64>
  %eq = weft.binary equal %shape, %minus : (tensor<3xi64>, tensor<i64>) -> tensor<3xi1>
  %fill = weft.constant dense<128> : tensor<i64>
  %sel = weft.select %eq, %fill, %shape : (tensor<3xi1>, tensor<i64>, tensor<3xi64>) -> tensor<3xi64>
  %two = weft.constant dense<2> : tensor<i64>
  %mul = weft.binary mul %sel, %two : (tensor<3xi64>, tensor<i64>) -> tensor<3xi64>
  %div = weft.binary div %mul, %two : (tensor<3xi64>, tensor<i64>) -> tensor<3xi64>
  %cast = weft.cast %div to i32 : tensor<3xi64> -> tensor<3xi32>
  %back = weft.cast %cast to i64 : tensor<3xi32> -> tensor<3xi64>
  // CHECK: %[[R:.*]] = weft.constant dense<[2, 128, 64]> : tensor<3xi64>
  // CHECK-NOT: weft.binary
  // CHECK-NOT: weft.select
  // CHECK: return %[[R]]
  return %back : tensor<3xi64>
}

// Tests that a folded operand lets a dynamic result type be refined.
// CHECK-LABEL: func.func @refine
func.func @refine(%x: tensor<2x3xf32>) -> tensor<?x?xf32> {
  %c = weft.constant dense<1.5> : tensor<3xf32>
  // CHECK: weft.binary sub %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %r = weft.binary sub %x, %c : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}
