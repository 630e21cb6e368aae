// RUN: weft-opt %s --weft-expose-program-abi --weft-bufferize -split-input-file -verify-diagnostics

// Tests that a sharding constraint that reached code generation is refused.
weft.mesh @mesh shape = [2]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'weft.shard' op is a sharding constraint, which the SPMD partitioner resolves; it cannot reach code generation}}
  %y = weft.shard %x to <@mesh, [[0]]> : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Tests that a program runs on one mesh.
weft.mesh @a shape = [2]
// expected-error @+1 {{'weft.mesh' op is a second mesh; a device program runs on one mesh (the first is @a)}}
weft.mesh @b shape = [2, 2]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// Tests that a collective needs a mesh.
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{'weft.all_reduce' op runs over mesh axes but the module declares no weft.mesh}}
  // expected-error @+1 {{failed to bufferize op}}
  %y = weft.all_reduce %x over [0] : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Tests that a collective's axes must be axes of the mesh.
weft.mesh @mesh shape = [2, 2]
func.func @main(%x: tensor<4x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+2 {{'weft.all_gather' op runs over mesh axis 2 but the mesh [2, 2] has 2 axes}}
  // expected-error @+1 {{failed to bufferize op}}
  %y = weft.all_gather %x over [2] dim 0 sizes [4, 4] : tensor<4x8xf32> -> tensor<8x8xf32>
  return %y : tensor<8x8xf32>
}

// -----

// Tests that a block collective gives one size per member of its group.
weft.mesh @mesh shape = [2, 3]
func.func @main(%x: tensor<6x8xf32>) -> tensor<3x8xf32> {
  // expected-error @+2 {{'weft.reduce_scatter' op gives 2 block sizes but its group (mesh axes [1] of mesh [2, 3]) has 3 devices}}
  // expected-error @+1 {{failed to bufferize op}}
  %y = weft.reduce_scatter %x over [1] dim 0 sizes [3, 3] : tensor<6x8xf32> -> tensor<3x8xf32>
  return %y : tensor<3x8xf32>
}

// -----

// Tests the same for all_to_all.
weft.mesh @mesh shape = [4]
func.func @main(%x: tensor<2x8xf32>) -> tensor<4x4xf32> {
  // expected-error @+2 {{'weft.all_to_all' op gives 2 block sizes but its group (mesh axes [0] of mesh [4]) has 4 devices}}
  // expected-error @+1 {{failed to bufferize op}}
  %y = weft.all_to_all %x over [0] split_dim 1 gather_dim 0 split_sizes [4, 4] gather_sizes [2, 2] : tensor<2x8xf32> -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}
