//===- StageCut.h - Cutting an op sequence into balanced stages -*- C++ -*-===//
//
// Plain C++ (no IR): the simple balanced rule of `weftc --stages=N`. The
// model's ops, in topological order, are cut into N contiguous runs whose
// predicted times are as even as possible, and the cluster's devices are
// dealt out to the runs in proportion to their work. The automatic stage
// planner (a DP over sub-meshes and intra-operator plans) replaces this
// rule; it returns the same StageCut.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_PLAN_STAGECUT_H
#define WEFT_PLAN_STAGECUT_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <vector>

namespace weft::plan {

/// Stage k holds ops [firstOp[k], firstOp[k + 1]) of the sequence (with
/// firstOp[N] the number of ops).
struct StageCut {
  std::vector<int64_t> firstOp;
  /// The summed cost of each stage's ops.
  std::vector<double> work;
  /// The summed memory of each stage's ops (empty without memory figures).
  std::vector<double> memory;
  /// False when no cut keeps every stage within the memory cap: the cut is
  /// then the best one ignoring memory.
  bool withinMemory = true;
};

/// Cuts `costs` (one per op, >= 0, in order) into `stages` non-empty
/// contiguous runs minimizing the largest run's sum; ties go to the cut
/// that puts the later boundary earliest. Needs 1 <= stages <= costs.size().
/// Exact (dynamic programming over prefix sums), O(stages * n^2) with an
/// early exit that makes the common case near linear.
///
/// With `memory` (one figure per op, e.g. the bytes of the weights it
/// reads), only cuts whose every stage sums to at most `memoryCap` are
/// considered: the fastest cut among those that fit, so that a model whose
/// weights fit no single device is spread over the stages.
StageCut balancedCut(llvm::ArrayRef<double> costs, int64_t stages,
                     llvm::ArrayRef<double> memory = {},
                     double memoryCap = 0);

/// Deals `devices` (>= work.size()) devices out to stages: one each, then
/// each further device to the stage with the largest work per device
/// (earliest on ties), so that sizes follow the work. Returns the count per
/// stage.
std::vector<int64_t> allocateDevices(llvm::ArrayRef<double> work,
                                     int64_t devices);

} // namespace weft::plan

#endif // WEFT_PLAN_STAGECUT_H
