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
/// Rank 0's clock against a rank's, as the runtime measured it by
/// ping-pong (runtime/core/ClockSync.h): rank 0's time = the rank's time +
/// offsetUs, around the rank's time atUs.
struct ClockPoint {
  double atUs = 0, offsetUs = 0, uncertaintyUs = 0;
};

/// One rank's trace: its op events, where its times start, and its clock
/// against rank 0's.
struct RankTrace {
  json::Array events;
  double originUs = 0;
  std::vector<ClockPoint> clockSync;

  /// The offset at this rank's time `us`: interpolated between the first
  /// and the last estimate (clocks drift linearly over a run), held
  /// outside them; 0 without estimates.
  double offsetAt(double us) const {
    if (clockSync.empty())
      return 0;
    const ClockPoint &first = clockSync.front(), &last = clockSync.back();
    if (last.atUs <= first.atUs || us <= first.atUs)
      return first.offsetUs;
    if (us >= last.atUs)
      return last.offsetUs;
    double t = (us - first.atUs) / (last.atUs - first.atUs);
    return first.offsetUs + t * (last.offsetUs - first.offsetUs);
  }
};
} // namespace

/// Reads otherData.clock_sync, when there is one, into `trace`. Returns
/// false on entries that are not {at_us, offset_us, uncertainty_us}.
static bool readClockSync(const json::Object &other, RankTrace &trace) {
  const json::Value *value = other.get("clock_sync");
  if (!value)
    return true;
  const json::Array *points = value->getAsArray();
  if (!points)
    return false;
  for (const json::Value &entry : *points) {
    const json::Object *point = entry.getAsObject();
    std::optional<double> at = point ? point->getNumber("at_us") : std::nullopt;
    std::optional<double> offset =
        point ? point->getNumber("offset_us") : std::nullopt;
    std::optional<double> uncertainty =
        point ? point->getNumber("uncertainty_us") : std::nullopt;
    if (!at || !offset || !uncertainty)
      return false;
    trace.clockSync.push_back({*at, *offset, *uncertainty});
  }
  return true;
}

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
  if (!readClockSync(*other, trace)) {
    error = path + ": otherData.clock_sync is not a list of {at_us, "
                   "offset_us, uncertainty_us}";
    return std::nullopt;
  }
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

/// otherData.clock_offsets of the merged trace: per rank, rank 0's clock
/// against its own at the first and the last estimate, and the largest
/// uncertainty; or why there are none.
static json::Value clockOffsetsJson(const std::vector<RankTrace> &ranks,
                                    bool aligned) {
  if (!aligned)
    return "none: one host assumed (the traces carry no clock_sync)";
  json::Array perRank;
  for (size_t k = 0; k < ranks.size(); ++k) {
    const std::vector<ClockPoint> &sync = ranks[k].clockSync;
    double uncertainty = 0;
    for (const ClockPoint &point : sync)
      uncertainty = std::max(uncertainty, point.uncertaintyUs);
    perRank.push_back(json::Object{
        {"rank", static_cast<int64_t>(k)},
        {"start_offset_us", sync.front().offsetUs},
        {"end_offset_us", sync.back().offsetUs},
        {"uncertainty_us", uncertainty}});
  }
  return json::Object{{"method", "ping-pong with rank 0 before and after the "
                                 "runs, interpolated between them"},
                      {"ranks", std::move(perRank)}};
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
  // Ranks on several hosts do not share a clock: with every rank's
  // ping-pong estimates (the runtime measures them for a profile of several
  // ranks), events go onto rank 0's clock; without them, the ranks are
  // taken to share one host's steady clock.
  bool aligned = ranks.size() > 1 &&
                 std::all_of(ranks.begin(), ranks.end(),
                             [](const RankTrace &rank) {
                               return !rank.clockSync.empty();
                             });
  if (!aligned)
    for (RankTrace &rank : ranks)
      rank.clockSync.clear();
  // Rank k's event at `ts` (us from its origin) on the common clock.
  auto common = [&](size_t k, double ts) {
    double local = ranks[k].originUs + ts;
    return local + ranks[k].offsetAt(local);
  };
  double originUs = std::numeric_limits<double>::infinity();
  for (size_t k = 0; k < ranks.size(); ++k)
    originUs = std::min(originUs, common(k, 0));
  std::vector<int> stages = stageOfRanks(package);

  json::Array merged;
  plan::Timeline timeline;
  timeline.title = "measured: " + std::to_string(ranks.size()) +
                   " ranks (weft-run --profile)";
  timeline.notes.push_back(
      aligned ? "every rank's ops on rank 0's clock (offsets by ping-pong "
                "before and after the runs); run events left out"
              : "every rank's ops on the steady clock the ranks of one host "
                "share; run events left out");
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
    for (json::Value &value : ranks[k].events) {
      json::Object *event = value.getAsObject();
      if (!event || event->getString("ph") != StringRef("X"))
        continue;
      std::optional<double> ts = event->getNumber("ts");
      std::optional<double> dur = event->getNumber("dur");
      if (!ts || !dur)
        continue;
      double at = common(k, *ts) - originUs;
      (*event)["ts"] = at;
      (*event)["pid"] = pid;
      StringRef category = event->getString("cat").value_or("");
      std::optional<StringRef> opName = event->getString("name");
      if (category != "run") {
        auto [kind, timelineCategory] = classify(category);
        plan::TimelineEvent interval;
        interval.start = at * 1e-6;
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
      {"otherData",
       json::Object{{"clock", aligned ? "rank 0's steady clock" : "steady"},
                    {"origin_us", originUs},
                    {"ranks", static_cast<int64_t>(ranks.size())},
                    {"clock_offsets", clockOffsetsJson(ranks, aligned)}}}});
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
