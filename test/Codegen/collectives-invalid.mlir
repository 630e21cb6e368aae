// RUN: weft-opt %s --weft-expose-program-abi --weft-bufferize -split-input-file -verify-diagnostics

// Tests that a sharding constraint that reached code generation is refused.
weft.mesh @mesh shape = [2]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'weft.shard' op is a sharding constraint, which the SPMD partitioner resolves; it cannot reach code generation}}
  %y = weft.shard %x to <@mesh, [[0]]> : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Tests that a module of several meshes needs its collectives to say which
// one the device runs on.
weft.mesh @a shape = [2]
// expected-error @+1 {{'weft.mesh' op is a second mesh, and no collective says which of @a and @b the device runs on}}
weft.mesh @b shape = [2, 2]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// Tests that a device's collectives run on one mesh (its communicator).
weft.mesh @a shape = [2]
weft.mesh @b shape = [2, 2]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = weft.all_reduce %x on @b over [0] : tensor<4xf32>
  // expected-error @+1 {{'weft.all_reduce' op runs on mesh @a, but an earlier collective runs on @b; a device program's collectives run on one mesh (its communicator)}}
  %z = weft.all_reduce %y on @a over [0] : tensor<4xf32>
  return %z : tensor<4xf32>
}

// -----

// Tests that a collective names a mesh in scope (the verifier says so
// before code generation starts).
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'weft.all_reduce' op names mesh @mesh, which is not a weft.mesh in scope}}
  %y = weft.all_reduce %x on @mesh over [0] : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Tests that a collective's axes must be axes of its mesh.
weft.mesh @mesh shape = [2, 2]
func.func @main(%x: tensor<4x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{'weft.all_gather' op runs over mesh axis 2 but mesh @mesh has 2 axes}}
  %y = weft.all_gather %x on @mesh over [2] dim 0 sizes [4, 4] : tensor<4x8xf32> -> tensor<8x8xf32>
  return %y : tensor<8x8xf32>
}

// -----

// Tests that a block collective gives one size per member of its group.
weft.mesh @mesh shape = [2, 3]
func.func @main(%x: tensor<6x8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{'weft.reduce_scatter' op gives 2 block sizes but its group (axes [1] of mesh @mesh [2, 3]) has 3 devices}}
  %y = weft.reduce_scatter %x on @mesh over [1] dim 0 sizes [3, 3] : tensor<6x8xf32> -> tensor<3x8xf32>
  return %y : tensor<3x8xf32>
}

// -----

// Tests the same for all_to_all.
weft.mesh @mesh shape = [4]
func.func @main(%x: tensor<2x8xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'weft.all_to_all' op gives 2 block sizes but its group (axes [0] of mesh @mesh [4]) has 4 devices}}
  %y = weft.all_to_all %x on @mesh over [0] split_dim 1 gather_dim 0 split_sizes [4, 4] gather_sizes [2, 2] : tensor<2x8xf32> -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// -----

// Tests that in a module of several meshes each collective runs on the one
// it names: a group of 2 on @a, of 4 on @b.
weft.mesh @a shape = [2]
weft.mesh @b shape = [4]
func.func @two_meshes(%x: tensor<2xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'weft.all_gather' op gives 2 block sizes but its group (axes [0] of mesh @b [4]) has 4 devices}}
  %y = weft.all_gather %x on @b over [0] dim 0 sizes [2, 2] : tensor<2xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}
