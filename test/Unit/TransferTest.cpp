//===- TransferTest.cpp - Tests of the cross-mesh transfer tiles ----------===//
//
// Checks planTransfer element by element against brute force (which source
// devices hold an element, which destination devices need it) on random and
// hand-picked cases with uneven and empty blocks, replicated sources with
// several holders, and meshes of different sizes; then the holder rule, the
// helpers and the errors.
//
//===----------------------------------------------------------------------===//

#include "weft/Plan/Transfer.h"

#include "gtest/gtest.h"

#include <map>
#include <cstdio>
#include <random>
#include <set>

using namespace weft::plan;

namespace {

TensorSharding sharding(std::vector<AxisList> dims, AxisList partial = {}) {
  TensorSharding s;
  s.dims = std::move(dims);
  s.partial = std::move(partial);
  return s;
}

int64_t product(llvm::ArrayRef<int64_t> values) {
  int64_t n = 1;
  for (int64_t v : values)
    n *= v;
  return n;
}

bool contains(llvm::ArrayRef<int64_t> offsets, llvm::ArrayRef<int64_t> sizes,
              llvm::ArrayRef<int64_t> point) {
  for (size_t k = 0; k < point.size(); ++k)
    if (point[k] < offsets[k] || point[k] >= offsets[k] + sizes[k])
      return false;
  return true;
}

/// Every point of the box [offsets, offsets + sizes), row-major.
std::vector<std::vector<int64_t>> points(llvm::ArrayRef<int64_t> offsets,
                                         llvm::ArrayRef<int64_t> sizes) {
  std::vector<std::vector<int64_t>> all;
  if (product(sizes) == 0)
    return all;
  std::vector<int64_t> p(offsets.begin(), offsets.end());
  while (true) {
    all.push_back(p);
    int k = static_cast<int>(p.size()) - 1;
    for (; k >= 0; --k) {
      if (++p[k] < offsets[k] + sizes[k])
        break;
      p[k] = offsets[k];
    }
    if (k < 0)
      return all;
  }
}

std::string describe(llvm::ArrayRef<int64_t> shape, const TensorSharding &src,
                     llvm::ArrayRef<int64_t> srcMesh,
                     const TensorSharding &dst,
                     llvm::ArrayRef<int64_t> dstMesh) {
  auto list = [](llvm::ArrayRef<int64_t> v) {
    std::string t = "[";
    for (size_t i = 0; i < v.size(); ++i)
      t += (i ? "," : "") + std::to_string(v[i]);
    return t + "]";
  };
  return "shape " + list(shape) + " from " + src.str() + " on " +
         list(srcMesh) + " to " + dst.str() + " on " + list(dstMesh);
}

/// The brute-force oracle; leaves the plan in `out` for further checks.
void verify(llvm::ArrayRef<int64_t> shape, const TensorSharding &src,
            llvm::ArrayRef<int64_t> srcMesh, const TensorSharding &dst,
            llvm::ArrayRef<int64_t> dstMesh, TransferPlan &out) {
  SCOPED_TRACE(describe(shape, src, srcMesh, dst, dstMesh));
  std::string error;
  std::optional<TransferPlan> maybe =
      planTransfer(shape, src, srcMesh, dst, dstMesh, &error);
  ASSERT_TRUE(maybe.has_value()) << error;
  out = *maybe;
  const TransferPlan &plan = out;
  int64_t numSrc = product(srcMesh), numDst = product(dstMesh);
  unsigned rank = shape.size();
  EXPECT_EQ(plan.numSrcDevices(), numSrc);
  EXPECT_EQ(plan.numDstDevices(), numDst);

  std::vector<std::vector<int64_t>> srcOff(numSrc), srcSize(numSrc);
  for (int64_t s = 0; s < numSrc; ++s) {
    srcOff[s] = localOffsets(shape, src, srcMesh, s);
    srcSize[s] = localShape(shape, src, srcMesh, s);
  }

  int64_t total = 0;
  size_t next = 0;
  std::vector<int64_t> sent(numSrc, 0);
  for (int64_t d = 0; d < numDst; ++d) {
    SCOPED_TRACE("destination " + std::to_string(d));
    std::vector<int64_t> off = localOffsets(shape, dst, dstMesh, d);
    std::vector<int64_t> size = localShape(shape, dst, dstMesh, d);
    const TransferGrid &grid = plan.grids[d];
    EXPECT_EQ(grid.offsets, off);
    EXPECT_EQ(grid.sizes, size);
    // Pieces by destination, in order, contiguous.
    EXPECT_EQ(grid.firstPiece, next);
    next += grid.numPieces;
    llvm::ArrayRef<TransferPiece> mine = piecesReceivedBy(plan, d);
    EXPECT_EQ(mine.size(), grid.numPieces);

    // Each piece: nonempty, inside the block, held by its source, and
    // exactly the block cut by its source's block.
    for (const TransferPiece &piece : mine) {
      EXPECT_EQ(piece.dstPosition, d);
      ASSERT_EQ(piece.offsets.size(), rank);
      ASSERT_EQ(piece.sizes.size(), rank);
      ASSERT_GE(piece.srcPosition, 0);
      ASSERT_LT(piece.srcPosition, numSrc);
      EXPECT_GT(piece.elements(), 0);
      int64_t s = piece.srcPosition;
      for (unsigned k = 0; k < rank; ++k) {
        int64_t lo = std::max(off[k], srcOff[s][k]);
        int64_t hi = std::min(off[k] + size[k], srcOff[s][k] + srcSize[s][k]);
        EXPECT_EQ(piece.offsets[k], lo) << "dim " << k;
        EXPECT_EQ(piece.sizes[k], hi - lo) << "dim " << k;
        EXPECT_EQ(piece.srcLocalOffsets[k], piece.offsets[k] - srcOff[s][k]);
        EXPECT_EQ(piece.dstLocalOffsets[k], piece.offsets[k] - off[k]);
      }
      for (const std::vector<int64_t> &p : points(piece.offsets, piece.sizes)) {
        EXPECT_TRUE(contains(off, size, p)) << "piece outside its block";
        EXPECT_TRUE(contains(srcOff[s], srcSize[s], p))
            << "source " << s << " does not hold the element";
      }
      sent[s] += piece.elements();
      total += piece.elements();
    }

    // Every element of the block is covered exactly once.
    for (const std::vector<int64_t> &p : points(off, size)) {
      int covering = 0;
      for (const TransferPiece &piece : mine)
        covering += contains(piece.offsets, piece.sizes, p);
      EXPECT_EQ(covering, 1);
    }

    // As many pieces as distinct source blocks meet the block.
    std::set<std::vector<int64_t>> meeting;
    for (int64_t s = 0; s < numSrc; ++s) {
      bool meets = true;
      for (unsigned k = 0; k < rank; ++k)
        meets &= std::max(off[k], srcOff[s][k]) <
                 std::min(off[k] + size[k], srcOff[s][k] + srcSize[s][k]);
      if (meets && product(size) > 0)
        meeting.insert(srcOff[s]);
    }
    EXPECT_EQ(mine.size(), meeting.size());

    // The grid: boundaries increasing from the block's start to its end, and
    // the pieces are its cartesian product in row-major order.
    ASSERT_EQ(grid.boundaries.size(), rank);
    int64_t cells = 1;
    for (unsigned k = 0; k < rank; ++k) {
      const std::vector<int64_t> &b = grid.boundaries[k];
      ASSERT_FALSE(b.empty());
      EXPECT_EQ(b.front(), off[k]);
      EXPECT_EQ(b.back(), off[k] + size[k]);
      for (size_t i = 1; i < b.size(); ++i)
        EXPECT_LT(b[i - 1], b[i]);
      EXPECT_EQ(grid.intervals(k), size[k] == 0 ? 0 : int64_t(b.size()) - 1);
      cells *= grid.intervals(k);
    }
    ASSERT_EQ(int64_t(mine.size()), cells);
    std::vector<size_t> index(rank, 0);
    for (int64_t c = 0; c < cells; ++c) {
      for (unsigned k = 0; k < rank; ++k) {
        EXPECT_EQ(mine[c].offsets[k], grid.boundaries[k][index[k]]);
        EXPECT_EQ(mine[c].sizes[k], grid.boundaries[k][index[k] + 1] -
                                        grid.boundaries[k][index[k]]);
      }
      for (int k = int(rank) - 1; k >= 0; --k) {
        if (++index[k] + 1 < grid.boundaries[k].size())
          break;
        index[k] = 0;
      }
    }
  }
  EXPECT_EQ(next, plan.pieces.size());
  EXPECT_EQ(plan.totalElements, total);
  EXPECT_EQ(plan.sentElements, sent);
  int64_t needed = 0;
  for (int64_t d = 0; d < numDst; ++d)
    needed += product(localShape(shape, dst, dstMesh, d));
  EXPECT_EQ(total, needed);

  // The holder rule: among the holders of one source block, the elements
  // sent differ by at most the block's largest piece.
  std::map<std::vector<int64_t>, std::vector<int64_t>> holders;
  for (int64_t s = 0; s < numSrc; ++s)
    holders[srcOff[s]].push_back(s);
  std::map<int64_t, int64_t> largest;
  for (const TransferPiece &piece : plan.pieces)
    largest[piece.srcPosition] =
        std::max(largest[piece.srcPosition], piece.elements());
  for (const auto &[key, group] : holders) {
    int64_t lo = INT64_MAX, hi = 0, biggest = 0;
    for (int64_t s : group) {
      lo = std::min(lo, sent[s]);
      hi = std::max(hi, sent[s]);
      biggest = std::max(biggest, largest[s]);
    }
    EXPECT_LE(hi - lo, biggest) << "holders of a block are unbalanced";
  }

  // The helpers agree with the pieces.
  size_t sentPieces = 0;
  for (int64_t s = 0; s < numSrc; ++s) {
    std::vector<TransferPiece> out = piecesSentBy(plan, s);
    int64_t elements = 0;
    for (const TransferPiece &piece : out) {
      EXPECT_EQ(piece.srcPosition, s);
      elements += piece.elements();
    }
    EXPECT_EQ(elements, sent[s]);
    sentPieces += out.size();
  }
  EXPECT_EQ(sentPieces, plan.pieces.size());
  int64_t pairTotal = 0;
  for (const auto &[pair, bytes] : transferBytesByPair(plan, 4)) {
    int64_t expect = 0;
    for (const TransferPiece &piece : plan.pieces)
      if (piece.srcPosition == pair.first && piece.dstPosition == pair.second)
        expect += 4 * piece.elements();
    EXPECT_EQ(bytes, expect);
    EXPECT_GT(bytes, 0);
    pairTotal += bytes;
  }
  EXPECT_EQ(pairTotal, 4 * total);

  // Deterministic.
  std::optional<TransferPlan> again =
      planTransfer(shape, src, srcMesh, dst, dstMesh);
  EXPECT_TRUE(again.has_value());
  if (again) {
    EXPECT_EQ(again->pieces.size(), plan.pieces.size());
    for (size_t i = 0; i < plan.pieces.size() && i < again->pieces.size(); ++i)
      EXPECT_TRUE(again->pieces[i].srcPosition == plan.pieces[i].srcPosition &&
                  again->pieces[i].offsets == plan.pieces[i].offsets);
  }
}

TransferPlan check(llvm::ArrayRef<int64_t> shape, const TensorSharding &src,
                   llvm::ArrayRef<int64_t> srcMesh, const TensorSharding &dst,
                   llvm::ArrayRef<int64_t> dstMesh) {
  TransferPlan plan;
  verify(shape, src, srcMesh, dst, dstMesh, plan);
  return plan;
}

/// A random sharding: each mesh axis goes to a random dimension (in random
/// order) or is left unused.
TensorSharding randomSharding(std::mt19937 &rng, unsigned rank,
                              unsigned meshRank) {
  TensorSharding s = TensorSharding::replicated(rank);
  std::vector<int> axes(meshRank);
  for (unsigned a = 0; a < meshRank; ++a)
    axes[a] = a;
  std::shuffle(axes.begin(), axes.end(), rng);
  for (int axis : axes) {
    int d = std::uniform_int_distribution<int>(-1, int(rank) - 1)(rng);
    if (d >= 0)
      s.dims[d].push_back(axis);
  }
  return s;
}

std::vector<int64_t> randomMesh(std::mt19937 &rng) {
  static const std::vector<std::vector<int64_t>> meshes = {
      {}, {1}, {2}, {3}, {4}, {5}, {2, 1}, {1, 2}, {2, 2}, {3, 2}, {2, 3},
      {4, 2}, {2, 2, 2}, {3, 1, 2}};
  return meshes[std::uniform_int_distribution<size_t>(0, meshes.size() - 1)(
      rng)];
}

} // namespace

TEST(Transfer, MatchesBruteForceOnRandomCases) {
  std::mt19937 rng(20240611);
  const int64_t sizes[] = {1, 2, 3, 4, 5, 6, 7, 9, 0};
  int multiPiece = 0, emptyBlocks = 0, spread = 0, differentMeshes = 0;
  for (int iter = 0; iter < 600; ++iter) {
    unsigned rank = std::uniform_int_distribution<unsigned>(0, 4)(rng);
    std::vector<int64_t> shape(rank);
    for (int64_t &n : shape)
      n = sizes[std::uniform_int_distribution<int>(0, iter % 10 ? 7 : 8)(rng)];
    std::vector<int64_t> srcMesh = randomMesh(rng), dstMesh = randomMesh(rng);
    TensorSharding src = randomSharding(rng, rank, srcMesh.size());
    TensorSharding dst = randomSharding(rng, rank, dstMesh.size());
    TransferPlan plan = check(shape, src, srcMesh, dst, dstMesh);
    if (HasFailure())
      return;
    // What the cases exercised.
    bool cut = false, empty = false;
    for (const TransferGrid &grid : plan.grids) {
      cut |= grid.numPieces > 1;
      empty |= grid.numPieces == 0;
    }
    std::set<int64_t> senders;
    for (const TransferPiece &piece : plan.pieces)
      senders.insert(piece.srcPosition);
    bool replicas = groupSize(srcMesh, src.usedAxes()) < product(srcMesh);
    multiPiece += cut;
    emptyBlocks += empty;
    spread += replicas && plan.pieces.size() > 1 &&
              senders.size() > size_t(groupSize(srcMesh, src.usedAxes()));
    differentMeshes += srcMesh != dstMesh;
  }
  EXPECT_GE(multiPiece, 150);
  EXPECT_GE(emptyBlocks, 30);
  EXPECT_GE(spread, 50);
  EXPECT_GE(differentMeshes, 400);
  std::printf("%d cut blocks, %d with empty blocks, %d spread over replicas, "
              "%d across different meshes\n",
              multiPiece, emptyBlocks, spread, differentMeshes);
}

TEST(Transfer, ColumnsOverTwoToRowsOverThree) {
  // A 7x5 matrix: columns over 2 ([3, 2]) to rows over 3 ([3, 3, 1]).
  TransferPlan plan =
      check({7, 5}, sharding({{}, {0}}), {2}, sharding({{0}, {}}), {3});
  ASSERT_EQ(plan.pieces.size(), 6u);
  const TransferGrid &g2 = plan.grids[2];
  EXPECT_EQ(g2.boundaries[0], (std::vector<int64_t>{6, 7}));
  EXPECT_EQ(g2.boundaries[1], (std::vector<int64_t>{0, 3, 5}));
  llvm::ArrayRef<TransferPiece> mine = piecesReceivedBy(plan, 2);
  ASSERT_EQ(mine.size(), 2u);
  EXPECT_EQ(mine[0].srcPosition, 0);
  EXPECT_EQ(mine[0].offsets, (std::vector<int64_t>{6, 0}));
  EXPECT_EQ(mine[0].sizes, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(mine[1].srcPosition, 1);
  EXPECT_EQ(mine[1].offsets, (std::vector<int64_t>{6, 3}));
  EXPECT_EQ(mine[1].sizes, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(mine[1].srcLocalOffsets, (std::vector<int64_t>{6, 0}));
  EXPECT_EQ(mine[1].dstLocalOffsets, (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(plan.totalElements, 35);
  EXPECT_EQ(plan.sentElements, (std::vector<int64_t>{21, 14}));
  std::map<std::pair<int64_t, int64_t>, int64_t> bytes =
      transferBytesByPair(plan, 2);
  EXPECT_EQ(bytes.size(), 6u);
  EXPECT_EQ((bytes[{0, 0}]), 2 * 9);
  EXPECT_EQ((bytes[{1, 2}]), 2 * 2);
}

TEST(Transfer, HandPickedCases) {
  TensorSharding none1 = TensorSharding::replicated(1);
  TensorSharding none2 = TensorSharding::replicated(2);
  // Replicated -> split and split -> replicated, 1-D and 2-D.
  check({7}, none1, {2}, sharding({{0}}), {3});
  check({7}, sharding({{0}}), {3}, none1, {2, 1});
  check({5, 7}, none2, {2, 2}, sharding({{1}, {0}}), {2, 1});
  check({5, 7}, sharding({{0}, {1}}), {2, 2}, none2, {4});
  // Split over two axes, both orders, to fewer and more devices.
  check({7, 5}, sharding({{0, 1}, {}}), {2, 2}, sharding({{0}, {}}), {3});
  check({7, 5}, sharding({{1, 0}, {}}), {2, 2}, sharding({{}, {0}}), {4});
  check({5}, sharding({{0}}), {4}, sharding({{0, 1}}), {2, 2});
  // Identical layouts on different meshes (and on equal-shaped ones).
  check({7, 5}, sharding({{0}, {}}), {3}, sharding({{0}, {}}), {3});
  check({7, 5}, sharding({{0}, {1}}), {2, 2}, sharding({{0}, {1}}), {2, 2});
  check({6, 4}, sharding({{0}, {}}), {2}, sharding({{0}, {}}), {4});
  // One-device meshes, size-1 dimensions, a 4-D tensor.
  check({1, 5}, none2, {1}, sharding({{0}, {1}}), {1, 4});
  check({5, 1, 7, 3}, sharding({{0}, {}, {1}, {}}), {2, 2},
        sharding({{}, {}, {0}, {1}}), {3, 2});
  check({3, 7, 5, 2}, sharding({{}, {0}, {}, {}}), {3},
        TensorSharding::replicated(4), {1});
  // A scalar and an empty tensor.
  check({}, TensorSharding::replicated(0), {2}, TensorSharding::replicated(0),
        {3});
  check({0, 5}, sharding({{0}, {}}), {2}, sharding({{}, {0}}), {3});
}

TEST(Transfer, EmptyBlocksReceiveNothing) {
  // 5 over 4: blocks of [2, 2, 1, 0]; 3 over 4: [1, 1, 1, 0].
  TransferPlan plan =
      check({5}, TensorSharding::replicated(1), {2}, sharding({{0}}), {4});
  EXPECT_EQ(plan.grids[3].numPieces, 0u);
  EXPECT_EQ(plan.grids[3].sizes, (std::vector<int64_t>{0}));
  EXPECT_EQ(plan.grids[3].boundaries[0], (std::vector<int64_t>{5}));
  EXPECT_TRUE(piecesReceivedBy(plan, 3).empty());
  // An empty source block is never a sender.
  plan = check({3}, sharding({{0}}), {4}, sharding({{0}}), {1});
  EXPECT_TRUE(piecesSentBy(plan, 3).empty());
  EXPECT_EQ(plan.pieces.size(), 3u);
}

TEST(Transfer, ReplicatedSourceSpreadsOverHolders) {
  // Rows over axis 0 of a 2x2 mesh, replicated over axis 1: every block has
  // two holders. Eight destinations split the columns: 16 pieces.
  TransferPlan plan = check({6, 8}, sharding({{0}, {}}), {2, 2},
                            sharding({{}, {0}}), {8});
  ASSERT_EQ(plan.pieces.size(), 16u);
  for (int64_t s = 0; s < 4; ++s) {
    EXPECT_EQ(piecesSentBy(plan, s).size(), 4u) << "source " << s;
    EXPECT_EQ(plan.sentElements[s], 12);
  }
  // Fully replicated over 3 devices to 3 replicated destinations: one whole
  // copy from each.
  plan = check({5, 7}, TensorSharding::replicated(2), {3},
               TensorSharding::replicated(2), {3});
  ASSERT_EQ(plan.pieces.size(), 3u);
  EXPECT_EQ(plan.pieces[0].srcPosition, 0);
  EXPECT_EQ(plan.pieces[1].srcPosition, 1);
  EXPECT_EQ(plan.pieces[2].srcPosition, 2);
  // Uneven pieces: 7 rows split over 4 destinations ([2, 2, 2, 1]) from two
  // replicas; the least-loaded holder gets each, ties to the lower position.
  plan = check({7}, TensorSharding::replicated(1), {2}, sharding({{0}}), {4});
  std::vector<int64_t> holders;
  for (const TransferPiece &piece : plan.pieces)
    holders.push_back(piece.srcPosition);
  EXPECT_EQ(holders, (std::vector<int64_t>{0, 1, 0, 1}));
  EXPECT_EQ(plan.sentElements, (std::vector<int64_t>{4, 3}));
  // No holder gets everything when many pieces come from replicas.
  plan = check({5, 7, 3}, sharding({{}, {1}, {}}), {3, 2},
               sharding({{0}, {}, {1}}), {2, 3});
  for (int64_t s = 0; s < 6; ++s)
    EXPECT_FALSE(piecesSentBy(plan, s).empty()) << "source " << s;
}

TEST(Transfer, Errors) {
  std::string error;
  auto fails = [&](llvm::ArrayRef<int64_t> shape, const TensorSharding &src,
                   llvm::ArrayRef<int64_t> srcMesh, const TensorSharding &dst,
                   llvm::ArrayRef<int64_t> dstMesh, const std::string &needle) {
    error.clear();
    EXPECT_FALSE(planTransfer(shape, src, srcMesh, dst, dstMesh, &error));
    EXPECT_NE(error.find(needle), std::string::npos) << error;
    // Without an error string it still fails, quietly.
    EXPECT_FALSE(planTransfer(shape, src, srcMesh, dst, dstMesh));
  };
  // Partial source or destination.
  fails({4, 4}, sharding({{0}, {}}, {1}), {2, 2}, sharding({{0}, {}}), {2},
        "source sharding [[0], []] partial [1] has pending partial sums");
  fails({4, 4}, sharding({{0}, {}}), {2}, sharding({{}, {}}, {0}), {2},
        "destination sharding [[], []] partial [0] has pending partial sums");
  // An axis outside the mesh.
  fails({4, 4}, sharding({{1}, {}}), {2}, sharding({{0}, {}}), {2},
        "source sharding [[1], []]: mesh axis 1 does not exist");
  fails({4, 4}, sharding({{0}, {}}), {2}, sharding({{}, {0}}), {},
        "destination sharding [[], [0]]: mesh axis 0 does not exist");
  fails({4}, sharding({{0, 0}}), {2, 2}, sharding({{}}), {2},
        "mesh axis 0 is used twice");
  // Rank mismatches with the shape.
  fails({4, 4, 4}, sharding({{0}, {}}), {2}, sharding({{}, {}, {}}), {2},
        "source sharding [[0], []]: the sharding has 2 dimension(s) but the "
        "tensor has rank 3");
  fails({4}, sharding({{0}}), {2}, sharding({{}, {0}}), {2},
        "destination sharding [[], [0]]: the sharding has 2 dimension(s)");
  // Bad sizes.
  fails({4, -1}, sharding({{0}, {}}), {2}, sharding({{}, {}}), {2},
        "the tensor shape [4, -1] has a negative size");
  fails({4}, sharding({{0}}), {2, 0}, sharding({{}}), {2},
        "the source mesh [2, 0] has an axis of size 0");
  fails({4}, sharding({{0}}), {2}, sharding({{}}), {-3},
        "the destination mesh [-3] has an axis of size -3");
}

TEST(Transfer, HelpersOutsideTheMesh) {
  std::optional<TransferPlan> plan = planTransfer(
      {4}, TensorSharding::replicated(1), {2}, sharding({{0}}), {2});
  ASSERT_TRUE(plan);
  EXPECT_TRUE(piecesReceivedBy(*plan, -1).empty());
  EXPECT_TRUE(piecesReceivedBy(*plan, 2).empty());
  EXPECT_TRUE(piecesSentBy(*plan, 5).empty());
  EXPECT_TRUE(transferBytesByPair(*plan, 0).size() == 2);
}
