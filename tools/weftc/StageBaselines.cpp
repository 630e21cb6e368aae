//===- StageBaselines.cpp - Plans the stage planner's is compared with ---===//
//
// See AutoStagesParts.h: the best Megatron-style plan (tp x pp x dp) under
// the stage planner's own prices.
//
//===----------------------------------------------------------------------===//

#include "AutoStagesParts.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cmath>

namespace mlir::weft::autostages {

/// Where Megatron's stages may start: at the start of a repeated block
/// when the layers follow blocks (Megatron splits whole transformer
/// layers; what precedes the first block goes with the first stage), else
/// at every layer. Layer 0 first.
std::vector<int64_t> megatronUnits(const LayerChain &chain) {
  std::vector<int64_t> blockStarts;
  for (const plan::RepeatedBlocks &run : chain.repeats)
    for (int64_t b = 0; b < run.count; ++b) {
      int64_t op = run.first + b * run.period;
      auto at = llvm::lower_bound(chain.firstOp, op);
      if (at != chain.firstOp.end() && *at == op)
        blockStarts.push_back(at - chain.firstOp.begin());
    }
  llvm::sort(blockStarts);
  std::vector<int64_t> units = {0};
  if (blockStarts.empty()) {
    for (int64_t l = 1; l < chain.numLayers; ++l)
      units.push_back(l);
    return units;
  }
  // The first block goes with what precedes it (an embedding).
  for (int64_t start : llvm::drop_begin(blockStarts))
    units.push_back(start);
  return units;
}

ManualPlans bestMegatronPlan(
    const GroupedCluster &grouped, const plan::StageProblem &problem,
    const std::vector<int64_t> &units,
    const std::function<double(int64_t, int64_t, const plan::Mesh &)>
        &meshSeconds,
    BoundaryTransfers &transfers) {
  ManualPlans out;
  if (grouped.devicesPerGroup.size() != 1) {
    out.skipped = "the devices are of several kinds or node sizes";
    return out;
  }
  std::vector<int> ordered;
  for (const DeviceGroup &g : grouped.groups)
    llvm::append_range(ordered, g.devices);
  int64_t devices = static_cast<int64_t>(ordered.size());
  int64_t nodeSize = grouped.devicesPerGroup.front();
  int64_t layers = problem.layers;
  bool throughput = problem.objective == plan::StageObjective::Throughput;
  auto key = [&](double cycle, double latency) {
    return throughput ? std::make_pair(cycle, latency)
                      : std::make_pair(latency, cycle);
  };
  for (int64_t tp = 1; tp <= nodeSize; ++tp) {
    if (nodeSize % tp != 0)
      continue;
    int64_t numUnits = static_cast<int64_t>(units.size());
    int64_t maxStages =
        problem.maxStages > 0 ? std::min(problem.maxStages, numUnits)
                              : numUnits;
    for (int64_t pp = 1; pp <= maxStages && tp * pp <= devices; ++pp) {
      if (devices % (tp * pp) != 0)
        continue;
      int64_t dp = devices / (tp * pp);
      // Stages lie inside a node or fill whole nodes (no stage of 6 across
      // two 8-device nodes): the sub-meshes the DP knows.
      int64_t size = tp * dp;
      if (size % nodeSize != 0 && nodeSize % size != 0)
        continue;
      ++out.tried;
      std::vector<plan::Mesh> meshes(pp);
      std::vector<int64_t> first(pp + 1);
      for (int64_t k = 0; k < pp; ++k)
        first[k] = units[k * numUnits / pp];
      first[pp] = layers;
      for (int64_t k = 0; k < pp; ++k) {
        plan::Mesh &mesh = meshes[k];
        mesh.name = "stage";
        mesh.devices.assign(ordered.begin() + k * tp * dp,
                            ordered.begin() + (k + 1) * tp * dp);
        if (dp == 1 || tp == 1)
          mesh.shape = {tp * dp};
        else
          mesh.shape = {dp, tp};
      }
      std::vector<double> compute(pp), in(pp, 0);
      bool fits = true;
      for (int64_t k = 0; k < pp && fits; ++k) {
        compute[k] = meshSeconds(first[k], first[k + 1], meshes[k]);
        if (k > 0)
          in[k] = transfers.between(first[k], meshes[k - 1], meshes[k]);
        fits = std::isfinite(compute[k]) && std::isfinite(in[k]);
      }
      if (!fits)
        continue;
      ++out.fitting;
      plan::SubMeshShape last;
      last.nodes = std::max<int64_t>(1, tp * dp / nodeSize);
      last.devicesPerNode = tp * dp / last.nodes;
      double collect =
          problem.outputSeconds ? problem.outputSeconds(last) : 0.0;
      double cycle = 0, latency = collect;
      for (int64_t k = 0; k < pp; ++k) {
        cycle = std::max(cycle, compute[k] + in[k] +
                                    (k + 1 < pp ? in[k + 1] : collect));
        latency += compute[k] + in[k];
      }
      latency += static_cast<double>(problem.microbatches - 1) * cycle;
      if (key(cycle, latency) < key(out.cycleSeconds, out.latencySeconds)) {
        out.tp = tp;
        out.pp = pp;
        out.dp = dp;
        out.cycleSeconds = cycle;
        out.latencySeconds = latency;
        out.meshes = meshes;
        plan::StagePlan &best = out.best;
        best = plan::StagePlan();
        best.found = true;
        best.firstLayer = first;
        for (int64_t k = 0; k < pp; ++k) {
          plan::StagePlacement placement;
          int64_t start = k * size;
          placement.shape.nodes = std::max<int64_t>(1, size / nodeSize);
          placement.shape.devicesPerNode = size / placement.shape.nodes;
          for (int64_t n = 0; n < placement.shape.nodes; ++n)
            placement.nodes.push_back(start / nodeSize + n);
          placement.firstDevice = size < nodeSize ? start % nodeSize : 0;
          best.stages.push_back(placement);
          best.stageSeconds.push_back(compute[k]);
          best.transferInSeconds.push_back(in[k]);
          best.cycleSeconds.push_back(compute[k] + in[k] +
                                      (k + 1 < pp ? in[k + 1] : collect));
        }
        best.outputCollectionSeconds = collect;
        best.slowestCycleSeconds = cycle;
        best.firstMicrobatchSeconds =
            latency - static_cast<double>(problem.microbatches - 1) * cycle;
        best.latencySeconds = latency;
      }
    }
  }
  return out;
}

} // namespace mlir::weft::autostages
