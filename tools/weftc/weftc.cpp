//===- weftc.cpp - The Weft compiler driver -------------------------------===//
//
// weftc MODEL -o OUT/ [--input-shape=NAME=D0xD1x...]... [--target=cpu]
//       [--mcpu=CPU] [--mattr=FEATURES] [--emit=mlir|llvm|obj|exe|lib]
//
// Imports an ONNX model, lowers it to a device program, emits native code in
// process and links a package. Exit codes follow Weft's command-line
// contract: 0 success, 1 bad model or options, 70 internal error.
//
//===----------------------------------------------------------------------===//

#include "weft/Codegen/ObjectEmitter.h"
#include "weft/Codegen/Package.h"
#include "weft/Codegen/Passes.h"
#include "weft/Codegen/ProgramABI.h"
#include "weft/Codegen/WeightsFile.h"
#include "weft/Import/ONNX/Importer.h"
#include "weft/Version.h"
#include "weft/WeftDialect.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Timer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <chrono>

using namespace mlir;
using namespace mlir::weft;
namespace cl = llvm::cl;

static cl::OptionCategory category("weftc options");

static cl::opt<std::string> modelPath(cl::Positional, cl::desc("<model.onnx>"),
                                      cl::cat(category));
static cl::opt<std::string>
    outputPath("o",
               cl::desc("Output: the package folder for --emit=exe|lib, the "
                        "file for --emit=mlir|llvm|obj ('-' is stdout for "
                        "text)"),
               cl::value_desc("path"), cl::cat(category));
static cl::list<std::string> inputShapes(
    "input-shape",
    cl::desc("Fix the shape of a graph input: NAME=D0xD1x... (repeatable); "
             "every symbolic dimension must be fixed"),
    cl::value_desc("NAME=D0xD1x..."), cl::cat(category));
static cl::opt<std::string>
    targetName("target", cl::desc("Device kind to compile for (cpu)"),
               cl::init("cpu"), cl::cat(category));
static cl::opt<std::string>
    mcpu("mcpu",
         cl::desc("CPU to generate code for: an LLVM CPU name or 'native' "
                  "(default x86-64-v3: any x86-64 with AVX2 and FMA)"),
         cl::init("x86-64-v3"), cl::cat(category));
static cl::opt<std::string>
    mattr("mattr", cl::desc("Extra LLVM target features (+avx512f,-fma)"),
          cl::init(""), cl::cat(category));
enum class EmitKind { Mlir, Llvm, Obj, Exe, Lib };
static cl::opt<EmitKind> emitKind(
    "emit", cl::desc("What to produce"), cl::init(EmitKind::Exe),
    cl::values(clEnumValN(EmitKind::Mlir, "mlir",
                          "the device program after bufferization and memory "
                          "planning (MLIR)"),
               clEnumValN(EmitKind::Llvm, "llvm", "optimized LLVM IR"),
               clEnumValN(EmitKind::Obj, "obj", "the object file"),
               clEnumValN(EmitKind::Exe, "exe", "a package with executables"),
               clEnumValN(EmitKind::Lib, "lib",
                          "a package with a shared library and C headers")),
    cl::cat(category));
static cl::opt<bool> reportMemory(
    "report-memory",
    cl::desc("Print the memory plan: buffers, their bytes, the arena's "
             "planned peak"),
    cl::cat(category));
static cl::opt<bool> quiet("quiet", cl::desc("Print nothing but errors"),
                           cl::cat(category));

static constexpr int kExitBadInput = 1;
static constexpr int kExitInternal = 70;

/// Prints diagnostics as "FILE: error: MESSAGE" (ONNX locations have no
/// line numbers; messages name the node).
static void printDiagnostic(Diagnostic &diag) {
  llvm::raw_ostream &os = llvm::errs();
  os << "weftc: ";
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
  std::string where;
  diag.getLocation()->walk([&](Location loc) {
    if (auto named = dyn_cast<NameLoc>(loc)) {
      where = named.getName().str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  // Importer messages already start with the node; codegen ones do not.
  std::string message = diag.str();
  if (!where.empty() && !StringRef(message).starts_with("node '"))
    os << "node '" << where << "': ";
  os << message << "\n";
  for (Diagnostic &note : diag.getNotes())
    os << "  note: " << note << "\n";
}

static std::string dtypeName(Type t) {
  if (t.isUnsignedInteger(8))
    return "u8";
  if (t.isSignlessInteger(1))
    return "bool";
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

static std::string formatType(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << type;
  return s;
}

/// Reports every input dimension that is still symbolic; true if none.
static bool checkStaticInputs(func::FuncOp func) {
  std::string problems;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto type = dyn_cast<RankedTensorType>(func.getArgument(i).getType());
    if (!type || type.hasStaticShape())
      continue;
    std::string name = "input" + std::to_string(i);
    if (auto attr = func.getArgAttrOfType<StringAttr>(i, "weft.name"))
      name = attr.str();
    std::string dims;
    for (auto [d, size] : llvm::enumerate(type.getShape()))
      if (ShapedType::isDynamic(size))
        dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    problems += "  input '" + name + "' (" + formatType(type) +
                "): dimension(s) " + dims + " are symbolic\n";
  }
  if (problems.empty())
    return true;
  llvm::WithColor::error(llvm::errs(), "weftc")
      << "a package is compiled for fixed shapes; fix these with "
         "--input-shape=NAME=D0xD1x...:\n"
      << problems;
  return false;
}

static std::vector<TensorDescription> describe(func::FuncOp func,
                                               bool results) {
  std::vector<TensorDescription> out;
  unsigned n = results ? func.getNumResults() : func.getNumArguments();
  for (unsigned i = 0; i < n; ++i) {
    auto type = cast<RankedTensorType>(results ? func.getResultTypes()[i]
                                               : func.getArgumentTypes()[i]);
    StringAttr name = results
                          ? func.getResultAttrOfType<StringAttr>(i, "weft.name")
                          : func.getArgAttrOfType<StringAttr>(i, "weft.name");
    TensorDescription t;
    t.name =
        name ? name.str() : (results ? "output" : "input") + std::to_string(i);
    t.dtype = dtypeName(type.getElementType());
    t.shape.assign(type.getShape().begin(), type.getShape().end());
    out.push_back(t);
  }
  return out;
}

/// Times the stages for the closing summary.
struct StageClock {
  std::chrono::steady_clock::time_point start =
      std::chrono::steady_clock::now();
  std::string lines;
  void lap(StringRef stage) {
    auto now = std::chrono::steady_clock::now();
    double s = std::chrono::duration<double>(now - start).count();
    lines += llvm::formatv("  {0,-10} {1:f2} s\n", stage, s).str();
    start = now;
  }
};

int main(int argc, char **argv) {
  llvm::InitLLVM y(argc, argv);
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "weftc (Weft) " << WEFT_VERSION_STRING << "\n"
       << "  built on LLVM/MLIR " << LLVM_VERSION_STRING << "\n";
  });
  cl::HideUnrelatedOptions({&category, &cl::getGeneralCategory()});
  cl::ParseCommandLineOptions(
      argc, argv,
      "Weft compiler: ONNX model -> native package\n\n"
      "Examples:\n"
      "  weftc model.onnx -o out/                      # package for this "
      "model\n"
      "  weft-run out/ --inputs test_data_set_0 --check test_data_set_0\n"
      "  weftc bert.onnx -o out/ --input-shape=input_ids=1x128 \\\n"
      "        --input-shape=attention_mask=1x128       # fix symbolic dims\n"
      "  weftc model.onnx -o out/ --mcpu=native         # this machine's "
      "CPU\n"
      "  weftc model.onnx -o lib/ --emit=lib            # shared library + "
      "C header\n"
      "  weftc model.onnx -o model.ll --emit=llvm       # stop at LLVM IR\n"
      "\nExit codes: 0 success, 1 bad model or options, 70 internal "
      "error.\n");

  auto fail = [](const Twine &msg) {
    llvm::WithColor::error(llvm::errs(), "weftc") << msg << "\n";
    return kExitBadInput;
  };
  if (modelPath.empty())
    return fail("no model given (see --help)");
  if (outputPath.empty())
    return fail("no output given: -o OUT/ (see --help)");
  if (targetName != "cpu")
    return fail("--target=" + targetName +
                " is not available: this weftc compiles for 'cpu'");

  OnnxImportOptions importOptions;
  for (const std::string &spec : inputShapes) {
    std::string name, error;
    SmallVector<int64_t> shape;
    if (!parseInputShapeSpec(spec, name, shape, error))
      return fail("--input-shape: " + error);
    if (!importOptions.inputShapes.try_emplace(name, shape).second)
      return fail("--input-shape given twice for '" + name + "'");
  }
  TargetOptions targetOptions;
  targetOptions.cpu = mcpu;
  targetOptions.features = mattr;
  std::string error;
  std::unique_ptr<llvm::TargetMachine> machine =
      createTargetMachine(targetOptions, error);
  if (!machine)
    return fail("--mcpu/--mattr: " + error);

  DialectRegistry registry;
  registerOnnxImportDialects(registry);
  registerCodegenDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  context.getDiagEngine().registerHandler(printDiagnostic);
  StageClock clock;

  OwningOpRef<ModuleOp> module =
      importOnnxFile(&context, modelPath, importOptions);
  if (!module)
    return kExitBadInput;
  clock.lap("import");
  auto func = module->lookupSymbol<func::FuncOp>("main");
  if (!func)
    return fail("the imported model has no main function");
  if (!checkStaticInputs(func))
    return kExitBadInput;
  std::vector<TensorDescription> inputs = describe(func, false);

  // Shapes first: every result must be static once the inputs are.
  {
    PassManager pm(&context);
    pm.addPass(createCanonicalizerPass());
    if (failed(pm.run(*module)))
      return kExitBadInput;
    std::string dynamic;
    func.walk([&](Operation *op) {
      for (Value result : op->getResults())
        if (auto t = dyn_cast<RankedTensorType>(result.getType());
            t && !t.hasStaticShape()) {
          op->emitError() << "result shape " << t
                          << " depends on values known only at run time; "
                             "weftc compiles fixed shapes";
          dynamic = "yes";
          return WalkResult::interrupt();
        }
      return WalkResult::advance();
    });
    if (!dynamic.empty())
      return kExitBadInput;
  }
  std::vector<TensorDescription> outputs = describe(func, true);

  // Weights move into the device's file; their ops point there.
  std::string modelName = llvm::sys::path::filename(modelPath).str();
  WeightsFileLayout weights = layoutWeights(*module, "dev0.bin");

  CpuCodegenPipelineOptions pipelineOptions;
  pipelineOptions.reportMemory = reportMemory;
  {
    PassManager pm(&context);
    if (emitKind == EmitKind::Mlir)
      buildCpuBufferizationPipeline(pm, pipelineOptions);
    else
      buildCpuCodegenPipeline(pm, pipelineOptions);
    if (failed(pm.run(*module)))
      return kExitBadInput;
  }
  clock.lap("lower");
  int64_t arenaBytes = 0;
  if (auto attr = (*module)->getAttrOfType<IntegerAttr>(kArenaBytesAttr))
    arenaBytes = attr.getInt();

  if (emitKind == EmitKind::Mlir) {
    auto out = openOutputFile(outputPath, &error);
    if (!out)
      return fail("cannot open " + outputPath + ": " + error);
    module->print(out->os());
    out->os() << "\n";
    out->keep();
    return 0;
  }

  std::string signature = buildProgramSignature(*module, weights.bytes);
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateProgram(*module, llvmContext, *machine, signature);
  if (!llvmModule) {
    llvm::WithColor::error(llvm::errs(), "weftc")
        << "translation to LLVM IR failed; this is a bug in Weft, please "
           "report it with the model\n";
    return kExitInternal;
  }
  clock.lap("optimize");
  if (emitKind == EmitKind::Llvm) {
    auto out = openOutputFile(outputPath, &error);
    if (!out)
      return fail("cannot open " + outputPath + ": " + error);
    llvmModule->print(out->os(), nullptr);
    out->keep();
    return 0;
  }
  if (emitKind == EmitKind::Obj) {
    if (!emitObjectFile(*llvmModule, *machine, outputPath, error))
      return fail(error);
    return 0;
  }

  // A package: object and weights into a scratch folder, then link.
  SmallString<128> scratch;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("weftc", scratch))
    return fail("cannot create a temporary folder: " + ec.message());
  auto removeScratch = llvm::make_scope_exit(
      [&] { llvm::sys::fs::remove_directories(scratch); });
  SmallString<256> objectPath(scratch), weightsPath(scratch);
  llvm::sys::path::append(objectPath, "dev0.o");
  llvm::sys::path::append(weightsPath, "dev0.bin");
  if (!emitObjectFile(*llvmModule, *machine, objectPath, error))
    return fail(error);
  clock.lap("codegen");
  std::string sha256;
  if (failed(writeWeightsFile(weights, weightsPath, module->getLoc(), sha256)))
    return kExitBadInput;

  PackageContents contents;
  contents.modelName = modelName;
  contents.cpu = mcpu;
  contents.features = mattr;
  contents.inputs = inputs;
  contents.outputs = outputs;
  contents.objectPath = objectPath.str().str();
  contents.weightsPath = weightsPath.str().str();
  contents.weightsBytes = weights.bytes;
  contents.weightsSha256 = sha256;
  contents.arenaBytes = arenaBytes;
  contents.signature = signature;
  RuntimeLocation runtime = findRuntime(argv[0]);
  if (failed(writePackage(contents, runtime, outputPath,
                          emitKind == EmitKind::Lib, module->getLoc())))
    return kExitInternal;
  clock.lap("link");

  if (!quiet) {
    int64_t kernels = 0, loops = 0;
    StringRef ops = signature;
    while (!ops.empty()) {
      auto [line, rest] = ops.split('\n');
      ops = rest;
      if (line.starts_with("op "))
        (line.contains(" loops ") ? loops : kernels)++;
    }
    llvm::outs() << "weftc: compiled " << modelName << " for cpu (" << mcpu
                 << ") into " << outputPath << "\n"
                 << "  plan: 1 device; " << kernels << " kernel calls, "
                 << loops << " generated loop nests\n"
                 << "  memory: arena " << arenaBytes << " bytes (planned "
                 << "peak), weights " << weights.bytes << " bytes\n"
                 << clock.lines;
  }
  return 0;
}
