// RUN: weft-opt %s --weft-insert-status-checks | FileCheck %s

// Tests that a kernel's non-zero status returns at once, that ops are
// bracketed by profiling hooks and that each gets an "op" signature line
// named after its ONNX node.
// CHECK: module attributes {weft.program_ops = "op 0 softmax probs\0Aop 1 loops loops\0A"}
// CHECK-LABEL: func.func @__weft_program_run
// CHECK: call @weft_rt_op_begin(%arg0, %[[ID0:.*]])
// CHECK: %[[S:.*]] = call @weft_rt_cpu_softmax
// CHECK: call @weft_rt_op_end(%arg0, %[[ID0]])
// CHECK: %[[BAD:.*]] = arith.cmpi ne, %[[S]], %{{.*}} : i32
// CHECK: cf.cond_br %[[BAD]], ^[[FAIL:.*]], ^[[NEXT:.*]]
// CHECK: ^[[FAIL]]:
// CHECK-NEXT: return %[[S]] : i32
// CHECK: ^[[NEXT]]:
// CHECK: call @weft_rt_op_begin
// CHECK: linalg.copy
// CHECK: call @weft_rt_op_end
module {
  func.func private @weft_rt_cpu_softmax(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
  func.func @__weft_program_run(%ctx: !llvm.ptr, %arena: memref<?xi8>, %weights: memref<?xi8>) -> i32 {
    %p = llvm.mlir.zero : !llvm.ptr
    %s = call @weft_rt_cpu_softmax(%ctx, %p, %p, %p) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32 loc("probs")
    %a = memref.alloc() : memref<4xf32>
    %b = memref.alloc() : memref<4xf32>
    linalg.copy ins(%a : memref<4xf32>) outs(%b : memref<4xf32>)
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}
