//===- Launch.h - Starting a package's device programs ----------*- C++ -*-===//
//
// What weft-run.cpp hands to Launch.cpp once a package checks out: its
// devices, and how to launch them (one program, or one MPI rank per device
// through mpirun), supervised with a timeout.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TOOLS_WEFT_RUN_LAUNCH_H
#define WEFT_TOOLS_WEFT_RUN_LAUNCH_H

#include "Manifest.h"

#include <cstdint>
#include <string>
#include <vector>

namespace weft::run {

/// Exit codes of Weft's command-line contract.
enum ExitCode {
  kExitOk = 0,
  kExitBadInput = 1,
  kExitMismatch = 2,
  kExitDeviceUnavailable = 3,
  kExitPeerFailed = 4,
  kExitInternal = 70,
};

/// weft-run's own options about launching.
struct LaunchOptions {
  /// Seconds before every process is stopped; 0: never.
  int64_t timeoutSeconds = 300;
  bool timeoutGiven = false;
  std::string hostfile;
  /// --mpirun-args, split like a shell would (quotes, backslashes).
  std::vector<std::string> mpirunArgs;
  bool dryRun = false;
  /// Seconds without a heartbeat after which a program counts as dead or
  /// stopped (--detect-after); 0: no failure detector.
  double detectAfterSeconds = 10;
};

/// Runs a single-device package's program (args[0]) and returns its exit
/// code; a timeout applies only when --timeout was given.
int runSingleDevice(const Package &package,
                    const std::vector<std::string> &args,
                    const LaunchOptions &options);

/// Launches every device of a mesh package as one rank of mpirun, each
/// with `driverArgs`, and returns the ranks' common exit code, or
/// kExitPeerFailed when a rank died, aborted or did not finish in time.
int runMesh(const Package &package, const std::vector<std::string> &driverArgs,
            const LaunchOptions &options);

/// Splits `text` into words as a POSIX shell would (no expansions); false
/// with `error` on an unterminated quote.
bool splitShellWords(const std::string &text, std::vector<std::string> &out,
                     std::string &error);

} // namespace weft::run

#endif // WEFT_TOOLS_WEFT_RUN_LAUNCH_H
