// RUN: weft-opt %s | weft-opt | FileCheck %s

// Tests that unary functions without parameters round-trip, including a
// result type less static than the input's.
// CHECK-LABEL: func.func @unary
// CHECK-SAME: (%[[X:.*]]: tensor<2x?xf32>, %[[I:.*]]: tensor<4xi32>, %[[B:.*]]: tensor<3xi1>)
func.func @unary(%x: tensor<2x?xf32>, %i: tensor<4xi32>, %b: tensor<3xi1>)
    -> (tensor<2x?xf32>, tensor<?x?xf32>, tensor<4xi32>, tensor<4xi32>,
        tensor<3xi1>) {
  // CHECK: %[[RELU:.*]] = weft.unary relu %[[X]] : tensor<2x?xf32> -> tensor<2x?xf32>
  %relu = weft.unary relu %x : tensor<2x?xf32> -> tensor<2x?xf32>
  // CHECK: %[[EXP:.*]] = weft.unary exp %[[RELU]] : tensor<2x?xf32> -> tensor<?x?xf32>
  %exp = weft.unary exp %relu : tensor<2x?xf32> -> tensor<?x?xf32>
  // CHECK: %[[NEG:.*]] = weft.unary neg %[[I]] : tensor<4xi32> -> tensor<4xi32>
  %neg = weft.unary neg %i : tensor<4xi32> -> tensor<4xi32>
  // CHECK: %[[SIGN:.*]] = weft.unary sign %[[NEG]] : tensor<4xi32> -> tensor<4xi32>
  %sign = weft.unary sign %neg : tensor<4xi32> -> tensor<4xi32>
  // CHECK: %[[NOT:.*]] = weft.unary not %[[B]] : tensor<3xi1> -> tensor<3xi1>
  %not = weft.unary not %b : tensor<3xi1> -> tensor<3xi1>
  // CHECK: return %[[RELU]], %[[EXP]], %[[NEG]], %[[SIGN]], %[[NOT]]
  return %relu, %exp, %neg, %sign, %not
      : tensor<2x?xf32>, tensor<?x?xf32>, tensor<4xi32>, tensor<4xi32>,
        tensor<3xi1>
}

// Tests that every float-only kind parses and prints.
// CHECK-LABEL: func.func @float_kinds
func.func @float_kinds(%x: tensor<8xbf16>) -> tensor<8xbf16> {
  // CHECK: weft.unary sigmoid
  // CHECK: weft.unary tanh
  // CHECK: weft.unary erf
  // CHECK: weft.unary log
  // CHECK: weft.unary sqrt
  // CHECK: weft.unary reciprocal
  // CHECK: weft.unary floor
  // CHECK: weft.unary ceil
  // CHECK: weft.unary sin
  // CHECK: weft.unary cos
  // CHECK: weft.unary hard_swish
  // CHECK: weft.unary softplus
  // CHECK: weft.unary softsign
  // CHECK: weft.unary gelu
  // CHECK: weft.unary gelu_tanh
  // CHECK: weft.unary abs
  %0 = weft.unary sigmoid %x : tensor<8xbf16> -> tensor<8xbf16>
  %1 = weft.unary tanh %0 : tensor<8xbf16> -> tensor<8xbf16>
  %2 = weft.unary erf %1 : tensor<8xbf16> -> tensor<8xbf16>
  %3 = weft.unary log %2 : tensor<8xbf16> -> tensor<8xbf16>
  %4 = weft.unary sqrt %3 : tensor<8xbf16> -> tensor<8xbf16>
  %5 = weft.unary reciprocal %4 : tensor<8xbf16> -> tensor<8xbf16>
  %6 = weft.unary floor %5 : tensor<8xbf16> -> tensor<8xbf16>
  %7 = weft.unary ceil %6 : tensor<8xbf16> -> tensor<8xbf16>
  %8 = weft.unary sin %7 : tensor<8xbf16> -> tensor<8xbf16>
  %9 = weft.unary cos %8 : tensor<8xbf16> -> tensor<8xbf16>
  %10 = weft.unary hard_swish %9 : tensor<8xbf16> -> tensor<8xbf16>
  %11 = weft.unary softplus %10 : tensor<8xbf16> -> tensor<8xbf16>
  %12 = weft.unary softsign %11 : tensor<8xbf16> -> tensor<8xbf16>
  %13 = weft.unary gelu %12 : tensor<8xbf16> -> tensor<8xbf16>
  %14 = weft.unary gelu_tanh %13 : tensor<8xbf16> -> tensor<8xbf16>
  %15 = weft.unary abs %14 : tensor<8xbf16> -> tensor<8xbf16>
  return %15 : tensor<8xbf16>
}

// Tests that activations print their parameters.
// CHECK-LABEL: func.func @activations
// CHECK-SAME: (%[[X:.*]]: tensor<4xf16>)
func.func @activations(%x: tensor<4xf16>) -> tensor<4xf16> {
  // CHECK: %[[L:.*]] = weft.unary leaky_relu %[[X]] alpha = 1.000000e-02 : tensor<4xf16> -> tensor<4xf16>
  %l = weft.unary leaky_relu %x alpha = 0.01 : tensor<4xf16> -> tensor<4xf16>
  // CHECK: %[[E:.*]] = weft.unary elu %[[L]] alpha = 1.000000e+00 :
  %e = weft.unary elu %l alpha = 1.0 : tensor<4xf16> -> tensor<4xf16>
  // CHECK: %[[S:.*]] = weft.unary selu %[[E]] alpha = 1.670000e+00 gamma = 1.050000e+00 :
  %s = weft.unary selu %e alpha = 1.67 gamma = 1.05 : tensor<4xf16> -> tensor<4xf16>
  // CHECK: %[[C:.*]] = weft.unary celu %[[S]] alpha = 2.000000e+00 :
  %c = weft.unary celu %s alpha = 2.0 : tensor<4xf16> -> tensor<4xf16>
  // CHECK: %[[T:.*]] = weft.unary thresholded_relu %[[C]] alpha = 5.000000e-01 :
  %t = weft.unary thresholded_relu %c alpha = 0.5 : tensor<4xf16> -> tensor<4xf16>
  // CHECK: %[[H:.*]] = weft.unary hard_sigmoid %[[T]] alpha = 2.000000e-01 beta = 5.000000e-01 :
  %h = weft.unary hard_sigmoid %t alpha = 0.2 beta = 0.5 : tensor<4xf16> -> tensor<4xf16>
  // CHECK: return %[[H]]
  return %h : tensor<4xf16>
}

// Tests clip with both bounds, one bound, no bound and a [1]-shaped bound.
// CHECK-LABEL: func.func @clip
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xi64>, %[[LO:.*]]: tensor<i64>, %[[HI:.*]]: tensor<1xi64>)
func.func @clip(%x: tensor<2x3xi64>, %lo: tensor<i64>, %hi: tensor<1xi64>)
    -> (tensor<2x3xi64>, tensor<2x3xi64>, tensor<2x3xi64>, tensor<2x3xi64>) {
  // CHECK: %[[BOTH:.*]] = weft.clip %[[X]] min %[[LO]] max %[[HI]] : (tensor<2x3xi64>, tensor<i64>, tensor<1xi64>) -> tensor<2x3xi64>
  %both = weft.clip %x min %lo max %hi
      : (tensor<2x3xi64>, tensor<i64>, tensor<1xi64>) -> tensor<2x3xi64>
  // CHECK: %[[MIN:.*]] = weft.clip %[[X]] min %[[LO]] : (tensor<2x3xi64>, tensor<i64>) -> tensor<2x3xi64>
  %min = weft.clip %x min %lo : (tensor<2x3xi64>, tensor<i64>) -> tensor<2x3xi64>
  // CHECK: %[[MAX:.*]] = weft.clip %[[X]] max %[[HI]] : (tensor<2x3xi64>, tensor<1xi64>) -> tensor<2x3xi64>
  %max = weft.clip %x max %hi : (tensor<2x3xi64>, tensor<1xi64>) -> tensor<2x3xi64>
  // CHECK: %[[NONE:.*]] = weft.clip %[[X]] : (tensor<2x3xi64>) -> tensor<2x3xi64>
  %none = weft.clip %x : (tensor<2x3xi64>) -> tensor<2x3xi64>
  // CHECK: return %[[BOTH]], %[[MIN]], %[[MAX]], %[[NONE]]
  return %both, %min, %max, %none
      : tensor<2x3xi64>, tensor<2x3xi64>, tensor<2x3xi64>, tensor<2x3xi64>
}

// Tests casts between float, integer and boolean element types.
// CHECK-LABEL: func.func @cast
// CHECK-SAME: (%[[X:.*]]: tensor<?x4xf32>)
func.func @cast(%x: tensor<?x4xf32>) -> tensor<?x4xf16> {
  // CHECK: %[[I:.*]] = weft.cast %[[X]] to i64 : tensor<?x4xf32> -> tensor<?x4xi64>
  %i = weft.cast %x to i64 : tensor<?x4xf32> -> tensor<?x4xi64>
  // CHECK: %[[B:.*]] = weft.cast %[[I]] to i1 : tensor<?x4xi64> -> tensor<?x4xi1>
  %b = weft.cast %i to i1 : tensor<?x4xi64> -> tensor<?x4xi1>
  // CHECK: %[[U:.*]] = weft.cast %[[B]] to ui8 : tensor<?x4xi1> -> tensor<?x4xui8>
  %u = weft.cast %b to ui8 : tensor<?x4xi1> -> tensor<?x4xui8>
  // CHECK: %[[H:.*]] = weft.cast %[[U]] to f16 : tensor<?x4xui8> -> tensor<?x4xf16>
  %h = weft.cast %u to f16 : tensor<?x4xui8> -> tensor<?x4xf16>
  // CHECK: return %[[H]]
  return %h : tensor<?x4xf16>
}

// Tests arithmetic with broadcasting, including dynamic dimensions.
// CHECK-LABEL: func.func @arithmetic
// CHECK-SAME: (%[[X:.*]]: tensor<2x?xf32>, %[[Y:.*]]: tensor<?xf32>, %[[S:.*]]: tensor<f32>)
func.func @arithmetic(%x: tensor<2x?xf32>, %y: tensor<?xf32>, %s: tensor<f32>)
    -> tensor<2x?xf32> {
  // CHECK: %[[ADD:.*]] = weft.binary add %[[X]], %[[Y]] : (tensor<2x?xf32>, tensor<?xf32>) -> tensor<2x?xf32>
  %add = weft.binary add %x, %y : (tensor<2x?xf32>, tensor<?xf32>) -> tensor<2x?xf32>
  // CHECK: %[[SUB:.*]] = weft.binary sub %[[ADD]], %[[S]]
  %sub = weft.binary sub %add, %s : (tensor<2x?xf32>, tensor<f32>) -> tensor<2x?xf32>
  // CHECK: %[[MUL:.*]] = weft.binary mul %[[S]], %[[SUB]] : (tensor<f32>, tensor<2x?xf32>) -> tensor<2x?xf32>
  %mul = weft.binary mul %s, %sub : (tensor<f32>, tensor<2x?xf32>) -> tensor<2x?xf32>
  // CHECK: %[[DIV:.*]] = weft.binary div %[[MUL]], %[[Y]]
  %div = weft.binary div %mul, %y : (tensor<2x?xf32>, tensor<?xf32>) -> tensor<2x?xf32>
  // CHECK: %[[FMOD:.*]] = weft.binary fmod %[[DIV]], %[[S]]
  %fmod = weft.binary fmod %div, %s : (tensor<2x?xf32>, tensor<f32>) -> tensor<2x?xf32>
  // CHECK: %[[MAX:.*]] = weft.binary max %[[FMOD]], %[[S]]
  %max = weft.binary max %fmod, %s : (tensor<2x?xf32>, tensor<f32>) -> tensor<2x?xf32>
  // CHECK: %[[MIN:.*]] = weft.binary min %[[MAX]], %[[Y]]
  %min = weft.binary min %max, %y : (tensor<2x?xf32>, tensor<?xf32>) -> tensor<2x?xf32>
  // CHECK: %[[PRELU:.*]] = weft.binary prelu %[[MIN]], %[[S]]
  %prelu = weft.binary prelu %min, %s : (tensor<2x?xf32>, tensor<f32>) -> tensor<2x?xf32>
  // CHECK: return %[[PRELU]]
  return %prelu : tensor<2x?xf32>
}

// Tests integer modulo and pow with an exponent of another element type.
// CHECK-LABEL: func.func @mod_pow
// CHECK-SAME: (%[[I:.*]]: tensor<3xi32>, %[[F:.*]]: tensor<3xf32>, %[[E:.*]]: tensor<ui8>)
func.func @mod_pow(%i: tensor<3xi32>, %f: tensor<3xf32>, %e: tensor<ui8>)
    -> (tensor<3xi32>, tensor<3xf32>) {
  // CHECK: %[[MOD:.*]] = weft.binary mod %[[I]], %[[I]] : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  %mod = weft.binary mod %i, %i : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  // CHECK: %[[POW:.*]] = weft.binary pow %[[F]], %[[E]] : (tensor<3xf32>, tensor<ui8>) -> tensor<3xf32>
  %pow = weft.binary pow %f, %e : (tensor<3xf32>, tensor<ui8>) -> tensor<3xf32>
  // CHECK: return %[[MOD]], %[[POW]]
  return %mod, %pow : tensor<3xi32>, tensor<3xf32>
}

// Tests comparisons (i1 results) and logic on i1.
// CHECK-LABEL: func.func @compare_logic
// CHECK-SAME: (%[[A:.*]]: tensor<4xi64>, %[[B:.*]]: tensor<i64>, %[[M:.*]]: tensor<4xi1>)
func.func @compare_logic(%a: tensor<4xi64>, %b: tensor<i64>, %m: tensor<4xi1>)
    -> tensor<4xi1> {
  // CHECK: %[[EQ:.*]] = weft.binary equal %[[A]], %[[B]] : (tensor<4xi64>, tensor<i64>) -> tensor<4xi1>
  %eq = weft.binary equal %a, %b : (tensor<4xi64>, tensor<i64>) -> tensor<4xi1>
  // CHECK: %[[LT:.*]] = weft.binary less %[[A]], %[[B]]
  %lt = weft.binary less %a, %b : (tensor<4xi64>, tensor<i64>) -> tensor<4xi1>
  // CHECK: %[[LE:.*]] = weft.binary less_equal %[[A]], %[[B]]
  %le = weft.binary less_equal %a, %b : (tensor<4xi64>, tensor<i64>) -> tensor<4xi1>
  // CHECK: %[[GT:.*]] = weft.binary greater %[[A]], %[[B]]
  %gt = weft.binary greater %a, %b : (tensor<4xi64>, tensor<i64>) -> tensor<4xi1>
  // CHECK: %[[GE:.*]] = weft.binary greater_equal %[[A]], %[[B]]
  %ge = weft.binary greater_equal %a, %b : (tensor<4xi64>, tensor<i64>) -> tensor<4xi1>
  // CHECK: %[[AND:.*]] = weft.binary and %[[EQ]], %[[LT]] : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  %and = weft.binary and %eq, %lt : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  // CHECK: %[[OR:.*]] = weft.binary or %[[AND]], %[[LE]]
  %or = weft.binary or %and, %le : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  // CHECK: %[[XOR:.*]] = weft.binary xor %[[OR]], %[[GT]]
  %xor = weft.binary xor %or, %gt : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  // CHECK: %[[EQB:.*]] = weft.binary equal %[[XOR]], %[[GE]]
  %eqb = weft.binary equal %xor, %ge : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  // CHECK: return %[[EQB]]
  return %eqb : tensor<4xi1>
}

// Tests select with three-way broadcasting.
// CHECK-LABEL: func.func @select
// CHECK-SAME: (%[[C:.*]]: tensor<1x1x4x4xi1>, %[[X:.*]]: tensor<2x8x4x4xf32>, %[[F:.*]]: tensor<f32>)
func.func @select(%c: tensor<1x1x4x4xi1>, %x: tensor<2x8x4x4xf32>,
                  %f: tensor<f32>) -> tensor<2x8x4x4xf32> {
  // CHECK: %[[R:.*]] = weft.select %[[C]], %[[X]], %[[F]] : (tensor<1x1x4x4xi1>, tensor<2x8x4x4xf32>, tensor<f32>) -> tensor<2x8x4x4xf32>
  %r = weft.select %c, %x, %f
      : (tensor<1x1x4x4xi1>, tensor<2x8x4x4xf32>, tensor<f32>)
        -> tensor<2x8x4x4xf32>
  // CHECK: return %[[R]]
  return %r : tensor<2x8x4x4xf32>
}
