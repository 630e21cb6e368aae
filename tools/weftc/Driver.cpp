//===- Driver.cpp - What weftc's compile paths share ----------------------===//

#include "Driver.h"

#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;
using namespace mlir::weft;

/// Set when an error says "internal: ...": a bug in Weft, not in the input.
static bool sawInternalError = false;

int mlir::weft::refuse(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "weftc") << message << "\n";
  return kExitBadInput;
}

void mlir::weft::recordInternalError() { sawInternalError = true; }

int mlir::weft::stageFailure() {
  return sawInternalError ? kExitInternal : kExitBadInput;
}

llvm::raw_ostream &mlir::weft::infoStream(const WeftcOptions &options) {
  // Text for people goes where the plan does not.
  return options.outputPath == "-" ? llvm::errs() : llvm::outs();
}

int mlir::weft::writeFolder(
    StringRef outputPath, ArrayRef<std::pair<std::string, std::string>> files) {
  if (std::error_code ec = llvm::sys::fs::create_directories(outputPath))
    return refuse("cannot create " + outputPath + ": " + ec.message());
  std::string error;
  for (const auto &[name, text] : files) {
    SmallString<256> path(outputPath);
    llvm::sys::path::append(path, name);
    auto out = openOutputFile(path, &error);
    if (!out)
      return refuse("cannot open " + path.str() + ": " + error);
    out->os() << text;
    out->keep();
  }
  return 0;
}

int mlir::weft::writePlanOutput(StringRef outputPath, StringRef planJson) {
  SmallString<256> planPath(outputPath);
  if (outputPath != "-" && !outputPath.ends_with(".json")) {
    if (std::error_code ec = llvm::sys::fs::create_directories(planPath))
      return refuse("cannot create " + outputPath + ": " + ec.message());
    llvm::sys::path::append(planPath, "plan.json");
  }
  std::string error;
  auto out = openOutputFile(planPath, &error);
  if (!out)
    return refuse("cannot open " + planPath.str() + ": " + error);
  out->os() << planJson;
  out->keep();
  return 0;
}

int mlir::weft::writePlanOrPackage(const WeftcOptions &options,
                                   const PackageContents &contents,
                                   Location loc, StageClock &clock,
                                   const char *argv0) {
  if (options.emit == EmitKind::Plan)
    return writePlanOutput(options.outputPath, contents.planJson);
  RuntimeLocation runtime = findRuntime(argv0);
  if (failed(writePackage(contents, runtime, options.outputPath,
                          /*asLibrary=*/false, loc)))
    return kExitInternal;
  clock.lap("link");
  return 0;
}
