//===- MergeProfile.h - One trace of every rank of a run --------*- C++ -*-===//
//
// After a multi-device run with --profile PATH, each rank has written its
// own Chrome trace (PATH with .rank<k> before the extension). This puts them
// into PATH as one trace, a process per rank on rank 0's clock, and
// draws it as measured.svg beside PATH, in the style of weftc's simulated
// timeline.svg (docs/Simulator.md).
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TOOLS_WEFT_RUN_MERGEPROFILE_H
#define WEFT_TOOLS_WEFT_RUN_MERGEPROFILE_H

#include "Manifest.h"

#include <string>
#include <vector>

namespace weft::run {

/// The --profile path among the driver's arguments ("--profile PATH" or
/// "--profile=PATH"), or empty.
std::string profilePathOf(const std::vector<std::string> &driverArgs);

/// The path rank `rank` writes its trace to: `path` with ".rank<rank>"
/// before its extension (as the runtime's driver names it).
std::string rankedProfilePath(const std::string &path, int64_t rank);

/// Merges the ranks' traces of `package` into `path` and writes
/// measured.svg in the same folder. Each rank's trace records its origin on
/// its steady clock and, from the runtime's ping-pong with rank 0 before
/// and after the runs, rank 0's clock against its own: events go onto rank
/// 0's clock with the offset interpolated between the two estimates, so
/// ranks on several hosts line up. Traces without the estimates are taken
/// to share one host's clock (the merged trace says which it assumed).
/// Returns 0, or 1 after saying which trace is missing or unreadable (the
/// per-rank traces stay).
int mergeRankProfiles(const Package &package, const std::string &path);

} // namespace weft::run

#endif // WEFT_TOOLS_WEFT_RUN_MERGEPROFILE_H
