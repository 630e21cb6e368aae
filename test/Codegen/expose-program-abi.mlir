// RUN: weft-opt %s --weft-expose-program-abi | FileCheck %s

// Tests that the model function becomes the program entry point: inputs
// and outputs are views at the start of the arena, inputs first, each
// 64-byte aligned, and the layout is recorded for the signature.
// CHECK: module attributes {weft.io_bytes = 192 : i64
// CHECK-SAME: weft.program_io = "input x 1 2 2 3 0\0Ainput idx 7 1 5 64\0Aoutput y 1 2 2 3 128\0A"
// CHECK-LABEL: func.func @__weft_program_run
// CHECK-SAME: (%[[CTX:.*]]: !llvm.ptr, %[[ARENA:.*]]: memref<?xi8>, %[[W:.*]]: memref<?xi8>) -> i32
// CHECK-SAME: llvm.emit_c_interface
// CHECK: %[[X:.*]] = memref.view %[[ARENA]][%{{.*}}][] : memref<?xi8> to memref<2x3xf32>
// CHECK: bufferization.to_tensor %[[X]] restrict
// CHECK: %[[Y:.*]] = memref.view %[[ARENA]][%{{.*}}][] : memref<?xi8> to memref<2x3xf32>
// CHECK: %[[R:.*]] = weft.unary relu
// CHECK: bufferization.materialize_in_destination %[[R]] in restrict writable %[[Y]]
// CHECK: return %{{.*}} : i32
module {
  func.func @main(%x: tensor<2x3xf32> {weft.name = "x"}, %i: tensor<5xi64> {weft.name = "idx"}) -> (tensor<2x3xf32> {weft.name = "y"}) {
    %r = weft.unary relu %x : tensor<2x3xf32> -> tensor<2x3xf32>
    return %r : tensor<2x3xf32>
  }
}
