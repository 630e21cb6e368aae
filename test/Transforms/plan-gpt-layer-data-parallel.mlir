// Fixed decision: the same GPT layer at batch 64 with the throughput
// objective gets data parallelism on dgx-h100x8: every weight whole on every
// GPU, each GPU 8 of the 64 sequences, and no communication but the final
// gather of the returned output (which the throughput objective does not
// charge: a server keeps each GPU's answers where they are).
// RUN: weft-opt --canonicalize --weft-auto-shard="cluster=dgx-h100x8 objective=throughput" --weft-spmd-partition="device=5" %S/Inputs/gpt-layer-h4096-b64.mlir \
// RUN:   | FileCheck %s --implicit-check-not=weft.all_reduce --implicit-check-not=weft.all_gather \
// RUN:       --implicit-check-not=weft.reduce_scatter --implicit-check-not=weft.all_to_all --implicit-check-not=weft.local_slice

// CHECK: weft.local_slice %arg0 on @mesh over [0] dim 0 sizes [8, 8, 8, 8, 8, 8, 8, 8] : tensor<64x128x4096xf16> -> tensor<8x128x4096xf16>
// CHECK-COUNT-3: weft.matmul %{{.*}} : (tensor<8x128x4096xf16>, tensor<4096x4096xf16>) -> tensor<8x128x4096xf16>
// CHECK: weft.matmul {{.*}} -> tensor<8x32x128x128xf16>
// CHECK: weft.weight "h0.attn.proj.weight" {{.*}}: tensor<4096x4096xf16>
// CHECK: weft.weight "h0.mlp.fc.weight" {{.*}}: tensor<4096x16384xf16>
// CHECK: weft.weight "h0.mlp.proj.weight" {{.*}}: tensor<16384x4096xf16>
// CHECK: %[[OUT:.*]] = weft.binary add %{{.*}}, %{{.*}} : (tensor<8x128x4096xf16>, tensor<4096xf16>) -> tensor<8x128x4096xf16>
// CHECK-NEXT: %[[LAST:.*]] = weft.binary add %{{.*}}, %[[OUT]]
// CHECK-NEXT: %[[ALL:.*]] = weft.all_gather %[[LAST]] on @mesh over [0] dim 0 sizes [8, 8, 8, 8, 8, 8, 8, 8] : tensor<8x128x4096xf16> -> tensor<64x128x4096xf16>
// CHECK-NEXT: return %[[ALL]]
