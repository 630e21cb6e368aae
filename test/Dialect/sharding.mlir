// The sharding attribute, the mesh and the collectives round-trip.
// RUN: weft-opt %s | weft-opt | FileCheck %s

// CHECK: weft.mesh @mesh shape = [2, 2]
weft.mesh @mesh shape = [2, 2]

// CHECK-LABEL: func.func @annotated
func.func @annotated(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // CHECK: weft.shard %{{.*}} to <@mesh, {{\[\[}}0], [1]]> : tensor<8x16xf32>
  %a = weft.shard %x to <@mesh, [[0], [1]]> : tensor<8x16xf32>
  // CHECK: weft.shard %{{.*}} to <@mesh, {{\[\[}}], [0]], partial [1]>
  %b = weft.shard %a to <@mesh, [[], [0]], partial [1]> : tensor<8x16xf32>
  return %b : tensor<8x16xf32>
}

// CHECK-LABEL: func.func @collectives
func.func @collectives(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: weft.all_reduce %{{.*}} on @mesh over [1] : tensor<4x8xf32>
  %s = weft.all_reduce %x on @mesh over [1] : tensor<4x8xf32>
  // CHECK: weft.local_slice %{{.*}} on @mesh over [0] dim 1 sizes [4, 4] : tensor<4x8xf32> -> tensor<4x4xf32>
  %l = weft.local_slice %s on @mesh over [0] dim 1 sizes [4, 4] : tensor<4x8xf32> -> tensor<4x4xf32>
  // CHECK: weft.all_gather %{{.*}} on @mesh over [0] dim 1 sizes [4, 4] : tensor<4x4xf32> -> tensor<4x8xf32>
  %g = weft.all_gather %l on @mesh over [0] dim 1 sizes [4, 4] : tensor<4x4xf32> -> tensor<4x8xf32>
  // CHECK: weft.reduce_scatter %{{.*}} on @mesh over [1] dim 0 sizes [3, 1] : tensor<4x8xf32> -> tensor<3x8xf32>
  %r = weft.reduce_scatter %g on @mesh over [1] dim 0 sizes [3, 1] : tensor<4x8xf32> -> tensor<3x8xf32>
  // CHECK: weft.all_to_all %{{.*}} on @mesh over [0] split_dim 1 gather_dim 0 split_sizes [4, 4] gather_sizes [2, 2] : tensor<2x8xf32> -> tensor<4x4xf32>
  %c = weft.local_slice %g on @mesh over [0] dim 0 sizes [2, 2] : tensor<4x8xf32> -> tensor<2x8xf32>
  %t = weft.all_to_all %c on @mesh over [0] split_dim 1 gather_dim 0 split_sizes [4, 4] gather_sizes [2, 2] : tensor<2x8xf32> -> tensor<4x4xf32>
  return %g : tensor<4x8xf32>
}
