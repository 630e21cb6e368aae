//===- ModelFunction.cpp - Finding a module's model function --------------===//

#include "weft/ModelFunction.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::weft;

func::FuncOp mlir::weft::lookupModelFunction(ModuleOp module,
                                             std::string *whyNot) {
  auto fail = [&](std::string reason) {
    if (whyNot)
      *whyNot = std::move(reason);
    return func::FuncOp();
  };
  if (Attribute named = module->getAttr(kModelFunctionAttr)) {
    auto ref = dyn_cast<FlatSymbolRefAttr>(named);
    if (!ref)
      return fail(llvm::formatv("the module's {0} attribute is not a symbol "
                                "reference",
                                kModelFunctionAttr));
    auto func = module.lookupSymbol<func::FuncOp>(ref);
    if (!func || func.isExternal())
      return fail(llvm::formatv("the module's {0} names @{1}, which is not "
                                "a function with a body in the module",
                                kModelFunctionAttr, ref.getValue()));
    return func;
  }
  SmallVector<func::FuncOp> candidates;
  for (auto func : module.getOps<func::FuncOp>())
    if (func.isPublic() && !func.isExternal())
      candidates.push_back(func);
  if (candidates.size() == 1)
    return candidates.front();
  if (candidates.empty())
    return fail("the module has no public function with a body (the model "
                "function)");
  std::string names;
  for (func::FuncOp func : candidates)
    names += (names.empty() ? "@" : ", @") + func.getSymName().str();
  return fail(llvm::formatv("the module has {0} public functions ({1}); name "
                            "the model function with the module attribute "
                            "{2} = @name",
                            candidates.size(), names, kModelFunctionAttr));
}

func::FuncOp mlir::weft::getModelFunction(ModuleOp module, StringRef who) {
  std::string whyNot;
  func::FuncOp func = lookupModelFunction(module, &whyNot);
  if (!func)
    module.emitError() << who << ": " << whyNot;
  return func;
}

void mlir::weft::setModelFunction(func::FuncOp func) {
  auto module = func->getParentOfType<ModuleOp>();
  module->setAttr(kModelFunctionAttr,
                  FlatSymbolRefAttr::get(func.getSymNameAttr()));
}
