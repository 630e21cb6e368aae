//===- Launch.h - Starting and supervising device programs ------*- C++ -*-===//
//
// Plain C++ over LLVMSupport (no MLIR, no runtime): how weft-run and
// weft-reshard start programs. One program runs as a child process; a job
// of several runs as one MPI rank per program under mpirun (found on PATH),
// with the flags a container, root and more ranks than cores need, a
// timeout, the failure detector's heartbeats, and OpenMPI's reports of
// dead or aborted ranks turned into one line and Weft's exit codes.
// docs/Launching.md describes what a user sees.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_LAUNCH_LAUNCH_H
#define WEFT_LAUNCH_LAUNCH_H

#include <cstdint>
#include <optional>
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

/// How to launch and supervise.
struct LaunchOptions {
  /// Seconds before every process is stopped; 0: never.
  int64_t timeoutSeconds = 300;
  bool timeoutGiven = false;
  std::string hostfile;
  /// --mpirun-args, split like a shell would (quotes, backslashes).
  std::vector<std::string> mpirunArgs;
  bool dryRun = false;
  /// Seconds without a heartbeat after which a program counts as dead or
  /// stopped (--detect-after); 0: no failure detector (for programs that
  /// send no heartbeats).
  double detectAfterSeconds = 10;
  /// The name the launcher's own messages start with.
  std::string toolName = "weft-run";
};

/// A job of several programs under mpirun: rank k runs `ranks[k]` (the
/// program, then its arguments), each in an app context of its own.
struct MpiJob {
  std::vector<std::vector<std::string>> ranks;
  /// The thread count every rank gets as OMP_NUM_THREADS (a --threads N
  /// of the programs); unset: ranks on this machine share its cores
  /// (WEFT_NUM_THREADS and OMP_NUM_THREADS), ranks on other hosts use the
  /// cores they are bound to.
  std::optional<std::string> threads;
  /// Shared libraries the programs need, named when a rank cannot start.
  std::vector<std::string> runtimeLibraries;
  /// Why mpirun is needed, for the error when it is missing ("a package of
  /// 4 devices runs one MPI process per device").
  std::string purpose;
};

/// Runs one program (`argv[0]`, then its arguments) and returns its exit
/// code; a timeout applies only when options.timeoutGiven. A program killed
/// by a signal is kExitInternal; `runtimeLibraries` are named when it exits
/// with 127 (the dynamic loader's code).
int runProgram(const std::vector<std::string> &argv,
               const std::vector<std::string> &runtimeLibraries,
               const LaunchOptions &options);

/// Launches `job` under mpirun and returns the ranks' common exit code, the
/// code of a rank that stopped the job (MPI_Abort with 1, 2, 3 or 70), or
/// kExitPeerFailed when a rank died, aborted otherwise or did not finish in
/// time (the others are stopped); kExitBadInput when mpirun is missing,
/// kExitDeviceUnavailable when it cannot start the ranks.
int runMpiJob(const MpiJob &job, const LaunchOptions &options);

/// The executable `name` in the folder of the running program (a tool's
/// MPI helper installed beside it, e.g. weft-reshard-rank); empty when it is
/// not there or not executable.
std::string findSiblingProgram(const std::string &name);

/// Splits `text` into words as a POSIX shell would (no expansions); false
/// with `error` on an unterminated quote.
bool splitShellWords(const std::string &text, std::vector<std::string> &out,
                     std::string &error);

} // namespace weft::run

#endif // WEFT_LAUNCH_LAUNCH_H
