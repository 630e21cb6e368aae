// Fixed decision: one GPT layer (hidden 4096, f16, batch 1) on dgx-h100x8
// with the latency objective gets Megatron's plan. Canonicalization first
// splits the packed QKV projection into Q, K and V matmuls; the planner then
// makes them and the first MLP matmul column-parallel (4 of the 32 heads
// per GPU), the attention output and second MLP matmul row-parallel, with
// exactly one all-reduce per block and no other collective.
// RUN: weft-opt --canonicalize --weft-auto-shard="cluster=dgx-h100x8" %S/Inputs/gpt-layer-h4096-b1.mlir | FileCheck %s --check-prefix=PLAN
// RUN: weft-opt --canonicalize --weft-auto-shard="cluster=dgx-h100x8" --weft-spmd-partition="device=3" %S/Inputs/gpt-layer-h4096-b1.mlir \
// RUN:   | FileCheck %s --implicit-check-not=weft.all_reduce --implicit-check-not=weft.all_gather \
// RUN:       --implicit-check-not=weft.reduce_scatter --implicit-check-not=weft.all_to_all --implicit-check-not=weft.local_slice

// PLAN: weft.mesh @mesh shape = [8]
// PLAN-COUNT-3: weft.weight "h0.attn.qkv.weight" {{.*}}weft.sharding = [#weft.sharding<@mesh, {{\[\[}}], [0]]>]
// PLAN: weft.weight "h0.attn.proj.weight" {{.*}}weft.sharding = [#weft.sharding<@mesh, {{\[\[}}0], []]>]
// PLAN: weft.weight "h0.mlp.fc.weight" {{.*}}weft.sharding = [#weft.sharding<@mesh, {{\[\[}}], [0]]>]
// PLAN: weft.weight "h0.mlp.proj.weight" {{.*}}weft.sharding = [#weft.sharding<@mesh, {{\[\[}}0], []]>]

// Device 3 holds columns [512 * 3, 512 * 4) of each of Q, K and V (packed
// at column offsets 0, 4096 and 8192 of the stored QKV weight).
// CHECK-DAG: weft.weight "h0.attn.qkv.weight" {{.*}} block [0, 1536] of [4096, 12288] {{.*}}: tensor<4096x512xf16>
// CHECK-DAG: weft.weight "h0.attn.qkv.weight" {{.*}} block [0, 5632] of [4096, 12288] {{.*}}: tensor<4096x512xf16>
// CHECK-DAG: weft.weight "h0.attn.qkv.weight" {{.*}} block [0, 9728] of [4096, 12288] {{.*}}: tensor<4096x512xf16>
// CHECK: weft.matmul {{.*}} -> tensor<1x4x128x128xf16>
// CHECK: weft.softmax {{.*}} : tensor<1x4x128x128xf16>
// CHECK: weft.weight "h0.attn.proj.weight" {{.*}} block [1536, 0] of [4096, 4096] {{.*}}: tensor<512x4096xf16>
// CHECK: %[[ATTN:.*]] = weft.matmul %{{.*}} : (tensor<1x128x512xf16>, tensor<512x4096xf16>) -> tensor<1x128x4096xf16>
// CHECK: weft.all_reduce %[[ATTN]] on @mesh over [0] : tensor<1x128x4096xf16>
// CHECK: weft.weight "h0.mlp.fc.weight" {{.*}} block [0, 6144] of [4096, 16384] {{.*}}: tensor<4096x2048xf16>
// CHECK: weft.weight "h0.mlp.proj.weight" {{.*}} block [6144, 0] of [16384, 4096] {{.*}}: tensor<2048x4096xf16>
// CHECK: %[[MLP:.*]] = weft.matmul %{{.*}} : (tensor<1x128x2048xf16>, tensor<2048x4096xf16>) -> tensor<1x128x4096xf16>
// CHECK: weft.all_reduce %[[MLP]] on @mesh over [0] : tensor<1x128x4096xf16>
// CHECK: return
