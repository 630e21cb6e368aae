//===- ElementwiseOps.cpp - Weft ElementwiseOps --------------------------------------*- C++ -*-===//
//
// (Filled in by the op family's author.)
//
//===----------------------------------------------------------------------===//

#include "weft/WeftOps.h"

using namespace mlir;
using namespace mlir::weft;
