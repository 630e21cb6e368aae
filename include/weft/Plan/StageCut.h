//===- StageCut.h - Cutting an op sequence into balanced stages -*- C++ -*-===//
//
// Plain C++ (no IR): the simple balanced rule of `weftc --stages=N`. The
// model's ops, in topological order, are cut into N contiguous runs whose
// predicted times are as even as possible, and the cluster's devices are
// dealt out to the runs in proportion to their work; given the tensors the
// ops hold, only cuts whose stages fit a device's memory count, weights and
// activations both. The automatic stage planner (a DP over sub-meshes and
// intra-operator plans) replaces this rule; it returns the same StageCut.
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
  /// The bytes each stage holds (stageMemory below; empty without the
  /// tensors).
  std::vector<double> memory;
  /// Of `memory`: the weights and constants; the rest is activations.
  std::vector<double> weightMemory;
  /// False when no cut keeps every stage within the memory cap: the cut is
  /// then the best one ignoring memory.
  bool withinMemory = true;
};

/// A tensor the ops of the sequence hold, for the memory of a stage.
struct HeldTensor {
  /// `producer` of a tensor that no op of the sequence computes: a weight, a
  /// constant or a model input.
  static constexpr int64_t kFromOutside = -1;
  double bytes = 0;
  /// The op that computes it, or kFromOutside.
  int64_t producer = kFromOutside;
  /// The ops that read it, in ascending order (after the producer).
  std::vector<int64_t> readers;
  /// Read after the last op (a model output): whoever computes it holds it
  /// to the end.
  bool isModelOutput = false;
  /// A weight or a constant (reported apart from the activations).
  bool isWeight = false;
};

/// Cuts `costs` (one per op, >= 0, in order) into `stages` non-empty
/// contiguous runs minimizing the largest run's sum; ties go to the cut
/// whose last run is shortest, the ops before it cut the same way.
/// Needs 1 <= stages <= costs.size(); returns an empty cut otherwise.
/// Exact (dynamic programming over prefix sums), O(stages * n^2) at worst;
/// a run's scan stops once the run alone is slower than the best found.
StageCut balancedCut(llvm::ArrayRef<double> costs, int64_t stages);

/// The fastest cut among those whose every stage's memory (stageMemory) is
/// at most `memoryCap`, so that a model no single device holds is spread
/// over the stages; ties as above. When no cut fits: the fastest cut
/// regardless, with withinMemory false. `tensors` are every tensor the ops
/// compute or read (producers and readers index `costs`).
///
/// The memory of a candidate run is updated as the scan grows the run by
/// one op (amortized O(tensors the op touches * log n)); the fastest cut is
/// tried first, so that the scan runs only when memory binds.
StageCut balancedCut(llvm::ArrayRef<double> costs, int64_t stages,
                     llvm::ArrayRef<HeldTensor> tensors, double memoryCap);

/// What a stage holds, in bytes.
struct StageMemory {
  double total = 0;
  /// Of total: the weights and constants.
  double weights = 0;
};

/// The bytes one device holds when it runs ops [from, to) of the sequence
/// as one stage, everything whole, as the stage's planner counts them
/// (weft/Transforms/ShardedMemory.h):
///  - for the whole run, the tensors it reads from outside the run: weights,
///    constants and model inputs once, a tensor an earlier stage computes
///    twice (the received value and its receive's staging buffer);
///  - for the whole run, the tensors it computes that a later stage or the
///    model's output reads (their output buffers);
///  - the largest, over its ops, of its other tensors live at the op (from
///    the op that computes one to its last reader).
/// A tensor that merely passes by (computed before the run, read only after
/// it) is not held: a pipeline sends it from its producer straight to its
/// reader. A weight is counted once per stage that reads it.
/// O(tensors * log readers + to - from).
StageMemory stageMemory(llvm::ArrayRef<HeldTensor> tensors, int64_t numOps,
                        int64_t from, int64_t to);

/// Deals `devices` (>= work.size()) devices out to stages: one each, then
/// each further device to the stage with the largest work per device
/// (earliest on ties), so that sizes follow the work. Returns the count per
/// stage.
std::vector<int64_t> allocateDevices(llvm::ArrayRef<double> work,
                                     int64_t devices);

} // namespace weft::plan

#endif // WEFT_PLAN_STAGECUT_H
