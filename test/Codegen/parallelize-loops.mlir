// RUN: weft-opt %s --weft-parallelize-loops | FileCheck %s
// RUN: weft-opt %s --weft-parallelize-loops=min-work=1000000000 \
// RUN:   | FileCheck %s --check-prefix=SERIAL

// Large nests of the program function become weft_rt_parallel_for calls;
// their bodies re-create the views they read from the arena and weights.

// The runtime's entry point is declared once.
// CHECK: func.func private @weft_rt_parallel_for(!llvm.ptr, i64, i64, (!llvm.ptr, memref<?xi8>, memref<?xi8>, index, index) -> (), memref<?xi8>, memref<?xi8>)

// CHECK-LABEL: func.func private @__weft_loop_0
// CHECK-SAME: (%[[CTX:.*]]: !llvm.ptr, %[[ARENA:.*]]: memref<?xi8>, %[[WEIGHTS:.*]]: memref<?xi8>, %[[BEGIN:.*]]: index, %[[END:.*]]: index)
// CHECK-DAG: memref.view %[[ARENA]]{{.*}} to memref<1x64x1024xf32>
// CHECK-DAG: memref.view %[[WEIGHTS]]{{.*}} to memref<1024xf32>
// CHECK: scf.for %[[ITEM:.*]] = %[[BEGIN]] to %[[END]]
// CHECK: %[[J:.*]] = arith.remui %[[ITEM]], %{{.*}} : index
// CHECK: %[[I:.*]] = arith.divui %[[ITEM]], %{{.*}} : index
// CHECK: scf.parallel (%[[K:.*]]) = (%{{.*}}) to (%{{.*}}) step
// CHECK: memref.load %{{.*}}[%[[I]], %[[J]], %[[K]]]
// CHECK: arith.addf
// CHECK: memref.store

// The 1-D nest: its items are its elements.
// CHECK-LABEL: func.func private @__weft_loop_1
// CHECK: scf.for %[[E:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NOT: scf.parallel
// CHECK: memref.load %{{.*}}[%[[E]]]

// CHECK-LABEL: func.func @__weft_program_run
// CHECK: %[[F0:.*]] = constant @__weft_loop_0
// CHECK: call @weft_rt_parallel_for(%arg0, %c64_i64, %c4096_i64, %[[F0]], %arg1, %arg2)
// The small nest stays a serial loop.
// CHECK: scf.parallel
// CHECK: %[[F1:.*]] = constant @__weft_loop_1
// CHECK: call @weft_rt_parallel_for(%arg0, %c100000_i64, %c3_i64, %[[F1]], %arg1, %arg2)
// A nest reading a value computed by a call stays serial.
// CHECK: call @opaque
// CHECK: scf.parallel
// CHECK: return

// With a higher threshold nothing changes.
// SERIAL-NOT: weft_rt_parallel_for
// SERIAL-NOT: __weft_loop_

func.func private @opaque() -> f32

func.func @__weft_program_run(%ctx: !llvm.ptr, %arena: memref<?xi8>,
                              %weights: memref<?xi8>) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c1024 = arith.constant 1024 : index
  %c100000 = arith.constant 100000 : index
  %off_y = arith.constant 262144 : index
  %off_z = arith.constant 524288 : index
  %x = memref.view %arena[%c0][] : memref<?xi8> to memref<1x64x1024xf32>
  %y = memref.view %arena[%off_y][] : memref<?xi8> to memref<1x64x1024xf32>
  %w = memref.view %weights[%c0][] : memref<?xi8> to memref<1024xf32>
  scf.parallel (%i, %j, %k) = (%c0, %c0, %c0) to (%c1, %c64, %c1024)
      step (%c1, %c1, %c1) {
    %a = memref.load %x[%i, %j, %k] : memref<1x64x1024xf32>
    %b = memref.load %w[%k] : memref<1024xf32>
    %s = arith.addf %a, %b : f32
    memref.store %s, %y[%i, %j, %k] : memref<1x64x1024xf32>
    scf.reduce
  }
  scf.parallel (%k) = (%c0) to (%c64) step (%c1) {
    %b = memref.load %w[%k] : memref<1024xf32>
    memref.store %b, %w[%k] : memref<1024xf32>
    scf.reduce
  }
  %z = memref.view %arena[%off_z][] : memref<?xi8> to memref<100000xf32>
  scf.parallel (%k) = (%c0) to (%c100000) step (%c1) {
    %v = memref.load %z[%k] : memref<100000xf32>
    %n = arith.negf %v : f32
    memref.store %n, %z[%k] : memref<100000xf32>
    scf.reduce
  }
  %scale = func.call @opaque() : () -> f32
  scf.parallel (%k) = (%c0) to (%c100000) step (%c1) {
    %v = memref.load %z[%k] : memref<100000xf32>
    %m = arith.mulf %v, %scale : f32
    memref.store %m, %z[%k] : memref<100000xf32>
    scf.reduce
  }
  %ok = arith.constant 0 : i32
  return %ok : i32
}
