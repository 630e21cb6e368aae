//===- Driver.h - What weftc's compile paths share --------------*- C++ -*-===//
//
// The exit codes and error reporting of Weft's command-line contract, the
// clock of the closing summary and the writers of -o's folder and
// plan.json: shared by weftc.cpp and the files that import the model and
// compile a device program, a mesh or a pipeline.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TOOLS_WEFTC_DRIVER_H
#define WEFT_TOOLS_WEFTC_DRIVER_H

#include "Options.h"

#include "weft/Codegen/Package.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace mlir::weft {

inline constexpr int kExitBadInput = 1;
inline constexpr int kExitInternal = 70;

/// Reports `message` as "weftc: error: MESSAGE" and returns 1, the exit
/// code for a model or options refused.
int refuse(const llvm::Twine &message);

/// Notes that an error said "internal: ...": a bug in Weft, not in the
/// input (see stageFailure).
void recordInternalError();

/// The exit code after a failed stage: 70 when an internal error was
/// reported, else 1 (the model or options were refused).
int stageFailure();

/// Times the stages for the closing summary.
struct StageClock {
  std::chrono::steady_clock::time_point start =
      std::chrono::steady_clock::now();
  std::string lines;
  void lap(llvm::StringRef stage) {
    auto now = std::chrono::steady_clock::now();
    double s = std::chrono::duration<double>(now - start).count();
    lines += llvm::formatv("  {0,-10} {1:f2} s\n", stage, s).str();
    start = now;
  }
};

/// Where text for people goes: stderr when -o - writes the output (a plan)
/// to stdout, else stdout.
llvm::raw_ostream &infoStream(const WeftcOptions &options);

/// --emit=mlir for several devices: writes each (file name, text) into
/// the folder `outputPath` (-o). Returns 0, or 1 after reporting why it
/// could not.
int writeFolder(llvm::StringRef outputPath,
                llvm::ArrayRef<std::pair<std::string, std::string>> files);

/// --emit=plan: plan.json into the folder `outputPath` (-o) names, or into
/// the .json file (or stdout) it names. Returns 0, or 1 after reporting why
/// it could not.
int writePlanOutput(llvm::StringRef outputPath, llvm::StringRef planJson);

/// The end of a mesh or pipeline compile past --emit=mlir: plan.json alone
/// for --emit=plan, else the package (the "link" stage of `clock`).
/// Returns 0, or the exit code of a failure it reported.
int writePlanOrPackage(const WeftcOptions &options,
                       const PackageContents &contents, Location loc,
                       StageClock &clock, const char *argv0);

} // namespace mlir::weft

#endif // WEFT_TOOLS_WEFTC_DRIVER_H
