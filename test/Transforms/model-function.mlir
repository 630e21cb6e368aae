// The passes that work on "the model" find its function by the module's
// weft.model attribute (or as its only public function), not by the name
// @main: here the model is @forward beside a public helper, and planning,
// partitioning and the program ABI all find it.
// RUN: weft-opt --weft-auto-shard="cluster=cpu:2 mode=tp" %s | FileCheck %s --check-prefix=PLAN
// RUN: weft-opt --weft-auto-shard="cluster=cpu:2 mode=tp" --weft-spmd-partition="device=1" %s | FileCheck %s --check-prefix=DEV1
// RUN: weft-opt --weft-auto-shard="cluster=cpu:2 mode=tp" --weft-spmd-partition="device=0" --weft-expose-program-abi %s | FileCheck %s --check-prefix=ABI
// Without the attribute the choice between @forward and @helper is open:
// RUN: sed -e 's/attributes {weft.model = @forward} //' %s | not weft-opt --weft-auto-shard="cluster=cpu:2 mode=tp" 2>&1 | FileCheck %s --check-prefix=AMBIGUOUS

// PLAN: weft.matmul{{.*}}weft.sharding = [#weft.sharding<@mesh, {{\[\[}}], [0]]>]
// PLAN-LABEL: func.func @helper
// PLAN-NOT: weft.sharding

// DEV1-LABEL: func.func @forward
// DEV1: weft.weight "w1" {{.*}} block [0, 32] of [64, 64] {{.*}}: tensor<64x32xf32>
// DEV1: weft.all_reduce %{{.*}} on @mesh over [0] : tensor<8x16xf32>

// ABI-LABEL: func.func @__weft_program_run
// ABI: weft.all_reduce

// AMBIGUOUS: error: weft-auto-shard: the module has 2 public functions (@forward, @helper); name the model function with the module attribute weft.model = @name

module attributes {weft.model = @forward} {
  func.func @forward(%x: tensor<8x64xf32> {weft.name = "x"}) -> (tensor<8x16xf32> {weft.name = "y"}) {
    %w1 = weft.weight "w1" from "none.bin" offset 0 size 16384 checksum "0000000000000000" : tensor<64x64xf32>
    %w2 = weft.weight "w2" from "none.bin" offset 0 size 4096 checksum "0000000000000000" : tensor<64x16xf32>
    %h = weft.matmul %x, %w1 : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
    %r = weft.unary relu %h : tensor<8x64xf32> -> tensor<8x64xf32>
    %y = weft.matmul %r, %w2 : (tensor<8x64xf32>, tensor<64x16xf32>) -> tensor<8x16xf32>
    return %y : tensor<8x16xf32>
  }
  func.func @helper(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
    %r = weft.unary relu %x : tensor<8x64xf32> -> tensor<8x64xf32>
    return %r : tensor<8x64xf32>
  }
}
