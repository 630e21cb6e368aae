//===- TimelineTrace.cpp - A timeline as Chrome trace events --------------===//
//
// The timeline's common helpers (kind names, units) and its Chrome
// trace-event JSON: complete events ("ph": "X") in microseconds, one
// process per device so that Perfetto shows one track per device in the
// timeline's order, as a merged trace of a real multi-rank run will.
//
//===----------------------------------------------------------------------===//

#include "weft/Plan/Timeline.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

using namespace llvm;

namespace weft::plan {

StringRef timelineKindName(TimelineKind kind) {
  switch (kind) {
  case TimelineKind::Compute:
    return "compute";
  case TimelineKind::Communication:
    return "communication";
  case TimelineKind::Wait:
    return "wait";
  }
  return "event";
}

double Timeline::endSeconds() const {
  double end = 0;
  for (const TimelineTrack &track : tracks)
    for (const TimelineEvent &event : track.events)
      end = std::max(end, event.end);
  return end;
}

/// `value` with three significant digits and `unit`.
static std::string withUnit(double value, const char *unit) {
  char text[48];
  std::snprintf(text, sizeof(text), "%.3g %s", value, unit);
  return text;
}

std::string formatSeconds(double seconds) {
  double magnitude = std::fabs(seconds);
  if (magnitude == 0 || !std::isfinite(seconds))
    return withUnit(seconds, "s");
  if (magnitude >= 1)
    return withUnit(seconds, "s");
  if (magnitude >= 1e-3)
    return withUnit(seconds * 1e3, "ms");
  if (magnitude >= 1e-6)
    return withUnit(seconds * 1e6, "us");
  return withUnit(seconds * 1e9, "ns");
}

std::string formatByteSize(double bytes) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (std::fabs(bytes) >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  return withUnit(bytes, units[unit]);
}

/// The trace's process id of track `index`: its device, else its place.
static int64_t tracePid(const TimelineTrack &track, size_t index) {
  return track.device >= 0 ? track.device : static_cast<int64_t>(index);
}

/// The op events of compute interval `event`: laid end to end from its
/// start, each as long as its share, scaled so that they fill the interval
/// exactly (the simulator may have stretched it, e.g. for shared cores).
static void appendOpEvents(const TimelineEvent &event, int64_t pid,
                           json::Array &events) {
  double total = 0;
  for (const TimelineOp &op : *event.ops)
    total += std::max(op.seconds, 0.0);
  double length = event.end - event.start;
  double scale = total > 0 ? length / total : 0;
  double at = event.start;
  for (const TimelineOp &op : *event.ops) {
    double seconds = std::max(op.seconds, 0.0) * scale;
    json::Object args{{"kind", op.kind}};
    if (event.stage >= 0)
      args["stage"] = event.stage;
    if (event.microbatch >= 0)
      args["microbatch"] = event.microbatch;
    events.push_back(json::Object{{"name", op.name},
                                  {"cat", "op"},
                                  {"ph", "X"},
                                  {"ts", at * 1e6},
                                  {"dur", seconds * 1e6},
                                  {"pid", pid},
                                  {"tid", pid},
                                  {"args", std::move(args)}});
    at = std::min(at + seconds, event.end);
  }
}

json::Value timelineTraceJson(const Timeline &timeline) {
  json::Array events;
  // Metadata first: names and order of the tracks.
  for (size_t t = 0; t < timeline.tracks.size(); ++t) {
    const TimelineTrack &track = timeline.tracks[t];
    int64_t pid = tracePid(track, t);
    std::string process = track.name;
    if (track.stage >= 0)
      process += " (stage " + std::to_string(track.stage) + ")";
    events.push_back(json::Object{{"name", "process_name"},
                                  {"ph", "M"},
                                  {"pid", pid},
                                  {"tid", pid},
                                  {"args", json::Object{{"name", process}}}});
    events.push_back(json::Object{
        {"name", "process_sort_index"},
        {"ph", "M"},
        {"pid", pid},
        {"tid", pid},
        {"args", json::Object{{"sort_index", static_cast<int64_t>(t)}}}});
    events.push_back(
        json::Object{{"name", "thread_name"},
                     {"ph", "M"},
                     {"pid", pid},
                     {"tid", pid},
                     {"args", json::Object{{"name", track.name}}}});
  }
  // Every op event or none: a trace with some intervals' ops and not
  // others' would read as ops that did not run.
  int64_t opEvents = 0;
  for (const TimelineTrack &track : timeline.tracks)
    for (const TimelineEvent &event : track.events)
      if (event.ops)
        opEvents += static_cast<int64_t>(event.ops->size());
  bool writeOps = opEvents <= kMaxTraceOpEvents;
  for (size_t t = 0; t < timeline.tracks.size(); ++t) {
    const TimelineTrack &track = timeline.tracks[t];
    int64_t pid = tracePid(track, t);
    for (const TimelineEvent &event : track.events) {
      json::Object args{{"kind", timelineKindName(event.kind)}};
      if (event.stage >= 0)
        args["stage"] = event.stage;
      if (event.microbatch >= 0)
        args["microbatch"] = event.microbatch;
      std::string category = event.category.empty()
                                 ? timelineKindName(event.kind).str()
                                 : event.category;
      events.push_back(json::Object{{"name", event.name},
                                    {"cat", category},
                                    {"ph", "X"},
                                    {"ts", event.start * 1e6},
                                    {"dur", (event.end - event.start) * 1e6},
                                    {"pid", pid},
                                    {"tid", pid},
                                    {"args", std::move(args)}});
      if (writeOps && event.ops)
        appendOpEvents(event, pid, events);
    }
  }
  json::Array notes;
  for (const std::string &note : timeline.notes)
    notes.push_back(note);
  json::Object other{{"title", timeline.title}, {"notes", std::move(notes)}};
  if (opEvents > 0)
    other["op_events"] =
        writeOps ? std::to_string(opEvents) + " (category \"op\")"
                 : "left out: " + std::to_string(opEvents) + " ops, more than " +
                       std::to_string(kMaxTraceOpEvents);
  return json::Object{{"traceEvents", std::move(events)},
                      {"displayTimeUnit", "ms"},
                      {"otherData", std::move(other)}};
}

void writeTimelineTrace(const Timeline &timeline, raw_ostream &os) {
  os << formatv("{0:2}", timelineTraceJson(timeline)) << "\n";
}

} // namespace weft::plan
