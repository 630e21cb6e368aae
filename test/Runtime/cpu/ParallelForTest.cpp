//===- ParallelForTest.cpp - weft_rt_parallel_for's split ------------------===//
//
// The generated loop nests' entry point: every item runs exactly once, in
// contiguous ranges of balanced sizes, on at most the context's thread
// count, on one thread when the work is small or when already inside a
// parallel region, and the arena and weights words reach the body intact;
// and weft_rt_cpu_vector_bits, which picks each body's copy.
//
//===----------------------------------------------------------------------===//

#include "KernelTestSupport.h"

#include <omp.h>

#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

using weft::rt::test::KernelTest;

namespace {

/// What the body saw: one range per call, and the words it was given.
struct Recorder {
  std::mutex lock;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  std::vector<int> threads;
  bool wordsIntact = true;
};

Recorder *current = nullptr;

int8_t arenaBytes[64], weightBytes[64];

void recordRange(weft_rt_context *, int8_t *arenaAllocated,
                 int8_t *arenaAligned, int64_t arenaOffset, int64_t arenaSize,
                 int64_t arenaStride, int8_t *weightsAllocated,
                 int8_t *weightsAligned, int64_t weightsOffset,
                 int64_t weightsSize, int64_t weightsStride, int64_t begin,
                 int64_t end) {
  std::lock_guard<std::mutex> guard(current->lock);
  current->ranges.emplace_back(begin, end);
  current->threads.push_back(omp_get_thread_num());
  current->wordsIntact &=
      arenaAllocated == arenaBytes && arenaAligned == arenaBytes + 8 &&
      arenaOffset == 3 && arenaSize == 56 && arenaStride == 1 &&
      weightsAllocated == weightBytes && weightsAligned == weightBytes &&
      weightsOffset == 0 && weightsSize == 64 && weightsStride == 1;
}

/// Runs [0, count) and returns the ranges in order.
std::vector<std::pair<int64_t, int64_t>>
run(weft_rt_context *ctx, int64_t count, int64_t workPerItem,
    Recorder &recorder) {
  current = &recorder;
  weft_rt_parallel_for(ctx, count, workPerItem, recordRange, arenaBytes,
                       arenaBytes + 8, 3, 56, 1, weightBytes, weightBytes, 0,
                       64, 1);
  current = nullptr;
  std::vector<std::pair<int64_t, int64_t>> ranges = recorder.ranges;
  std::sort(ranges.begin(), ranges.end());
  return ranges;
}

/// The ranges cover [0, count) once, without gaps or overlaps.
void expectCover(const std::vector<std::pair<int64_t, int64_t>> &ranges,
                 int64_t count) {
  int64_t next = 0;
  for (auto [begin, end] : ranges) {
    EXPECT_EQ(begin, next);
    EXPECT_LT(begin, end);
    next = end;
  }
  EXPECT_EQ(next, count);
}

class ParallelForTest : public KernelTest {};

TEST_P(ParallelForTest, LargeWorkUsesEveryThreadInBalancedRanges) {
  Recorder recorder;
  auto ranges = run(ctx, 1001, 1 << 12, recorder);
  expectCover(ranges, 1001);
  EXPECT_EQ(ranges.size(), static_cast<size_t>(GetParam()));
  for (auto [begin, end] : ranges)
    EXPECT_LE(std::abs((end - begin) - 1001 / GetParam()), 1);
  EXPECT_TRUE(recorder.wordsIntact);
}

TEST_P(ParallelForTest, SmallWorkStaysOnOneThread) {
  Recorder recorder;
  auto ranges = run(ctx, 64, 16, recorder);
  ASSERT_EQ(ranges.size(), 1u);
  EXPECT_EQ(ranges[0].first, 0);
  EXPECT_EQ(ranges[0].second, 64);
  EXPECT_EQ(recorder.threads[0], 0);
}

TEST_P(ParallelForTest, NeverMoreRangesThanItems) {
  Recorder recorder;
  auto ranges = run(ctx, 1, 1 << 30, recorder);
  ASSERT_EQ(ranges.size(), 1u);
  expectCover(ranges, 1);
}

TEST_P(ParallelForTest, NothingToDo) {
  Recorder recorder;
  EXPECT_TRUE(run(ctx, 0, 1 << 20, recorder).empty());
}

TEST_P(ParallelForTest, WorkThatOverflowsIsLarge) {
  Recorder recorder;
  auto ranges = run(ctx, int64_t(1) << 40, int64_t(1) << 40, recorder);
  EXPECT_EQ(ranges.size(), static_cast<size_t>(GetParam()));
  expectCover(ranges, int64_t(1) << 40);
}

TEST_P(ParallelForTest, InsideAParallelRegionEachCallerRunsAll) {
  std::vector<Recorder> recorders(2);
  std::vector<std::vector<std::pair<int64_t, int64_t>>> seen(2);
#pragma omp parallel num_threads(2)
  {
    int t = omp_get_thread_num();
    // `current` is shared: record serially, one caller at a time.
#pragma omp critical(parallelForTest)
    seen[t] = run(ctx, 500, 1 << 12, recorders[t]);
  }
  for (const auto &ranges : seen) {
    ASSERT_EQ(ranges.size(), 1u);
    expectCover(ranges, 500);
  }
}

INSTANTIATE_TEST_SUITE_P(Threads, ParallelForTest, ::testing::Values(1, 2));

// The answer a program's loop dispatchers act on: 512 only where every
// AVX-512 subset that x86-64-v4 code uses is there, and the same each time.
TEST(CpuVectorBits, MatchesTheCpusFeatures) {
  const int32_t bits = weft_rt_cpu_vector_bits();
  EXPECT_EQ(bits, weft_rt_cpu_vector_bits());
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  __builtin_cpu_init();
  const bool v4 = __builtin_cpu_supports("avx512f") &&
                  __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512cd") &&
                  __builtin_cpu_supports("avx512dq") &&
                  __builtin_cpu_supports("avx512vl");
  const bool v3 =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  EXPECT_EQ(bits, v4 ? 512 : v3 ? 256 : 128);
#else
  EXPECT_EQ(bits, 128);
#endif
}

} // namespace
