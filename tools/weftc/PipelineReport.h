//===- PipelineReport.h - A pipeline's stage table and plan.json -*- C++ -*-===//
//
// One summary of a pipeline plan (stages, transfers, devices), written as
// plan.json (docs/Pipelines.md, "plan.json") and printed as the stage table
// of --report and of weftc's closing lines.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TOOLS_WEFTC_PIPELINEREPORT_H
#define WEFT_TOOLS_WEFTC_PIPELINEREPORT_H

#include "PlanReport.h"

#include "weft/Transforms/Pipeline.h"

#include "weft/Plan/Schedule.h"

#include "llvm/Support/JSON.h"

#include <string>
#include <vector>

namespace mlir::weft {

struct StageSummary {
  /// Cluster device indices, in mesh order, and the mesh.
  std::vector<int64_t> devices;
  std::vector<int64_t> meshShape;
  std::string mode;
  std::string firstNode, lastNode;
  int64_t ops = 0;
  int64_t weightsBytesPerDevice = 0;
  int64_t peakMemoryBytesPerDevice = 0;
  double predictedSeconds = 0;
  AutoShardReport report;
};

struct TransferReport {
  TransferSummary transfer;
  double predictedSeconds = 0;
};

struct PipelineSummary {
  std::string modelName, clusterName;
  std::vector<StageSummary> stages;
  std::vector<TransferReport> transfers;
  /// The job's broadcast groups (world ranks), in the programs' order.
  std::vector<std::vector<int64_t>> broadcastGroups;
  /// Per MPI rank, with its cluster device and stage.
  std::vector<DeviceSummary> devices;
  std::vector<int64_t> clusterDeviceOfRank;
  std::vector<int> stageOfRank;
  bool compiled = false;
  /// One pass through every stage and transfer in turn: a batch, or one
  /// microbatch with --microbatches (the schedule has the batch).
  double totalSeconds = 0;
  /// The GPipe estimate with the stage and transfer times above.
  ::weft::plan::ScheduleEstimate schedule;
  SimulatedSummary simulated;
};

/// plan.json's `schedule` object.
void writeScheduleJson(llvm::json::OStream &json,
                       const ::weft::plan::ScheduleEstimate &schedule);

std::string pipelinePlanJson(const PipelineSummary &plan);
void printStageTable(const PipelineSummary &plan, llvm::raw_ostream &os);

} // namespace mlir::weft

#endif // WEFT_TOOLS_WEFTC_PIPELINEREPORT_H
