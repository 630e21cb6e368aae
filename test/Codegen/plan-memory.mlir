// RUN: weft-opt %s --weft-plan-memory=report | FileCheck %s

// Tests that buffers become views of the arena after the inputs and outputs
// (weft.io_bytes), that buffers live at the same time get distinct places
// and that a buffer dead before another is born shares its place.
// CHECK: memory plan: 3 buffers of 1536 bytes in 1024 bytes (live lower bound 1024); inputs and outputs 128 bytes; arena 1152 bytes
// CHECK: module attributes {weft.arena_bytes = 1152 : i64
// CHECK-LABEL: func.func @__weft_program_run
// CHECK: %[[OA:.*]] = arith.constant 128 : index
// CHECK: memref.view %arg1[%[[OA]]][] : memref<?xi8> to memref<128xf32>
// CHECK: %[[OB:.*]] = arith.constant 640 : index
// CHECK: memref.view %arg1[%[[OB]]][] : memref<?xi8> to memref<128xf32>
// CHECK: %[[OC:.*]] = arith.constant 128 : index
// CHECK: memref.view %arg1[%[[OC]]][] : memref<?xi8> to memref<128xf32>
// CHECK-NOT: memref.alloc
module attributes {weft.io_bytes = 128 : i64} {
  func.func @__weft_program_run(%ctx: !llvm.ptr, %arena: memref<?xi8>, %weights: memref<?xi8>) -> i32 {
    %cst = arith.constant 1.0 : f32
    %a = memref.alloc() {alignment = 64 : i64} : memref<128xf32>
    linalg.fill ins(%cst : f32) outs(%a : memref<128xf32>)
    %b = memref.alloc() {alignment = 64 : i64} : memref<128xf32>
    linalg.copy ins(%a : memref<128xf32>) outs(%b : memref<128xf32>)
    %c = memref.alloc() {alignment = 64 : i64} : memref<128xf32>
    linalg.copy ins(%b : memref<128xf32>) outs(%c : memref<128xf32>)
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}
