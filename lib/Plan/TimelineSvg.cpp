//===- TimelineSvg.cpp - A timeline as an SVG Gantt chart -----------------===//
//
// Draws a Timeline as a standalone SVG: one row per device, a time axis with
// units, and a legend. Up to SvgOptions::groupThreshold devices get roomy
// rows in the timeline's order; more are grouped by stage under a header
// per stage, in thinner rows, so that 64 devices still fit a screen. The
// layout is computed once (layoutTimelineSvg) and used by the writer and by
// tests, which check each bar against it.
//
//===----------------------------------------------------------------------===//

#include "weft/Plan/Timeline.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>

using namespace llvm;

namespace weft::plan {

/// Stage colours: Tableau 10 without its grey, which communication uses.
static const char *const kStageColors[] = {
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#86bcb6"};
static constexpr int kStageColorCount = 10;
static const char *const kNoStageColor = "#7f8fa6";
static const char *const kCollectiveColor = "#3a3a3a";
static const char *const kTransferColor = "#a3a3a3";
static const char *const kWaitColor = "#e8a09c";
static const char *const kFont = "DejaVu Sans, Arial, Helvetica, sans-serif";

/// Height of a stage's header row when rows are grouped, and the gap after
/// a group.
static constexpr double kGroupHeader = 16, kGroupGap = 6;
/// The legend's row height and font size.
static constexpr double kLegendRow = 18, kLegendFont = 11;

static std::string stageColor(int stage) {
  return stage < 0 ? kNoStageColor : kStageColors[stage % kStageColorCount];
}

/// True for the light stage colours, which need dark text.
static bool isLight(int stage) {
  int index = stage < 0 ? -1 : stage % kStageColorCount;
  return index == 4 || index == 5 || index == 7 || index == 9;
}

/// A rough width of `text` in DejaVu Sans at `font` pixels: wide enough
/// that labels judged to fit do fit.
static double textWidth(StringRef text, double font) {
  return static_cast<double>(text.size()) * font * 0.62;
}

/// The font of the row labels for rows of `rowHeight` pixels.
static double labelFont(double rowHeight) {
  return std::min(12.0, rowHeight - 2);
}

/// A coordinate with two decimals.
static std::string num(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f", value);
  return text;
}

static std::string escape(StringRef text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

/// The rows in drawing order, in groups: one group of every track in order,
/// or, grouped, one group per stage (ascending, tracks without a stage
/// last), each in the timeline's order.
static std::vector<std::vector<size_t>> rowGroups(const Timeline &timeline,
                                                  bool grouped) {
  std::vector<std::vector<size_t>> groups;
  if (!grouped) {
    groups.emplace_back();
    for (size_t t = 0; t < timeline.tracks.size(); ++t)
      groups.back().push_back(t);
    return groups;
  }
  std::map<int, std::vector<size_t>> byStage;
  for (size_t t = 0; t < timeline.tracks.size(); ++t) {
    int stage = timeline.tracks[t].stage;
    byStage[stage < 0 ? std::numeric_limits<int>::max() : stage].push_back(t);
  }
  for (auto &[stage, tracks] : byStage)
    groups.push_back(std::move(tracks));
  return groups;
}

namespace {
/// A legend entry: a swatch of `fill` (a bar of `heightFraction` of the
/// swatch's height, or none for a blank one) and its text.
struct LegendItem {
  std::string text;
  std::string fill;
  double heightFraction = 1;
};
} // namespace

static std::vector<LegendItem> legendItems(const Timeline &timeline) {
  std::set<int> stages;
  bool computeWithoutStage = false;
  for (const TimelineTrack &track : timeline.tracks)
    for (const TimelineEvent &event : track.events)
      if (event.kind == TimelineKind::Compute) {
        if (event.stage >= 0)
          stages.insert(event.stage);
        else
          computeWithoutStage = true;
      }
  std::vector<LegendItem> items;
  for (int stage : stages) {
    if (stage >= kStageColorCount) {
      items.push_back({"later stages repeat these colours", "", 0});
      break;
    }
    items.push_back(
        {"stage " + std::to_string(stage) + " compute", stageColor(stage)});
  }
  if (computeWithoutStage)
    items.push_back({"compute", kNoStageColor});
  items.push_back({"collective", kCollectiveColor, 0.6});
  items.push_back({"transfer", kTransferColor, 0.6});
  items.push_back({"waiting for peers", kWaitColor, 0.4});
  items.push_back({"idle", "none", 1});
  items.push_back({"mN: microbatch N", "", 0});
  return items;
}

/// Lays out the legend from `left` to `right`: per item, its x and its row.
static std::vector<std::pair<double, int>>
legendPlaces(ArrayRef<LegendItem> items, double left, double right) {
  std::vector<std::pair<double, int>> places;
  double x = left;
  int row = 0;
  for (const LegendItem &item : items) {
    double width =
        (item.fill.empty() ? 0 : 18) + textWidth(item.text, kLegendFont) + 18;
    if (x > left && x + width > right) {
      x = left;
      ++row;
    }
    places.push_back({x, row});
    x += width;
  }
  return places;
}

/// The time axis: a round step giving about one tick per 90 pixels, the
/// axis end (a multiple of the step at or after `end`), and its unit.
static void chooseAxis(double end, SvgLayout &layout) {
  if (!(end > 0))
    end = 1e-3;
  double span = layout.plotRight - layout.plotLeft;
  double ticks = std::clamp(std::floor(span / 90), 2.0, 12.0);
  double raw = end / ticks;
  double magnitude = std::pow(10, std::floor(std::log10(raw)));
  double step = 10 * magnitude;
  for (double nice : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (nice * magnitude >= raw * (1 - 1e-9)) {
      step = nice * magnitude;
      break;
    }
  layout.tickSeconds = step;
  layout.axisEndSeconds = std::ceil(end / step * (1 - 1e-9)) * step;
  double axisEnd = layout.axisEndSeconds;
  if (axisEnd >= 1) {
    layout.unit = "s";
    layout.unitSeconds = 1;
  } else if (axisEnd >= 1e-3) {
    layout.unit = "ms";
    layout.unitSeconds = 1e-3;
  } else if (axisEnd >= 1e-6) {
    layout.unit = "us";
    layout.unitSeconds = 1e-6;
  } else {
    layout.unit = "ns";
    layout.unitSeconds = 1e-9;
  }
  layout.pixelsPerSecond = span / axisEnd;
}

SvgLayout layoutTimelineSvg(const Timeline &timeline,
                            const SvgOptions &options) {
  SvgLayout layout;
  size_t tracks = timeline.tracks.size();
  layout.width = std::max(options.width, 400.0);
  layout.grouped = static_cast<int64_t>(tracks) > options.groupThreshold;
  layout.rowHeight =
      layout.grouped
          ? std::clamp(std::floor(640.0 / static_cast<double>(tracks)), 8.0,
                       16.0)
          : 22;
  double labelWidth = 48;
  for (const TimelineTrack &track : timeline.tracks)
    labelWidth = std::max(labelWidth,
                          textWidth(track.name, labelFont(layout.rowHeight)));
  // Row labels, then a colour chip of the row's stage, then the plot.
  layout.plotLeft = 16 + labelWidth + 16;
  layout.plotRight = layout.width - 24;
  double y = 34 + 17 * static_cast<double>(timeline.notes.size()) + 8;
  layout.plotTop = y;
  layout.rowTop.assign(tracks, 0);
  for (const std::vector<size_t> &group : rowGroups(timeline, layout.grouped)) {
    if (layout.grouped)
      y += kGroupHeader;
    for (size_t t : group) {
      layout.rowTop[t] = y;
      y += layout.rowHeight;
    }
    if (layout.grouped)
      y += kGroupGap;
  }
  layout.plotBottom = y;
  chooseAxis(timeline.endSeconds(), layout);
  layout.legendTop = layout.plotBottom + 46;
  std::vector<LegendItem> items = legendItems(timeline);
  auto places = legendPlaces(items, 16, layout.width - 16);
  int rows = places.empty() ? 0 : places.back().second + 1;
  layout.height = layout.legendTop + rows * kLegendRow + 8;
  return layout;
}

/// The title, the notes, the row stripes and labels, the group headers and
/// the vertical grid.
static void writeFrame(const Timeline &timeline, const SvgLayout &layout,
                       raw_ostream &os) {
  os << "<text x=\"16\" y=\"24\" font-size=\"16\" font-weight=\"bold\">"
     << escape(timeline.title) << "</text>\n";
  for (size_t i = 0; i < timeline.notes.size(); ++i)
    os << "<text x=\"16\" y=\"" << num(42 + 17 * i)
       << "\" font-size=\"12\" fill=\"#444\">" << escape(timeline.notes[i])
       << "</text>\n";
  double font = labelFont(layout.rowHeight);
  double plotWidth = layout.plotRight - layout.plotLeft;
  size_t drawn = 0;
  for (const std::vector<size_t> &group : rowGroups(timeline, layout.grouped)) {
    if (group.empty())
      continue;
    if (layout.grouped) {
      const TimelineTrack &first = timeline.tracks[group.front()];
      const TimelineTrack &last = timeline.tracks[group.back()];
      std::string header =
          (first.stage >= 0 ? "stage " + std::to_string(first.stage)
                            : std::string("no stage")) +
          ": " + std::to_string(group.size()) + " devices, " + first.name +
          (group.size() > 1 ? " to " + last.name : "");
      double top = layout.rowTop[group.front()] - kGroupHeader;
      os << "<text x=\"16\" y=\"" << num(top + 12)
         << "\" font-size=\"11\" font-weight=\"bold\" fill=\"#333\">"
         << escape(header) << "</text>\n";
    }
    for (size_t t : group) {
      const TimelineTrack &track = timeline.tracks[t];
      double top = layout.rowTop[t];
      os << "<rect class=\"row\" x=\"" << num(layout.plotLeft) << "\" y=\""
         << num(top) << "\" width=\"" << num(plotWidth) << "\" height=\""
         << num(layout.rowHeight) << "\" fill=\""
         << (drawn++ % 2 ? "#ffffff" : "#f1f3f6") << "\"/>\n";
      os << "<text x=\"" << num(layout.plotLeft - 14) << "\" y=\""
         << num(top + layout.rowHeight / 2 + font * 0.36) << "\" font-size=\""
         << num(font) << "\" text-anchor=\"end\" fill=\"#222\">"
         << escape(track.name) << "</text>\n";
      os << "<rect class=\"chip\" x=\"" << num(layout.plotLeft - 9) << "\" y=\""
         << num(top + 1) << "\" width=\"5\" height=\""
         << num(layout.rowHeight - 2) << "\" fill=\"" << stageColor(track.stage)
         << "\"/>\n";
    }
  }
  for (int k = 0;; ++k) {
    double t = k * layout.tickSeconds;
    if (t > layout.axisEndSeconds * (1 + 1e-9))
      break;
    os << "<line x1=\"" << num(layout.x(t)) << "\" y1=\"" << num(layout.plotTop)
       << "\" x2=\"" << num(layout.x(t)) << "\" y2=\"" << num(layout.plotBottom)
       << "\" stroke=\"#d4d8de\" stroke-width=\"1\"/>\n";
  }
}

/// Every event as a bar: compute full height in its stage's colour with
/// its microbatch where it fits, communication 60%, waiting 40%.
static void writeBars(const Timeline &timeline, const SvgLayout &layout,
                      raw_ostream &os) {
  double h = layout.rowHeight;
  double textFont = std::min(11.0, h - 4);
  for (size_t t = 0; t < timeline.tracks.size(); ++t) {
    const TimelineTrack &track = timeline.tracks[t];
    for (size_t e = 0; e < track.events.size(); ++e) {
      const TimelineEvent &event = track.events[e];
      double x = layout.x(event.start);
      double width = (event.end - event.start) * layout.pixelsPerSecond;
      double top = layout.rowTop[t], height = h - 2;
      std::string fill, cls = timelineKindName(event.kind).str();
      switch (event.kind) {
      case TimelineKind::Compute:
        fill = stageColor(event.stage);
        top += 1;
        break;
      case TimelineKind::Communication:
        fill =
            event.category == "collective" ? kCollectiveColor : kTransferColor;
        cls = event.category == "collective" ? "collective" : "transfer";
        top += h * 0.2;
        height = h * 0.6;
        break;
      case TimelineKind::Wait:
        fill = kWaitColor;
        top += h * 0.3;
        height = h * 0.4;
        break;
      }
      os << "<rect class=\"" << cls << "\"";
      if (event.kind == TimelineKind::Compute)
        os << " id=\"t" << t << "e" << e << "\"";
      os << " x=\"" << num(x) << "\" y=\"" << num(top) << "\" width=\""
         << num(width) << "\" height=\"" << num(height) << "\" fill=\"" << fill
         << "\"";
      if (event.kind == TimelineKind::Compute)
        os << " stroke=\"#ffffff\" stroke-width=\"0.6\"";
      os << "><title>" << escape(track.name) << ": " << escape(event.name)
         << ", " << formatSeconds(event.start) << " to "
         << formatSeconds(event.end) << " ("
         << formatSeconds(event.end - event.start) << ")</title></rect>\n";
      if (event.kind != TimelineKind::Compute || event.microbatch < 0 || h < 10)
        continue;
      std::string label = "m" + std::to_string(event.microbatch);
      if (width < textWidth(label, textFont) + 4)
        continue;
      os << "<text class=\"label\" x=\"" << num(x + width / 2) << "\" y=\""
         << num(top + height / 2 + textFont * 0.36) << "\" font-size=\""
         << num(textFont) << "\" text-anchor=\"middle\" fill=\""
         << (isLight(event.stage) ? "#222" : "#fff") << "\">" << label
         << "</text>\n";
    }
  }
}

/// The time axis under the rows and the legend under it.
static void writeAxisAndLegend(const Timeline &timeline,
                               const SvgLayout &layout, raw_ostream &os) {
  double axisY = layout.plotBottom + 1;
  os << "<line class=\"axis\" x1=\"" << num(layout.plotLeft) << "\" y1=\""
     << num(axisY) << "\" x2=\"" << num(layout.plotRight) << "\" y2=\""
     << num(axisY) << "\" stroke=\"#333\" stroke-width=\"1\"/>\n";
  for (int k = 0;; ++k) {
    double t = k * layout.tickSeconds;
    if (t > layout.axisEndSeconds * (1 + 1e-9))
      break;
    char value[32];
    std::snprintf(value, sizeof(value), "%.6g", t / layout.unitSeconds);
    os << "<line x1=\"" << num(layout.x(t)) << "\" y1=\"" << num(axisY)
       << "\" x2=\"" << num(layout.x(t)) << "\" y2=\"" << num(axisY + 5)
       << "\" stroke=\"#333\" stroke-width=\"1\"/>\n";
    os << "<text class=\"tick\" x=\"" << num(layout.x(t)) << "\" y=\""
       << num(axisY + 18) << "\" font-size=\"11\" text-anchor=\"middle\">"
       << value << "</text>\n";
  }
  std::string unit = layout.unit == "us" ? "\xC2\xB5s" : layout.unit;
  os << "<text class=\"axis-title\" x=\"" << num(layout.plotRight) << "\" y=\""
     << num(axisY + 34) << "\" font-size=\"12\" text-anchor=\"end\">time ("
     << unit << ")</text>\n";

  std::vector<LegendItem> items = legendItems(timeline);
  auto places = legendPlaces(items, 16, layout.width - 16);
  for (size_t i = 0; i < items.size(); ++i) {
    const LegendItem &item = items[i];
    double x = places[i].first;
    double top = layout.legendTop + places[i].second * kLegendRow;
    if (!item.fill.empty()) {
      double height = 12 * item.heightFraction;
      // Idle is no bar at all: an empty, outlined swatch.
      os << "<rect class=\"legend\" x=\"" << num(x) << "\" y=\""
         << num(top + (12 - height) / 2) << "\" width=\"14\" height=\""
         << num(height) << "\" fill=\"" << item.fill << "\"";
      if (item.fill == "none")
        os << " stroke=\"#999\" stroke-width=\"1\"";
      os << "/>\n";
      x += 18;
    }
    os << "<text x=\"" << num(x) << "\" y=\"" << num(top + 10)
       << "\" font-size=\"" << num(kLegendFont) << "\" fill=\"#222\">"
       << escape(item.text) << "</text>\n";
  }
}

void writeTimelineSvg(const Timeline &timeline, raw_ostream &os,
                      const SvgOptions &options) {
  SvgLayout layout = layoutTimelineSvg(timeline, options);
  char scale[64];
  std::snprintf(scale, sizeof(scale), "%.17g", layout.pixelsPerSecond);
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
     << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\""
     << num(layout.width) << "\" height=\"" << num(layout.height)
     << "\" viewBox=\"0 0 " << num(layout.width) << " " << num(layout.height)
     << "\" font-family=\"" << kFont << "\" data-plot-left=\""
     << num(layout.plotLeft) << "\" data-pixels-per-second=\"" << scale
     << "\">\n";
  os << "<rect class=\"background\" x=\"0\" y=\"0\" width=\""
     << num(layout.width) << "\" height=\"" << num(layout.height)
     << "\" fill=\"#ffffff\"/>\n";
  writeFrame(timeline, layout, os);
  writeBars(timeline, layout, os);
  writeAxisAndLegend(timeline, layout, os);
  os << "</svg>\n";
}

} // namespace weft::plan
