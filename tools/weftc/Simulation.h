//===- Simulation.h - The simulated timeline of a package -------*- C++ -*-===//
//
// Simulates the device programs of a pipeline or a mesh with the event
// simulator (docs/Simulator.md, "In weftc"): one request for the latency,
// bubbles and the timeline pictures, a stream of requests for the
// throughput.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TOOLS_WEFTC_SIMULATION_H
#define WEFT_TOOLS_WEFTC_SIMULATION_H

#include "Options.h"
#include "PipelineReport.h"

#include "weft/Plan/Simulator.h"
#include "weft/Transforms/SimulateProgram.h"

#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>

namespace mlir::weft {

/// The requests of the simulated stream that gives plan.json's throughput.
inline constexpr int64_t kSimulatedStreamRequests = 8;

/// The simulator's programs of a package, filled rank by rank.
struct ProgramSimulation {
  /// One request, and a stream of kSimulatedStreamRequests.
  ::weft::plan::SimProgram request, stream;
  SimCollectiveIds ids;
  /// One request's result, for the timeline pictures.
  std::optional<::weft::plan::SimResult> requestResult;

  /// Empty programs of `microbatches` microbatches per request.
  ProgramSimulation(int64_t microbatches, llvm::StringRef title);
};

/// Adds rank `info.rank`'s program to both programs. Returns 0, or
/// kExitInternal after reporting a program the adapter cannot read (a bug).
int addRankToSimulation(ProgramSimulation &sim, ModuleOp program,
                        const RankSimInfo &info,
                        const ::weft::plan::Cluster &cluster);

/// Simulates both programs and fills `summary`. Returns 0, or kExitInternal
/// after reporting the simulator's error ("internal: ...": a deadlock or
/// an unpaired transfer is a bug in the programs).
int simulatePrograms(ProgramSimulation &sim,
                     const ::weft::plan::Cluster &cluster,
                     SimulatedSummary &summary);

/// Writes one request's timeline.svg and timeline.json next to plan.json:
/// into the output folder (a package, --emit=mlir, --emit=plan -o DIR), or,
/// for --emit=plan -o F.json, as F.timeline.svg and F.timeline.json; none
/// for -o -. Returns 0, or 1 after reporting a file it cannot write.
int writeTimelineFiles(const WeftcOptions &options,
                       const ProgramSimulation &sim);

} // namespace mlir::weft

#endif // WEFT_TOOLS_WEFTC_SIMULATION_H
