//===- MergeProfile.cpp - One trace of every rank of a run ----------------===//

#include "MergeProfile.h"

#include "weft/Plan/Timeline.h"
#include "weft/Support/JsonFile.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <limits>
#include <optional>

using namespace weft::run;
using llvm::StringRef;
namespace json = llvm::json;
namespace plan = ::weft::plan;

std::string
weft::run::profilePathOf(const std::vector<std::string> &driverArgs) {
  for (size_t i = 0; i < driverArgs.size(); ++i) {
    StringRef arg = driverArgs[i];
    if (arg == "--profile" && i + 1 < driverArgs.size())
      return driverArgs[i + 1];
    if (arg.consume_front("--profile="))
      return arg.str();
  }
  return "";
}

std::string weft::run::rankedProfilePath(const std::string &path,
                                         int64_t rank) {
  // The runtime's rankedPath: ".rank<k>" before the extension, where a dot
  // that starts the file name is not one.
  size_t slash = path.rfind('/');
  size_t dot = path.rfind('.');
  std::string tag = ".rank" + std::to_string(rank);
  size_t nameStart = slash == std::string::npos ? 0 : slash + 1;
  if (dot == std::string::npos || dot <= nameStart)
    return path + tag;
  return path.substr(0, dot) + tag + path.substr(dot);
}

static int failMerge(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "weft-run")
      << message << " (the per-rank traces are kept)\n";
  return 1;
}

namespace {
/// One rank's trace: its op events and where its times start.
struct RankTrace {
  json::Array events;
  double originUs = 0;
};
} // namespace

static std::optional<RankTrace> readRankTrace(const std::string &path,
                                              std::string &error) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    error = "cannot read " + path + ": " + buffer.getError().message();
    return std::nullopt;
  }
  llvm::Expected<json::Value> parsed = ::weft::parseJson((*buffer)->getBuffer());
  if (!parsed) {
    error = path + ": " + llvm::toString(parsed.takeError());
    return std::nullopt;
  }
  json::Object *root = parsed->getAsObject();
  json::Array *events = root ? root->getArray("traceEvents") : nullptr;
  json::Object *other = root ? root->getObject("otherData") : nullptr;
  std::optional<double> origin =
      other ? other->getNumber("origin_us") : std::nullopt;
  if (!events || !origin) {
    error = path + ": not a trace of this version of the runtime (no "
                   "traceEvents or no otherData.origin_us)";
    return std::nullopt;
  }
  RankTrace trace;
  trace.events = std::move(*events);
  trace.originUs = *origin;
  return trace;
}

/// The measured timeline's kind and category of a trace category (the
/// runtime's, which the simulated timeline.json shares): collectives and
/// transfers are communication, ops ("op") compute.
static std::pair<plan::TimelineKind, std::string>
classify(StringRef category) {
  if (category == "transfer" || category == "collective")
    return {plan::TimelineKind::Communication, category.str()};
  return {plan::TimelineKind::Compute, "compute"};
}

/// The stage (mesh index) of every rank of a version 2 manifest; 0 for all
/// ranks of a version 1 one.
static std::vector<int> stageOfRanks(const Package &package) {
  std::vector<int> stage(package.devices.size(), 0);
  for (size_t m = 0; m < package.meshes.size(); ++m)
    for (int64_t device : package.meshes[m].devices)
      if (device >= 0 && static_cast<size_t>(device) < stage.size())
        stage[device] = static_cast<int>(m);
  return stage;
}

static int writeText(const std::string &path, StringRef text) {
  std::error_code code;
  llvm::raw_fd_ostream out(path, code);
  if (code)
    return failMerge("cannot write " + path + ": " + code.message());
  out << text;
  out.close();
  if (out.has_error())
    return failMerge("cannot write " + path + ": " + out.error().message());
  return 0;
}

int weft::run::mergeRankProfiles(const Package &package,
                                 const std::string &path) {
  std::vector<RankTrace> ranks;
  std::string error;
  for (size_t k = 0; k < package.devices.size(); ++k) {
    std::optional<RankTrace> trace =
        readRankTrace(rankedProfilePath(path, k), error);
    if (!trace)
      return failMerge("cannot merge the profile: " + error);
    ranks.push_back(std::move(*trace));
  }
  double originUs = std::numeric_limits<double>::infinity();
  for (const RankTrace &rank : ranks)
    originUs = std::min(originUs, rank.originUs);
  std::vector<int> stages = stageOfRanks(package);

  json::Array merged;
  plan::Timeline timeline;
  timeline.title = "measured: " + std::to_string(ranks.size()) +
                   " ranks (weft-run --profile)";
  timeline.notes.push_back("every rank's ops on the steady clock the ranks "
                           "of one host share; run events left out");
  for (size_t k = 0; k < ranks.size(); ++k) {
    int64_t pid = static_cast<int64_t>(k);
    std::string name = "rank " + std::to_string(k) + " (stage " +
                       std::to_string(stages[k]) + ")";
    merged.push_back(json::Object{
        {"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 0},
        {"args", json::Object{{"name", name}}}});
    plan::TimelineTrack track;
    track.name = "rank " + std::to_string(k);
    track.device = static_cast<int>(k);
    track.stage = stages[k];
    double shiftUs = ranks[k].originUs - originUs;
    for (json::Value &value : ranks[k].events) {
      json::Object *event = value.getAsObject();
      if (!event || event->getString("ph") != StringRef("X"))
        continue;
      std::optional<double> ts = event->getNumber("ts");
      std::optional<double> dur = event->getNumber("dur");
      if (!ts || !dur)
        continue;
      (*event)["ts"] = *ts + shiftUs;
      (*event)["pid"] = pid;
      StringRef category = event->getString("cat").value_or("");
      std::optional<StringRef> opName = event->getString("name");
      if (category != "run") {
        auto [kind, timelineCategory] = classify(category);
        plan::TimelineEvent interval;
        interval.start = (*ts + shiftUs) * 1e-6;
        interval.end = interval.start + *dur * 1e-6;
        interval.kind = kind;
        interval.category = timelineCategory;
        interval.name = opName ? opName->str() : category.str();
        interval.stage = stages[k];
        track.events.push_back(std::move(interval));
      }
      merged.push_back(std::move(value));
    }
    // Events of one rank follow each other; clamp rounding overlaps.
    std::stable_sort(track.events.begin(), track.events.end(),
                     [](const plan::TimelineEvent &a,
                        const plan::TimelineEvent &b) {
                       return a.start < b.start;
                     });
    for (size_t i = 1; i < track.events.size(); ++i)
      track.events[i].start =
          std::max(track.events[i].start, track.events[i - 1].end);
    for (plan::TimelineEvent &event : track.events)
      event.end = std::max(event.end, event.start);
    timeline.tracks.push_back(std::move(track));
  }

  std::string text;
  llvm::raw_string_ostream os(text);
  os << json::Value(json::Object{
      {"traceEvents", std::move(merged)},
      {"displayTimeUnit", "ms"},
      {"otherData", json::Object{{"clock", "steady"},
                                 {"origin_us", originUs},
                                 {"ranks", static_cast<int64_t>(ranks.size())},
                                 {"clock_offsets", "none: one host assumed"}}}});
  os << "\n";
  if (int code = writeText(path, text))
    return code;

  llvm::SmallString<256> svgPath(path);
  llvm::sys::path::remove_filename(svgPath);
  llvm::sys::path::append(svgPath, "measured.svg");
  std::string svg;
  llvm::raw_string_ostream svgStream(svg);
  plan::writeTimelineSvg(timeline, svgStream);
  return writeText(svgPath.str().str(), svg);
}
