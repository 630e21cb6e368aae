//===- ImportLinalg.cpp - Import of ONNX MatMul, Gemm and Einsum ----------===//
//
// Maps the ONNX matrix products to weft.matmul and Einsum to weft.einsum.
//
//===----------------------------------------------------------------------===//

#include "NodeImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

#include <charconv>
#include <cstdlib>

using namespace mlir;
using namespace mlir::weft;
using namespace mlir::weft::onnx_import;

/// MatMul (opsets 1, 9, 13): numpy matmul.
static LogicalResult importMatMul(NodeImporter &node) {
  if (failed(node.checkKnownAttrs({})) || failed(node.requireInputs(2)))
    return failure();
  FailureOr<MatmulOp> op =
      node.buildChecked<MatmulOp>({node.getInput(0), node.getInput(1)}, {});
  if (failed(op))
    return failure();
  node.setOutput(0, op->getResult());
  return success();
}

/// Gemm (opsets 1, 6, 7, 9, 11, 13): alpha * op(A) @ op(B) + beta * C on
/// matrices. C is optional from opset 11; before opset 7 the `broadcast`
/// attribute allows C to broadcast (unidirectional broadcasting is always
/// allowed from 7, and weft's bias always broadcasts).
static LogicalResult importGemm(NodeImporter &node) {
  SmallVector<StringRef> known = {"alpha", "beta", "transA", "transB"};
  if (node.getOpset() < 7)
    known.push_back("broadcast");
  if (failed(node.checkKnownAttrs(known)) || failed(node.requireInputs(2)))
    return failure();
  FailureOr<double> alpha = node.getFloat("alpha", 1.0);
  FailureOr<double> beta = node.getFloat("beta", 1.0);
  FailureOr<int64_t> transA = node.getInt("transA", 0);
  FailureOr<int64_t> transB = node.getInt("transB", 0);
  FailureOr<int64_t> broadcast = node.getInt("broadcast", 0);
  if (failed(alpha) || failed(beta) || failed(transA) || failed(transB) ||
      failed(broadcast))
    return failure();
  bool hasC = node.hasInput(2);
  if (!hasC && node.getOpset() < 11)
    return node.emitError() << "input C is required before opset 11";
  for (unsigned i = 0; i < 2; ++i)
    if (node.getInputType(i).getRank() != 2)
      return node.emitError()
             << "input " << (i == 0 ? "A" : "B") << " must be a matrix, got "
             << node.getInputType(i);
  if (hasC) {
    RankedTensorType cType = node.getInputType(2);
    if (cType.getRank() > 2)
      return node.emitError() << "input C must have rank <= 2, got " << cType;
    if (node.getOpset() < 7 && *broadcast == 0 && cType.getRank() != 2)
      return node.emitError() << "input C must be a matrix when broadcast "
                                 "is 0, got "
                              << cType;
  }

  Builder &b = node.getBuilder();
  SmallVector<NamedAttribute> attrs;
  if (*transA)
    attrs.push_back(b.getNamedAttr("transpose_a", b.getUnitAttr()));
  if (*transB)
    attrs.push_back(b.getNamedAttr("transpose_b", b.getUnitAttr()));
  if (*alpha != 1.0)
    attrs.push_back(b.getNamedAttr(
        "alpha", b.getF64FloatAttr(toShortestFloatDecimal(*alpha))));
  if (hasC && *beta != 1.0)
    attrs.push_back(b.getNamedAttr(
        "beta", b.getF64FloatAttr(toShortestFloatDecimal(*beta))));
  SmallVector<Value> operands = {node.getInput(0), node.getInput(1)};
  if (hasC)
    operands.push_back(node.getInput(2));
  FailureOr<MatmulOp> op = node.buildChecked<MatmulOp>(operands, attrs);
  if (failed(op))
    return failure();
  node.setOutput(0, op->getResult());
  return success();
}

/// Einsum (opset 12): the equation is validated by weft.einsum and stored in
/// explicit form.
static LogicalResult importEinsum(NodeImporter &node) {
  if (failed(node.checkKnownAttrs({"equation"})))
    return failure();
  FailureOr<std::string> equation = node.getString("equation");
  if (failed(equation))
    return failure();
  SmallVector<Value> operands;
  SmallVector<int64_t> ranks;
  if (failed(node.requireInputs(node.getNumInputs())))
    return failure();
  for (unsigned i = 0, e = node.getNumInputs(); i < e; ++i) {
    operands.push_back(node.getInput(i));
    ranks.push_back(node.getInputType(i).getRank());
  }
  // A bad equation keeps its text so that the op's diagnostic names it.
  std::string text = *equation;
  if (FailureOr<EinsumOp::Equation> parsed =
          EinsumOp::parseEquation(text, ranks, std::nullopt);
      succeeded(parsed))
    text = EinsumOp::printEquation(*parsed);
  Builder &b = node.getBuilder();
  FailureOr<EinsumOp> op = node.buildChecked<EinsumOp>(
      operands, {b.getNamedAttr("equation", b.getStringAttr(text))});
  if (failed(op))
    return failure();
  node.setOutput(0, op->getResult());
  return success();
}

void mlir::weft::onnx_import::registerLinalgImporters(
    OpImportRegistry &registry) {
  registry.add("MatMul", {1, 2, 2, 1, 1, importMatMul});
  registry.add("Gemm", {1, 2, 3, 1, 1, importGemm});
  registry.add("Einsum", {12, 1, -1, 1, 1, importEinsum});
}
