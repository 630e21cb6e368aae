//===- Schedule.h - Predicted latency and throughput of a pipeline -*- C++ -*-===//
//
// Plain C++ (no IR): the closed form of a forward-only GPipe schedule, for
// plan.json's `schedule`. M microbatches (or requests) follow each other
// through the stages; with stage k busy for one cycle per microbatch, the
// first microbatch takes the sum of all stage and transfer times, and every
// later one leaves one slowest cycle after the one before it.
//
// A stage's cycle is its compute plus the transfers into and out of it.
// Receives are double-buffered (the next message arrives while the stage
// computes), but on one host moving the data is CPU work of both ranks,
// and a send waits until the data has left, so both ranks pay for each
// transfer. The simulator replaces this estimate with an event-driven
// one.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_PLAN_SCHEDULE_H
#define WEFT_PLAN_SCHEDULE_H

#include <cstdint>
#include <vector>

namespace weft::plan {

/// A value moving between stages; `toStage` < 0 is the collection of a
/// model output on the last stage's collector rank.
struct StageTransferTime {
  int fromStage = 0;
  int toStage = 0;
  double seconds = 0;
};

/// The predicted times of one microbatch.
struct PipelineTimes {
  std::vector<double> stageSeconds;
  std::vector<StageTransferTime> transfers;
};

struct ScheduleEstimate {
  int64_t microbatches = 1;
  /// One microbatch through an empty pipeline.
  double firstMicrobatchSeconds = 0;
  /// The slowest stage's cycle (compute + its transfers) and that stage.
  double cycleSeconds = 0;
  int bottleneckStage = 0;
  /// All M microbatches of one batch: first + (M - 1) x cycle.
  double latencySeconds = 0;
  /// Batches per second with the pipeline full: 1 / (M x cycle).
  double throughputPerSecond = 0;
};

/// The GPipe closed form for `microbatches` >= 1 microbatches per batch.
ScheduleEstimate estimateGPipe(const PipelineTimes &times,
                               int64_t microbatches);

} // namespace weft::plan

#endif // WEFT_PLAN_SCHEDULE_H
