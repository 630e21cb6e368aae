//===- Schedule.cpp - Predicted latency and throughput of a pipeline ------===//

#include "weft/Plan/Schedule.h"

#include <algorithm>

using namespace weft::plan;

ScheduleEstimate weft::plan::estimateGPipe(const PipelineTimes &times,
                                           int64_t microbatches) {
  ScheduleEstimate out;
  out.microbatches = std::max<int64_t>(1, microbatches);
  int stages = static_cast<int>(times.stageSeconds.size());
  if (stages == 0)
    return out;
  std::vector<double> cycle = times.stageSeconds;
  double first = 0;
  for (double s : times.stageSeconds)
    first += s;
  for (const StageTransferTime &t : times.transfers) {
    first += t.seconds;
    // Both ends are busy for the transfer; an output goes to the collector,
    // a rank of the last stage.
    int to = t.toStage < 0 ? stages - 1 : t.toStage;
    if (t.fromStage >= 0 && t.fromStage < stages)
      cycle[t.fromStage] += t.seconds;
    if (to >= 0 && to < stages && to != t.fromStage)
      cycle[to] += t.seconds;
  }
  auto slowest = std::max_element(cycle.begin(), cycle.end());
  out.cycleSeconds = *slowest;
  out.bottleneckStage = static_cast<int>(slowest - cycle.begin());
  out.firstMicrobatchSeconds = first;
  out.latencySeconds =
      first + static_cast<double>(out.microbatches - 1) * out.cycleSeconds;
  double perBatch = static_cast<double>(out.microbatches) * out.cycleSeconds;
  out.throughputPerSecond = perBatch > 0 ? 1.0 / perBatch : 0;
  return out;
}
