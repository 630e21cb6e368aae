//===- Timeline.h - Per-device timelines and their pictures -----*- C++ -*-===//
//
// Plain C++ (no IR): what each device of a run did and when, as intervals of
// compute, communication and waiting, whether simulated (Simulator.h) or,
// later, measured by a profiled run; and its two pictures: an SVG Gantt
// chart (one row per device) and Chrome trace-event JSON, which Perfetto and
// chrome://tracing open. docs/Simulator.md says how to read them.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_PLAN_TIMELINE_H
#define WEFT_PLAN_TIMELINE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace weft::plan {

/// What a device is doing during an interval. Time no interval covers is
/// idle.
enum class TimelineKind {
  /// Running its own kernels.
  Compute,
  /// Moving data with its peers (a collective or a point-to-point
  /// transfer), once every peer is there.
  Communication,
  /// Blocked in a collective or transfer whose peers have not arrived.
  Wait,
};

/// "compute", "communication" or "wait".
llvm::StringRef timelineKindName(TimelineKind kind);

/// One op inside a compute interval: what a profiled run records per op, so
/// that predicted and measured traces name the same things.
struct TimelineOp {
  /// The op's name in a profile: its ONNX node's name (or its kind when
  /// the node has none), as the runtime's profile names it.
  std::string name;
  /// What kind of op, e.g. "conv" or "matmul" (the trace event's args.kind).
  std::string kind;
  /// Its share of the interval, >= 0; the ops of an interval sum to it.
  double seconds = 0;
};

/// The ops of one compute interval, shared by the intervals of every
/// microbatch that runs them.
using TimelineOps = std::shared_ptr<const std::vector<TimelineOp>>;

/// One interval of one device.
struct TimelineEvent {
  /// Seconds from the timeline's origin; start <= end.
  double start = 0, end = 0;
  TimelineKind kind = TimelineKind::Compute;
  /// What ran, e.g. "stage 1" or "all-reduce 4 MB"; the trace event's name.
  std::string name;
  /// The trace category: "compute", "collective", "transfer" or "wait"
  /// (timelineKindName(kind) when empty).
  std::string category;
  /// The pipeline stage and microbatch the interval belongs to; -1 for none.
  int stage = -1;
  int64_t microbatch = -1;
  /// Compute only, optional: the ops the interval runs, in order. The trace
  /// writes them as events of category "op" nested in the interval; the
  /// SVG draws the interval as one bar.
  TimelineOps ops;
};

/// One device's row.
struct TimelineTrack {
  /// The device's name, e.g. "gpu3".
  std::string name;
  /// The cluster device index (the trace's pid and tid); -1 when unknown,
  /// and the track's position is used instead.
  int device = -1;
  /// The stage the device serves (the rows are grouped by it when there are
  /// many); -1 for none.
  int stage = -1;
  /// Ordered by start, not overlapping.
  std::vector<TimelineEvent> events;
};

/// The rows of a run and a few lines that summarize it.
struct Timeline {
  std::string title;
  /// Shown under the title, e.g. "latency 12.3 ms, 81.2 requests/s".
  std::vector<std::string> notes;
  std::vector<TimelineTrack> tracks;

  /// The latest end of any event (0 when there is none).
  double endSeconds() const;
};

/// A duration with a readable unit and three significant digits:
/// "12.3 ms", "850 us", "2.5 s", "0 s".
std::string formatSeconds(double seconds);

/// A byte count with a binary unit and three significant digits: "512 B",
/// "4 MiB", "1.5 GiB" (StrategyGraph.h's formatBytes has two decimals).
std::string formatByteSize(double bytes);

//===----------------------------------------------------------------------===//
// SVG Gantt chart
//===----------------------------------------------------------------------===//

/// How to draw the chart.
struct SvgOptions {
  /// The picture's width in pixels.
  double width = 1200;
  /// With more tracks than this, rows are grouped by stage under a header
  /// per stage, and drawn thinner.
  int groupThreshold = 16;
};

/// Where the chart puts things, so that tests (and tools that annotate the
/// picture) can tell which pixel a time maps to.
struct SvgLayout {
  double width = 0, height = 0;
  /// The plot area's horizontal extent; time 0 is at plotLeft.
  double plotLeft = 0, plotRight = 0;
  /// Pixels per second of the time axis.
  double pixelsPerSecond = 0;
  /// The time axis runs from 0 to this (a round number at or after the
  /// timeline's end).
  double axisEndSeconds = 0;
  /// The unit the axis is labelled in ("s", "ms", "us", "ns") and seconds
  /// per unit.
  std::string unit;
  double unitSeconds = 1;
  /// The spacing of the axis ticks, in seconds.
  double tickSeconds = 0;
  double rowHeight = 0;
  /// True when rows are grouped by stage.
  bool grouped = false;
  /// Per track (in Timeline::tracks order): the top of its row.
  std::vector<double> rowTop;
  /// The top of the first row and the bottom of the last (the time axis
  /// is drawn there).
  double plotTop = 0, plotBottom = 0;
  /// The top of the legend, under the axis.
  double legendTop = 0;

  /// The x coordinate of a time.
  double x(double seconds) const {
    return plotLeft + seconds * pixelsPerSecond;
  }
};

/// The layout renderTimelineSvg uses for `timeline`.
SvgLayout layoutTimelineSvg(const Timeline &timeline,
                            const SvgOptions &options = {});

/// Writes `timeline` as a standalone SVG Gantt chart: one row per track,
/// compute coloured by stage and labelled by microbatch ("m3") where the
/// bar is wide enough, collectives dark grey, transfers mid grey, waiting
/// hatched red, idle left empty; a time axis with units below the rows and
/// a legend under it. Every compute bar is a `<rect class="compute">` whose
/// id is "t<track>e<event>"; every bar has a `<title>` tooltip. The root
/// element carries the scale as `data-plot-left` and
/// `data-pixels-per-second`.
void writeTimelineSvg(const Timeline &timeline, llvm::raw_ostream &os,
                      const SvgOptions &options = {});

//===----------------------------------------------------------------------===//
// Chrome trace events
//===----------------------------------------------------------------------===//

/// The timeline in Chrome's trace-event format: `{"traceEvents": [...],
/// "displayTimeUnit": "ms", "otherData": {...}}` with one complete event
/// (`"ph": "X"`, ts and dur in microseconds) per interval, named by the
/// event's name, its category as `cat` and stage/microbatch in `args`; pid
/// and tid are the track's device. Metadata events name each process and
/// thread after the device (and its stage) and keep the tracks in order.
/// A compute interval's ops (TimelineEvent::ops) follow it as events of
/// category "op", laid end to end inside it, named as a profiled run names
/// its ops (args: kind, stage, microbatch), up to kMaxTraceOpEvents of them
/// in all; past that no op events are written and otherData.op_events says
/// why.
llvm::json::Value timelineTraceJson(const Timeline &timeline);

/// The most op events timelineTraceJson writes (about 40 MB of JSON).
inline constexpr int64_t kMaxTraceOpEvents = 250'000;

/// Writes timelineTraceJson(timeline), indented.
void writeTimelineTrace(const Timeline &timeline, llvm::raw_ostream &os);

} // namespace weft::plan

#endif // WEFT_PLAN_TIMELINE_H
