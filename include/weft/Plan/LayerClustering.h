//===- LayerClustering.h - Layers aligned with repeated blocks --*- C++ -*-===//
//
// Plain C++ (no IR): how the stage planner clusters a model's ops into
// layers when the model repeats a block (a transformer's layers, a ResNet
// stage's bottlenecks). Each repetition of the block becomes the same
// layers, cut at the same places, so that runs of whole blocks are the same
// problem for the intra-operator planner and are priced once. The ops
// outside the repeated runs are cut by the balanced rule (StageCut.h) into
// layers about as long as the blocks' parts.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_PLAN_LAYERCLUSTERING_H
#define WEFT_PLAN_LAYERCLUSTERING_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <vector>

namespace weft::plan {

/// A run of `count` consecutive copies of a block of `period` ops, the first
/// starting at op `first`.
struct RepeatedBlocks {
  int64_t first = 0;
  int64_t period = 0;
  int64_t count = 0;

  int64_t end() const { return first + period * count; }
  bool operator==(const RepeatedBlocks &o) const {
    return first == o.first && period == o.period && count == o.count;
  }
};

struct LayerClusterOptions {
  /// When the blocks are fewer, each is cut into up to maxPartsPerBlock
  /// parts (the same places in every block) to reach this many layers:
  /// finer layers let stages end inside a block, where the balance point
  /// may lie (on 64 devices a ResNet-50's slowest cycle is 8 % lower with
  /// 57 layers than with 20), at about twice the pricing time.
  int64_t minLayers = 32;
  int64_t maxPartsPerBlock = 4;
  /// A block has at least this many ops.
  int64_t minBlockOps = 4;
  /// More blocks than this are grouped, blocksPerLayer consecutive copies a
  /// layer, so that the layers of the runs stay at most this many: every
  /// run of layers is priced on every sub-mesh, and a run's price costs in
  /// proportion to its length.
  int64_t maxRepeatedLayers = 64;
};

struct LayerClusters {
  /// Layer l holds ops [firstOp[l], firstOp[l + 1]); empty when the model
  /// repeats no block.
  std::vector<int64_t> firstOp;
  /// The repeated runs the layers follow, in op order.
  std::vector<RepeatedBlocks> repeats;
  /// Layers per block, and blocks per layer (one of them is 1).
  int64_t partsPerBlock = 1;
  int64_t blocksPerLayer = 1;
};

/// The longest repeated run inside ops [begin, end): the block of at least
/// `minBlockOps` ops whose copies cover the most ops (ties: the shorter
/// block, then the earlier run), at least two copies. Among the places a
/// run can start (a periodic stretch can be cut into blocks at any of
/// `period` phases), the one whose cut crosses the fewest bytes
/// (`cutBytes[i]`: the bytes that a cut just before op i crosses, for i in
/// 0 .. ops; ties: more copies, then earlier). `hashes` are one per op,
/// equal for ops that are the same computation relative to their
/// neighbours. count == 0 when nothing repeats.
RepeatedBlocks findRepeatedBlocks(llvm::ArrayRef<uint64_t> hashes,
                                  llvm::ArrayRef<double> cutBytes,
                                  int64_t begin, int64_t end,
                                  int64_t minBlockOps);

/// The layers of a model of `hashes.size()` ops (`costs`: each op's time,
/// `cutBytes` as above): the longest repeated run, then recursively those
/// before and after it, each block cut into the same parts (a balanced cut
/// of the first copy), or several blocks a layer when there are more than
/// maxRepeatedLayers; every stretch between runs cut by the balanced rule
/// into layers of about a layer of the runs' time (at least one, and no
/// more than it has ops of a quarter of that). Empty firstOp when nothing
/// repeats. Deterministic.
LayerClusters clusterRepeatedLayers(llvm::ArrayRef<uint64_t> hashes,
                                    llvm::ArrayRef<double> costs,
                                    llvm::ArrayRef<double> cutBytes,
                                    const LayerClusterOptions &options = {});

} // namespace weft::plan

#endif // WEFT_PLAN_LAYERCLUSTERING_H
