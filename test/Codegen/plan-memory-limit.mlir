// RUN: weft-opt %s --weft-plan-memory -split-input-file -verify-diagnostics

// Tests that a buffer larger than the device's memory (the module's
// weft.device_memory_bytes, which weftc sets) is refused by name, before any
// code is emitted.
module attributes {weft.io_bytes = 0 : i64, weft.device_memory_bytes = 1000 : i64, weft.device_memory_source = "--device-memory"} {
  func.func @__weft_program_run(%ctx: !llvm.ptr, %arena: memref<?xi8>, %weights: memref<?xi8>) -> i32 {
    %cst = arith.constant 1.0 : f32
    // expected-error @+1 {{'tensor<32x32xf32>' (4096 bytes) does not fit in the device's memory, 1000 bytes (--device-memory)}}
    %a = memref.alloc() {alignment = 64 : i64} : memref<32x32xf32>
    linalg.fill ins(%cst : f32) outs(%a : memref<32x32xf32>)
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}

// -----

// Tests that buffers that fit one by one may still not fit together with
// the weights (weft.weights_bytes).
// expected-error @+1 {{the device program needs 4096 bytes of memory (arena 2048, weights 2048), more than the device's 3000 bytes}}
module attributes {weft.io_bytes = 0 : i64, weft.weights_bytes = 2048 : i64, weft.device_memory_bytes = 3000 : i64} {
  func.func @__weft_program_run(%ctx: !llvm.ptr, %arena: memref<?xi8>, %weights: memref<?xi8>) -> i32 {
    %cst = arith.constant 1.0 : f32
    %a = memref.alloc() {alignment = 64 : i64} : memref<16x16xf32>
    linalg.fill ins(%cst : f32) outs(%a : memref<16x16xf32>)
    %b = memref.alloc() {alignment = 64 : i64} : memref<16x16xf32>
    linalg.copy ins(%a : memref<16x16xf32>) outs(%b : memref<16x16xf32>)
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}

// -----

// Tests that without weft.device_memory_bytes nothing is checked.
module attributes {weft.io_bytes = 0 : i64} {
  func.func @__weft_program_run(%ctx: !llvm.ptr, %arena: memref<?xi8>, %weights: memref<?xi8>) -> i32 {
    %cst = arith.constant 1.0 : f32
    %a = memref.alloc() {alignment = 64 : i64} : memref<32x32xf32>
    linalg.fill ins(%cst : f32) outs(%a : memref<32x32xf32>)
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}

// -----

// Tests that a constant larger than the memory is refused by name, index-
// typed ones (the shapes of reshapes) included.
module attributes {weft.io_bytes = 0 : i64, weft.device_memory_bytes = 50 : i64} {
  // expected-error @+1 {{'tensor<8xindex>' (64 bytes) does not fit in the device's memory, 50 bytes}}
  memref.global "private" constant @shape : memref<8xindex> = dense<1>
  func.func @__weft_program_run(%ctx: !llvm.ptr, %arena: memref<?xi8>, %weights: memref<?xi8>) -> i32 {
    %s = memref.get_global @shape : memref<8xindex>
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}
