//===- Simulation.cpp - The simulated timeline of a package --------------===//

#include "Simulation.h"
#include "Driver.h"

#include "weft/Plan/Timeline.h"

#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;
using namespace mlir::weft;
namespace plan = ::weft::plan;

ProgramSimulation::ProgramSimulation(int64_t microbatches, StringRef title) {
  for (plan::SimProgram *program : {&request, &stream}) {
    program->microbatchesPerRequest = std::max<int64_t>(microbatches, 1);
    program->title = title.str();
  }
  request.requests = 1;
  stream.requests = kSimulatedStreamRequests;
}

int mlir::weft::addRankToSimulation(ProgramSimulation &sim, ModuleOp program,
                                    const RankSimInfo &info,
                                    const plan::Cluster &cluster) {
  if (failed(appendRankSimOps(program, info, cluster, sim.ids, sim.request)) ||
      failed(appendRankSimOps(program, info, cluster, sim.ids, sim.stream))) {
    llvm::WithColor::error(llvm::errs(), "weftc")
        << "internal: rank " << info.rank
        << "'s program cannot be simulated; this is a bug in Weft\n";
    return kExitInternal;
  }
  return 0;
}

/// Reports the simulator's error as a bug.
static int simulationFailure(llvm::Error error) {
  llvm::WithColor::error(llvm::errs(), "weftc")
      << "internal: the simulation of the device programs failed: "
      << toString(std::move(error)) << "\n";
  return kExitInternal;
}

int mlir::weft::simulatePrograms(ProgramSimulation &sim,
                                 const plan::Cluster &cluster,
                                 SimulatedSummary &summary) {
  llvm::Expected<plan::SimResult> one = plan::simulate(cluster, sim.request);
  if (!one)
    return simulationFailure(one.takeError());
  llvm::Expected<plan::SimResult> many = plan::simulate(cluster, sim.stream);
  if (!many)
    return simulationFailure(many.takeError());
  summary.ran = true;
  summary.latencySeconds = one->makespanSeconds;
  summary.throughputPerSecond = many->throughputPerSecond;
  summary.streamRequests = sim.stream.requests;
  summary.bubbleFraction = one->bubbleFraction;
  summary.bottleneck = many->bottleneck.description;
  summary.computeIntervals = 0;
  for (const plan::TimelineTrack &track : one->timeline.tracks)
    for (const plan::TimelineEvent &event : track.events)
      summary.computeIntervals += event.kind == plan::TimelineKind::Compute;
  // One request's lines, but the throughput and what bounds it are the
  // stream's.
  summary.lines.clear();
  std::string described = plan::describeSimResult(*one);
  StringRef lines = described;
  while (!lines.empty()) {
    auto [line, rest] = lines.split('\n');
    lines = rest;
    if (line.starts_with("simulated throughput:"))
      summary.lines +=
          llvm::formatv("simulated throughput: {0:f1} requests/s "
                        "(a stream of {1} requests)\n",
                        summary.throughputPerSecond, summary.streamRequests)
              .str();
    else if (line.starts_with("bound by:"))
      summary.lines += "bound by: " + summary.bottleneck + "\n";
    else
      summary.lines += line.str() + "\n";
  }
  // The picture's header says what the summary says: one request's latency
  // and bubbles, the stream's throughput and what bounds it (the one-request
  // run alone would give 1 / latency and a bottleneck of its fill and
  // drain).
  one->timeline.notes = {
      llvm::formatv("simulated: latency {0}, {1:f1} requests/s (a stream of "
                    "{2} requests), mean bubble {3:f0}%",
                    plan::formatSeconds(summary.latencySeconds),
                    summary.throughputPerSecond, summary.streamRequests,
                    100 * summary.bubbleFraction)
          .str()};
  if (!summary.bottleneck.empty())
    one->timeline.notes.push_back("bound by " + summary.bottleneck);
  sim.requestResult = std::move(*one);
  return 0;
}

/// Writes `text` to `path`. Returns 0, or 1 after reporting why not.
static int writeFile(StringRef path, StringRef text) {
  std::string error;
  auto out = openOutputFile(path, &error);
  if (!out)
    return refuse("cannot open " + path + ": " + error);
  out->os() << text;
  out->keep();
  return 0;
}

int mlir::weft::writeTimelineFiles(const WeftcOptions &options,
                                   const ProgramSimulation &sim) {
  if (!sim.requestResult || options.outputPath == "-")
    return 0;
  SmallString<256> svgPath(options.outputPath), tracePath(options.outputPath);
  if (options.emit == EmitKind::Plan &&
      StringRef(options.outputPath).ends_with(".json")) {
    // -o F.json is one plan file: the pictures go beside it.
    StringRef stem = StringRef(options.outputPath).drop_back(5);
    svgPath = (stem + ".timeline.svg").str();
    tracePath = (stem + ".timeline.json").str();
  } else {
    llvm::sys::path::append(svgPath, "timeline.svg");
    llvm::sys::path::append(tracePath, "timeline.json");
  }
  const plan::Timeline &timeline = sim.requestResult->timeline;
  std::string svg, trace;
  llvm::raw_string_ostream svgStream(svg), traceStream(trace);
  plan::writeTimelineSvg(timeline, svgStream);
  plan::writeTimelineTrace(timeline, traceStream);
  if (int code = writeFile(svgPath, svg))
    return code;
  return writeFile(tracePath, trace);
}
