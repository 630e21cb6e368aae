//===- Launch.h - Starting a package's device programs ----------*- C++ -*-===//
//
// What weft-run.cpp hands to Launch.cpp once a package checks out: its
// devices, and how to launch them (one program, or one MPI rank per device
// through mpirun), supervised with a timeout. The launching itself is
// lib/Launch's, which weft-reshard shares.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TOOLS_WEFT_RUN_LAUNCH_H
#define WEFT_TOOLS_WEFT_RUN_LAUNCH_H

#include "Manifest.h"

#include "weft/Launch/Launch.h"

#include <string>
#include <vector>

namespace weft::run {

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

} // namespace weft::run

#endif // WEFT_TOOLS_WEFT_RUN_LAUNCH_H
