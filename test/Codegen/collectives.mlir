// RUN: weft-opt %s -split-input-file --weft-expose-program-abi --weft-bufferize --canonicalize | FileCheck %s
// RUN: weft-opt %s -split-input-file --weft-cpu-bufferize --weft-insert-status-checks | FileCheck %s --check-prefix=OPS
// RUN: weft-opt %s -split-input-file --weft-cpu-codegen | FileCheck %s --check-prefix=LLVM

// Tests that collectives become weft_rt_collective calls with their
// parameter blocks (kind, dtype, A, axes, then by kind), that the mesh is
// recorded for the signature and erased, that an all_reduce sums in place
// into a buffer nothing else reads and straight into a program output.
// CHECK: module attributes {
// CHECK-SAME: weft.mesh_shape = array<i64: 2, 2>
// CHECK-NOT: weft.mesh @
// CHECK-DAG: memref.global "private" constant @__weft_params_all_reduce : memref<5xi64> = dense<[0, 1, 1, 1, 32]>
// CHECK-DAG: memref.global "private" constant @__weft_params_all_gather : memref<9xi64> = dense<[1, 1, 1, 0, 1, 8, 2, 4, 4]>
// CHECK-DAG: memref.global "private" constant @__weft_params_reduce_scatter : memref<9xi64> = dense<[2, 1, 1, 1, 8, 1, 2, 5, 3]>
// CHECK-DAG: memref.global "private" constant @__weft_params_all_reduce_0 : memref<6xi64> = dense<[0, 1, 2, 0, 1, 32]>
// CHECK-DAG: func.func private @weft_rt_collective(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// CHECK-LABEL: func.func @__weft_program_run
// CHECK-DAG: %[[X:.*]] = memref.view %arg1[%{{.*}}][] : memref<?xi8> to memref<4x8xf32>
// CHECK-DAG: %[[Y:.*]] = memref.view %arg1[%{{.*}}][] : memref<?xi8> to memref<8x5xf32>
// CHECK-DAG: %[[Z:.*]] = memref.view %arg1[%[[C320:.*]]][] : memref<?xi8> to memref<4x8xf32>
// CHECK: %[[MM:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x8xf32>
// CHECK: call @weft_rt_cpu_matmul
// CHECK: memref.get_global @__weft_params_all_reduce :
// CHECK: memref.extract_aligned_pointer_as_index %[[MM]]
// CHECK: memref.extract_aligned_pointer_as_index %[[MM]]
// CHECK: call @weft_rt_collective(%arg0, %{{.*}}, %{{.*}}, %{{.*}}) {weft.op_kind = "all_reduce"}
// CHECK: %[[G:.*]] = memref.alloc() {alignment = 64 : i64} : memref<8x8xf32>
// CHECK: memref.extract_aligned_pointer_as_index %[[MM]]
// CHECK: memref.extract_aligned_pointer_as_index %[[G]]
// CHECK: call @weft_rt_collective({{.*}}) {weft.op_kind = "all_gather"}
// CHECK: memref.extract_aligned_pointer_as_index %[[G]]
// CHECK: memref.extract_aligned_pointer_as_index %[[Y]]
// CHECK: call @weft_rt_collective({{.*}}) {weft.op_kind = "reduce_scatter"}
// CHECK: memref.get_global @__weft_params_all_reduce_0
// CHECK: memref.extract_aligned_pointer_as_index %[[X]]
// CHECK: memref.extract_aligned_pointer_as_index %[[Z]]
// CHECK: call @weft_rt_collective({{.*}}) {weft.op_kind = "all_reduce"}
// CHECK-NOT: linalg.copy
// CHECK: return

// Tests that every collective gets an "op" line of its own kind, profiling
// hooks and a status check (the kind tag is dropped once read).
// OPS: weft.program_ops = "op 0 matmul matmul\0Aop 1 all_reduce sum\0Aop 2 all_gather gather\0Aop 3 reduce_scatter reduce_scatter\0Aop 4 all_reduce all_reduce\0A"
// OPS-LABEL: func.func @__weft_program_run
// OPS: call @weft_rt_cpu_matmul
// OPS: call @weft_rt_op_begin(%arg0, %[[ID:.*]]) : (!llvm.ptr, i64) -> ()
// OPS-NEXT: %[[ST:.*]] = call @weft_rt_collective(%arg0, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}) : (
// OPS-NEXT: call @weft_rt_op_end(%arg0, %[[ID]])
// OPS: arith.cmpi ne, %[[ST]], %{{.*}} : i32

// Tests that the whole pipeline reaches LLVM with the mesh gone and every
// collective's status checked.
// LLVM: module attributes
// LLVM-SAME: weft.mesh_shape = array<i64: 2, 2>
// LLVM-NOT: weft.mesh @
// LLVM: llvm.func @weft_rt_collective(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// LLVM-LABEL: llvm.func @__weft_program_run
// LLVM-COUNT-4: llvm.call @weft_rt_collective(%arg0, %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// LLVM-NOT: weft.op_kind
module {
  weft.mesh @mesh shape = [2, 2]
  func.func @main(%x: tensor<4x8xf32> {weft.name = "x"}) -> (tensor<8x5xf32> {weft.name = "y"}, tensor<4x8xf32> {weft.name = "z"}) {
    %w = weft.weight "w" from "dev0.bin" offset 0 size 256 checksum "0000000000000000" : tensor<8x8xf32>
    %m = weft.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("matmul")
    %s = weft.all_reduce %m on @mesh over [1] : tensor<4x8xf32> loc("sum")
    %g = weft.all_gather %s on @mesh over [0] dim 0 sizes [4, 4] : tensor<4x8xf32> -> tensor<8x8xf32> loc("gather")
    %r = weft.reduce_scatter %g on @mesh over [1] dim 1 sizes [5, 3] : tensor<8x8xf32> -> tensor<8x5xf32>
    %z = weft.all_reduce %x on @mesh over [0, 1] : tensor<4x8xf32>
    return %r, %z : tensor<8x5xf32>, tensor<4x8xf32>
  }
}

// -----

// Tests local_slice and all_to_all parameter blocks (outer, mid, inner,
// gather_first), and that an all_reduce whose operand is still needed, or
// is an input (not writable), sums into a fresh buffer instead of copying.
// CHECK-DAG: memref.global "private" constant @__weft_params_local_slice : memref<12xi64> = dense<[4, 6, 2, 0, 1, 1, 6, 4, 2, 2, 2, 2]>
// CHECK-DAG: memref.global "private" constant @__weft_params_all_to_all : memref<13xi64> = dense<[3, 1, 1, 1, 2, 5, 7, 1, 2, 2, 2, 3, 3]>
// CHECK-LABEL: func.func @__weft_program_run
// CHECK: %[[IN:.*]] = memref.view %arg1[%{{.*}}][] : memref<?xi8> to memref<8x6xi32>
// CHECK: %[[SUM:.*]] = memref.alloc() {alignment = 64 : i64} : memref<8x6xi32>
// CHECK: memref.extract_aligned_pointer_as_index %[[IN]]
// CHECK: memref.extract_aligned_pointer_as_index %[[SUM]]
// CHECK: call @weft_rt_collective({{.*}}) {weft.op_kind = "all_reduce"}
// CHECK: call @weft_rt_collective({{.*}}) {weft.op_kind = "local_slice"}
// CHECK: %[[SUM2:.*]] = memref.alloc() {alignment = 64 : i64} : memref<8x6xi32>
// CHECK: memref.extract_aligned_pointer_as_index %[[SUM]]
// CHECK: memref.extract_aligned_pointer_as_index %[[SUM2]]
// CHECK: call @weft_rt_collective({{.*}}) {weft.op_kind = "all_reduce"}
// CHECK: call @weft_rt_collective({{.*}}) {weft.op_kind = "all_to_all"}
// CHECK-NOT: linalg.copy
// CHECK: return

// OPS: weft.program_ops = "op 0 all_reduce all_reduce\0Aop 1 local_slice local_slice\0Aop 2 all_reduce all_reduce\0Aop 3 copy2d copy2d\0Aop 4 copy2d copy2d\0Aop 5 all_to_all all_to_all\0A"
// LLVM-LABEL: llvm.func @__weft_program_run
// LLVM-COUNT-4: llvm.call @weft_rt_collective(
module {
  weft.mesh @mesh shape = [2, 2]
  func.func @main(%x: tensor<8x6xi32>, %a: tensor<2x3x5x4x7xf32>) -> (tensor<2x6xi32>, tensor<16x6xi32>, tensor<2x6x5x2x7xf32>) {
    %s = weft.all_reduce %x on @mesh over [1] : tensor<8x6xi32>
    %l = weft.local_slice %s on @mesh over [0, 1] dim 0 sizes [2, 2, 2, 2] : tensor<8x6xi32> -> tensor<2x6xi32>
    %t = weft.all_reduce %s on @mesh over [0] : tensor<8x6xi32>
    %u = weft.concat %s, %t axis = 0 : (tensor<8x6xi32>, tensor<8x6xi32>) -> tensor<16x6xi32>
    %v = weft.all_to_all %a on @mesh over [1] split_dim 3 gather_dim 1 split_sizes [2, 2] gather_sizes [3, 3] : tensor<2x3x5x4x7xf32> -> tensor<2x6x5x2x7xf32>
    return %l, %u, %v : tensor<2x6xi32>, tensor<16x6xi32>, tensor<2x6x5x2x7xf32>
  }
}
