// RUN: weft-opt %s --weft-expose-program-abi | FileCheck %s

// Tests that a module may declare several meshes (a pipeline's declares
// every stage's): the device's mesh is the one its collectives run on, and
// its shape and world ranks go to the signature.
// CHECK: module attributes {
// CHECK-SAME: weft.mesh_shape = array<i64: 2>
// CHECK-SAME: weft.mesh_world_ranks = array<i64: 3, 5>
module {
  weft.mesh @stage0 shape = [4] devices = [0, 1, 2, 4]
  weft.mesh @stage1 shape = [2] devices = [3, 5]
  func.func @main(%x: tensor<4xf32> {weft.name = "x"}) -> (tensor<4xf32> {weft.name = "y"}) {
    %y = weft.all_reduce %x on @stage1 over [0] : tensor<4xf32>
    return %y : tensor<4xf32>
  }
}
