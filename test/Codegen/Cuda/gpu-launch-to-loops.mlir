// RUN: weft-opt %s --pass-pipeline='builtin.module(func.func(weft-linalg-to-gpu,weft-gpu-launch-to-loops))' \
// RUN:   | FileCheck %s

// The launch becomes six loops (blocks z, y, x, then threads z, y, x) whose
// induction values replace the ids; the body runs unchanged.
// CHECK-LABEL: func.func @elementwise
// CHECK-NOT: gpu.launch
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for %[[BX:.*]] = %{{.*}} to %{{.*}} step
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for %[[TX:.*]] = %{{.*}} to %{{.*}} step
// CHECK: %[[MUL:.*]] = arith.muli %[[BX]], %{{.*}} : index
// CHECK: arith.addi %[[MUL]], %[[TX]] : index
// CHECK: scf.if
// CHECK: memref.store
func.func @elementwise(%a: memref<300xf32>, %out: memref<300xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                  iterator_types = ["parallel"]}
      ins(%a : memref<300xf32>) outs(%out : memref<300xf32>) {
  ^bb0(%x: f32, %o: f32):
    %n = arith.negf %x : f32
    linalg.yield %n : f32
  }
  return
}
