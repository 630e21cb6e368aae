// Passes from a plugin are not weft-opt flags (those are made before the
// plugin loads): name them in --pass-pipeline.
// RUN: weft-opt --load-pass-plugin=%weft_example_plugin \
// RUN:   --pass-pipeline='builtin.module(weft-example-annotate-flops)' %s \
// RUN:   | FileCheck %s
// RUN: weft-opt --load-pass-plugin=%weft_example_plugin \
// RUN:   --pass-pipeline='builtin.module(weft-example-annotate-flops{remarks})' \
// RUN:   --mlir-print-op-on-diagnostic=false %s -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=REMARK

// Tests that a matmul with a bias counts 2*K FLOPs per result element plus
// one for the bias, and elementwise ops one per element.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: weft_example.flops = 1864 : i64
// CHECK: weft.matmul {{.*}}weft_example.flops = 1320 : i64
// CHECK: weft.unary relu {{.*}}weft_example.flops = 40 : i64
// CHECK: weft.matmul {{.*}}weft_example.flops = 480 : i64
// CHECK: weft.binary add {{.*}}weft_example.flops = 24 : i64
// REMARK: remark: @mlp: 1864 FLOPs, 0 ops with dynamic shapes not counted
func.func @mlp(%x: tensor<4x16xf32>, %w1: tensor<16x10xf32>,
               %b1: tensor<10xf32>, %w2: tensor<10x6xf32>,
               %b2: tensor<6xf32>) -> tensor<4x6xf32> {
  %h = weft.matmul %x, %w1, %b1
         : (tensor<4x16xf32>, tensor<16x10xf32>, tensor<10xf32>)
           -> tensor<4x10xf32>
  %r = weft.unary relu %h : tensor<4x10xf32> -> tensor<4x10xf32>
  %o = weft.matmul %r, %w2
         : (tensor<4x10xf32>, tensor<10x6xf32>) -> tensor<4x6xf32>
  %y = weft.binary add %o, %b2
         : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

// Tests that a transposed lhs contracts over its second to last dimension.
// CHECK-LABEL: func.func @transposed
// CHECK: weft.matmul {{.*}}weft_example.flops = 192 : i64
func.func @transposed(%a: tensor<8x3xf32>, %b: tensor<8x4xf32>)
    -> tensor<3x4xf32> {
  %y = weft.matmul %a, %b {transpose_a}
         : (tensor<8x3xf32>, tensor<8x4xf32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}

// Tests that ops with dynamic shapes are counted as unknown, not annotated.
// CHECK-LABEL: func.func @dynamic
// CHECK-SAME: weft_example.flops = 0 : i64
// CHECK-SAME: weft_example.unknown_flops = 2 : i64
// CHECK-NOT: weft_example.flops =
// CHECK: return
// REMARK: remark: @dynamic: 0 FLOPs, 2 ops with dynamic shapes not counted
func.func @dynamic(%x: tensor<?x16xf32>, %w: tensor<16x8xf32>)
    -> tensor<?x8xf32> {
  %h = weft.matmul %x, %w
         : (tensor<?x16xf32>, tensor<16x8xf32>) -> tensor<?x8xf32>
  %y = weft.unary tanh %h : tensor<?x8xf32> -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}
