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
#include "llvm/Support/JSON.h"

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

/// One complete event ("ph": "X"). Keys go in the order json::Object
/// prints them (sorted), so that the streamed trace reads as a printed
/// json::Value would.
static void writeCompleteEvent(json::OStream &j, StringRef name,
                               StringRef category, double start,
                               double seconds, int64_t pid, StringRef kind,
                               const TimelineEvent &event) {
  j.object([&] {
    j.attributeObject("args", [&] {
      j.attribute("kind", kind);
      if (event.microbatch >= 0)
        j.attribute("microbatch", event.microbatch);
      if (event.stage >= 0)
        j.attribute("stage", event.stage);
    });
    j.attribute("cat", category);
    j.attribute("dur", seconds * 1e6);
    j.attribute("name", name);
    j.attribute("ph", "X");
    j.attribute("pid", pid);
    j.attribute("tid", pid);
    j.attribute("ts", start * 1e6);
  });
}

/// A metadata event ("ph": "M") of track `pid`.
static void writeMetadataEvent(json::OStream &j, StringRef name, int64_t pid,
                               StringRef argName, json::Value argValue) {
  j.object([&] {
    j.attributeObject("args", [&] { j.attribute(argName, argValue); });
    j.attribute("name", name);
    j.attribute("ph", "M");
    j.attribute("pid", pid);
    j.attribute("tid", pid);
  });
}

/// The op events of compute interval `event`: laid end to end from its
/// start, each as long as its share, scaled so that they fill the interval
/// exactly (the simulator may have stretched it, e.g. for shared cores).
static void writeOpEvents(json::OStream &j, const TimelineEvent &event,
                          int64_t pid) {
  double total = 0;
  for (const TimelineOp &op : *event.ops)
    total += std::max(op.seconds, 0.0);
  double length = event.end - event.start;
  double scale = total > 0 ? length / total : 0;
  double at = event.start;
  for (const TimelineOp &op : *event.ops) {
    double seconds = std::max(op.seconds, 0.0) * scale;
    writeCompleteEvent(j, op.name, "op", at, seconds, pid, op.kind, event);
    at = std::min(at + seconds, event.end);
  }
}

/// Streams the trace: 64 devices' op events are megabytes of JSON, which a
/// json::Value tree took a fifth of weftc's time to build and print.
static void streamTimelineTrace(const Timeline &timeline, raw_ostream &os,
                                unsigned indent) {
  json::OStream j(os, indent);
  // Every op event or none: a trace with some intervals' ops and not
  // others' would read as ops that did not run.
  int64_t opEvents = 0;
  for (const TimelineTrack &track : timeline.tracks)
    for (const TimelineEvent &event : track.events)
      if (event.ops)
        opEvents += static_cast<int64_t>(event.ops->size());
  bool writeOps = opEvents <= kMaxTraceOpEvents;
  j.object([&] {
    j.attribute("displayTimeUnit", "ms");
    j.attributeObject("otherData", [&] {
      j.attributeArray("notes", [&] {
        for (const std::string &note : timeline.notes)
          j.value(note);
      });
      if (opEvents > 0)
        j.attribute("op_events",
                    writeOps ? std::to_string(opEvents) + " (category \"op\")"
                             : "left out: " + std::to_string(opEvents) +
                                   " ops, more than " +
                                   std::to_string(kMaxTraceOpEvents));
      j.attribute("title", timeline.title);
    });
    j.attributeArray("traceEvents", [&] {
      // Metadata first: names and order of the tracks.
      for (size_t t = 0; t < timeline.tracks.size(); ++t) {
        const TimelineTrack &track = timeline.tracks[t];
        int64_t pid = tracePid(track, t);
        std::string process = track.name;
        if (track.stage >= 0)
          process += " (stage " + std::to_string(track.stage) + ")";
        writeMetadataEvent(j, "process_name", pid, "name", process);
        writeMetadataEvent(j, "process_sort_index", pid, "sort_index",
                           static_cast<int64_t>(t));
        writeMetadataEvent(j, "thread_name", pid, "name", track.name);
      }
      for (size_t t = 0; t < timeline.tracks.size(); ++t) {
        const TimelineTrack &track = timeline.tracks[t];
        int64_t pid = tracePid(track, t);
        for (const TimelineEvent &event : track.events) {
          StringRef kind = timelineKindName(event.kind);
          StringRef category = event.category.empty()
                                   ? kind
                                   : StringRef(event.category);
          writeCompleteEvent(j, event.name, category, event.start,
                             event.end - event.start, pid, kind, event);
          if (writeOps && event.ops)
            writeOpEvents(j, event, pid);
        }
      }
    });
  });
}

json::Value timelineTraceJson(const Timeline &timeline) {
  std::string text;
  raw_string_ostream os(text);
  streamTimelineTrace(timeline, os, 0);
  Expected<json::Value> parsed = json::parse(text);
  if (!parsed) {
    // The stream writes valid JSON; a failure here is a bug in it.
    consumeError(parsed.takeError());
    return json::Value(nullptr);
  }
  return std::move(*parsed);
}

void writeTimelineTrace(const Timeline &timeline, raw_ostream &os) {
  streamTimelineTrace(timeline, os, 2);
  os << "\n";
}

} // namespace weft::plan
