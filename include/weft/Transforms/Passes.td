//===- Passes.td - Weft transformation passes --------------*- tablegen -*-===//
//
// Declares weft's passes. Every command-line name starts with `weft-`.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TRANSFORMS_PASSES_TD
#define WEFT_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def WeftPrintSummary : Pass<"weft-print-summary", "ModuleOp"> {
  let summary = "Print a summary of each function: inputs, outputs, ops, weights";
  let description = [{
    Prints, for every `func.func` of the module, its inputs and outputs with
    their types, how many ops of each kind it holds (weft ops by variant, such
    as `weft.unary(relu)`), the number of weights and their bytes, and the
    number of constants left in the IR. It does not change the IR. The summary
    goes to stdout, or to the file named by `output`.

    ```
    $ weft-opt --canonicalize --weft-print-summary -o /dev/null model.mlir
    func @main
      input  %input : tensor<1x784xf32>
      output #0     : tensor<1x10xf32>
      ops 5: weft.matmul 3, weft.binary(add) 3, weft.unary(relu) 2
      weights 6 (0.9 MB), constants 0
    ```
  }];
  let options = [
    Option<"output", "output", "std::string", /*default=*/"\"-\"",
           "Where to write the summary ('-' for stdout)">,
  ];
}

#endif // WEFT_TRANSFORMS_PASSES_TD
