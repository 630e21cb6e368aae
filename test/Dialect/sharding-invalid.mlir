// RUN: weft-opt %s -split-input-file -verify-diagnostics

weft.mesh @mesh shape = [2]
func.func @axis_twice(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{mesh axis 0 is used more than once in one sharding}}
  %a = weft.shard %x to <@mesh, [[0], [0]]> : tensor<8x16xf32>
  return %a : tensor<8x16xf32>
}

// -----

weft.mesh @mesh shape = [2]
func.func @rank(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{sharding has 1 dimension(s) but the value}}
  %a = weft.shard %x to <@mesh, [[0]]> : tensor<8x16xf32>
  return %a : tensor<8x16xf32>
}

// -----

weft.mesh @mesh shape = [2]
func.func @no_axis(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{sharding uses mesh axis 1 but mesh @mesh has 1 axes}}
  %a = weft.shard %x to <@mesh, [[1], []]> : tensor<8x16xf32>
  return %a : tensor<8x16xf32>
}

// -----

weft.mesh @mesh shape = [2]
func.func @sizes(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{the block sizes [4, 2] add up to 6, not 8}}
  %g = weft.all_gather %x on @mesh over [0] dim 1 sizes [4, 2] : tensor<4x8xf32> -> tensor<4x8xf32>
  return %g : tensor<4x8xf32>
}

// -----

// expected-error @+1 {{mesh axis sizes must be >= 1}}
weft.mesh @bad shape = [0, 2]
