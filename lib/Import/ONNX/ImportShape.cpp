//===- ImportShape.cpp - Import of ONNX Shape ops -----------------------===//
//
// (Filled in by the op family's author.)
//
//===----------------------------------------------------------------------===//

#include "NodeImporter.h"

using namespace mlir;
using namespace mlir::weft;
using namespace mlir::weft::onnx_import;

void mlir::weft::onnx_import::registerShapeImporters(
    OpImportRegistry &registry) {}
