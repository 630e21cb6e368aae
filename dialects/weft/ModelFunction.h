//===- ModelFunction.h - Finding a module's model function ------*- C++ -*-===//
//
// Every pass that works on "the model" (planning, partitioning, cutting into
// stages, exposing the program ABI) finds its function here, never by a
// fixed name: the importer may name it anything (ImporterOptions::
// functionName), and a user's module for weft-opt may hold helpers beside it.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECT_WEFT_MODELFUNCTION_H
#define WEFT_DIALECT_WEFT_MODELFUNCTION_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace mlir::weft {

/// The module attribute that names the model function (a flat symbol
/// reference); the importer sets it, and weft's own module builders too.
inline constexpr llvm::StringLiteral kModelFunctionAttr = "weft.model";

/// The model function of `module`: the one `weft.model` names, else the only
/// public function with a body. Null when there is none or when several
/// public functions leave the choice open; `whyNot` (when given) then says
/// which, in a sentence that fits after "<pass>: ".
func::FuncOp lookupModelFunction(ModuleOp module,
                                 std::string *whyNot = nullptr);

/// As lookupModelFunction, emitting the reason as an error on the module
/// when there is no model function; `who` starts the message ("spmd
/// partition", "weft-auto-shard").
func::FuncOp getModelFunction(ModuleOp module, llvm::StringRef who);

/// Makes `func` the model function of its module (sets `weft.model`).
void setModelFunction(func::FuncOp func);

} // namespace mlir::weft

#endif // WEFT_DIALECT_WEFT_MODELFUNCTION_H
