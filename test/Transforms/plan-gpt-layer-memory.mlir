// Fixed decisions under a memory budget, on the batch-64 GPT layer whose
// throughput plan is data parallel (403 MB of f16 weights on every GPU):
// - with 380 MB per GPU the weights no longer fit whole, and the plan shards
//   them (column-parallel Q, K, V and first MLP matmul). The 64 MB input and
//   output, whole on every GPU, count too;
// - with 120 MB no plan fits, and the error gives the budget and the
//   smallest need found.
// RUN: weft-opt --canonicalize --weft-auto-shard="cluster=dgx-h100x8 objective=throughput device-memory=380MB" --weft-spmd-partition="device=0" %S/Inputs/gpt-layer-h4096-b64.mlir | FileCheck %s
// RUN: not weft-opt --mlir-print-op-on-diagnostic=false --canonicalize --weft-auto-shard="cluster=dgx-h100x8 objective=throughput device-memory=120MB" %S/Inputs/gpt-layer-h4096-b64.mlir 2>&1 | FileCheck %s --check-prefix=TOO-SMALL

// CHECK-COUNT-3: weft.weight "h0.attn.qkv.weight" {{.*}}: tensor<4096x512xf16>
// CHECK: weft.weight "h0.mlp.fc.weight" {{.*}} block [0, 0] of [4096, 16384] {{.*}}: tensor<4096x2048xf16>
// CHECK: weft.weight "h0.mlp.proj.weight" {{.*}} block [0, 0] of [16384, 4096] {{.*}}: tensor<2048x4096xf16>

// TOO-SMALL: error: sharding plan for mesh [8]: memory budget too small: every plan needs at least {{[0-9.]+}} MiB ({{[0-9]+}} bytes) per device, the budget is 114.44 MiB (120000000 bytes)
