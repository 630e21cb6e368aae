// RUN: weft-opt %s --weft-expose-program-abi --weft-bufferize --canonicalize | FileCheck %s

// Tests that a transfer naming a peer table slot s passes peer = tag =
// -1 - s in SEND's and RECV's parameter block (kind, dtype, A = 0, peer,
// tag, count): the runtime reads the pair from the rank's table. A
// transfer that names its peer passes it as it is.
// CHECK-DAG: memref.global "private" constant @__weft_params_send : memref<6xi64> = dense<[5, 1, 0, -1, -1, 6]>
// CHECK-DAG: memref.global "private" constant @__weft_params_recv : memref<6xi64> = dense<[6, 1, 0, -3, -3, 4]>
// CHECK-DAG: memref.global "private" constant @__weft_params_send_0 : memref<6xi64> = dense<[5, 1, 0, 2, 9, 6]>
// CHECK-LABEL: func.func @__weft_program_run
// CHECK: call @weft_rt_collective({{.*}}) {weft.op_kind = "send"}
// CHECK: call @weft_rt_collective({{.*}}) {weft.op_kind = "recv"}
// CHECK: call @weft_rt_collective({{.*}}) {weft.op_kind = "send"}
module {
  func.func @main(%x: tensor<2x3xf32> {weft.name = "x"}) -> (tensor<4xf32> {weft.name = "y"}) {
    weft.send %x to slot 0 : tensor<2x3xf32>
    %y = weft.recv from slot 2 : tensor<4xf32>
    weft.send %x to 2 tag 9 : tensor<2x3xf32>
    return %y : tensor<4xf32>
  }
}
