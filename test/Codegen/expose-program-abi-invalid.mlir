// RUN: weft-opt %s --weft-expose-program-abi -split-input-file -verify-diagnostics

// Tests that a symbolic input dimension is refused with a hint.
// expected-error @+1 {{input 'x' has no static shape ('tensor<?x3xf32>'); fix it with --input-shape}}
func.func @main(%x: tensor<?x3xf32> {weft.name = "x"}) -> tensor<?x3xf32> {
  return %x : tensor<?x3xf32>
}

// -----

// Tests that a module without the model function is refused.
// expected-error @+1 {{no function 'main' to compile}}
module {
  func.func @other(%x: tensor<3xf32>) -> tensor<3xf32> {
    return %x : tensor<3xf32>
  }
}
