// RUN: weft-opt %s --weft-expose-program-abi --weft-bufferize --canonicalize --weft-stage-receives --weft-plan-memory=report | FileCheck %s
// RUN: weft-opt %s --weft-cpu-bufferize=report-memory=true | FileCheck %s --check-prefix=PIPE
// RUN: weft-opt %s '--weft-cpu-bufferize=report-memory=true stage-receives=false' | FileCheck %s --check-prefix=OFF

// Tests that each receive gets a staging buffer of its own type as its in
// argument (out stays the result's buffer), that a receive of nothing gets
// none (in is out), that the send is left alone, and that the memory plan
// keeps the staging buffers (at 256 and 320) apart from every other buffer
// for the whole program: the second one is born after the matmul's result
// died, and still no buffer shares a place (4 buffers, 4 places).
// CHECK: memory plan: 4 buffers of 128 bytes in 256 bytes (live lower bound 256); inputs and outputs 256 bytes; arena 512 bytes; receive staging 64 bytes
// CHECK-LABEL: func.func @__weft_program_run
// CHECK: %[[A:.*]] = memref.view %arg1[%{{.*}}][] : memref<?xi8> to memref<2x4xf32>
// CHECK: memref.get_global @__weft_params_recv :
// CHECK: %[[C256:.*]] = arith.constant 256 : index
// CHECK-NEXT: %[[STAGE0:.*]] = memref.view %arg1[%[[C256]]][] : memref<?xi8> to memref<2x4xf32>
// CHECK-NEXT: memref.extract_aligned_pointer_as_index %[[STAGE0]]
// CHECK-NEXT: arith.index_cast
// CHECK-NEXT: %[[S0:.*]] = llvm.inttoptr
// CHECK-NEXT: call @weft_rt_collective(%arg0, %{{.*}}, %[[S0]], %{{.*}}) {weft.op_kind = "recv"}
// CHECK: call @weft_rt_cpu_matmul
// CHECK: call @weft_rt_collective({{.*}}) {weft.op_kind = "send"}
// CHECK: %[[C320:.*]] = arith.constant 320 : index
// CHECK-NEXT: %[[STAGE1:.*]] = memref.view %arg1[%[[C320]]][] : memref<?xi8> to memref<8xi32>
// CHECK-NEXT: memref.extract_aligned_pointer_as_index %[[STAGE1]]
// CHECK-NEXT: arith.index_cast
// CHECK-NEXT: %[[S1:.*]] = llvm.inttoptr
// CHECK-NEXT: call @weft_rt_collective(%arg0, %{{.*}}, %[[S1]], %{{.*}}) {weft.op_kind = "recv"}
// CHECK: memref.get_global @__weft_params_recv_1
// CHECK-NEXT: memref.extract_aligned_pointer_as_index
// CHECK-NEXT: arith.index_cast
// CHECK-NEXT: llvm.inttoptr
// CHECK-NEXT: memref.extract_aligned_pointer_as_index %[[EMPTY:.*]] : memref<0xf32>
// CHECK-NEXT: arith.index_cast
// CHECK-NEXT: %[[E:.*]] = llvm.inttoptr
// CHECK-NEXT: memref.extract_aligned_pointer_as_index %[[EMPTY]] : memref<0xf32>
// CHECK-NEXT: arith.index_cast
// CHECK-NEXT: %[[E2:.*]] = llvm.inttoptr
// CHECK-NEXT: call @weft_rt_collective(%arg0, %{{.*}}, %[[E]], %[[E2]]) {weft.op_kind = "recv"}
// CHECK-NOT: arith.constant 256
// CHECK-NOT: arith.constant 320
// CHECK-NOT: weft.staging
// The CPU pipeline stages receives unless told not to (the CUDA one does).
// PIPE: memory plan: {{.*}}; receive staging 64 bytes
// OFF: memory plan:
// OFF-NOT: staging
module {
  func.func @main(%x: tensor<4x4xf32> {weft.name = "x"}) -> (tensor<2x4xf32> {weft.name = "y"}, tensor<8xi32> {weft.name = "z"}, tensor<0xf32> {weft.name = "e"}) {
    %a = weft.recv from 0 tag 1 : tensor<2x4xf32>
    %m = weft.matmul %a, %x : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    weft.send %m to 2 tag 2 : tensor<2x4xf32>
    %z = weft.recv from 0 tag 3 : tensor<8xi32>
    %e = weft.recv from 0 tag 4 : tensor<0xf32>
    return %a, %z, %e : tensor<2x4xf32>, tensor<8xi32>, tensor<0xf32>
  }
}
