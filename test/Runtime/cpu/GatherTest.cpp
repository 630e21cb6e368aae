//===- GatherTest.cpp - weft_rt_cpu_gather and gather_elements ------------===//
//
// Gathers with negative and i32 indices against direct indexing, and
// out-of-range indices that must fail before anything is written.
//
//===----------------------------------------------------------------------===//

#include "KernelTestSupport.h"

using namespace weft::rt::test;

namespace {
class GatherTest : public KernelTest {
protected:
  template <typename T, typename I>
  void checkGather(int64_t outer, int64_t axis, int64_t inner,
                   const std::vector<I> &indices) {
    auto x = randomValues<T>(outer * axis * inner, 91, -100, 100);
    int64_t count = indices.size();
    std::vector<T> out(outer * count * inner), expected(out.size());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < count; ++i) {
        int64_t index = indices[i] < 0 ? indices[i] + axis : indices[i];
        for (int64_t j = 0; j < inner; ++j)
          expected[(o * count + i) * inner + j] =
              x[(o * axis + index) * inner + j];
      }
    Params p;
    p.add({static_cast<int64_t>(sizeof(T)),
           sizeof(I) == 8 ? WEFT_RT_I64 : WEFT_RT_I32, outer, axis, inner,
           count});
    ASSERT_EQ(
        weft_rt_cpu_gather(ctx, p.data(), x.data(), indices.data(), out.data()),
        WEFT_RT_OK)
        << error();
    EXPECT_TRUE(allEqual(out, expected));
  }

  template <typename T, typename I>
  void checkGatherElements(const std::vector<int64_t> &dims,
                           const std::vector<int64_t> &indexDims,
                           int64_t axis) {
    int64_t rank = dims.size(), count = product(indexDims);
    auto x = randomValues<T>(product(dims), 92, -100, 100);
    // Indices in [-size, size).
    auto indices = randomValues<I>(count, 93, -dims[axis], dims[axis] - 1);
    auto strides = stridesOf(dims);
    std::vector<T> out(count), expected(count);
    for (int64_t i = 0; i < count; ++i) {
      auto index = unravel(i, indexDims);
      index[axis] = indices[i] < 0 ? indices[i] + dims[axis] : indices[i];
      int64_t offset = 0;
      for (int64_t d = 0; d < rank; ++d)
        offset += index[d] * strides[d];
      expected[i] = x[offset];
    }
    Params p;
    p.add({static_cast<int64_t>(sizeof(T)),
           sizeof(I) == 8 ? WEFT_RT_I64 : WEFT_RT_I32, rank, axis})
        .add(dims)
        .add(indexDims);
    ASSERT_EQ(weft_rt_cpu_gather_elements(ctx, p.data(), x.data(),
                                          indices.data(), out.data()),
              WEFT_RT_OK)
        << error();
    EXPECT_TRUE(allEqual(out, expected));
  }
};
} // namespace

// Tests Gather along the first, a middle and the last axis, with negative
// indices and both index dtypes.
TEST_P(GatherTest, Gather) {
  checkGather<float, int64_t>(1, 30, 16, {0, 29, -1, -30, 5, 5});
  checkGather<float, int32_t>(3, 7, 4, {6, -7, 2});
  checkGather<int64_t, int32_t>(5, 9, 1, {-1, 0, 8, 3});
  checkGather<uint8_t, int64_t>(2, 4, 3, {3, -4});
  checkGather<float, int64_t>(1, 512, 128, std::vector<int64_t>(300, -2));
  checkGather<float, int64_t>(4, 5, 6, {});
}

// Tests GatherElements on each axis, with indices smaller than the input.
TEST_P(GatherTest, GatherElements) {
  checkGatherElements<float, int64_t>({3, 4}, {2, 4}, 0);
  checkGatherElements<float, int32_t>({3, 4}, {3, 6}, 1);
  checkGatherElements<int32_t, int64_t>({2, 3, 4}, {2, 5, 3}, 1);
  checkGatherElements<uint16_t, int32_t>({2, 3, 4}, {1, 2, 4}, 2);
  checkGatherElements<double, int64_t>({5}, {9}, 0);
  checkGatherElements<float, int64_t>({64, 300}, {64, 300}, 0);
}

// Tests that out-of-range indices fail naming the index and the axis size,
// and leave the output alone.
TEST_P(GatherTest, OutOfRangeIndices) {
  std::vector<float> x(40), out(40, 3.0f);
  std::vector<int64_t> indices = {1, 10, 2};
  Params p;
  p.add({4, WEFT_RT_I64, 4, 10, 1, 3});
  EXPECT_EQ(
      weft_rt_cpu_gather(ctx, p.data(), x.data(), indices.data(), out.data()),
      WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(error().find("index 10 at position 1 is out of range for an axis "
                         "of size 10"),
            std::string::npos)
      << error();
  EXPECT_EQ(out[0], 3.0f);
  std::vector<int32_t> narrow = {-11};
  Params p32;
  p32.add({4, WEFT_RT_I32, 4, 10, 1, 1});
  EXPECT_EQ(
      weft_rt_cpu_gather(ctx, p32.data(), x.data(), narrow.data(), out.data()),
      WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(error().find("index -11"), std::string::npos);
  Params emptyAxis;
  emptyAxis.add({4, WEFT_RT_I64, 4, 0, 1, 1});
  EXPECT_EQ(weft_rt_cpu_gather(ctx, emptyAxis.data(), x.data(), indices.data(),
                               out.data()),
            WEFT_RT_INVALID_ARGUMENT);
  std::vector<int64_t> elementIndices = {0, 1, 4, 0};
  Params elements;
  elements.add({4, WEFT_RT_I64, 2, 1, 2, 4, 2, 2});
  EXPECT_EQ(weft_rt_cpu_gather_elements(ctx, elements.data(), x.data(),
                                        elementIndices.data(), out.data()),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(error().find("index 4 at position 2"), std::string::npos);
}

// Tests that bad blocks fail with a message.
TEST_P(GatherTest, Errors) {
  std::vector<float> x(40), out(40);
  std::vector<int64_t> indices = {0};
  Params floatIndices;
  floatIndices.add({4, WEFT_RT_F32, 1, 4, 1, 1});
  EXPECT_EQ(weft_rt_cpu_gather(ctx, floatIndices.data(), x.data(),
                               indices.data(), out.data()),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(error().find("not i32 or i64"), std::string::npos);
  Params badAxis;
  badAxis.add({4, WEFT_RT_I64, 2, 2, 2, 2, 1, 1});
  EXPECT_EQ(weft_rt_cpu_gather_elements(ctx, badAxis.data(), x.data(),
                                        indices.data(), out.data()),
            WEFT_RT_INVALID_ARGUMENT);
  Params widerIndices;
  widerIndices.add({4, WEFT_RT_I64, 2, 0, 2, 2, 1, 3});
  EXPECT_EQ(weft_rt_cpu_gather_elements(ctx, widerIndices.data(), x.data(),
                                        indices.data(), out.data()),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(error().find("the input only 2"), std::string::npos);
  Params nullIndices;
  nullIndices.add({4, WEFT_RT_I64, 1, 4, 1, 1});
  EXPECT_EQ(weft_rt_cpu_gather(ctx, nullIndices.data(), x.data(), nullptr,
                               out.data()),
            WEFT_RT_INVALID_ARGUMENT);
}

WEFT_KERNEL_TEST_THREADS(GatherTest);
