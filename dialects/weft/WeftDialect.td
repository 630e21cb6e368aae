//===- WeftDialect.td - Weft dialect definition ------------*- tablegen -*-===//
//
// The weft dialect: ONNX-level tensor math with one op per family of ONNX
// operators, shape inference on every op and weights kept out of the IR.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECT_WEFT_WEFTDIALECT_TD
#define WEFT_DIALECT_WEFT_WEFTDIALECT_TD

include "mlir/IR/OpBase.td"

def Weft_Dialect : Dialect {
  let name = "weft";
  let cppNamespace = "::mlir::weft";
  let summary = "Tensor math of ONNX models, ready to be sharded and compiled";
  let description = [{
    The weft dialect holds an imported ONNX model as a `func.func` over ranked
    tensors. Each op covers a family of ONNX operators (all elementwise unary
    math is `weft.unary`, every reduction is `weft.reduce`, ...), with
    attributes for the variants. Every op infers its result type from its
    operands and attributes; folding removes the run-time shape arithmetic that
    exporters emit once input shapes are static. Weights live in side files
    referenced by `weft.weight`, so the printed IR stays small.
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
  let hasConstantMaterializer = 1;
  let hasCanonicalizer = 1;
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    /// Registers the attributes (in ShardingOps.cpp, next to their storage).
    void registerAttributes();
  }];
}

#endif // WEFT_DIALECT_WEFT_WEFTDIALECT_TD
