// The partitioner reads every sharding of the function on the mesh it
// partitions for (@mesh): one on another mesh is refused, whether an op's,
// an operand's or an argument's.
// RUN: weft-opt -split-input-file -verify-diagnostics --weft-spmd-partition="device=0 mesh=mesh" %s

// Tests that an op's result sharding on another mesh is refused.
weft.mesh @mesh shape = [2]
weft.mesh @grid shape = [2]
func.func @main(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'weft.unary' op has a sharding on mesh @grid, not on the partition's mesh @mesh}}
  %r = weft.unary relu %x {weft.sharding = [#weft.sharding<@grid, [[0], []]>], weft.operand_sharding = [#weft.sharding<@mesh, [[0], []]>]} : tensor<8x4xf32> -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

// Tests that an argument's sharding on another mesh is refused.
weft.mesh @mesh shape = [2]
weft.mesh @grid shape = [2]
// expected-error @+1 {{'func.func' op has a sharding on mesh @grid, not on the partition's mesh @mesh}}
func.func @main(%x: tensor<8x4xf32> {weft.sharding = #weft.sharding<@grid, [[], []]>}) -> tensor<8x4xf32> {
  %r = weft.unary relu %x {weft.sharding = [#weft.sharding<@mesh, [[], []]>]} : tensor<8x4xf32> -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}
