//===- weft-translate.cpp - Import ONNX models into the weft dialect ------===//
//
// weft-translate --import-onnx MODEL [--input-shape=NAME=D0xD1x...]...
//                [-o OUT.mlir]
//
// Exit codes follow Weft's command-line contract: 0 success, 1 bad input or
// options, 70 internal error.
//
//===----------------------------------------------------------------------===//

#include "weft/Import/ONNX/Importer.h"
#include "weft/Version.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory category("weft-translate options");

static cl::opt<std::string> inputFilename(cl::Positional,
                                          cl::desc("<model.onnx|.onnxtext>"),
                                          cl::cat(category));
static cl::opt<bool> importOnnx(
    "import-onnx",
    cl::desc("Import an ONNX model (binary .onnx or textual .onnxtext)"),
    cl::cat(category));
static cl::list<std::string> inputShapes(
    "input-shape",
    cl::desc("Fix the shape of a graph input: NAME=D0xD1x... (repeatable)"),
    cl::value_desc("NAME=D0xD1x..."), cl::cat(category));
static cl::opt<std::string> outputFilename("o", cl::desc("Output file"),
                                           cl::value_desc("file"),
                                           cl::init("-"), cl::cat(category));
static cl::opt<int64_t> inlineLimit(
    "inline-limit",
    cl::desc("Largest initializer in bytes written into the IR; larger "
             "ones refer to the model's file (default 1024)"),
    cl::init(1024), cl::cat(category));
static cl::opt<bool> noOnnxChecker(
    "no-onnx-checker",
    cl::desc("Skip ONNX's checker and shape inference (opsets <= 17)"),
    cl::cat(category));

static constexpr int kExitBadInput = 1;

/// Prints diagnostics as "FILE: error: MESSAGE": importer messages already
/// name the node, and locations of ONNX nodes have no line numbers.
static void printDiagnostic(Diagnostic &diag) {
  std::string file;
  diag.getLocation()->walk([&](Location loc) {
    if (auto fileLoc = dyn_cast<FileLineColLoc>(loc)) {
      file = fileLoc.getFilename().str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  llvm::raw_ostream &os = llvm::errs();
  if (!file.empty())
    os << file << ": ";
  switch (diag.getSeverity()) {
  case DiagnosticSeverity::Error:
    llvm::WithColor(os, llvm::HighlightColor::Error) << "error: ";
    break;
  case DiagnosticSeverity::Warning:
    llvm::WithColor(os, llvm::HighlightColor::Warning) << "warning: ";
    break;
  default:
    llvm::WithColor(os, llvm::HighlightColor::Note) << "note: ";
    break;
  }
  os << diag << "\n";
  for (Diagnostic &note : diag.getNotes())
    os << "  note: " << note << "\n";
}

int main(int argc, char **argv) {
  llvm::InitLLVM y(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "weft-translate (Weft) " << WEFT_VERSION_STRING << "\n"
       << "  built on LLVM/MLIR " << LLVM_VERSION_STRING << "\n";
  });
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "Weft model importer\n\n"
      "Imports an ONNX model into the weft dialect.\n\n"
      "Examples:\n"
      "  weft-translate --import-onnx model.onnx -o model.mlir\n"
      "  weft-translate --import-onnx bert.onnx \\\n"
      "      --input-shape=input_ids=1x128 --input-shape=attention_mask=1x128\n"
      "  weft-translate --import-onnx test.onnxtext | weft-opt --canonicalize\n"
      "\nExit codes: 0 success, 1 bad model or options, 70 internal error.\n");

  auto fail = [](const Twine &msg) {
    llvm::WithColor::error(llvm::errs(), "weft-translate") << msg << "\n";
    return kExitBadInput;
  };
  if (!importOnnx)
    return fail("nothing to do: pass --import-onnx (see --help)");
  if (inputFilename.empty())
    return fail("no model given (see --help)");
  if (inlineLimit < 0)
    return fail("--inline-limit must not be negative");

  mlir::weft::OnnxImportOptions options;
  options.inlineLimitBytes = inlineLimit;
  options.runOnnxChecker = !noOnnxChecker;
  for (const std::string &spec : inputShapes) {
    std::string name, error;
    SmallVector<int64_t> shape;
    if (!mlir::weft::parseInputShapeSpec(spec, name, shape, error))
      return fail("--input-shape: " + error);
    if (!options.inputShapes.try_emplace(name, shape).second)
      return fail("--input-shape given twice for '" + name + "'");
  }

  DialectRegistry registry;
  mlir::weft::registerOnnxImportDialects(registry);
  MLIRContext context(registry);
  context.getDiagEngine().registerHandler(printDiagnostic);

  OwningOpRef<ModuleOp> module =
      mlir::weft::importOnnxFile(&context, inputFilename, options);
  if (!module)
    return kExitBadInput;

  // Open the output only now, so that a failed import leaves no file behind.
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(outputFilename, &error);
  if (!output)
    return fail("cannot open output '" + outputFilename + "': " + error);
  module->print(output->os());
  output->os() << "\n";
  output->os().flush();
  if (output->os().has_error())
    return fail("cannot write output '" + outputFilename + "'");
  output->keep();
  return 0;
}
