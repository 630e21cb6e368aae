// RUN: weft-opt %s --weft-approximate-math | FileCheck %s

// Transcendental functions on f32 become polynomials (no libm call left);
// f64 keeps the call.
// CHECK-LABEL: func.func @transcendental
// CHECK-NOT: math.tanh {{.*}} : f32
// CHECK-NOT: math.exp {{.*}} : f32
// CHECK: math.tanh {{.*}} : f64
func.func @transcendental(%x: f32, %y: f64) -> (f32, f32, f64) {
  %t = math.tanh %x : f32
  %e = math.exp %x : f32
  %d = math.tanh %y : f64
  return %t, %e, %d : f32, f32, f64
}

// f32 erf becomes a clamped rational function (x P(x^2) / Q(x^2) on x in
// [-4, 4], the quotient clamped to [-1, 1]): no math.erf and no exp left;
// f64 keeps the call. (Accuracy: below 5e-7 over all f32, checked end to
// end by the onnx-node-run test_erf case and in the pattern's comment.)
// CHECK-LABEL: func.func @erf
// CHECK-NOT: math.erf {{.*}} : f32
// CHECK-NOT: math.exp
// CHECK: arith.minimumf %{{.*}}, %{{.*}} : f32
// CHECK: arith.maximumf %{{.*}}, %{{.*}} : f32
// CHECK: arith.divf
// CHECK: arith.minimumf
// CHECK: arith.maximumf
// CHECK: math.erf {{.*}} : f64
func.func @erf(%x: f32, %y: f64) -> (f32, f64) {
  %e = math.erf %x : f32
  %d = math.erf %y : f64
  return %e, %d : f32, f64
}

// Constant exponents become arithmetic: LayerNorm's x^2 and tanh-GELU's x^3
// as exporters write them out.
// CHECK-LABEL: func.func @constant_powers
// CHECK-NOT: math.powf
// CHECK: %[[SQ:.*]] = arith.mulf %[[X:.*]], %[[X]] : f32
// CHECK: %[[CUBE:.*]] = arith.mulf %[[X]], %[[X]] : f32
// CHECK: arith.mulf %[[X]], %[[CUBE]] : f32
// CHECK: math.sqrt %[[X]] : f32
// CHECK: return
func.func @constant_powers(%x: f32) -> (f32, f32, f32) {
  %two = arith.constant 2.0 : f32
  %three = arith.constant 3.0 : f32
  %half = arith.constant 0.5 : f32
  %sq = math.powf %x, %two : f32
  %cube = math.powf %x, %three : f32
  %root = math.powf %x, %half : f32
  return %sq, %cube, %root : f32, f32, f32
}

// Other exponents, and exponents that are not constants, keep powf.
// CHECK-LABEL: func.func @other_powers
// CHECK: math.powf %{{.*}}, %{{.*}} : f32
// CHECK: math.powf %{{.*}}, %{{.*}} : f32
func.func @other_powers(%x: f32, %p: f32) -> (f32, f32) {
  %e = arith.constant 2.7 : f32
  %a = math.powf %x, %e : f32
  %b = math.powf %x, %p : f32
  return %a, %b : f32, f32
}
