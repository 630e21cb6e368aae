// Megatron-style tensor parallelism on a two-layer MLP: with weights forced
// to be split (mode=tp), the planner makes the first matmul column-parallel
// and the second row-parallel, so one all-reduce resolves the partial sums.
// RUN: weft-opt --weft-auto-shard="cluster=cpu:2 mode=tp" %s | FileCheck %s --check-prefix=PLAN
// RUN: weft-opt --weft-auto-shard="cluster=cpu:2 mode=tp" --weft-spmd-partition="device=1" %s | FileCheck %s --check-prefix=DEV1
// RUN: weft-opt --weft-auto-shard="cluster=cpu:2 mode=replicate" --weft-spmd-partition="device=0" %s | FileCheck %s --check-prefix=REPL

// PLAN: weft.mesh @mesh shape = [2]
// PLAN: weft.weight "w1"{{.*}}weft.sharding = [#weft.sharding<@mesh, {{\[\[}}], [0]]>]
// PLAN: weft.weight "w2"{{.*}}weft.sharding = [#weft.sharding<@mesh, {{\[\[}}0], []]>]
// PLAN: weft.matmul{{.*}}weft.sharding = [#weft.sharding<@mesh, {{\[\[}}], [0]]>]
// PLAN: weft.matmul{{.*}}weft.sharding = [#weft.sharding<@mesh, {{\[\[}}], []], partial [0]>]

// DEV1: weft.weight "w1" {{.*}} block [0, 32] of [64, 64] {{.*}}: tensor<64x32xf32>
// DEV1: weft.weight "w2" {{.*}} block [32, 0] of [64, 16] {{.*}}: tensor<32x16xf32>
// DEV1: weft.matmul {{.*}} -> tensor<8x32xf32>
// DEV1: weft.matmul {{.*}} -> tensor<8x16xf32>
// DEV1: %[[SUM:.*]] = weft.all_reduce %{{.*}} on @mesh over [0] : tensor<8x16xf32>
// DEV1: return %[[SUM]]

// REPL-NOT: weft.all_reduce
// REPL-NOT: block
// REPL: return

func.func @main(%x: tensor<8x64xf32>) -> tensor<8x16xf32> {
  %w1 = weft.weight "w1" from "none.bin" offset 0 size 16384 checksum "0000000000000000" : tensor<64x64xf32>
  %w2 = weft.weight "w2" from "none.bin" offset 0 size 4096 checksum "0000000000000000" : tensor<64x16xf32>
  %h = weft.matmul %x, %w1 : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %r = weft.unary relu %h : tensor<8x64xf32> -> tensor<8x64xf32>
  %y = weft.matmul %r, %w2 : (tensor<8x64xf32>, tensor<64x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
