// Sharding rules of weft.einsum: one loop per label, summed labels give
// partial sums, `...` dimensions are batch loops, a diagonal stays whole.
// RUN: weft-opt --split-input-file --weft-auto-shard="cluster=cpu:2 mode=tp" %s | FileCheck %s --check-prefix=TP
// RUN: weft-opt --split-input-file --weft-auto-shard="cluster=cpu:2 mode=tp" --weft-spmd-partition="device=1" %s | FileCheck %s --check-prefix=DEV1
// RUN: weft-opt --split-input-file --weft-auto-shard="cluster=cpu:2 mode=dp" %s | FileCheck %s --check-prefix=DP
// RUN: weft-opt --split-input-file --weft-auto-shard="cluster=cpu:2" %s | FileCheck %s --check-prefix=AUTO

// Two chained projections written as einsums: Megatron's column- then
// row-parallel pair, one all-reduce of the partial sums.
// TP: weft.weight "w1"{{.*}}weft.sharding = [#weft.sharding<@mesh, {{\[\[}}], [0]]>]
// TP: weft.weight "w2"{{.*}}weft.sharding = [#weft.sharding<@mesh, {{\[\[}}0], []]>]
// TP: weft.einsum "bik,kl->bil"{{.*}}weft.sharding = [#weft.sharding<@mesh, {{\[\[}}], [], []], partial [0]>]
// DEV1: weft.einsum "bij,jk->bik" %{{.*}} : (tensor<4x6x64xf32>, tensor<64x32xf32>) -> tensor<4x6x32xf32>
// DEV1: %[[P:.*]] = weft.einsum "bik,kl->bil" %{{.*}} : (tensor<4x6x32xf32>, tensor<32x16xf32>) -> tensor<4x6x16xf32>
// DEV1: weft.all_reduce %[[P]] on @mesh over [0] : tensor<4x6x16xf32>
// DP: weft.einsum "bij,jk->bik"{{.*}}weft.sharding = [#weft.sharding<@mesh, {{\[\[}}0], [], []]>]
func.func @main(%x: tensor<4x6x64xf32>) -> tensor<4x6x16xf32> {
  %w1 = weft.weight "w1" from "none.bin" offset 0 size 16384 checksum "0000000000000000" : tensor<64x64xf32>
  %w2 = weft.weight "w2" from "none.bin" offset 0 size 4096 checksum "0000000000000000" : tensor<64x16xf32>
  %h = weft.einsum "bij,jk->bik" %x, %w1 : (tensor<4x6x64xf32>, tensor<64x64xf32>) -> tensor<4x6x64xf32>
  %r = weft.unary relu %h : tensor<4x6x64xf32> -> tensor<4x6x64xf32>
  %y = weft.einsum "bik,kl->bil" %r, %w2 : (tensor<4x6x64xf32>, tensor<64x16xf32>) -> tensor<4x6x16xf32>
  return %y : tensor<4x6x16xf32>
}

// -----

// `...` dimensions are batch loops (the broadcast one, of size 1, stays
// whole); a diagonal ("ii") is never split. The batch is pinned split on
// both sides of the first einsum.
// AUTO: weft.einsum "...ij,...jk->...ik"{{.*}}weft.operand_sharding = [#weft.sharding<@mesh, {{\[\[}}0], [], []]>, #weft.sharding<@mesh, {{\[\[}}], [], []]>]{{.*}}weft.sharding = [#weft.sharding<@mesh, {{\[\[}}0], [], []]>]
// AUTO: weft.einsum "bii->bi"{{.*}}weft.operand_sharding = [#weft.sharding<@mesh, {{\[\[}}], [], []]>]{{.*}}weft.sharding = [#weft.sharding<@mesh, {{\[\[}}], []]>]
weft.mesh @mesh shape = [2]
func.func @main(%a: tensor<8x4x4xf32>, %b: tensor<1x4x4xf32>) -> (tensor<8x4x4xf32>, tensor<8x4xf32>) {
  %as = weft.shard %a to <@mesh, [[0], [], []]> : tensor<8x4x4xf32>
  %c = weft.einsum "...ij,...jk->...ik" %as, %b : (tensor<8x4x4xf32>, tensor<1x4x4xf32>) -> tensor<8x4x4xf32>
  %cs = weft.shard %c to <@mesh, [[0], [], []]> : tensor<8x4x4xf32>
  %d = weft.einsum "bii->bi" %cs : (tensor<8x4x4xf32>) -> tensor<8x4xf32>
  return %cs, %d : tensor<8x4x4xf32>, tensor<8x4xf32>
}
