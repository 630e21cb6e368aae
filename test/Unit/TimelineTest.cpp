//===- TimelineTest.cpp - The timeline's SVG and Chrome trace -------------===//
//
// Writes the pictures of simulated pipelines and reads them back: the trace
// parses as trace-event JSON with one complete event per interval; the SVG
// has one bar per compute event where its times put it (within a pixel of
// the chart's own scale), an axis with units, a legend, rows grouped by
// stage beyond 16 devices, and rows that stay readable from 2 to 64
// devices.
//
//===----------------------------------------------------------------------===//

#include "weft/Plan/Timeline.h"
#include "weft/Plan/Simulator.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <tuple>

using namespace weft::plan;

namespace {

/// A simulated forward GPipe run of `stages` stages of `perStage` GPUs of
/// dgx-h100x8 nodes, with an all-reduce per stage and activations between
/// stages, over `microbatches` microbatches.
Timeline pipelineTimeline(int stages, int perStage, int microbatches) {
  int devices = stages * perStage;
  llvm::Expected<Cluster> cluster =
      loadCluster("dgx-h100x8:" + std::to_string((devices + 7) / 8));
  EXPECT_TRUE(static_cast<bool>(cluster));
  if (!cluster) {
    llvm::consumeError(cluster.takeError());
    return {};
  }
  SimPipeline pipeline;
  pipeline.title = "test pipeline";
  pipeline.microbatchesPerRequest = microbatches;
  for (int k = 0; k < stages; ++k) {
    SimPipelineStage stage;
    for (int d = 0; d < perStage; ++d)
      stage.devices.push_back(k * perStage + d);
    stage.computeSeconds = (2 + 0.3 * (k % 3)) * 1e-3;
    stage.allReduceBytes = perStage > 1 ? 64e6 : 0;
    stage.bytesToNext = 256e6;
    pipeline.stages.push_back(stage);
  }
  llvm::Expected<SimResult> result =
      simulate(*cluster, buildGPipeProgram(pipeline));
  EXPECT_TRUE(static_cast<bool>(result));
  if (!result) {
    llvm::consumeError(result.takeError());
    return {};
  }
  return result->timeline;
}

std::string svgOf(const Timeline &timeline) {
  std::string text;
  llvm::raw_string_ostream os(text);
  writeTimelineSvg(timeline, os);
  return text;
}

using Attributes = std::map<std::string, std::string>;

/// The attributes of every `<tag ...>` element of `xml`, in order.
std::vector<Attributes> elements(const std::string &xml,
                                 const std::string &tag) {
  std::vector<Attributes> out;
  std::regex element("<" + tag + "\\s([^>]*)>");
  std::regex attribute("([a-zA-Z-]+)=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(xml.begin(), xml.end(), element);
       it != std::sregex_iterator(); ++it) {
    Attributes attributes;
    std::string body = (*it)[1];
    for (auto a = std::sregex_iterator(body.begin(), body.end(), attribute);
         a != std::sregex_iterator(); ++a)
      attributes[(*a)[1]] = (*a)[2];
    out.push_back(std::move(attributes));
  }
  return out;
}

double number(const Attributes &attributes, const std::string &name) {
  auto it = attributes.find(name);
  EXPECT_NE(it, attributes.end()) << name;
  return it == attributes.end() ? 0 : std::stod(it->second);
}

size_t countKind(const Timeline &timeline, TimelineKind kind) {
  size_t count = 0;
  for (const TimelineTrack &track : timeline.tracks)
    for (const TimelineEvent &event : track.events)
      count += event.kind == kind;
  return count;
}

TEST(TimelineTest, TraceHasOneCompleteEventPerInterval) {
  Timeline timeline = pipelineTimeline(4, 2, 4);
  std::string text;
  llvm::raw_string_ostream os(text);
  writeTimelineTrace(timeline, os);
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  ASSERT_TRUE(static_cast<bool>(parsed)) << llvm::toString(parsed.takeError());
  const llvm::json::Object *root = parsed->getAsObject();
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->getString("displayTimeUnit"), "ms");
  const llvm::json::Array *events = root->getArray("traceEvents");
  ASSERT_NE(events, nullptr);

  size_t intervals = 0;
  for (const TimelineTrack &track : timeline.tracks)
    intervals += track.events.size();
  // Per pid: the intervals in order, to compare with the tracks.
  std::map<int64_t, std::vector<const llvm::json::Object *>> byPid;
  size_t processNames = 0;
  for (const llvm::json::Value &value : *events) {
    const llvm::json::Object *event = value.getAsObject();
    ASSERT_NE(event, nullptr);
    std::optional<llvm::StringRef> ph = event->getString("ph");
    ASSERT_TRUE(ph.has_value());
    std::optional<int64_t> pid = event->getInteger("pid");
    ASSERT_TRUE(pid.has_value());
    EXPECT_EQ(event->getInteger("tid"), pid);
    if (*ph == "M") {
      processNames += event->getString("name") == "process_name";
      continue;
    }
    ASSERT_EQ(*ph, "X");
    EXPECT_FALSE(event->getString("name").value_or("").empty());
    llvm::StringRef cat = event->getString("cat").value_or("");
    EXPECT_TRUE(cat == "compute" || cat == "collective" || cat == "transfer" ||
                cat == "wait")
        << cat.str();
    EXPECT_GE(event->getNumber("ts").value_or(-1), 0);
    EXPECT_GE(event->getNumber("dur").value_or(-1), 0);
    byPid[*pid].push_back(event);
  }
  EXPECT_EQ(processNames, timeline.tracks.size());
  size_t seen = 0;
  for (const TimelineTrack &track : timeline.tracks) {
    const auto &mine = byPid[track.device];
    ASSERT_EQ(mine.size(), track.events.size()) << track.name;
    for (size_t e = 0; e < mine.size(); ++e) {
      const TimelineEvent &event = track.events[e];
      EXPECT_NEAR(*mine[e]->getNumber("ts"), event.start * 1e6, 1e-6);
      EXPECT_NEAR(*mine[e]->getNumber("dur"), (event.end - event.start) * 1e6,
                  1e-6);
      EXPECT_EQ(mine[e]->getString("name"), event.name);
      const llvm::json::Object *args = mine[e]->getObject("args");
      ASSERT_NE(args, nullptr);
      if (event.microbatch >= 0) {
        EXPECT_EQ(args->getInteger("microbatch"), event.microbatch);
      }
    }
    seen += mine.size();
  }
  EXPECT_EQ(seen, intervals);
}

/// Every compute bar of the SVG lies where the trace's compute event puts
/// it under the scale the SVG declares, and where layoutTimelineSvg says.
void expectBarsMatchTrace(const Timeline &timeline) {
  std::string svg = svgOf(timeline);
  std::vector<Attributes> roots = elements(svg, "svg");
  ASSERT_EQ(roots.size(), 1u);
  double left = number(roots[0], "data-plot-left");
  double scale = number(roots[0], "data-pixels-per-second");
  SvgLayout layout = layoutTimelineSvg(timeline);
  EXPECT_NEAR(left, layout.plotLeft, 0.01);
  EXPECT_NEAR(scale, layout.pixelsPerSecond, 1e-6 * scale);

  std::vector<Attributes> bars;
  for (Attributes &rect : elements(svg, "rect"))
    if (rect["class"] == "compute")
      bars.push_back(rect);
  ASSERT_EQ(bars.size(), countKind(timeline, TimelineKind::Compute));

  // The trace's compute events, per pid, in order.
  llvm::Expected<llvm::json::Value> trace = llvm::json::parse(
      llvm::formatv("{0}", timelineTraceJson(timeline)).str());
  ASSERT_TRUE(static_cast<bool>(trace));
  std::map<int64_t, std::vector<std::pair<double, double>>> computeByPid;
  for (const llvm::json::Value &v :
       *trace->getAsObject()->getArray("traceEvents"))
    if (v.getAsObject()->getString("cat") == "compute")
      computeByPid[*v.getAsObject()->getInteger("pid")].push_back(
          {*v.getAsObject()->getNumber("ts") * 1e-6,
           *v.getAsObject()->getNumber("dur") * 1e-6});

  std::map<int64_t, size_t> used;
  std::regex id("t([0-9]+)e([0-9]+)");
  for (const Attributes &bar : bars) {
    std::smatch match;
    std::string name = bar.at("id");
    ASSERT_TRUE(std::regex_match(name, match, id)) << name;
    const TimelineTrack &track = timeline.tracks[std::stoul(match[1])];
    auto [start, duration] = computeByPid[track.device][used[track.device]++];
    double x = number(bar, "x"), width = number(bar, "width");
    EXPECT_NEAR(x, left + start * scale, 1.0) << name;
    EXPECT_NEAR(x + width, left + (start + duration) * scale, 1.0) << name;
    EXPECT_NEAR(x, layout.x(start), 1.0) << name;
    double y = number(bar, "y");
    double top = layout.rowTop[std::stoul(match[1])];
    EXPECT_GE(y, top);
    EXPECT_LE(y + number(bar, "height"), top + layout.rowHeight);
  }
  for (const auto &[pid, events] : computeByPid)
    EXPECT_EQ(used[pid], events.size()) << "pid " << pid;
}

TEST(TimelineTest, OneBarPerComputeEventWhereItsTimesPutIt) {
  expectBarsMatchTrace(pipelineTimeline(4, 2, 4));
  expectBarsMatchTrace(pipelineTimeline(4, 16, 8));
  expectBarsMatchTrace(pipelineTimeline(2, 1, 2));
}

TEST(TimelineTest, AxisWithUnitsAndALegend) {
  Timeline timeline = pipelineTimeline(4, 2, 4);
  std::string svg = svgOf(timeline);
  SvgLayout layout = layoutTimelineSvg(timeline);
  EXPECT_EQ(layout.unit, "ms");
  EXPECT_NE(svg.find(">time (ms)</text>"), std::string::npos);
  // Ticks from 0 to the axis end, which covers the run.
  EXPECT_GE(layout.axisEndSeconds, timeline.endSeconds());
  EXPECT_LT(layout.axisEndSeconds, timeline.endSeconds() + layout.tickSeconds);
  size_t ticks = 0;
  for (const Attributes &text : elements(svg, "text"))
    ticks += text.count("class") && text.at("class") == "tick";
  EXPECT_GE(ticks, 4u);
  EXPECT_NE(svg.find(">0</text>"), std::string::npos);
  size_t legend = 0;
  for (const Attributes &rect : elements(svg, "rect"))
    legend += rect.count("class") && rect.at("class") == "legend";
  // Four stages, collective, transfer, wait and idle.
  EXPECT_EQ(legend, 4u + 4u);
  for (const char *text :
       {">stage 0 compute<", ">collective<", ">transfer<",
        ">waiting for peers<", ">idle<", ">mN: microbatch N<"})
    EXPECT_NE(svg.find(text), std::string::npos) << text;
  // Microbatch labels where bars are wide enough.
  EXPECT_NE(svg.find(">m3</text>"), std::string::npos);
  // Under the title, the simulator's summary.
  EXPECT_NE(svg.find("simulated: latency"), std::string::npos);
}

TEST(TimelineTest, RowsGroupedByStageBeyondSixteenDevices) {
  Timeline small = pipelineTimeline(4, 4, 2);
  EXPECT_FALSE(layoutTimelineSvg(small).grouped);

  Timeline large = pipelineTimeline(4, 16, 2);
  // Shuffle the tracks: the chart still groups them by stage.
  std::swap(large.tracks[3], large.tracks[40]);
  SvgLayout layout = layoutTimelineSvg(large);
  ASSERT_TRUE(layout.grouped);
  std::map<int, std::pair<double, double>> extent; // stage -> (top, bottom)
  for (size_t t = 0; t < large.tracks.size(); ++t) {
    auto [it, inserted] = extent.try_emplace(
        large.tracks[t].stage, layout.rowTop[t], layout.rowTop[t]);
    it->second.first = std::min(it->second.first, layout.rowTop[t]);
    it->second.second = std::max(it->second.second, layout.rowTop[t]);
  }
  ASSERT_EQ(extent.size(), 4u);
  double previousBottom = 0;
  for (auto [stage, span] : extent) {
    // 16 contiguous rows, after the stage before.
    EXPECT_NEAR(span.second - span.first, 15 * layout.rowHeight, 1e-9);
    EXPECT_GT(span.first, previousBottom);
    previousBottom = span.second;
  }
  std::string svg = svgOf(large);
  EXPECT_NE(svg.find(">stage 1: 16 devices, gpu16 to gpu31<"),
            std::string::npos);
}

TEST(TimelineTest, ReadableFromTwoToSixtyFourDevices) {
  for (int devices : {2, 4, 8, 16, 20, 32, 48, 64}) {
    SCOPED_TRACE(devices);
    int perStage = devices >= 8 ? devices / 4 : 1;
    Timeline timeline = pipelineTimeline(devices / perStage, perStage, 4);
    SvgLayout layout = layoutTimelineSvg(timeline);
    // Rows at least 8 px (labels of 6 px or more), never overlapping, and
    // the whole chart within a screen's height.
    EXPECT_GE(layout.rowHeight, 8);
    std::vector<double> tops = layout.rowTop;
    std::sort(tops.begin(), tops.end());
    for (size_t i = 1; i < tops.size(); ++i)
      EXPECT_GE(tops[i] - tops[i - 1], layout.rowHeight - 1e-9);
    EXPECT_LE(layout.height, 1100);
    EXPECT_GT(layout.plotRight - layout.plotLeft, 0.8 * layout.width);
    // Bars stay in the plot.
    for (const Attributes &rect : elements(svgOf(timeline), "rect")) {
      std::string cls = rect.count("class") ? rect.at("class") : "";
      if (cls != "compute" && cls != "collective" && cls != "transfer" &&
          cls != "wait")
        continue;
      EXPECT_GE(number(rect, "x"), layout.plotLeft - 0.01);
      EXPECT_LE(number(rect, "x") + number(rect, "width"),
                layout.plotRight + 0.01);
    }
  }
}

TEST(TimelineTest, NamesAreEscaped) {
  Timeline timeline;
  timeline.title = "a <b> & \"c\"";
  timeline.tracks.push_back({"dev<0>&", 0, -1, {}});
  timeline.tracks[0].events.push_back(
      {0, 1e-3, TimelineKind::Compute, "x<y", "", -1, -1});
  std::string svg = svgOf(timeline);
  EXPECT_NE(svg.find("a &lt;b&gt; &amp; &quot;c&quot;"), std::string::npos);
  EXPECT_NE(svg.find(">dev&lt;0&gt;&amp;<"), std::string::npos);
  EXPECT_EQ(svg.find("x<y"), std::string::npos);
  std::string trace = llvm::formatv("{0}", timelineTraceJson(timeline)).str();
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(trace);
  ASSERT_TRUE(static_cast<bool>(parsed));
}

TEST(TimelineTest, EmptyTimeline) {
  Timeline timeline;
  std::string svg = svgOf(timeline);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  llvm::json::Value trace = timelineTraceJson(timeline);
  EXPECT_TRUE(trace.getAsObject()->getArray("traceEvents")->empty());
}

TEST(TimelineTest, Units) {
  EXPECT_EQ(formatSeconds(0), "0 s");
  EXPECT_EQ(formatSeconds(2.5), "2.5 s");
  EXPECT_EQ(formatSeconds(12.34e-3), "12.3 ms");
  EXPECT_EQ(formatSeconds(850e-6), "850 us");
  EXPECT_EQ(formatSeconds(3e-9), "3 ns");
  EXPECT_EQ(formatByteSize(512), "512 B");
  EXPECT_EQ(formatByteSize(4 * 1024 * 1024), "4 MiB");
  EXPECT_EQ(formatByteSize(1.5 * 1024 * 1024 * 1024), "1.5 GiB");
}

} // namespace

/// The op events of `trace` (category "op"), as (name, ts, dur) in us.
static std::vector<std::tuple<std::string, double, double>>
opEventsOf(const llvm::json::Value &trace) {
  std::vector<std::tuple<std::string, double, double>> ops;
  for (const llvm::json::Value &v :
       *trace.getAsObject()->getArray("traceEvents"))
    if (v.getAsObject()->getString("cat") == "op")
      ops.emplace_back(v.getAsObject()->getString("name")->str(),
                       *v.getAsObject()->getNumber("ts"),
                       *v.getAsObject()->getNumber("dur"));
  return ops;
}

// Tests that a compute interval's ops become "op" events laid end to end
// inside it, scaled to fill it (the simulator stretched this one from 3 to
// 6 us), named as a profile names them, with their kind in args.
TEST(TimelineTest, ComputeOpsAreNestedOpEvents) {
  Timeline timeline;
  TimelineTrack track;
  track.name = "cpu0";
  track.device = 0;
  TimelineEvent event;
  event.start = 10e-6;
  event.end = 16e-6;
  event.name = "stage 0";
  event.stage = 0;
  event.microbatch = 1;
  event.ops = std::make_shared<const std::vector<TimelineOp>>(
      std::vector<TimelineOp>{{"/conv1/Conv", "conv", 2e-6},
                              {"/relu/Relu", "relu", 1e-6}});
  track.events.push_back(event);
  timeline.tracks.push_back(track);
  llvm::json::Value trace = timelineTraceJson(timeline);
  auto ops = opEventsOf(trace);
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(std::get<0>(ops[0]), "/conv1/Conv");
  EXPECT_NEAR(std::get<1>(ops[0]), 10.0, 1e-9);
  EXPECT_NEAR(std::get<2>(ops[0]), 4.0, 1e-9);
  EXPECT_EQ(std::get<0>(ops[1]), "/relu/Relu");
  EXPECT_NEAR(std::get<1>(ops[1]), 14.0, 1e-9);
  EXPECT_NEAR(std::get<2>(ops[1]), 2.0, 1e-9);
  for (const llvm::json::Value &v :
       *trace.getAsObject()->getArray("traceEvents")) {
    const llvm::json::Object &e = *v.getAsObject();
    if (e.getString("cat") != "op")
      continue;
    const llvm::json::Object *args = e.getObject("args");
    EXPECT_EQ(args->getInteger("stage"), 0);
    EXPECT_EQ(args->getInteger("microbatch"), 1);
    EXPECT_TRUE(args->getString("kind") == "conv" ||
                args->getString("kind") == "relu");
  }
  // The SVG still draws the interval as one bar.
  std::string svg = svgOf(timeline);
  size_t bars = 0;
  for (size_t at = svg.find("<rect class=\"compute\""); at != std::string::npos;
       at = svg.find("<rect class=\"compute\"", at + 1))
    ++bars;
  EXPECT_EQ(bars, 1u);
}

// Tests that past kMaxTraceOpEvents no op event is written (not some of
// them), and otherData says so.
TEST(TimelineTest, TooManyOpEventsAreLeftOutWhole) {
  Timeline timeline;
  TimelineTrack track;
  track.name = "cpu0";
  track.device = 0;
  auto ops = std::make_shared<const std::vector<TimelineOp>>(
      std::vector<TimelineOp>(1000, TimelineOp{"op", "add", 1e-6}));
  for (int64_t i = 0; i * 1000 <= kMaxTraceOpEvents; ++i) {
    TimelineEvent event;
    event.start = i * 1e-3;
    event.end = event.start + 1e-3;
    event.ops = ops;
    track.events.push_back(event);
  }
  timeline.tracks.push_back(track);
  llvm::json::Value trace = timelineTraceJson(timeline);
  EXPECT_TRUE(opEventsOf(trace).empty());
  std::optional<llvm::StringRef> note =
      trace.getAsObject()->getObject("otherData")->getString("op_events");
  ASSERT_TRUE(note.has_value());
  EXPECT_TRUE(note->starts_with("left out")) << note->str();
}
