// RUN: weft-opt %s --split-input-file --verify-diagnostics \
// RUN:   --weft-retarget-kernels-to-cuda | FileCheck %s

// Kernel and collective calls go to the CUDA runtime; other functions and
// the op kind attribute stay.
// CHECK: func.func private @weft_rt_cuda_softmax(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// CHECK: func.func private @weft_rt_cuda_collective(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// CHECK: func.func private @weft_rt_op_begin(!llvm.ptr, i64)
// CHECK: call @weft_rt_cuda_softmax(
// CHECK: call @weft_rt_cuda_collective({{.*}}) {weft.op_kind = "all_reduce"}
// CHECK: call @weft_rt_op_begin(
// CHECK-NOT: weft_rt_cpu_
module {
  func.func private @weft_rt_cpu_softmax(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
  func.func private @weft_rt_collective(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
  func.func private @weft_rt_op_begin(!llvm.ptr, i64)
  func.func @run(%ctx: !llvm.ptr) -> i32 {
    %p = llvm.mlir.zero : !llvm.ptr
    %c0 = arith.constant 0 : i64
    %s = call @weft_rt_cpu_softmax(%ctx, %p, %p, %p) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
    %t = call @weft_rt_collective(%ctx, %p, %p, %p) {weft.op_kind = "all_reduce"} : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
    call @weft_rt_op_begin(%ctx, %c0) : (!llvm.ptr, i64) -> ()
    return %s : i32
  }
}

// -----

// expected-error @below {{cannot retarget to 'weft_rt_cuda_pool': the module already defines it}}
func.func private @weft_rt_cpu_pool(!llvm.ptr) -> i32
func.func private @weft_rt_cuda_pool(!llvm.ptr) -> i32
