// The verifiers of the pipeline ops.
// RUN: weft-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{'weft.mesh' op lists 2 devices for a mesh of 3 positions}}
weft.mesh @m shape = [3] devices = [0, 1]

// -----

// expected-error @+1 {{'weft.mesh' op devices must be distinct and >= 0, got [1, 1]}}
weft.mesh @m shape = [2] devices = [1, 1]

// -----

weft.mesh @a shape = [2] devices = [0, 1]
func.func @same_mesh(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'weft.transfer' op moves a value within mesh @a}}
  %y = weft.transfer %x from <@a, [[0]]> to <@a, [[]]> : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

weft.mesh @a shape = [2] devices = [0, 1]
weft.mesh @b shape = [2] devices = [2, 3]
func.func @partial_target(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'weft.transfer' op target holds partial sums over mesh axes [0]}}
  %y = weft.transfer %x from <@a, [[0]]> to <@b, [[]], partial [0]> : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

weft.mesh @a shape = [2] devices = [0, 1]
weft.mesh @b shape = [2] devices = [1, 2]
func.func @shared_device(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'weft.transfer' op meshes @a and @b share device 1; a transfer connects disjoint meshes}}
  %y = weft.transfer %x from <@a, [[0]]> to <@b, [[]]> : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

weft.mesh @a shape = [2] devices = [0, 1]
weft.mesh @b shape = [2] devices = [2, 3]
func.func @axis_outside(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'weft.transfer' op sharding uses mesh axis 1 but mesh @b has 1 axes}}
  %y = weft.transfer %x from <@a, [[0]]> to <@b, [[1]]> : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

weft.mesh @a shape = [2] devices = [0, 1]
weft.mesh @b shape = [2] devices = [2, 3]
func.func @wrong_source_mesh(%x: tensor<4xf32>) -> tensor<4xf32> {
  %s = weft.stage @a (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%in: tensor<4xf32>):
    weft.yield %in : tensor<4xf32>
  }
  // expected-error @+1 {{'weft.transfer' op source is on @b but its value comes from a stage on @a}}
  %y = weft.transfer %s from <@b, [[]]> to <@a, [[]]> : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

weft.mesh @a shape = [2] devices = [0, 1]
weft.mesh @b shape = [2] devices = [2, 3]
func.func @stage_input(%x: tensor<4xf32>) -> tensor<4xf32> {
  %s = weft.stage @a (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%in: tensor<4xf32>):
    weft.yield %in : tensor<4xf32>
  }
  // expected-error @+1 {{'weft.stage' op input 0 is neither an argument of the enclosing function nor the result of a weft.transfer}}
  %t = weft.stage @b (%s) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%in: tensor<4xf32>):
    weft.yield %in : tensor<4xf32>
  }
  return %t : tensor<4xf32>
}

// -----

weft.mesh @a shape = [2] devices = [0, 1]
weft.mesh @b shape = [2] devices = [2, 3]
weft.mesh @c shape = [1] devices = [4]
func.func @transferred_elsewhere(%x: tensor<4xf32>) -> tensor<4xf32> {
  %s = weft.stage @a (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%in: tensor<4xf32>):
    weft.yield %in : tensor<4xf32>
  }
  %m = weft.transfer %s from <@a, [[]]> to <@c, [[]]> : tensor<4xf32>
  // expected-error @+1 {{'weft.stage' op input 0 was transferred to @c, not to this stage's mesh @b}}
  %t = weft.stage @b (%m) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%in: tensor<4xf32>):
    weft.yield %in : tensor<4xf32>
  }
  return %t : tensor<4xf32>
}

// -----

func.func @unknown_mesh(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'weft.stage' op names mesh @nowhere, which is not a weft.mesh in scope}}
  %s = weft.stage @nowhere (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%in: tensor<4xf32>):
    weft.yield %in : tensor<4xf32>
  }
  return %s : tensor<4xf32>
}

// -----

weft.mesh @a shape = [1] devices = [0]
func.func @yield_types(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'weft.stage' op yields ('tensor<4xf32>') but the stage gives ('tensor<2xf32>')}}
  %s = weft.stage @a (%x) : (tensor<4xf32>) -> tensor<2xf32> {
  ^bb0(%in: tensor<4xf32>):
    weft.yield %in : tensor<4xf32>
  }
  return %x : tensor<4xf32>
}

// -----

func.func @bad_tag(%x: tensor<4xf32>) {
  // expected-error @+1 {{'weft.send' op tag -1 is outside [0, 1048575]}}
  weft.send %x to 1 tag -1 : tensor<4xf32>
  return
}

// -----

func.func @bad_peer() -> tensor<4xf32> {
  // expected-error @+1 {{'weft.recv' op peer rank -2 is negative}}
  %y = weft.recv from -2 tag 0 : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Tests that a broadcast's chain has two distinct ranks at least.
func.func @short_chain(%x: tensor<4xf32>) {
  // expected-error @+1 {{'weft.broadcast_send' op has a chain of 1 ranks; a broadcast needs at least two}}
  weft.broadcast_send %x along [0] chunks 1 group 0 tag 0 : tensor<4xf32>
  return
}

// -----

func.func @repeated_rank() -> tensor<4xf32> {
  // expected-error @+1 {{'weft.broadcast_recv' op chain lists rank 2 twice}}
  %y = weft.broadcast_recv along [2, 1, 2] chunks 1 group 0 tag 0 : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Tests that chunks are whole rows: 3 rows of 5 (the dimension of 1 before
// them is not cut) cut into 4 chunks is refused.
func.func @too_many_chunks(%x: tensor<1x3x5xf32>) {
  // expected-error @+1 {{'weft.broadcast_send' op cuts 'tensor<1x3x5xf32>' (3 rows) into 4 chunks; from 1 to max(rows, 1)}}
  weft.broadcast_send %x along [0, 1] chunks 4 group 0 tag 0 : tensor<1x3x5xf32>
  return
}

// -----

func.func @bad_group() -> tensor<4xf32> {
  // expected-error @+1 {{'weft.broadcast_recv' op group -2 is neither a broadcast group nor -1 (the world)}}
  %y = weft.broadcast_recv along [0, 1] chunks 1 group -2 tag 0 : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @broadcast_tag(%x: tensor<4xf32>) {
  // expected-error @+1 {{'weft.broadcast_send' op tag 1048576 is outside [0, 1048575]}}
  weft.broadcast_send %x along [0, 1] chunks 1 group 0 tag 1048576 : tensor<4xf32>
  return
}

// -----

func.func @slot_and_peer(%x: tensor<4xf32>) {
  // expected-error @+1 {{'weft.send' op names both a peer table slot and a peer or tag}}
  "weft.send"(%x) {peer = 1 : i64, tag = 0 : i64, slot = 0 : i64} : (tensor<4xf32>) -> ()
  return
}

// -----

func.func @no_peer() -> tensor<4xf32> {
  // expected-error @+1 {{'weft.recv' op needs a peer and a tag, or a peer table slot}}
  %y = "weft.recv"() {peer = 1 : i64} : () -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @bad_slot(%x: tensor<4xf32>) {
  // expected-error @+1 {{'weft.send' op peer table slot -1 is outside [0, 1048575]}}
  weft.send %x to slot -1 : tensor<4xf32>
  return
}
