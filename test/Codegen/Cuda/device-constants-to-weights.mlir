// RUN: rm -rf %t && mkdir -p %t
// RUN: weft-opt %s --allow-unregistered-dialect --weft-device-constants-to-weights=file=%t/constants.bin \
// RUN:   | FileCheck %s
// RUN: %PYTHON -c "import sys; d = open(sys.argv[1], 'rb').read(); print(len(d), d[:16].hex(), d[64:68].hex())" %t/constants.bin \
// RUN:   | FileCheck %s --check-prefix=BYTES

// Constant data the GPU reads moves after the 128 bytes of weights, each
// piece padded to 64 bytes, and is read through views of the weights; kernel
// parameter blocks and index shapes stay host globals. The splat is
// expanded; a constant used twice is placed once.
// CHECK: module attributes {weft.device_constants_bytes = 128 : i64, weft.weights_bytes = 256 : i64}
// CHECK-DAG: memref.global "private" constant @__weft_params_softmax
// CHECK-DAG: memref.global "private" constant @__constant_2xindex
// CHECK-NOT: @__constant_4xf32
// CHECK-NOT: @__constant_splat
// CHECK-LABEL: func.func @__weft_program_run
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK-DAG: %[[C192:.*]] = arith.constant 192 : index
// CHECK-DAG: memref.view %arg2[%[[C128]]][] : memref<?xi8> to memref<4xf32>
// CHECK-DAG: memref.view %arg2[%[[C192]]][] : memref<?xi8> to memref<1xi32>
// CHECK-DAG: memref.get_global @__weft_params_softmax
// CHECK-DAG: memref.get_global @__constant_2xindex
// BYTES: 128 0000803f000000400000404000008040 07000000
module attributes {weft.weights_bytes = 128 : i64} {
  memref.global "private" constant @__weft_params_softmax : memref<2xi64> = dense<[1, 2]>
  memref.global "private" constant @__constant_2xindex : memref<2xindex> = dense<[2, 2]>
  memref.global "private" constant @__constant_4xf32 : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
  memref.global "private" constant @__constant_splat : memref<1xi32> = dense<7>
  func.func @__weft_program_run(%ctx: !llvm.ptr, %arena: memref<?xi8>, %weights: memref<?xi8>) -> i32 {
    %p = memref.get_global @__weft_params_softmax : memref<2xi64>
    %s = memref.get_global @__constant_2xindex : memref<2xindex>
    %a = memref.get_global @__constant_4xf32 : memref<4xf32>
    %b = memref.get_global @__constant_4xf32 : memref<4xf32>
    %c = memref.get_global @__constant_splat : memref<1xi32>
    "test.use"(%p, %s, %a, %b, %c) : (memref<2xi64>, memref<2xindex>, memref<4xf32>, memref<4xf32>, memref<1xi32>) -> ()
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}
