// RUN: weft-opt %s --weft-expose-program-abi --weft-bufferize --canonicalize | FileCheck %s

// Tests that heavy ops become kernel calls with a constant parameter block,
// that weights are views of the weights buffer, and that the op producing an
// output writes into the output's place in the arena directly.
// CHECK-DAG: memref.global "private" constant @__weft_params_softmax : memref<5xi64> = dense<[1, 2, 8, 1, 0]>
// CHECK-DAG: memref.global "private" constant @__weft_params_matmul : memref<11xi64> = dense<[1, 2, 8, 4, 0, 0, 4607182418800017408, 0, 0, 0, 0]>
// CHECK-DAG: func.func private @weft_rt_cpu_matmul(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// CHECK-LABEL: func.func @__weft_program_run
// CHECK-SAME: (%[[CTX:.*]]: !llvm.ptr, %[[ARENA:.*]]: memref<?xi8>, %[[WEIGHTS:.*]]: memref<?xi8>)
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK-DAG: %[[OUT:.*]] = memref.view %[[ARENA]][%{{.*}}][] : memref<?xi8> to memref<2x8xf32>
// CHECK-DAG: %[[W:.*]] = memref.view %[[WEIGHTS]][%[[C64]]][] : memref<?xi8> to memref<4x8xf32>
// CHECK: %[[MM:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2x8xf32>
// CHECK: call @weft_rt_cpu_matmul(%[[CTX]],
// CHECK: memref.extract_aligned_pointer_as_index %[[OUT]]
// CHECK: call @weft_rt_cpu_softmax(%[[CTX]],
// CHECK-NOT: linalg.copy
// CHECK: return
module {
  func.func @main(%x: tensor<2x4xf32>) -> tensor<2x8xf32> {
    %w = weft.weight "w" from "dev0.bin" offset 64 size 128 checksum "0000000000000000" : tensor<4x8xf32>
    %m = weft.matmul %x, %w : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
    %s = weft.softmax %m axis 1 : tensor<2x8xf32> -> tensor<2x8xf32>
    return %s : tensor<2x8xf32>
  }
}
