//===- LayerClusteringTest.cpp - Layers aligned with repeated blocks ------===//

#include "weft/Plan/LayerClustering.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

using namespace weft::plan;

namespace {

/// A GPT-like sequence: `prefix` unique ops, `blocks` copies of a block of
/// `period` ops (hashes 1 .. period), then `suffix` unique ops whose first
/// is the same op as a block's first (a final LayerNorm is one). A cut
/// between blocks crosses 1 byte, inside a block 2.
struct Model {
  std::vector<uint64_t> hashes;
  std::vector<double> costs, cutBytes;
};

Model gptLike(int64_t prefix, int64_t blocks, int64_t period,
              int64_t suffix) {
  Model m;
  for (int64_t i = 0; i < prefix; ++i)
    m.hashes.push_back(1000 + i);
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t i = 0; i < period; ++i)
      m.hashes.push_back(1 + i);
  for (int64_t i = 0; i < suffix; ++i)
    m.hashes.push_back(i == 0 ? 1 : 2000 + i);
  int64_t n = m.hashes.size();
  m.costs.assign(n, 1.0);
  m.cutBytes.assign(n + 1, 2.0);
  for (int64_t b = 0; b <= blocks; ++b)
    m.cutBytes[prefix + b * period] = 1.0;
  m.cutBytes[0] = m.cutBytes[n] = 0;
  return m;
}

/// The most ops any run of >= 2 copies of a block of >= minBlockOps ops
/// covers, by trying every block length, start and count.
int64_t bruteForceCover(const std::vector<uint64_t> &h, int64_t minBlockOps) {
  int64_t n = h.size(), best = 0;
  for (int64_t p = minBlockOps; 2 * p <= n; ++p)
    for (int64_t s = 0; s + 2 * p <= n; ++s) {
      int64_t count = 1;
      while (s + (count + 1) * p <= n) {
        bool same = true;
        for (int64_t i = 0; i < p && same; ++i)
          same = h[s + count * p + i] == h[s + i];
        if (!same)
          break;
        ++count;
      }
      if (count >= 2)
        best = std::max(best, count * p);
    }
  return best;
}

} // namespace

// Tests that a transformer's blocks are found with their cut at the block
// boundary, whatever op a stretch of equal ops starts with.
TEST(LayerClustering, FindsTheBlocksOfAGptLikeModel) {
  Model m = gptLike(/*prefix=*/2, /*blocks=*/6, /*period=*/5, /*suffix=*/2);
  RepeatedBlocks run = findRepeatedBlocks(m.hashes, m.cutBytes, 0,
                                          m.hashes.size(), 4);
  EXPECT_EQ(run, (RepeatedBlocks{2, 5, 6}));
}

// Tests that every block becomes the same layers, cut at the same places,
// and the ops around them get layers of about a block part's time.
TEST(LayerClustering, BlocksBecomeAlignedLayers) {
  Model m = gptLike(2, 6, 5, 2);
  LayerClusterOptions twelve;
  twelve.minLayers = 12;
  LayerClusters layers =
      clusterRepeatedLayers(m.hashes, m.costs, m.cutBytes, twelve);
  ASSERT_EQ(layers.repeats.size(), 1u);
  // 12 layers wanted over 6 blocks: 2 parts per block (3 + 2 ops).
  EXPECT_EQ(layers.partsPerBlock, 2);
  std::vector<int64_t> expected = {0};
  for (int64_t b = 0; b < 6; ++b) {
    expected.push_back(2 + 5 * b);
    expected.push_back(2 + 5 * b + 3);
  }
  expected.push_back(32);
  expected.push_back(34);
  EXPECT_EQ(layers.firstOp, expected);

  // 48 blocks: one layer each.
  Model big = gptLike(2, 48, 5, 2);
  LayerClusters one = clusterRepeatedLayers(big.hashes, big.costs,
                                            big.cutBytes);
  EXPECT_EQ(one.partsPerBlock, 1);
  EXPECT_EQ(one.firstOp.size(), 48u + 3u);
  for (int64_t b = 0; b < 48; ++b)
    EXPECT_EQ(one.firstOp[1 + b], 2 + 5 * b);

  // 96 blocks: two a layer, 48 layers of blocks.
  Model huge = gptLike(2, 96, 5, 2);
  LayerClusters two = clusterRepeatedLayers(huge.hashes, huge.costs,
                                            huge.cutBytes);
  EXPECT_EQ(two.blocksPerLayer, 2);
  EXPECT_EQ(two.firstOp.size(), 48u + 3u);
  for (int64_t b = 0; b < 48; ++b)
    EXPECT_EQ(two.firstOp[1 + b], 2 + 10 * b);
}

// Tests that runs on both sides of the longest one are found too (a
// ResNet's stages), and that nothing repeating gives no layers.
TEST(LayerClustering, SeveralRunsAndNone) {
  std::vector<uint64_t> hashes = {90, 91};
  for (int b = 0; b < 3; ++b)
    hashes.insert(hashes.end(), {1, 2, 3, 4});
  hashes.push_back(92);
  for (int b = 0; b < 5; ++b)
    hashes.insert(hashes.end(), {5, 6, 7, 8, 9});
  hashes.push_back(93);
  std::vector<double> costs(hashes.size(), 1.0);
  std::vector<double> cutBytes(hashes.size() + 1, 1.0);
  LayerClusters layers = clusterRepeatedLayers(hashes, costs, cutBytes);
  ASSERT_EQ(layers.repeats.size(), 2u);
  EXPECT_EQ(layers.repeats[0].period, 4);
  EXPECT_EQ(layers.repeats[0].count, 3);
  EXPECT_EQ(layers.repeats[1].period, 5);
  EXPECT_EQ(layers.repeats[1].count, 5);
  EXPECT_EQ(layers.firstOp.front(), 0);
  EXPECT_EQ(layers.firstOp.back(), static_cast<int64_t>(hashes.size()));
  for (size_t l = 0; l + 1 < layers.firstOp.size(); ++l)
    EXPECT_LT(layers.firstOp[l], layers.firstOp[l + 1]);

  std::vector<uint64_t> unique = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_TRUE(clusterRepeatedLayers(unique, std::vector<double>(10, 1.0),
                                    std::vector<double>(11, 1.0))
                  .firstOp.empty());
}

// Tests that the run found is really periodic and, when every cut costs
// the same, covers as many ops as the best run brute force finds.
TEST(LayerClustering, LongestRunMatchesBruteForce) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    int64_t n = std::uniform_int_distribution<int64_t>(2, 24)(rng);
    int64_t letters = std::uniform_int_distribution<int64_t>(1, 3)(rng);
    std::vector<uint64_t> h(n);
    for (uint64_t &x : h)
      x = std::uniform_int_distribution<uint64_t>(0, letters - 1)(rng);
    int64_t minBlock = std::uniform_int_distribution<int64_t>(1, 3)(rng);
    std::vector<double> cutBytes(n + 1, 1.0);
    RepeatedBlocks run = findRepeatedBlocks(h, cutBytes, 0, n, minBlock);
    EXPECT_EQ(run.period * run.count, bruteForceCover(h, minBlock))
        << "trial " << trial;
    if (run.count == 0)
      continue;
    EXPECT_GE(run.count, 2);
    EXPECT_GE(run.period, minBlock);
    EXPECT_LE(run.end(), n);
    for (int64_t k = 1; k < run.count; ++k)
      for (int64_t i = 0; i < run.period; ++i)
        EXPECT_EQ(h[run.first + k * run.period + i], h[run.first + i]);
  }
}
