//===- weft-opt.cpp - Weft's optimizer driver
//------------------------------===//
//
// mlir-opt for the weft dialect: parses IR, runs weft and upstream passes and
// prints the result. Pass authors load their own passes and dialects with
// --load-pass-plugin and --load-dialect-plugin.
//
//===----------------------------------------------------------------------===//

#include "weft/Codegen/Passes.h"
#include "weft/Transforms/Passes.h"
#include "weft/Version.h"
#include "weft/WeftDialect.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"

int main(int argc, char **argv) {
  llvm::cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "weft-opt (Weft) " << WEFT_VERSION_STRING << "\n"
       << "  built on LLVM/MLIR " << LLVM_VERSION_STRING << "\n";
  });

  // Only the passes a weft pipeline uses: canonicalization and the generic
  // clean-ups, plus weft's own.
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  mlir::registerInlinerPass();
  mlir::registerSCCPPass();
  // What the CUDA pipeline uses upstream, for lit tests of its pieces.
  mlir::registerGpuKernelOutliningPass();
  mlir::registerGpuNVVMAttachTarget();
  mlir::registerGpuModuleToBinaryPass();
  mlir::registerConvertGpuOpsToNVVMOps();
  mlir::registerGpuToLLVMConversionPass();
  mlir::registerSCFToControlFlowPass();
  mlir::registerReconcileUnrealizedCastsPass();
  mlir::weft::registerWeftPasses();
  mlir::weft::registerWeftCodegenPasses();
  mlir::weft::registerCodegenPipelines();

  mlir::DialectRegistry registry;
  mlir::weft::registerCodegenDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Weft optimizer driver\n", registry));
}
