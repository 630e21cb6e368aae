// RUN: weft-opt %s --weft-expose-program-abi -split-input-file -verify-diagnostics

// Tests that a symbolic input dimension is refused with a hint.
// expected-error @+1 {{input 'x' has no static shape ('tensor<?x3xf32>'); fix it with --input-shape}}
func.func @main(%x: tensor<?x3xf32> {weft.name = "x"}) -> tensor<?x3xf32> {
  return %x : tensor<?x3xf32>
}

// -----

// Tests that a module whose model function is ambiguous is refused, naming
// the candidates and the attribute that settles it.
// expected-error @+1 {{weft-expose-program-abi: the module has 2 public functions (@first, @second); name the model function with the module attribute weft.model = @name}}
module {
  func.func @first(%x: tensor<3xf32>) -> tensor<3xf32> {
    return %x : tensor<3xf32>
  }
  func.func @second(%x: tensor<3xf32>) -> tensor<3xf32> {
    return %x : tensor<3xf32>
  }
}

// -----

// Tests that a weft.model naming no function is refused.
// expected-error @+1 {{the module's weft.model names @missing, which is not a function with a body in the module}}
module attributes {weft.model = @missing} {
  func.func @other(%x: tensor<3xf32>) -> tensor<3xf32> {
    return %x : tensor<3xf32>
  }
}

// -----

// Tests that a module with only private functions has no model function.
// expected-error @+1 {{the module has no public function with a body (the model function)}}
module {
  func.func private @helper(%x: tensor<3xf32>) -> tensor<3xf32> {
    return %x : tensor<3xf32>
  }
}
