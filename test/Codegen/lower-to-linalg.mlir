// RUN: weft-opt %s --pass-pipeline='builtin.module(func.func(weft-lower-to-linalg))' | FileCheck %s

// The indexing maps of @add_broadcast, printed at the top.
// CHECK-DAG: #[[BCAST:.*]] = affine_map<(d0, d1, d2) -> (0, d2)>
// CHECK-DAG: #[[ID3:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// Tests that a unary op becomes a linalg.generic over its shape.
// CHECK-LABEL: func.func @relu
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK: %[[INIT:.*]] = tensor.empty() : tensor<2x3xf32>
// CHECK: %[[R:.*]] = linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel"]
// CHECK-SAME: ins(%[[X]] : tensor<2x3xf32>) outs(%[[INIT]] : tensor<2x3xf32>)
// CHECK: arith.maximumf
// CHECK-NOT: weft.unary
// CHECK: return %[[R]]
func.func @relu(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = weft.unary relu %x : tensor<2x3xf32> -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}

// Tests that numpy broadcasting becomes indexing maps: a size-1 dimension
// reads index 0, a missing leading dimension is dropped.
// CHECK-LABEL: func.func @add_broadcast
// CHECK: linalg.generic {indexing_maps = [#[[ID3]], #[[BCAST]], #[[ID3]]]
// CHECK: arith.addf
func.func @add_broadcast(%x: tensor<4x2x3xf32>, %y: tensor<1x3xf32>) -> tensor<4x2x3xf32> {
  %r = weft.binary add %x, %y : (tensor<4x2x3xf32>, tensor<1x3xf32>) -> tensor<4x2x3xf32>
  return %r : tensor<4x2x3xf32>
}

// Tests that f16 math is computed in f32 and rounded once.
// CHECK-LABEL: func.func @tanh_f16
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: math.tanh %{{.*}} : f32
// CHECK: arith.truncf %{{.*}} : f32 to f16
func.func @tanh_f16(%x: tensor<8xf16>) -> tensor<8xf16> {
  %r = weft.unary tanh %x : tensor<8xf16> -> tensor<8xf16>
  return %r : tensor<8xf16>
}

// Tests Python-style integer modulo: the remainder is fixed up when its sign
// differs from the divisor's.
// CHECK-LABEL: func.func @mod_i32
// CHECK: arith.remsi
// CHECK: arith.select
func.func @mod_i32(%x: tensor<4xi32>, %y: tensor<4xi32>) -> tensor<4xi32> {
  %r = weft.binary mod %x, %y : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %r : tensor<4xi32>
}

// Tests that casts to bool compare with zero and clip keeps both bounds.
// CHECK-LABEL: func.func @cast_and_clip
// CHECK: arith.cmpf une
// CHECK: arith.maximumf
// CHECK: arith.minimumf
func.func @cast_and_clip(%x: tensor<4xf32>, %lo: tensor<f32>, %hi: tensor<f32>) -> (tensor<4xi1>, tensor<4xf32>) {
  %b = weft.cast %x to i1 : tensor<4xf32> -> tensor<4xi1>
  %c = weft.clip %x min %lo max %hi : (tensor<4xf32>, tensor<f32>, tensor<f32>) -> tensor<4xf32>
  return %b, %c : tensor<4xi1>, tensor<4xf32>
}

// Tests that the reshape family becomes tensor.reshape and expand a
// broadcasting copy.
// CHECK-LABEL: func.func @reshape_expand
// CHECK: tensor.reshape %{{.*}}(%{{.*}}) : (tensor<2x3xf32>, tensor<1xindex>) -> tensor<6xf32>
// CHECK: linalg.generic
// CHECK-NOT: weft.
func.func @reshape_expand(%x: tensor<2x3xf32>, %y: tensor<3xf32>) -> (tensor<6xf32>, tensor<2x3xf32>) {
  %shape = weft.constant dense<6> : tensor<1xi64>
  %r = weft.reshape %x, %shape : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<6xf32>
  %s = weft.constant dense<[2, 3]> : tensor<2xi64>
  %e = weft.expand %y, %s : (tensor<3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  return %r, %e : tensor<6xf32>, tensor<2x3xf32>
}

// Tests that ui8 math runs on signless i8 scalars with unsigned operations.
// CHECK-LABEL: func.func @div_max_u8
// CHECK: builtin.unrealized_conversion_cast %{{.*}} : ui8 to i8
// CHECK: arith.divui
// CHECK: builtin.unrealized_conversion_cast %{{.*}} : i8 to ui8
// CHECK: arith.maxui
func.func @div_max_u8(%x: tensor<4xui8>, %y: tensor<4xui8>) -> (tensor<4xui8>, tensor<4xui8>) {
  %d = weft.binary div %x, %y : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %m = weft.binary max %x, %y : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  return %d, %m : tensor<4xui8>, tensor<4xui8>
}

// Tests that trilu compares the column minus the row with k, which may be
// computed at run time.
// CHECK-LABEL: func.func @triu
// CHECK: linalg.generic
// CHECK: %[[I:.*]] = linalg.index 1 : index
// CHECK: %[[J:.*]] = linalg.index 2 : index
// CHECK: arith.subi %[[J]], %[[I]]
// CHECK: arith.cmpi sge
// CHECK: arith.select
func.func @triu(%x: tensor<2x3x4xf32>, %k: tensor<i64>) -> tensor<2x3x4xf32> {
  %r = weft.trilu upper %x, %k : (tensor<2x3x4xf32>, tensor<i64>) -> tensor<2x3x4xf32>
  return %r : tensor<2x3x4xf32>
}
