//===- SimulatorSummary.cpp - What a simulated run amounts to -------------===//
//
// Turns the op timings of the event loop into the timeline, the per-device
// summaries, the throughput of a stream, the critical path and the
// bottleneck, and describes a result in a few lines.
//
//===----------------------------------------------------------------------===//

#include "SimulatorInternal.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

using namespace llvm;

namespace weft::plan {

/// "stage 2 (gpu5)" or "gpu5".
static std::string deviceAndStage(const Cluster &cluster, int device,
                                  int stage) {
  if (stage < 0)
    return simDeviceLabel(cluster, device);
  return "stage " + std::to_string(stage) + " (" +
         simDeviceLabel(cluster, device) + ")";
}

/// "81.2 requests/s".
static std::string formatRate(double perSecond) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3g", perSecond);
  return std::string(text) + " requests/s";
}

static std::string percent(double fraction) {
  return std::to_string(static_cast<int>(std::lround(100 * fraction))) + "%";
}

/// The length of [start, end) inside [from, to).
static double overlap(double start, double end, double from, double to) {
  return std::max(0.0, std::min(end, to) - std::max(start, from));
}

/// The stage most of a device's compute ops (or, without compute, its ops)
/// belong to; the lowest on a tie, -1 for none.
static int dominantStage(ArrayRef<SimOp> ops) {
  for (bool computeOnly : {true, false}) {
    std::map<int, int> count;
    for (const SimOp &op : ops)
      if (op.stage >= 0 && (!computeOnly || op.kind == SimOpKind::Compute))
        ++count[op.stage];
    int best = -1, most = 0;
    for (auto [stage, n] : count)
      if (n > most) {
        best = stage;
        most = n;
      }
    if (best >= 0)
      return best;
  }
  return -1;
}

/// The timeline's rows and each device's totals.
static void buildTracks(const Cluster &cluster, const SimProgram &program,
                        SimResult &result) {
  for (size_t d = 0; d < program.devices.size(); ++d) {
    const std::vector<SimOp> &ops = program.devices[d];
    if (ops.empty())
      continue;
    TimelineTrack track;
    SimDeviceSummary summary;
    track.device = summary.device = static_cast<int>(d);
    track.name = simDeviceLabel(cluster, track.device);
    track.stage = summary.stage = dominantStage(ops);
    for (size_t i = 0; i < ops.size(); ++i) {
      const SimOp &op = ops[i];
      const SimOpTiming &timing = result.timings[d][i];
      std::string label = simOpLabel(cluster, op);
      TimelineEvent event;
      event.stage = op.stage;
      event.microbatch = op.microbatch;
      if (timing.start > timing.arrive) {
        event.start = timing.arrive;
        event.end = timing.start;
        event.kind = TimelineKind::Wait;
        event.name = "wait: " + label;
        event.category = "wait";
        summary.waitSeconds += event.end - event.start;
        track.events.push_back(event);
      }
      if (timing.end <= timing.start)
        continue;
      event.start = timing.start;
      event.end = timing.end;
      event.name = label;
      if (op.kind == SimOpKind::Compute) {
        event.kind = TimelineKind::Compute;
        event.category = "compute";
        event.ops = op.ops;
        summary.computeSeconds += event.end - event.start;
      } else {
        event.kind = TimelineKind::Communication;
        event.category =
            op.kind == SimOpKind::Collective ? "collective" : "transfer";
        summary.communicationSeconds += event.end - event.start;
      }
      track.events.push_back(event);
    }
    result.makespanSeconds =
        std::max(result.makespanSeconds, result.timings[d].back().end);
    result.timeline.tracks.push_back(std::move(track));
    result.devices.push_back(summary);
  }
  double total = 0;
  for (SimDeviceSummary &s : result.devices) {
    s.idleSeconds = std::max(0.0, result.makespanSeconds - s.computeSeconds -
                                      s.communicationSeconds - s.waitSeconds);
    if (result.makespanSeconds > 0)
      s.bubbleFraction =
          (s.waitSeconds + s.idleSeconds) / result.makespanSeconds;
    total += s.bubbleFraction;
  }
  if (!result.devices.empty())
    result.bubbleFraction = total / result.devices.size();
}

/// When each request completes, the throughput and the steady-state window.
static void measureStream(const SimProgram &program, SimResult &result) {
  result.requestDoneSeconds.assign(program.requests, -1);
  for (size_t d = 0; d < program.devices.size(); ++d)
    for (size_t i = 0; i < program.devices[d].size(); ++i) {
      int64_t microbatch = program.devices[d][i].microbatch;
      if (microbatch < 0)
        continue;
      double &done =
          result
              .requestDoneSeconds[microbatch / program.microbatchesPerRequest];
      done = std::max(done, result.timings[d][i].end);
    }
  std::vector<double> done;
  for (double t : result.requestDoneSeconds)
    if (t >= 0)
      done.push_back(t);
  llvm::sort(done);
  result.windowStart = 0;
  result.windowEnd = result.makespanSeconds;
  if (done.size() >= 2 && done.back() > done.front()) {
    // The first request pays for filling the pipeline; the rate between
    // completions is what a long stream sustains.
    result.windowStart = done.front();
    result.windowEnd = done.back();
    result.throughputPerSecond =
        (done.size() - 1) / (done.back() - done.front());
  } else if (result.makespanSeconds > 0) {
    result.throughputPerSecond = 1 / result.makespanSeconds;
  }
}

/// The busiest device in the window, and whether its compute, its own link
/// or a shared rail keeps it busy.
static void findBottleneck(const Cluster &cluster, ArrayRef<SimRailLoss> losses,
                           SimResult &result) {
  double from = result.windowStart, to = result.windowEnd;
  if (!(to > from))
    return;
  SimBottleneck &b = result.bottleneck;
  double bestCompute = 0, bestCommunication = 0;
  size_t bestTrack = 0;
  for (size_t t = 0; t < result.timeline.tracks.size(); ++t) {
    double compute = 0, communication = 0;
    for (const TimelineEvent &e : result.timeline.tracks[t].events) {
      double inside = overlap(e.start, e.end, from, to);
      if (e.kind == TimelineKind::Compute)
        compute += inside;
      else if (e.kind == TimelineKind::Communication)
        communication += inside;
    }
    double utilization = (compute + communication) / (to - from);
    if (b.kind == SimBottleneckKind::None || utilization > b.utilization) {
      b.kind = SimBottleneckKind::Compute;
      b.utilization = utilization;
      bestCompute = compute;
      bestCommunication = communication;
      bestTrack = t;
    }
  }
  if (b.kind == SimBottleneckKind::None)
    return;
  const SimDeviceSummary &device = result.devices[bestTrack];
  b.device = device.device;
  b.stage = device.stage;
  std::string who = deviceAndStage(cluster, b.device, b.stage);
  std::string busy = ", busy " + percent(b.utilization) + " of the " +
                     (result.windowStart > 0 ? "steady state" : "run");
  if (bestCommunication <= bestCompute) {
    b.description = who + ": compute" + busy;
    return;
  }
  // Communication keeps it busy: blame a shared rail when sharing cost a
  // quarter of its communication time, else its own link.
  double lostTotal = 0;
  const SimRailLoss *worst = nullptr;
  for (const SimRailLoss &loss : losses) {
    if (loss.device != b.device)
      continue;
    lostTotal += loss.seconds;
    if (!worst || loss.seconds > worst->seconds)
      worst = &loss;
  }
  if (worst && lostTotal > 0.25 * device.communicationSeconds) {
    b.kind = SimBottleneckKind::Rail;
    b.node = worst->node;
    b.rail = worst->rail;
    b.outbound = worst->outbound;
    b.description = "rail " + std::to_string(b.rail) + " of node " +
                    cluster.nodes[b.node].name + " (" +
                    (b.outbound ? "outbound" : "inbound") +
                    "), shared by transfers at once: " + who + " loses " +
                    formatSeconds(lostTotal) + " to sharing" + busy;
    return;
  }
  // Name the communication that takes most of its time: its kind and size
  // say which link it runs over.
  std::map<std::string, double> byName;
  for (const TimelineEvent &e : result.timeline.tracks[bestTrack].events)
    if (e.kind == TimelineKind::Communication)
      byName[e.name] += overlap(e.start, e.end, from, to);
  auto top = std::max_element(
      byName.begin(), byName.end(),
      [](const auto &a, const auto &b) { return a.second < b.second; });
  b.kind = SimBottleneckKind::Communication;
  b.description = who + ": communication, mostly " + top->first + " (" +
                  percent(top->second / (bestCompute + bestCommunication)) +
                  " of its busy time)" + busy;
}

/// The ops that end last, each started by the one before it.
static void findCriticalPath(const SimProgram &program, SimResult &result) {
  int device = -1, op = -1;
  double latest = -1;
  for (size_t d = 0; d < result.timings.size(); ++d)
    if (!result.timings[d].empty() && result.timings[d].back().end > latest) {
      latest = result.timings[d].back().end;
      device = static_cast<int>(d);
      op = static_cast<int>(result.timings[d].size()) - 1;
    }
  std::vector<SimCriticalStep> path;
  while (device >= 0 && op >= 0) {
    const SimOpTiming &timing = result.timings[device][op];
    const SimOp &simOp = program.devices[device][op];
    if (timing.end > timing.start)
      path.push_back({device, op, timing.start, timing.end,
                      simOp.kind == SimOpKind::Compute
                          ? TimelineKind::Compute
                          : TimelineKind::Communication,
                      simOp.stage});
    // A meeting started when its last member arrived, right after that
    // member's previous op.
    if (timing.startedBy >= 0) {
      device = timing.startedBy;
      op = timing.startedByOp;
    }
    --op;
  }
  std::reverse(path.begin(), path.end());
  result.criticalPath = std::move(path);
}

void summarizeSimulation(const Cluster &cluster, const SimProgram &program,
                         ArrayRef<SimRailLoss> losses, SimResult &result) {
  result.timeline.title =
      program.title.empty() ? "simulated timeline" : program.title;
  buildTracks(cluster, program, result);
  measureStream(program, result);
  findBottleneck(cluster, losses, result);
  findCriticalPath(program, result);
  for (const SimRailLoss &loss : losses)
    for (SimDeviceSummary &s : result.devices)
      if (s.device == loss.device)
        s.contentionSeconds += loss.seconds;
  std::string stream;
  if (program.requests > 1)
    stream = " for " + std::to_string(program.requests) + " requests";
  result.timeline.notes.push_back(
      "simulated: latency " + formatSeconds(result.makespanSeconds) + stream +
      ", " + formatRate(result.throughputPerSecond) + ", mean bubble " +
      percent(result.bubbleFraction));
  if (!result.bottleneck.description.empty())
    result.timeline.notes.push_back("bound by " +
                                    result.bottleneck.description);
}

std::string describeSimResult(const SimResult &result) {
  std::string text =
      "simulated latency: " + formatSeconds(result.makespanSeconds) + "\n";
  size_t completed = llvm::count_if(result.requestDoneSeconds,
                                    [](double t) { return t >= 0; });
  text += "simulated throughput: " + formatRate(result.throughputPerSecond);
  if (completed >= 2)
    text += " (between the first and the last of " + std::to_string(completed) +
            " requests)";
  text += "\n";
  if (!result.devices.empty()) {
    const SimDeviceSummary *worst = &result.devices.front();
    for (const SimDeviceSummary &s : result.devices)
      if (s.bubbleFraction > worst->bubbleFraction)
        worst = &s;
    text += "bubble: " + percent(result.bubbleFraction) + " mean, worst " +
            result.timeline.tracks[worst - result.devices.data()].name + " " +
            percent(worst->bubbleFraction) + "\n";
  }
  if (!result.bottleneck.description.empty())
    text += "bound by: " + result.bottleneck.description + "\n";
  if (result.criticalPath.empty())
    return text;
  // What the critical path spends its time on, per stage.
  std::map<int, double> computeByStage;
  double compute = 0, communication = 0;
  for (const SimCriticalStep &step : result.criticalPath) {
    double seconds = step.end - step.start;
    bool isCompute = step.kind == TimelineKind::Compute;
    int stage = step.stage;
    if (isCompute) {
      compute += seconds;
      computeByStage[stage] += seconds;
    } else {
      communication += seconds;
    }
  }
  double total = compute + communication;
  text += "critical path: " + std::to_string(result.criticalPath.size()) +
          " ops, " + formatSeconds(total);
  if (total > 0) {
    text += ": compute " + percent(compute / total);
    if (computeByStage.size() > 1 || !computeByStage.count(-1)) {
      std::string parts;
      for (auto [stage, seconds] : computeByStage)
        parts += (parts.empty() ? "" : ", ") +
                 (stage < 0 ? std::string("no stage")
                            : "stage " + std::to_string(stage)) +
                 " " + percent(seconds / total);
      text += " (" + parts + ")";
    }
    text += ", communication " + percent(communication / total);
  }
  return text + "\n";
}

} // namespace weft::plan
