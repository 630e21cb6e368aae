// The vocabulary-parallel embedding with a tied LM head (GPT-2): the table
// wte [vocab 4096, hidden 16] is split by rows, the lookup gives a partial sum
// (each device looks up only the ids of its rows, zeros elsewhere) and the
// head, which reads the same table transposed, gives the logits split by
// vocabulary. The table is pinned split by rows (test/E2E plans such a model
// unpinned, under a memory budget).
// RUN: weft-opt --canonicalize --weft-auto-shard="cluster=cpu:2 mode=tp" %s | FileCheck %s --check-prefix=PLAN
// RUN: weft-opt --canonicalize --weft-auto-shard="cluster=cpu:2 mode=tp" --weft-spmd-partition="device=1" %s | FileCheck %s --check-prefix=DEV1
// RUN: weft-opt --canonicalize --weft-auto-shard="cluster=cpu:2 mode=tp" --weft-spmd-partition="device=0" %s | FileCheck %s --check-prefix=DEV0

// PLAN: weft.weight "wte"{{.*}}weft.sharding = [#weft.sharding<@mesh, {{\[\[}}0], []]>]
// PLAN: weft.gather{{.*}}weft.sharding = [#weft.sharding<@mesh, {{\[\[}}], [], []], partial [0]>]
// PLAN: weft.matmul{{.*}}transpose_b{{.*}}weft.sharding = [#weft.sharding<@mesh, {{\[\[}}], [], [0]]>]

// Device 1 holds rows 2048..4095. Which block is its own is read at run time
// (local_slice of the blocks' first rows), so both devices run one program.
// DEV1: %[[W:.*]] = weft.weight "wte" {{.*}} block [2048, 0] of [4096, 16] {{.*}}: tensor<2048x16xf32>
// DEV1: %[[OFFSETS:.*]] = weft.constant dense<[0, 2048]> : tensor<2xi64>
// DEV1: %[[MINE:.*]] = weft.local_slice %[[OFFSETS]] on @mesh over [0] dim 0 sizes [1, 1] : tensor<2xi64> -> tensor<1xi64>
// DEV1: %[[OFFSET:.*]] = weft.reshape %[[MINE]], %{{.*}} : (tensor<1xi64>, tensor<0xi64>) -> tensor<i64>
// Negative ids count from the end of the whole table (4096 rows).
// DEV1: %[[NEG:.*]] = weft.binary less %[[IDS:.*]], %[[ZERO:.*]] : (tensor<2x3xi64>, tensor<i64>) -> tensor<2x3xi1>
// DEV1: %[[WRAPPED:.*]] = weft.binary add %[[IDS]], %{{.*}} : (tensor<2x3xi64>, tensor<i64>) -> tensor<2x3xi64>
// DEV1: %[[ID:.*]] = weft.select %[[NEG]], %[[WRAPPED]], %[[IDS]]
// DEV1: %[[SHIFTED:.*]] = weft.binary sub %[[ID]], %[[OFFSET]]
// DEV1: weft.binary greater_equal %[[SHIFTED]], %[[ZERO]]
// DEV1: weft.binary less %[[SHIFTED]], %{{.*}}
// DEV1: %[[IN:.*]] = weft.binary and
// Ids outside the whole table are passed on, so that the lookup still fails.
// DEV1: %[[INTABLE:.*]] = weft.binary and
// DEV1: %[[ELSEWHERE:.*]] = weft.select %[[INTABLE]], %[[ZERO]], %[[IDS]]
// DEV1: %[[LOOKUP:.*]] = weft.select %[[IN]], %[[SHIFTED]], %[[ELSEWHERE]]
// DEV1: %[[ROWS:.*]] = weft.gather %[[W]][%[[LOOKUP]]] axis = 0 : (tensor<2048x16xf32>, tensor<2x3xi64>) -> tensor<2x3x16xf32>
// DEV1: %[[MASK:.*]] = weft.reshape %[[IN]], %{{.*}} : (tensor<2x3xi1>, tensor<3xi64>) -> tensor<2x3x1xi1>
// DEV1: %[[PART:.*]] = weft.select %[[MASK]], %[[ROWS]], %{{.*}} : (tensor<2x3x1xi1>, tensor<2x3x16xf32>, tensor<f32>) -> tensor<2x3x16xf32>
// DEV1: %[[EMBED:.*]] = weft.all_reduce %[[PART]] on @mesh over [0] : tensor<2x3x16xf32>
// DEV1: %[[LOGITS:.*]] = weft.matmul %[[EMBED]], %[[W]] {transpose_b} : (tensor<2x3x16xf32>, tensor<2048x16xf32>) -> tensor<2x3x2048xf32>
// DEV1: weft.all_gather %[[LOGITS]] on @mesh over [0] dim 2 sizes [2048, 2048]
// DEV1-NOT: weft.transpose

// DEV0: weft.weight "wte" {{.*}} block [0, 0] of [4096, 16] {{.*}}: tensor<2048x16xf32>
// DEV0: weft.constant dense<[0, 2048]> : tensor<2xi64>
weft.mesh @mesh shape = [2]
func.func @main(%ids: tensor<2x3xi64>) -> tensor<2x3x4096xf32> {
  %table = weft.weight "wte" from "none.bin" offset 0 size 262144 checksum "0000000000000000" : tensor<4096x16xf32>
  %wte = weft.shard %table to <@mesh, [[0], []]> : tensor<4096x16xf32>
  %e = weft.gather %wte[%ids] axis = 0 : (tensor<4096x16xf32>, tensor<2x3xi64>) -> tensor<2x3x16xf32>
  %t = weft.transpose %wte perm = [1, 0] : tensor<4096x16xf32> -> tensor<16x4096xf32>
  %l = weft.matmul %e, %t : (tensor<2x3x16xf32>, tensor<16x4096xf32>) -> tensor<2x3x4096xf32>
  return %l : tensor<2x3x4096xf32>
}
