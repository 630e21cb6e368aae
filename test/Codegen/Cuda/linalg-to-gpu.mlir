// RUN: weft-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(func.func(weft-linalg-to-gpu))' \
// RUN:   | FileCheck %s

// An elementwise chain: 6 = 2x3 points, one thread each in one block of 6
// (block-size caps at the point count); the thread's linear id is split
// row-major, the operands loaded through their maps and the result stored.
// CHECK-LABEL: func.func @elementwise
// CHECK: %[[C6:.*]] = arith.constant 6 : index
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in ({{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C6]], %{{.*}}, %{{.*}})
// CHECK: %[[MUL:.*]] = arith.muli %[[BX]], %{{.*}} : index
// CHECK: %[[ID:.*]] = arith.addi %[[MUL]], %[[TX]] : index
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[ID]], %{{.*}} : index
// CHECK: scf.if %[[IN]] {
// CHECK: %[[J:.*]] = arith.remui %[[ID]], %{{.*}} : index
// CHECK: %[[I:.*]] = arith.divui %[[ID]], %{{.*}} : index
// CHECK: %[[A:.*]] = memref.load %arg0[%[[I]], %[[J]]] : memref<2x3xf32>
// CHECK: %[[B:.*]] = memref.load %arg1[%[[J]]] : memref<3xf32>
// CHECK: %[[S:.*]] = arith.addf %[[A]], %[[B]] : f32
// CHECK: memref.store %[[S]], %arg2[%[[I]], %[[J]]] : memref<2x3xf32>
// CHECK: gpu.terminator
// CHECK-NOT: linalg.generic
func.func @elementwise(%a: memref<2x3xf32>, %b: memref<3xf32>, %out: memref<2x3xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                   affine_map<(d0, d1) -> (d1)>,
                                   affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : memref<2x3xf32>, memref<3xf32>) outs(%out : memref<2x3xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// 1000 points in blocks of 256: 4 blocks, the last partly idle.
// CHECK-LABEL: func.func @many_blocks
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG: %[[C256:.*]] = arith.constant 256 : index
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %[[C4]], {{.*}}) threads({{.*}}) in (%{{.*}} = %[[C256]],
// CHECK: arith.cmpi ult
func.func @many_blocks(%a: memref<1000xf32>, %out: memref<1000xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                  iterator_types = ["parallel"]}
      ins(%a : memref<1000xf32>) outs(%out : memref<1000xf32>) {
  ^bb0(%x: f32, %o: f32):
    %e = math.exp %x : f32
    linalg.yield %e : f32
  }
  return
}

// -----

// A reduction runs inside the thread: the output is read first and carried
// through an scf.for over the reduced dimension; linalg.index reads the
// thread's loop point.
// CHECK-LABEL: func.func @row_sum
// CHECK: gpu.launch
// CHECK: %[[INIT:.*]] = memref.load %arg1[%[[ROW:.*]]] : memref<4xf32>
// CHECK: %[[SUM:.*]] = scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[INIT]]) -> (f32) {
// CHECK:   %[[X:.*]] = memref.load %arg0[%[[ROW]], %[[K]]] : memref<4x5xf32>
// CHECK:   %[[IDX:.*]] = arith.index_cast %[[ROW]] : index to i64
// CHECK:   %[[ADD:.*]] = arith.addf %[[ACC]], %[[X]] : f32
// CHECK:   scf.yield %[[ADD]] : f32
// CHECK: memref.store %[[SUM]], %arg1[%[[ROW]]] : memref<4xf32>
func.func @row_sum(%a: memref<4x5xf32>, %out: memref<4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%a : memref<4x5xf32>) outs(%out : memref<4xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %i = linalg.index 0 : index
    %unused = arith.index_cast %i : index to i64
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A transposing map is applied per operand.
// CHECK-LABEL: func.func @transposed
// CHECK: %[[J:.*]] = arith.remui
// CHECK: %[[I:.*]] = arith.divui
// CHECK: memref.load %arg0[%[[J]], %[[I]]] : memref<3x2xf32>
// CHECK: memref.store %{{.*}}, %arg1[%[[I]], %[[J]]] : memref<2x3xf32>
func.func @transposed(%a: memref<3x2xf32>, %out: memref<2x3xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<3x2xf32>) outs(%out : memref<2x3xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  }
  return
}

// -----

func.func @named(%a: memref<4xf32>, %out: memref<4xf32>) {
  // expected-error @below {{has no GPU lowering; run linalg-generalize-named-ops first}}
  linalg.copy ins(%a : memref<4xf32>) outs(%out : memref<4xf32>)
  return
}

// -----

func.func @on_tensors(%a: tensor<4xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{must work on buffers (bufferize first)}}
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}
      ins(%a : tensor<4xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
