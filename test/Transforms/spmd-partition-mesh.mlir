// weft-spmd-partition partitions for the module's only weft.mesh whatever
// its name (here the plan's @mesh renamed @tp); with several meshes its
// `mesh` option names the one, and without any it says what to run first.
// RUN: weft-opt --weft-auto-shard="cluster=cpu:2 mode=tp" %s | sed -e 's/@mesh/@tp/g' | weft-opt --weft-spmd-partition="device=1" | FileCheck %s
// RUN: not weft-opt --weft-spmd-partition="device=1" %s 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: weft-opt --weft-auto-shard="cluster=cpu:2 mode=tp" %s | sed -e 's/^\( *\)weft.mesh @mesh\(.*\)$/&\n\1weft.mesh @other\2/' | not weft-opt --weft-spmd-partition="device=1" 2>&1 | FileCheck %s --check-prefix=TWO

// CHECK: weft.weight "w1" {{.*}} block [0, 32] of [64, 64] {{.*}}: tensor<64x32xf32>
// CHECK: weft.all_reduce %{{.*}} on @tp over [0] : tensor<8x16xf32>
// NONE: error: spmd partition: the module declares no weft.mesh (run weft-auto-shard first)
// TWO: error: spmd partition: the module declares 2 weft.mesh ops (@mesh, @other); name the one to partition for with mesh=

func.func @main(%x: tensor<8x64xf32>) -> tensor<8x16xf32> {
  %w1 = weft.weight "w1" from "none.bin" offset 0 size 16384 checksum "0000000000000000" : tensor<64x64xf32>
  %w2 = weft.weight "w2" from "none.bin" offset 0 size 4096 checksum "0000000000000000" : tensor<64x16xf32>
  %h = weft.matmul %x, %w1 : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %r = weft.unary relu %h : tensor<8x64xf32> -> tensor<8x64xf32>
  %y = weft.matmul %r, %w2 : (tensor<8x64xf32>, tensor<64x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
