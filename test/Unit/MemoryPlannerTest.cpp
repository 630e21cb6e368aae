//===- MemoryPlannerTest.cpp - Tests of the arena memory planner ----------===//

#include "weft/Codegen/MemoryPlanner.h"

#include "gtest/gtest.h"

#include <random>

using namespace mlir::weft;

namespace {

/// True if no two buffers live at the same step overlap in the arena.
bool noOverlap(const std::vector<BufferLifetime> &buffers,
               const MemoryPlan &plan, int64_t alignment) {
  for (size_t i = 0; i < buffers.size(); ++i)
    for (size_t j = i + 1; j < buffers.size(); ++j) {
      const BufferLifetime &a = buffers[i], &b = buffers[j];
      if (a.lastUse < b.firstUse || b.lastUse < a.firstUse)
        continue;
      int64_t aEnd = plan.offsets[i] + std::max<int64_t>(a.bytes, 1);
      int64_t bEnd = plan.offsets[j] + std::max<int64_t>(b.bytes, 1);
      if (plan.offsets[i] < bEnd && plan.offsets[j] < aEnd)
        return false;
    }
  for (int64_t offset : plan.offsets)
    if (offset % alignment != 0)
      return false;
  return true;
}

TEST(MemoryPlanner, EmptyPlanHasNoArena) {
  MemoryPlan plan = planMemory({}, 64);
  EXPECT_EQ(plan.peakBytes, 0);
  EXPECT_TRUE(plan.offsets.empty());
}

TEST(MemoryPlanner, ChainReusesDeadBuffers) {
  // a -> b -> c -> d: each buffer dies when the next but one is born.
  std::vector<BufferLifetime> chain = {
      {1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}, {1000, 3, 4}};
  MemoryPlan plan = planMemory(chain, 64);
  EXPECT_TRUE(noOverlap(chain, plan, 64));
  EXPECT_EQ(plan.peakBytes, 2 * 1024);
  EXPECT_EQ(plan.liveLowerBound, 2 * 1024);
}

TEST(MemoryPlanner, OverlappingBuffersGetDistinctPlaces) {
  std::vector<BufferLifetime> all = {{100, 0, 5}, {200, 0, 5}, {300, 0, 5}};
  MemoryPlan plan = planMemory(all, 64);
  EXPECT_TRUE(noOverlap(all, plan, 64));
  EXPECT_EQ(plan.peakBytes, 128 + 256 + 320);
}

TEST(MemoryPlanner, SmallBufferFillsGapLeftByLargeOnes) {
  // Two big buffers at different times and a small one overlapping both:
  // the small one must sit beside them, the big ones share a place.
  std::vector<BufferLifetime> buffers = {
      {4096, 0, 1}, {4096, 2, 3}, {64, 0, 3}};
  MemoryPlan plan = planMemory(buffers, 64);
  EXPECT_TRUE(noOverlap(buffers, plan, 64));
  EXPECT_EQ(plan.offsets[0], plan.offsets[1]);
  EXPECT_EQ(plan.peakBytes, 4096 + 64);
}

TEST(MemoryPlanner, ZeroByteBuffersStillGetAPlace) {
  std::vector<BufferLifetime> buffers = {{0, 0, 1}, {0, 0, 1}};
  MemoryPlan plan = planMemory(buffers, 64);
  EXPECT_TRUE(noOverlap(buffers, plan, 64));
  EXPECT_NE(plan.offsets[0], plan.offsets[1]);
}

TEST(MemoryPlanner, IsDeterministic) {
  std::vector<BufferLifetime> buffers = {
      {512, 0, 2}, {512, 1, 3}, {512, 2, 4}, {512, 0, 4}};
  MemoryPlan a = planMemory(buffers, 64), b = planMemory(buffers, 64);
  EXPECT_EQ(a.offsets, b.offsets);
}

TEST(MemoryPlanner, RandomGraphsNeverOverlapAndStayNearTheBound) {
  std::mt19937 rng(42);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<BufferLifetime> buffers;
    int n = 1 + rng() % 40;
    for (int i = 0; i < n; ++i) {
      int64_t first = rng() % 50;
      buffers.push_back({static_cast<int64_t>(rng() % 100000), first,
                         first + static_cast<int64_t>(rng() % 10)});
    }
    MemoryPlan plan = planMemory(buffers, 64);
    ASSERT_TRUE(noOverlap(buffers, plan, 64)) << "trial " << trial;
    EXPECT_GE(plan.peakBytes, plan.liveLowerBound);
    // Greedy by size is within a small factor of the bound in practice.
    EXPECT_LE(plan.peakBytes, 2 * plan.liveLowerBound + 64) << "trial " << trial;
  }
}

} // namespace
