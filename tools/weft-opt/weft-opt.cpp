//===- weft-opt.cpp - Weft's optimizer driver -----------------------------===//
//
// mlir-opt for the weft dialect: parses IR, runs weft and upstream passes and
// prints the result. Pass authors load their own passes and dialects with
// --load-pass-plugin and --load-dialect-plugin. --help lists the usual
// options and the passes; --help-hidden lists all of LLVM's and MLIR's.
//
//===----------------------------------------------------------------------===//

#include "weft/Codegen/Passes.h"
#include "weft/Transforms/Passes.h"
#include "weft/Version.h"
#include "weft/WeftDialect.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Debug/Counter.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"

/// Hides every option but weft-opt's usual ones and the pass list, so that
/// --help is a page: LLVM's global options (code generation, the legacy
/// pass manager) and MLIR's debugging ones number in the hundreds. Hidden,
/// not ReallyHidden as cl::HideUnrelatedOptions would make them, so that
/// --help-hidden still lists everything. Options registered later (the
/// input file, -o) stay listed.
static void hideUnusualOptions() {
  static const llvm::StringSet<> listed = {
      // Running passes.
      "pass-pipeline", "dump-pass-pipeline", "list-passes", "show-dialects",
      "allow-unregistered-dialect", "load-pass-plugin", "load-dialect-plugin",
      // Tests.
      "split-input-file", "verify-diagnostics", "verify-each",
      // Looking at the IR on the way.
      "mlir-print-ir-before", "mlir-print-ir-after", "mlir-print-ir-before-all",
      "mlir-print-ir-after-all", "mlir-print-ir-after-failure",
      "mlir-print-debuginfo", "mlir-print-local-scope",
      "mlir-print-op-on-diagnostic", "mlir-disable-threading", "mlir-timing",
      "mlir-pass-pipeline-crash-reproducer", "emit-bytecode",
      // How to see more.
      "help", "help-hidden", "help-list", "help-list-hidden", "version"};
  for (auto &entry : llvm::cl::getRegisteredOptions()) {
    llvm::cl::Option *option = entry.second;
    // The pass list is the option without a name.
    if (option->ArgStr.empty() || listed.contains(option->ArgStr))
      continue;
    if (option->getOptionHiddenFlag() == llvm::cl::NotHidden)
      option->setHiddenFlag(llvm::cl::Hidden);
  }
}

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
  // What MlirOptMain registers before it parses (each only once, however
  // often called), so that hideUnusualOptions sees MLIR's options too.
  mlir::MlirOptMainConfig::registerCLOptions(registry);
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  mlir::tracing::DebugCounter::registerCLOptions();
  hideUnusualOptions();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Weft optimizer driver\n", registry));
}
