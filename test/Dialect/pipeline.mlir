// Round trip of the pipeline ops: meshes with devices, stages, transfers,
// and the point-to-point ops of per-device programs.
// RUN: weft-opt %s | FileCheck %s
// RUN: weft-opt %s | weft-opt | FileCheck %s

// CHECK: weft.mesh @stage0 shape = [2] devices = [0, 1]
// CHECK: weft.mesh @stage1 shape = [3] devices = [2, 3, 4]
weft.mesh @stage0 shape = [2] devices = [0, 1]
weft.mesh @stage1 shape = [3] devices = [2, 3, 4]

// CHECK-LABEL: func.func @two_stages
func.func @two_stages(%x: tensor<6x4xf32>) -> tensor<6x4xf32> {
  // CHECK: %[[A:.*]] = weft.stage @stage0(%{{.*}}) : (tensor<6x4xf32>) -> tensor<6x4xf32> {
  // CHECK: ^bb0(%[[IN:.*]]: tensor<6x4xf32>):
  // CHECK:   %[[R:.*]] = weft.unary relu %[[IN]]
  // CHECK:   weft.yield %[[R]] : tensor<6x4xf32>
  %a = weft.stage @stage0 (%x) : (tensor<6x4xf32>) -> tensor<6x4xf32> {
  ^bb0(%in: tensor<6x4xf32>):
    %r = weft.unary relu %in : tensor<6x4xf32> -> tensor<6x4xf32>
    weft.yield %r : tensor<6x4xf32>
  }
  // CHECK: %[[B:.*]] = weft.transfer %[[A]] from <@stage0, {{\[\[}}], [0]]> to <@stage1, {{\[\[}}0], []]> : tensor<6x4xf32>
  %b = weft.transfer %a from <@stage0, [[], [0]]> to <@stage1, [[0], []]> : tensor<6x4xf32>
  // CHECK: weft.stage @stage1(%[[B]])
  %c = weft.stage @stage1 (%b) : (tensor<6x4xf32>) -> tensor<6x4xf32> {
  ^bb0(%in: tensor<6x4xf32>):
    %r = weft.unary relu %in : tensor<6x4xf32> -> tensor<6x4xf32>
    weft.yield %r : tensor<6x4xf32>
  }
  return %c : tensor<6x4xf32>
}

// A partial sum on the source: reduced on the source mesh by the lowering.
// CHECK-LABEL: func.func @partial_source
func.func @partial_source(%x: tensor<6x4xf32>) -> tensor<6x4xf32> {
  %a = weft.stage @stage0 (%x) : (tensor<6x4xf32>) -> tensor<6x4xf32> {
  ^bb0(%in: tensor<6x4xf32>):
    weft.yield %in : tensor<6x4xf32>
  }
  // CHECK: weft.transfer %{{.*}} from <@stage0, {{\[\[}}], []], partial [0]> to <@stage1, {{\[\[}}], []]>
  %b = weft.transfer %a from <@stage0, [[], []], partial [0]> to <@stage1, [[], []]> : tensor<6x4xf32>
  return %b : tensor<6x4xf32>
}

// Tests that both ends of a broadcast call round-trip: the root sends its
// tensor, a relay or the last rank receives it.
// CHECK-LABEL: func.func @broadcast
func.func @broadcast(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // CHECK: weft.broadcast_send %{{.*}} along [0, 3, 4] chunks 4 group 0 tag 12 : tensor<8x16xf32>
  weft.broadcast_send %x along [0, 3, 4] chunks 4 group 0 tag 12 : tensor<8x16xf32>
  // CHECK: %{{.*}} = weft.broadcast_recv along [2, 1] chunks 1 group -1 tag 13 : tensor<8x16xf32>
  %y = weft.broadcast_recv along [2, 1] chunks 1 group -1 tag 13 : tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// CHECK-LABEL: func.func @point_to_point
func.func @point_to_point(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  // CHECK: weft.send %{{.*}} to 3 tag 7 : tensor<2x2xf32>
  weft.send %x to 3 tag 7 : tensor<2x2xf32>
  // CHECK: %{{.*}} = weft.recv from 0 tag 8 : tensor<2x2xf32>
  %y = weft.recv from 0 tag 8 : tensor<2x2xf32>
  // The same with the peers in the rank's peer table:
  // CHECK: weft.send %{{.*}} to slot 0 : tensor<2x2xf32>
  weft.send %x to slot 0 : tensor<2x2xf32>
  // CHECK: %{{.*}} = weft.recv from slot 1 : tensor<2x2xf32>
  %z = weft.recv from slot 1 : tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}
