//===- LayerClustering.cpp - Layers aligned with repeated blocks ----------===//
//
// See LayerClustering.h. A periodic stretch is found per block length by
// one pass comparing each op with the op a block later; its phase is the
// cheapest cut; stretches left and right are searched again.
//
//===----------------------------------------------------------------------===//

#include "weft/Plan/LayerClustering.h"
#include "weft/Plan/StageCut.h"

#include <algorithm>
#include <cmath>
#include <tuple>

using namespace weft::plan;

RepeatedBlocks weft::plan::findRepeatedBlocks(llvm::ArrayRef<uint64_t> hashes,
                                              llvm::ArrayRef<double> cutBytes,
                                              int64_t begin, int64_t end,
                                              int64_t minBlockOps) {
  RepeatedBlocks best;
  minBlockOps = std::max<int64_t>(minBlockOps, 1);
  for (int64_t period = minBlockOps; 2 * period <= end - begin; ++period) {
    for (int64_t i = begin; i + period < end;) {
      if (hashes[i] != hashes[i + period]) {
        ++i;
        continue;
      }
      // [start, stretchEnd) repeats itself every `period` ops.
      int64_t start = i;
      while (i + period < end && hashes[i] == hashes[i + period])
        ++i;
      int64_t stretchEnd = i + period;
      // The phase: the cheapest cut between blocks, then more copies.
      RepeatedBlocks run;
      double runBytes = 0;
      for (int64_t first = start; first < start + period; ++first) {
        int64_t count = (stretchEnd - first) / period;
        if (count < 2)
          break;
        if (run.count == 0 || cutBytes[first] < runBytes ||
            (cutBytes[first] == runBytes && count > run.count)) {
          run = {first, period, count};
          runBytes = cutBytes[first];
        }
      }
      if (run.count < 2)
        continue;
      int64_t covered = run.period * run.count,
              bestCovered = best.period * best.count;
      // Longer blocks come later, so a tie keeps the shorter one; the same
      // block length, the earlier run.
      if (covered > bestCovered)
        best = run;
    }
  }
  return best;
}

namespace {
/// A stretch of ops: a repeated run, or ops between runs.
struct Segment {
  int64_t begin = 0, end = 0;
  RepeatedBlocks repeat; // count 0 between runs
};

void collectSegments(llvm::ArrayRef<uint64_t> hashes,
                     llvm::ArrayRef<double> cutBytes, int64_t begin,
                     int64_t end, int64_t minBlockOps,
                     std::vector<Segment> &out) {
  if (begin >= end)
    return;
  RepeatedBlocks run =
      findRepeatedBlocks(hashes, cutBytes, begin, end, minBlockOps);
  if (run.count < 2) {
    out.push_back({begin, end, {}});
    return;
  }
  collectSegments(hashes, cutBytes, begin, run.first, minBlockOps, out);
  out.push_back({run.first, run.end(), run});
  collectSegments(hashes, cutBytes, run.end(), end, minBlockOps, out);
}

double sumOf(llvm::ArrayRef<double> costs, int64_t begin, int64_t end) {
  double sum = 0;
  for (int64_t i = begin; i < end; ++i)
    sum += costs[i];
  return sum;
}
} // namespace

LayerClusters
weft::plan::clusterRepeatedLayers(llvm::ArrayRef<uint64_t> hashes,
                                  llvm::ArrayRef<double> costs,
                                  llvm::ArrayRef<double> cutBytes,
                                  const LayerClusterOptions &options) {
  LayerClusters out;
  int64_t n = static_cast<int64_t>(hashes.size());
  std::vector<Segment> segments;
  collectSegments(hashes, cutBytes, 0, n, options.minBlockOps, segments);
  int64_t blocks = 0;
  for (const Segment &segment : segments)
    blocks += segment.repeat.count;
  if (blocks == 0)
    return out;

  // Parts per block: enough for minLayers layers in the repeated runs; or
  // blocks per layer, for at most maxRepeatedLayers of them.
  int64_t parts = std::clamp<int64_t>(
      (options.minLayers + blocks - 1) / blocks, 1,
      std::max<int64_t>(options.maxPartsPerBlock, 1));
  int64_t group = 1;
  int64_t most = std::max<int64_t>(options.maxRepeatedLayers, 1);
  if (blocks > most) {
    parts = 1;
    group = (blocks + most - 1) / most;
  }
  out.partsPerBlock = parts;
  out.blocksPerLayer = group;
  // A layer's time in the runs, which the stretches between them follow.
  double repeatedCost = 0;
  int64_t repeatedLayers = 0;
  for (const Segment &segment : segments) {
    if (segment.repeat.count == 0)
      continue;
    repeatedCost += sumOf(costs, segment.begin, segment.end);
    repeatedLayers +=
        group > 1 ? (segment.repeat.count + group - 1) / group
                  : segment.repeat.count * std::min(parts, segment.repeat.period);
  }
  double unit = repeatedCost / static_cast<double>(repeatedLayers);

  for (const Segment &segment : segments) {
    const RepeatedBlocks &run = segment.repeat;
    if (run.count > 0) {
      out.repeats.push_back(run);
      if (group > 1) {
        for (int64_t k = 0; k < run.count; k += group)
          out.firstOp.push_back(run.first + k * run.period);
        continue;
      }
      StageCut cut = balancedCut(
          costs.slice(run.first, run.period), std::min(parts, run.period));
      for (int64_t k = 0; k < run.count; ++k)
        for (size_t part = 0; part + 1 < cut.firstOp.size(); ++part)
          out.firstOp.push_back(run.first + k * run.period +
                                cut.firstOp[part]);
      continue;
    }
    // As many layers as block parts of its time, but no more than it has
    // ops of a quarter part at least: a small op (a final LayerNorm) next
    // to a large one (the LM head) is not a layer of its own.
    int64_t ops = segment.end - segment.begin;
    double cost = sumOf(costs, segment.begin, segment.end);
    int64_t large = 0;
    for (int64_t i = segment.begin; i < segment.end; ++i)
      large += costs[i] >= unit / 4;
    int64_t layers = 1;
    if (unit > 0 && std::isfinite(cost / unit))
      layers = std::clamp<int64_t>(std::llround(cost / unit), 1,
                                   std::max<int64_t>(large, 1));
    StageCut cut = balancedCut(costs.slice(segment.begin, ops), layers);
    for (size_t part = 0; part + 1 < cut.firstOp.size(); ++part)
      out.firstOp.push_back(segment.begin + cut.firstOp[part]);
  }
  out.firstOp.push_back(n);
  return out;
}
