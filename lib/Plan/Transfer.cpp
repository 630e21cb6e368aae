//===- Transfer.cpp - Tiles of a cross-mesh transfer ----------------------===//
//
// Cuts each destination block by the source blocks' boundaries and picks one
// holder per tile (see Transfer.h for the rule).
//
//===----------------------------------------------------------------------===//

#include "weft/Plan/Transfer.h"

#include <algorithm>
#include <limits>

using namespace weft::plan;

int64_t TransferPiece::elements() const {
  int64_t n = 1;
  for (int64_t size : sizes)
    n *= size;
  return n;
}

static bool fail(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
  return false;
}

static std::string shapeText(llvm::ArrayRef<int64_t> values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i)
    text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "]";
}

static bool checkSide(const char *side, const TensorSharding &sharding,
                      unsigned rank, llvm::ArrayRef<int64_t> mesh,
                      std::string *error) {
  for (int64_t size : mesh)
    if (size <= 0)
      return fail(error, std::string("the ") + side + " mesh " +
                             shapeText(mesh) + " has an axis of size " +
                             std::to_string(size));
  if (std::optional<std::string> message = validate(sharding, rank, mesh))
    return fail(error, std::string(side) + " sharding " + sharding.str() +
                           ": " + *message);
  if (!sharding.partial.empty())
    return fail(error, std::string(side) + " sharding " + sharding.str() +
                           " has pending partial sums: resolve them on the " +
                           "source mesh before the transfer");
  return true;
}

static int64_t numDevices(llvm::ArrayRef<int64_t> mesh) {
  int64_t n = 1;
  for (int64_t size : mesh)
    n *= size;
  return n;
}

std::optional<TransferPlan>
weft::plan::planTransfer(llvm::ArrayRef<int64_t> shape,
                         const TensorSharding &src,
                         llvm::ArrayRef<int64_t> srcMesh,
                         const TensorSharding &dst,
                         llvm::ArrayRef<int64_t> dstMesh, std::string *error) {
  for (int64_t size : shape)
    if (size < 0) {
      fail(error, "the tensor shape " + shapeText(shape) +
                      " has a negative size");
      return std::nullopt;
    }
  unsigned rank = shape.size();
  if (!checkSide("source", src, rank, srcMesh, error) ||
      !checkSide("destination", dst, rank, dstMesh, error))
    return std::nullopt;

  // The source cuts along each dimension: the starts of its blocks and the
  // block length (ceil(n / parts)); an unsplit dimension is one block.
  std::vector<int64_t> srcBlock(rank), srcParts(rank);
  for (unsigned k = 0; k < rank; ++k) {
    srcParts[k] = groupSize(srcMesh, src.dims[k]);
    srcBlock[k] = std::max<int64_t>(1, (shape[k] + srcParts[k] - 1) /
                                           srcParts[k]);
  }

  // The holders of each source block, keyed by its block index along every
  // dimension, in increasing position.
  int64_t numSrc = numDevices(srcMesh);
  std::map<std::vector<int64_t>, std::vector<int64_t>> holders;
  for (int64_t pos = 0; pos < numSrc; ++pos) {
    std::vector<int64_t> key(rank);
    for (unsigned k = 0; k < rank; ++k)
      key[k] = groupIndex(srcMesh, src.dims[k], pos);
    holders[key].push_back(pos);
  }
  std::vector<std::vector<int64_t>> srcOffsets(numSrc);
  for (int64_t pos = 0; pos < numSrc; ++pos)
    srcOffsets[pos] = localOffsets(shape, src, srcMesh, pos);

  TransferPlan plan;
  plan.sentElements.assign(numSrc, 0);
  int64_t numDst = numDevices(dstMesh);
  plan.grids.resize(numDst);
  for (int64_t d = 0; d < numDst; ++d) {
    TransferGrid &grid = plan.grids[d];
    grid.offsets = localOffsets(shape, dst, dstMesh, d);
    grid.sizes = localShape(shape, dst, dstMesh, d);
    grid.firstPiece = plan.pieces.size();
    grid.boundaries.resize(rank);
    bool empty = false;
    for (unsigned k = 0; k < rank; ++k) {
      int64_t lo = grid.offsets[k], hi = lo + grid.sizes[k];
      std::vector<int64_t> &cuts = grid.boundaries[k];
      cuts.push_back(lo);
      if (hi == lo) {
        empty = true;
        continue;
      }
      // Source block starts strictly inside (lo, hi).
      for (int64_t start = (lo / srcBlock[k] + 1) * srcBlock[k]; start < hi;
           start += srcBlock[k])
        cuts.push_back(start);
      cuts.push_back(hi);
    }
    if (empty)
      continue;

    // Row-major over the grid: the last dimension fastest.
    std::vector<size_t> index(rank, 0);
    while (true) {
      TransferPiece piece;
      piece.dstPosition = d;
      piece.offsets.resize(rank);
      piece.sizes.resize(rank);
      std::vector<int64_t> key(rank);
      for (unsigned k = 0; k < rank; ++k) {
        piece.offsets[k] = grid.boundaries[k][index[k]];
        piece.sizes[k] = grid.boundaries[k][index[k] + 1] - piece.offsets[k];
        key[k] = piece.offsets[k] / srcBlock[k];
      }
      int64_t elements = piece.elements();
      const std::vector<int64_t> &candidates = holders.at(key);
      int64_t best = candidates.front();
      for (int64_t pos : candidates)
        if (plan.sentElements[pos] < plan.sentElements[best])
          best = pos;
      piece.srcPosition = best;
      plan.sentElements[best] += elements;
      plan.totalElements += elements;
      piece.srcLocalOffsets.resize(rank);
      piece.dstLocalOffsets.resize(rank);
      for (unsigned k = 0; k < rank; ++k) {
        piece.srcLocalOffsets[k] = piece.offsets[k] - srcOffsets[best][k];
        piece.dstLocalOffsets[k] = piece.offsets[k] - grid.offsets[k];
      }
      plan.pieces.push_back(std::move(piece));

      int k = static_cast<int>(rank) - 1;
      for (; k >= 0; --k) {
        if (++index[k] + 1 < grid.boundaries[k].size())
          break;
        index[k] = 0;
      }
      if (k < 0)
        break;
    }
    grid.numPieces = plan.pieces.size() - grid.firstPiece;
  }
  return plan;
}

llvm::ArrayRef<TransferPiece>
weft::plan::piecesReceivedBy(const TransferPlan &plan, int64_t dstPosition) {
  if (dstPosition < 0 || dstPosition >= plan.numDstDevices())
    return {};
  const TransferGrid &grid = plan.grids[dstPosition];
  return llvm::ArrayRef<TransferPiece>(plan.pieces)
      .slice(grid.firstPiece, grid.numPieces);
}

std::vector<TransferPiece> weft::plan::piecesSentBy(const TransferPlan &plan,
                                                    int64_t srcPosition) {
  std::vector<TransferPiece> sent;
  for (const TransferPiece &piece : plan.pieces)
    if (piece.srcPosition == srcPosition)
      sent.push_back(piece);
  return sent;
}

std::map<std::pair<int64_t, int64_t>, int64_t>
weft::plan::transferBytesByPair(const TransferPlan &plan,
                                int64_t elementBytes) {
  std::map<std::pair<int64_t, int64_t>, int64_t> bytes;
  for (const TransferPiece &piece : plan.pieces)
    bytes[{piece.srcPosition, piece.dstPosition}] +=
        piece.elements() * elementBytes;
  return bytes;
}
