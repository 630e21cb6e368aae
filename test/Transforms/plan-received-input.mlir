// A pipeline stage's input that another stage sends arrives by a receive
// with a staging buffer of its own (weft-stage-receives), so the planner
// counts it twice (weft.received). The 64 KiB input, its 64 KiB staging
// buffer and the 64 KiB output need 192 KiB: a budget of 160 KiB fits the
// same function without the mark, and not with it.
// RUN: not weft-opt -split-input-file --weft-auto-shard="cluster=cpu:1 device-memory=163840" %s 2>/dev/null | FileCheck %s
// RUN: not weft-opt -split-input-file --mlir-print-op-on-diagnostic=false --weft-auto-shard="cluster=cpu:1 device-memory=163840" %s 2>&1 >/dev/null | FileCheck %s --check-prefix=ERR

// CHECK-LABEL: func.func @main
// CHECK: weft.unary relu
// ERR-NOT: plan-received-input.mlir:{{[0-9]}}:
func.func @main(%x: tensor<128x128xf32>) -> tensor<128x128xf32> {
  %r = weft.unary relu %x : tensor<128x128xf32> -> tensor<128x128xf32>
  return %r : tensor<128x128xf32>
}

// -----

// ERR: error: sharding plan for mesh [1]: memory budget too small: the best plan found needs 192.00 KiB (196608 bytes) per device, 0 B of it buffers for resharding; the budget is 160.00 KiB (163840 bytes)
func.func @main(%x: tensor<128x128xf32> {weft.received}) -> tensor<128x128xf32> {
  %r = weft.unary relu %x : tensor<128x128xf32> -> tensor<128x128xf32>
  return %r : tensor<128x128xf32>
}
