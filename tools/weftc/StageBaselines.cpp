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
      // The candidate as a plan: its cuts, the DP's shapes for its stages'
      // devices, and its prices; the schedule's closed form does the rest.
      plan::StagePlan candidate;
      candidate.firstLayer = first;
      candidate.transferInSeconds.assign(pp, 0);
      bool fits = true;
      for (int64_t k = 0; k < pp && fits; ++k) {
        plan::StagePlacement placement;
        int64_t start = k * size;
        placement.shape.nodes = std::max<int64_t>(1, size / nodeSize);
        placement.shape.devicesPerNode = size / placement.shape.nodes;
        for (int64_t n = 0; n < placement.shape.nodes; ++n)
          placement.nodes.push_back(start / nodeSize + n);
        placement.firstDevice = size < nodeSize ? start % nodeSize : 0;
        candidate.stages.push_back(std::move(placement));
        candidate.stageSeconds.push_back(
            meshSeconds(first[k], first[k + 1], meshes[k]));
        if (k > 0)
          candidate.transferInSeconds[k] =
              transfers.between(first[k], meshes[k - 1], meshes[k]);
        fits = std::isfinite(candidate.stageSeconds[k]) &&
               std::isfinite(candidate.transferInSeconds[k]);
      }
      if (!fits)
        continue;
      ++out.fitting;
      candidate.found = true;
      candidate.outputCollectionSeconds =
          problem.outputSeconds
              ? problem.outputSeconds(candidate.stages.back().shape)
              : 0.0;
      plan::completePlanTimes(problem.microbatches, candidate);
      if (plan::stageObjectiveKey(problem, candidate) <
          plan::stageObjectiveKey(problem, out.best)) {
        out.tp = tp;
        out.pp = pp;
        out.dp = dp;
        out.best = std::move(candidate);
        out.meshes = std::move(meshes);
      }
    }
  }
  return out;
}

} // namespace mlir::weft::autostages
