// RUN: weft-opt %s --weft-expose-program-abi --weft-bufferize --canonicalize | FileCheck %s

// Tests that both ends of a broadcast call become weft_rt_collective calls
// with BROADCAST's parameter block (kind 7, dtype, A = 0, group, tag, rows,
// row_elements, chunks, N, chain): the rows are the outermost dimension
// longer than one (6 of 4 elements here, past a leading 1), the root passes
// its input, the receiver its result's buffer (here the program's output),
// as both in and out.
// CHECK-DAG: memref.global "private" constant @__weft_params_broadcast : memref<12xi64> = dense<[7, 1, 0, 0, 12, 6, 4, 3, 3, 0, 3, 4]>
// CHECK-DAG: memref.global "private" constant @__weft_params_broadcast_0 : memref<11xi64> = dense<[7, 11, 0, -1, 13, 5, 1, 1, 2, 2, 0]>
// CHECK-LABEL: func.func @__weft_program_run
// CHECK-DAG: %[[X:.*]] = memref.view %arg1[%{{.*}}][] : memref<?xi8> to memref<1x6x4xf32>
// CHECK-DAG: %[[Y:.*]] = memref.view %arg1[%{{.*}}][] : memref<?xi8> to memref<5xf64>
// CHECK: memref.get_global @__weft_params_broadcast :
// CHECK: memref.extract_aligned_pointer_as_index %[[X]] :
// CHECK: memref.extract_aligned_pointer_as_index %[[X]] :
// CHECK: call @weft_rt_collective({{.*}}) {weft.op_kind = "broadcast"}
// CHECK: memref.get_global @__weft_params_broadcast_0 :
// CHECK: memref.extract_aligned_pointer_as_index %[[Y]] :
// CHECK: memref.extract_aligned_pointer_as_index %[[Y]] :
// CHECK: call @weft_rt_collective({{.*}}) {weft.op_kind = "broadcast"}
module {
  func.func @main(%x: tensor<1x6x4xf32> {weft.name = "x"}) -> (tensor<5xf64> {weft.name = "y"}) {
    weft.broadcast_send %x along [0, 3, 4] chunks 3 group 0 tag 12 : tensor<1x6x4xf32>
    %y = weft.broadcast_recv along [2, 0] chunks 1 group -1 tag 13 : tensor<5xf64>
    return %y : tensor<5xf64>
  }
}
