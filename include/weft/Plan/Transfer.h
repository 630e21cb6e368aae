//===- Transfer.h - Tiles of a cross-mesh transfer --------------*- C++ -*-===//
//
// Plain C++ (no IR): the tile code of a transfer of a tensor from one device
// mesh to another (different device sets; sizes and shapes may differ), e.g.
// between the stages of a pipeline. Each destination device's block is cut
// by the source blocks' boundaries into tiles; each nonempty tile is one
// piece, sent by exactly one source device that holds it. The receiver
// assembles its block from the pieces by nested concatenation along the
// grid the cuts form. The rule that picks among several holders of a source
// block is in docs/Sharding.md ("Cross-mesh transfers").
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_PLAN_TRANSFER_H
#define WEFT_PLAN_TRANSFER_H

#include "weft/Plan/Sharding.h"

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace weft::plan {

/// One tile: the box [offsets, offsets + sizes) of the whole tensor, sent by
/// source device `srcPosition` to destination device `dstPosition` (row-major
/// positions in their own meshes). Never empty.
struct TransferPiece {
  int64_t srcPosition = 0;
  int64_t dstPosition = 0;
  /// In global tensor coordinates.
  std::vector<int64_t> offsets;
  std::vector<int64_t> sizes;
  /// The same box relative to the source device's local block (where to
  /// slice it from) and to the destination device's block (where it goes).
  std::vector<int64_t> srcLocalOffsets;
  std::vector<int64_t> dstLocalOffsets;

  int64_t elements() const;
};

/// How one destination device's block is cut. `boundaries[k]` are the cuts
/// along dimension k in global coordinates, increasing, from the block's
/// start to its end: b0 = offsets[k] < b1 < ... < bm = offsets[k] + sizes[k]
/// (just {offsets[k]} when sizes[k] is 0). The block's pieces are the
/// cartesian product of the intervals [b_i, b_i+1) of every dimension, in
/// row-major order (the last dimension fastest), and are
/// pieces[firstPiece, firstPiece + numPieces) of the plan. Concatenating them
/// along the last dimension, then the one before, ... rebuilds the block.
struct TransferGrid {
  std::vector<int64_t> offsets;
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> boundaries;
  size_t firstPiece = 0;
  size_t numPieces = 0;

  /// Pieces along dimension k (0 for an empty block).
  int64_t intervals(unsigned k) const {
    return static_cast<int64_t>(boundaries[k].size()) - 1;
  }
};

struct TransferPlan {
  /// By destination position, then row-major over its grid.
  std::vector<TransferPiece> pieces;
  /// One per destination position (also those with empty blocks).
  std::vector<TransferGrid> grids;
  /// Elements each source position sends (size: the source mesh's devices).
  std::vector<int64_t> sentElements;
  /// Elements moved in all (the sum of every destination block's size).
  int64_t totalElements = 0;

  int64_t numSrcDevices() const {
    return static_cast<int64_t>(sentElements.size());
  }
  int64_t numDstDevices() const { return static_cast<int64_t>(grids.size()); }
};

/// The pieces of a transfer of a tensor of `shape` from sharding `src` on a
/// mesh of shape `srcMesh` to `dst` on `dstMesh`. Returns nullopt (and sets
/// `*error` when given) when a sharding does not fit its mesh or the tensor's
/// rank, or has partial axes (the caller resolves pending sums on the source
/// mesh first), or a mesh or shape has a negative size (or a mesh axis of 0).
///
/// Holder rule: when a source block is replicated over some source axes,
/// each of its pieces goes to the holder that has been assigned the fewest
/// elements so far (over the whole plan, in piece order); ties go to the
/// lowest source position. Deterministic, and within one block's holders
/// the sent elements differ by at most one piece's size.
///
/// Extension point: the resharding work will extend this behind the same
/// interface (relays and broadcast trees when several destinations need the
/// same tile, load balance across rails/NICs rather than per device, piece
/// size limits). Today's plan is the simple one: one direct send per tile.
std::optional<TransferPlan>
planTransfer(llvm::ArrayRef<int64_t> shape, const TensorSharding &src,
             llvm::ArrayRef<int64_t> srcMesh, const TensorSharding &dst,
             llvm::ArrayRef<int64_t> dstMesh, std::string *error = nullptr);

/// The pieces destination position `dstPosition` receives, in assembly order
/// (empty for a position outside the mesh).
llvm::ArrayRef<TransferPiece> piecesReceivedBy(const TransferPlan &plan,
                                               int64_t dstPosition);
/// The pieces source position `srcPosition` sends, in plan order.
std::vector<TransferPiece> piecesSentBy(const TransferPlan &plan,
                                        int64_t srcPosition);
/// Bytes each (source position, destination position) pair moves, for cost
/// estimates: one entry for each pair that exchanges at least one piece.
std::map<std::pair<int64_t, int64_t>, int64_t>
transferBytesByPair(const TransferPlan &plan, int64_t elementBytes);

} // namespace weft::plan

#endif // WEFT_PLAN_TRANSFER_H
