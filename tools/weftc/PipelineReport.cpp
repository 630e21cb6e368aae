//===- PipelineReport.cpp - A pipeline's stage table and plan.json --------===//

#include "PipelineReport.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InterleavedRange.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::weft;

void mlir::weft::writeScheduleJson(
    llvm::json::OStream &json, const ::weft::plan::ScheduleEstimate &schedule) {
  json.attributeObject("schedule", [&] {
    json.attribute("kind", "gpipe");
    json.attribute("microbatches", schedule.microbatches);
    json.attribute("predicted_latency_seconds", schedule.latencySeconds);
    json.attribute("predicted_throughput_per_s", schedule.throughputPerSecond);
    json.attribute("first_microbatch_seconds", schedule.firstMicrobatchSeconds);
    json.attribute("cycle_seconds", schedule.cycleSeconds);
    json.attribute("bottleneck_stage", schedule.bottleneckStage);
  });
}

std::string mlir::weft::pipelinePlanJson(const PipelineSummary &plan) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::json::OStream json(os, 2);
  auto ints = [&](const std::vector<int64_t> &values) {
    for (int64_t v : values)
      json.value(v);
  };
  json.object([&] {
    json.attribute("format", "weft-plan");
    json.attribute("version", 2);
    json.attribute("model", plan.modelName);
    json.attribute("cluster", plan.clusterName);
    json.attributeArray("stages", [&] {
      for (const StageSummary &s : plan.stages)
        json.object([&] {
          json.attributeArray("devices", [&] { ints(s.devices); });
          json.attributeArray("mesh_shape", [&] { ints(s.meshShape); });
          json.attribute("sharding", s.mode);
          json.attribute("first_node", s.firstNode);
          json.attribute("last_node", s.lastNode);
          json.attribute("ops", s.ops);
          json.attribute("weights_bytes_per_device", s.weightsBytesPerDevice);
          json.attribute("peak_memory_bytes_per_device",
                         s.peakMemoryBytesPerDevice);
          json.attribute("predicted_seconds", s.predictedSeconds);
          json.attribute("memory_budget_bytes", s.report.memoryBudgetBytes);
          json.attributeObject("ilp", [&] {
            json.attribute("nodes", s.report.graphNodes);
            json.attribute("variables", s.report.solution.numVariables);
            json.attribute("constraints", s.report.solution.numConstraints);
            json.attribute("optimal", s.report.solution.optimal);
            json.attribute("solve_seconds", s.report.solution.solveSeconds);
          });
        });
    });
    json.attributeArray("transfers", [&] {
      for (const TransferReport &r : plan.transfers)
        json.object([&] {
          const TransferSummary &t = r.transfer;
          json.attribute("tensor", t.tensor);
          json.attribute("from_stage", t.fromStage);
          if (t.toStage < 0)
            json.attribute("to_stage", "output");
          else
            json.attribute("to_stage", t.toStage);
          json.attribute("bytes", t.bytes);
          json.attribute("bytes_moved", t.bytesMoved);
          json.attribute("method", t.method);
          json.attribute("tiles", t.tiles);
          json.attribute("messages", t.messages);
          json.attribute("from_sharding", t.from);
          json.attribute("to_sharding", t.to);
          json.attribute("predicted_seconds", r.predictedSeconds);
          json.attribute("lower_bound_seconds", t.lowerBoundSeconds);
          json.attribute("send_recv_seconds", t.sendRecvSeconds);
          // Bytes per (sending rank, receiving rank) link.
          json.attributeArray("links", [&] {
            for (auto [from, to, bytes] : t.pairBytes)
              json.object([&] {
                json.attribute("from", from);
                json.attribute("to", to);
                json.attribute("bytes", bytes);
              });
          });
          // The plan's chains that run as one broadcast call each.
          json.attributeArray("broadcasts", [&] {
            for (const TransferSummary::Broadcast &b : t.broadcasts)
              json.object([&] {
                json.attribute("bytes", b.bytes);
                json.attributeArray("chain", [&] { ints(b.chain); });
                json.attribute("chunks", b.chunks);
                if (b.group >= 0)
                  json.attribute("group", b.group);
                else
                  json.attribute("group", nullptr);
              });
          });
        });
    });
    // The sub-communicators the programs create at start-up, by index.
    json.attributeArray("broadcast_groups", [&] {
      for (const std::vector<int64_t> &group : plan.broadcastGroups)
        json.array([&] { ints(group); });
    });
    json.attributeArray("devices", [&] {
      for (auto [k, d] : llvm::enumerate(plan.devices))
        json.object([&] {
          json.attribute("id", static_cast<int64_t>(k));
          json.attribute("cluster_device", plan.clusterDeviceOfRank[k]);
          json.attribute("stage", plan.stageOfRank[k]);
          json.attribute("program", d.program);
          json.attribute("weight_bytes", d.weightBytes);
          json.attribute("arena_bytes", d.arenaBytes);
          json.attribute("memory_bytes", d.weightBytes + d.arenaBytes);
          json.attribute("flops", d.flops);
        });
    });
    writeScheduleJson(json, plan.schedule);
    writeSimulatedJson(json, plan.simulated);
    json.attributeObject("totals", [&] {
      json.attribute("predicted_seconds", plan.totalSeconds);
      json.attribute("compiled", plan.compiled);
    });
  });
  os << "\n";
  return text;
}

static std::string bytesText(double bytes) {
  if (bytes >= 1e9)
    return llvm::formatv("{0:f2} GB", bytes / 1e9).str();
  if (bytes >= 1e6)
    return llvm::formatv("{0:f2} MB", bytes / 1e6).str();
  if (bytes >= 1e3)
    return llvm::formatv("{0:f1} kB", bytes / 1e3).str();
  return llvm::formatv("{0} B", static_cast<int64_t>(bytes)).str();
}

void mlir::weft::printStageTable(const PipelineSummary &plan,
                                 llvm::raw_ostream &os) {
  os << llvm::formatv("  {0,-5} {1,-12} {2,-7} {3,-9} {4,5} {5,10} {6,10} "
                      "{7,11}  {8}\n",
                      "stage", "devices", "mesh", "sharding", "ops", "weights",
                      "peak mem", "predicted", "first .. last node");
  for (auto [k, s] : llvm::enumerate(plan.stages)) {
    std::string devices;
    if (s.devices.size() > 1 &&
        s.devices.back() - s.devices.front() + 1 ==
            static_cast<int64_t>(s.devices.size()))
      devices = std::to_string(s.devices.front()) + "-" +
                std::to_string(s.devices.back());
    else
      devices = llvm::formatv("{0:$[,]}", llvm::make_range(s.devices.begin(),
                                                          s.devices.end()))
                    .str();
    std::string mesh =
        llvm::formatv("{0:$[x]}",
                      llvm::make_range(s.meshShape.begin(), s.meshShape.end()))
            .str();
    os << llvm::formatv("  {0,-5} {1,-12} {2,-7} {3,-9} {4,5} {5,10} {6,10} "
                        "{7,8:f3} ms  {8} .. {9}\n",
                        k, devices, mesh, s.mode, s.ops,
                        bytesText(s.weightsBytesPerDevice),
                        bytesText(s.peakMemoryBytesPerDevice),
                        s.predictedSeconds * 1e3, s.firstNode, s.lastNode);
  }
  for (const TransferReport &r : plan.transfers) {
    const TransferSummary &t = r.transfer;
    std::string to = t.toStage < 0 ? std::string("output")
                                   : "stage " + std::to_string(t.toStage);
    std::string calls;
    if (!t.broadcasts.empty())
      calls =
          " in " + std::to_string(t.broadcasts.size()) + " broadcast call(s)";
    os << llvm::formatv("  transfer {0} -> {1}: '{2}', {3}, {4}, {5} "
                        "message(s){6}, {7:f3} ms (bound {8:f3} ms, send-recv "
                        "{9:f3} ms)\n",
                        t.fromStage, to, t.tensor, bytesText(t.bytes), t.method,
                        t.messages, calls, r.predictedSeconds * 1e3,
                        t.lowerBoundSeconds * 1e3, t.sendRecvSeconds * 1e3);
  }
  const ::weft::plan::ScheduleEstimate &s = plan.schedule;
  os << llvm::formatv("  predicted: {0:f3} ms per {1} through all stages\n",
                      plan.totalSeconds * 1e3,
                      s.microbatches > 1 ? "microbatch" : "batch");
  os << llvm::formatv("  pipeline full ({0} microbatch{1} per batch): "
                      "{2:f1} batches/s, {3:f3} ms per batch, stage {4} the "
                      "slowest ({5:f3} ms a cycle)\n",
                      s.microbatches, s.microbatches == 1 ? "" : "es",
                      s.throughputPerSecond, s.latencySeconds * 1e3,
                      s.bottleneckStage, s.cycleSeconds * 1e3);
  printSimulatedLines(plan.simulated, os);
}
