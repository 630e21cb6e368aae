// A weft.shard pins a sharding on the mesh whose axes it names: the planner
// refuses one on another mesh than the one it plans (@mesh) rather than
// laying its axes on the planned mesh.
// RUN: weft-opt -split-input-file -verify-diagnostics --weft-auto-shard="cluster=cpu:2" %s | FileCheck %s

// Tests that a pin on another mesh is refused.
weft.mesh @grid shape = [2]
func.func @main(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'weft.shard' op pins a sharding on mesh @grid, but the plan is for mesh @mesh}}
  %s = weft.shard %x to <@grid, [[0], []]> : tensor<8x4xf32>
  %r = weft.unary relu %s : tensor<8x4xf32> -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

// Tests that a pin on the planned mesh is kept.
// CHECK-LABEL: func.func @main
// CHECK: %[[PIN:.*]] = weft.shard %{{.*}} to <@mesh, {{\[\[}}0], []]>
// CHECK: weft.unary relu %[[PIN]] {weft.operand_sharding = [#weft.sharding<@mesh, {{\[\[}}0], []]>]
weft.mesh @mesh shape = [2]
func.func @main(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %s = weft.shard %x to <@mesh, [[0], []]> : tensor<8x4xf32>
  %r = weft.unary relu %s : tensor<8x4xf32> -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}
