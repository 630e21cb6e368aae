//===- LinalgOps.cpp - Weft LinalgOps --------------------------------------*- C++ -*-===//
//
// (Filled in by the op family's author.)
//
//===----------------------------------------------------------------------===//

#include "weft/WeftOps.h"

using namespace mlir;
using namespace mlir::weft;
