//===- DataMovementTest.cpp - transpose, slice, pad, tile, trilu, copy2d --===//
//
// The element-moving kernels against index arithmetic written out per
// element, over element sizes 1 to 16 bytes.
//
//===----------------------------------------------------------------------===//

#include "KernelTestSupport.h"

#include <algorithm>
#include <numeric>

using namespace weft::rt::test;

namespace {
/// Distinct values 0, 1, 2, ... of type T, so that any misplaced element
/// shows.
template <typename T> std::vector<T> iota(int64_t count) {
  std::vector<T> values(count);
  for (int64_t i = 0; i < count; ++i)
    values[i] = static_cast<T>(i * 7 + 3);
  return values;
}

/// A 16-byte element for the widest copies.
struct Wide {
  int64_t low, high;
};
int64_t operator+(const Wide &w) { return w.low; }
template <> std::vector<Wide> iota<Wide>(int64_t count) {
  std::vector<Wide> values(count);
  for (int64_t i = 0; i < count; ++i)
    values[i] = {i, ~i};
  return values;
}

class DataMovementTest : public KernelTest {
protected:
  template <typename T>
  void checkTranspose(const std::vector<int64_t> &dims,
                      const std::vector<int64_t> &perm) {
    int64_t rank = dims.size(), count = product(dims);
    auto x = iota<T>(count);
    std::vector<int64_t> outDims(rank);
    for (int64_t i = 0; i < rank; ++i)
      outDims[i] = dims[perm[i]];
    auto inStrides = stridesOf(dims);
    std::vector<T> expected(count), out(count);
    for (int64_t o = 0; o < count; ++o) {
      auto index = unravel(o, outDims);
      int64_t offset = 0;
      for (int64_t i = 0; i < rank; ++i)
        offset += index[i] * inStrides[perm[i]];
      expected[o] = x[offset];
    }
    Params p;
    p.add({static_cast<int64_t>(sizeof(T)), rank}).add(dims).add(perm);
    ASSERT_EQ(weft_rt_cpu_transpose(ctx, p.data(), x.data(), out.data()),
              WEFT_RT_OK)
        << error();
    EXPECT_TRUE(allEqual(out, expected))
        << ::testing::PrintToString(dims) << " perm "
        << ::testing::PrintToString(perm);
  }

  template <typename T>
  void checkSlice(const std::vector<int64_t> &dims,
                  const std::vector<int64_t> &starts,
                  const std::vector<int64_t> &steps,
                  const std::vector<int64_t> &outDims) {
    int64_t rank = dims.size();
    auto x = iota<T>(product(dims));
    auto inStrides = stridesOf(dims);
    std::vector<T> expected(product(outDims)), out(expected.size());
    for (int64_t o = 0; o < product(outDims); ++o) {
      auto index = unravel(o, outDims);
      int64_t offset = 0;
      for (int64_t d = 0; d < rank; ++d)
        offset += (starts[d] + index[d] * steps[d]) * inStrides[d];
      expected[o] = x[offset];
    }
    Params p;
    p.add({static_cast<int64_t>(sizeof(T)), rank})
        .add(dims)
        .add(outDims)
        .add(starts)
        .add(steps);
    ASSERT_EQ(weft_rt_cpu_slice(ctx, p.data(), x.data(), out.data()),
              WEFT_RT_OK)
        << error();
    EXPECT_TRUE(allEqual(out, expected));
  }

  /// The input index of padded index i: mirrored, wrapped or clamped step
  /// by step, as numpy.pad describes the modes.
  static int64_t padReference(int mode, int64_t i, int64_t n) {
    switch (mode) {
    case 1:
      while (i < 0 || i >= n) {
        if (n == 1)
          return 0;
        i = i < 0 ? -i : 2 * (n - 1) - i;
      }
      return i;
    case 2:
      return std::clamp<int64_t>(i, 0, n - 1);
    case 3:
      while (i < 0)
        i += n;
      while (i >= n)
        i -= n;
      return i;
    default:
      return i >= 0 && i < n ? i : -1;
    }
  }

  template <typename T>
  void checkPad(int mode, const std::vector<int64_t> &dims,
                const std::vector<int64_t> &pads, const T *value) {
    int64_t rank = dims.size();
    auto x = iota<T>(product(dims));
    std::vector<int64_t> outDims(rank);
    for (int64_t d = 0; d < rank; ++d)
      outDims[d] = dims[d] + pads[d] + pads[rank + d];
    auto inStrides = stridesOf(dims);
    std::vector<T> expected(product(outDims)), out(expected.size());
    for (int64_t o = 0; o < product(outDims); ++o) {
      auto index = unravel(o, outDims);
      int64_t offset = 0;
      bool constant = false;
      for (int64_t d = 0; d < rank; ++d) {
        int64_t i = padReference(mode, index[d] - pads[d], dims[d]);
        constant |= i < 0;
        offset += i * inStrides[d];
      }
      expected[o] = constant ? (value ? *value : T{}) : x[offset];
    }
    Params p;
    p.add({static_cast<int64_t>(sizeof(T)), mode, rank}).add(dims).add(pads);
    ASSERT_EQ(weft_rt_cpu_pad(ctx, p.data(), x.data(), value, out.data()),
              WEFT_RT_OK)
        << error();
    EXPECT_TRUE(allEqual(out, expected))
        << "mode " << mode << " pads " << ::testing::PrintToString(pads);
  }

  template <typename T>
  void checkTile(const std::vector<int64_t> &dims,
                 const std::vector<int64_t> &repeats) {
    int64_t rank = dims.size();
    auto x = iota<T>(product(dims));
    std::vector<int64_t> outDims(rank);
    for (int64_t d = 0; d < rank; ++d)
      outDims[d] = dims[d] * repeats[d];
    auto inStrides = stridesOf(dims);
    std::vector<T> expected(product(outDims)), out(expected.size());
    for (int64_t o = 0; o < product(outDims); ++o) {
      auto index = unravel(o, outDims);
      int64_t offset = 0;
      for (int64_t d = 0; d < rank; ++d)
        offset += (index[d] % dims[d]) * inStrides[d];
      expected[o] = x[offset];
    }
    Params p;
    p.add({static_cast<int64_t>(sizeof(T)), rank}).add(dims).add(repeats);
    ASSERT_EQ(weft_rt_cpu_tile(ctx, p.data(), x.data(), out.data()), WEFT_RT_OK)
        << error();
    EXPECT_TRUE(allEqual(out, expected));
  }
};
} // namespace

// Tests every permutation of a rank-4 tensor and BERT's attention
// transposes.
TEST_P(DataMovementTest, TransposeAllPermutations) {
  std::vector<int64_t> perm = {0, 1, 2, 3};
  do {
    checkTranspose<int32_t>({2, 3, 4, 5}, perm);
    checkTranspose<int32_t>({1, 3, 1, 4}, perm);
  } while (std::next_permutation(perm.begin(), perm.end()));
  checkTranspose<float>({128, 2, 64}, {1, 0, 2});
  checkTranspose<float>({128, 2, 64}, {1, 2, 0});
}

// Tests element sizes, a large tiled 2-D transpose and degenerate ranks.
TEST_P(DataMovementTest, TransposeSizes) {
  checkTranspose<uint8_t>({5, 7, 3}, {2, 0, 1});
  checkTranspose<uint16_t>({5, 7, 3}, {2, 0, 1});
  checkTranspose<int64_t>({5, 7, 3}, {1, 2, 0});
  checkTranspose<Wide>({5, 7, 3}, {2, 1, 0});
  checkTranspose<float>({300, 257}, {1, 0});
  checkTranspose<float>({3, 300, 257}, {2, 0, 1});
  checkTranspose<float>({}, {});
  checkTranspose<float>({6}, {0});
  checkTranspose<float>({0, 3}, {1, 0});
}

// Tests slices with steps of either sign, starting at either end.
TEST_P(DataMovementTest, Slice) {
  checkSlice<int32_t>({10}, {9}, {-1}, {10});
  checkSlice<int32_t>({4, 9}, {3, 1}, {-2, 3}, {2, 3});
  checkSlice<uint8_t>({5, 6, 7}, {1, 5, 6}, {2, -1, -3}, {2, 6, 3});
  checkSlice<int64_t>({3, 4}, {0, 0}, {1, 1}, {3, 4});
  checkSlice<Wide>({6, 6}, {5, 0}, {-5, 5}, {2, 2});
  checkSlice<float>({2, 200, 300}, {0, 199, 1}, {1, -1, 1}, {2, 200, 299});
  checkSlice<float>({}, {}, {}, {});
  checkSlice<float>({4, 5}, {0, 0}, {1, 1}, {0, 5});
}

// Tests the four pad modes with pads of both signs.
TEST_P(DataMovementTest, PadModes) {
  int32_t value = -5;
  for (int mode = 0; mode < 4; ++mode) {
    checkPad<int32_t>(mode, {3, 4}, {1, 2, 2, 1}, &value);
    checkPad<int32_t>(mode, {3, 4}, {0, 3, 0, 3}, &value);
    checkPad<int32_t>(mode, {5, 6}, {-1, 2, 1, -3}, &value);
    checkPad<uint8_t>(mode, {2, 3, 4}, {1, 0, 2, 0, 1, 1}, nullptr);
    checkPad<Wide>(mode, {4, 3}, {2, 2, 1, 2}, nullptr);
    // Pads wider than the dimension repeat the mirror or the wrap.
    checkPad<int64_t>(mode, {3}, {7, 5}, nullptr);
    checkPad<int64_t>(mode, {1, 3}, {2, 5, 3, 6}, nullptr);
    checkPad<float>(mode, {64, 300}, {1, 1, 1, 1}, nullptr);
  }
  checkPad<int32_t>(0, {3, 4}, {-3, 0, 0, 0}, nullptr);
  checkPad<int32_t>(0, {0, 4}, {1, 1, 1, 1}, &value);
}

// Tests the reflect example of the ONNX Pad documentation.
TEST_P(DataMovementTest, PadOnnxExample) {
  std::vector<float> x = {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f}, out(12);
  Params p;
  p.add({4, 1, 2, 3, 2, 0, 2, 0, 0});
  ASSERT_EQ(weft_rt_cpu_pad(ctx, p.data(), x.data(), nullptr, out.data()),
            WEFT_RT_OK);
  EXPECT_TRUE(allClose(
      out, {1.0, 1.2, 1.0, 1.2, 2.3, 3.4, 2.3, 3.4, 4.5, 5.7, 4.5, 5.7}));
}

// Tests Tile with repeats of 0, 1 and more.
TEST_P(DataMovementTest, Tile) {
  checkTile<int32_t>({2, 3}, {2, 3});
  checkTile<uint8_t>({2, 1, 3}, {1, 4, 2});
  checkTile<Wide>({3}, {3});
  checkTile<float>({2, 3}, {0, 2});
  checkTile<float>({}, {});
  checkTile<float>({64, 100}, {3, 4});
}

// Tests Trilu upper and lower for diagonals inside and beyond the matrix.
TEST_P(DataMovementTest, Trilu) {
  for (int upper : {0, 1})
    for (int64_t k : {int64_t(-4), int64_t(-1), int64_t(0), int64_t(2),
                      int64_t(7), INT64_MAX, INT64_MIN}) {
      int64_t batch = 2, rows = 4, cols = 5;
      auto x = iota<int64_t>(batch * rows * cols);
      std::vector<int64_t> out(x.size()), expected(x.size());
      for (int64_t i = 0; i < batch * rows * cols; ++i) {
        int64_t r = (i / cols) % rows, c = i % cols;
        // j - i compared with k in 128 bits: k may be at the int64 edges.
        __int128 diff = __int128(c) - r;
        bool keep = upper ? diff >= k : diff <= k;
        expected[i] = keep ? x[i] : 0;
      }
      Params p;
      p.add({8, batch, rows, cols, k, upper});
      ASSERT_EQ(weft_rt_cpu_trilu(ctx, p.data(), x.data(), out.data()),
                WEFT_RT_OK);
      EXPECT_TRUE(allEqual(out, expected)) << "upper " << upper << " k " << k;
    }
}

// Tests copy2d into and out of the middle of rows (Concat and Split).
TEST_P(DataMovementTest, Copy2d) {
  std::vector<uint8_t> src = iota<uint8_t>(200), dst(300, 0);
  Params p;
  p.add({4, 6, 3, 20, 5, 40});
  ASSERT_EQ(weft_rt_cpu_copy2d(ctx, p.data(), src.data(), dst.data()),
            WEFT_RT_OK);
  for (int64_t i = 0; i < 300; ++i) {
    int64_t row = (i - 5) / 40, col = (i - 5) % 40;
    bool inside = i >= 5 && row < 4 && col < 6;
    EXPECT_EQ(dst[i], inside ? src[3 + row * 20 + col] : 0) << i;
  }
  std::vector<float> big = randomValues<float>(1 << 18, 5), copy(1 << 18);
  Params contiguous;
  contiguous.add({256, 4096, 0, 4096, 0, 4096});
  ASSERT_EQ(weft_rt_cpu_copy2d(ctx, contiguous.data(), big.data(), copy.data()),
            WEFT_RT_OK);
  EXPECT_TRUE(allEqual(copy, big));
  Params halves;
  halves.add({512, 1024, 0, 2048, 1024, 2048});
  std::vector<float> other(1 << 18);
  ASSERT_EQ(weft_rt_cpu_copy2d(ctx, halves.data(), big.data(), other.data()),
            WEFT_RT_OK);
  EXPECT_EQ(other[256 + 5], big[5]);
  EXPECT_EQ(other[(1 << 18) - 1], big[(1 << 18) - 1 - 256]);
}

// Tests that inconsistent blocks fail with a message.
TEST_P(DataMovementTest, Errors) {
  std::vector<int32_t> x(64), out(64);
  Params repeated;
  repeated.add({4, 2, 4, 4, 0, 0});
  EXPECT_EQ(weft_rt_cpu_transpose(ctx, repeated.data(), x.data(), out.data()),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(error().find("permutation"), std::string::npos);
  Params oddSize;
  oddSize.add({3, 1, 4, 0});
  EXPECT_EQ(weft_rt_cpu_transpose(ctx, oddSize.data(), x.data(), out.data()),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(error().find("element size 3"), std::string::npos);
  Params outside;
  outside.add({4, 1, 10, 4, 8, 1});
  EXPECT_EQ(weft_rt_cpu_slice(ctx, outside.data(), x.data(), out.data()),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(error().find("outside its size 10"), std::string::npos);
  Params zeroStep;
  zeroStep.add({4, 1, 10, 4, 0, 0});
  EXPECT_EQ(weft_rt_cpu_slice(ctx, zeroStep.data(), x.data(), out.data()),
            WEFT_RT_INVALID_ARGUMENT);
  Params reflectEmpty;
  reflectEmpty.add({4, 1, 1, 0, 1, 1});
  EXPECT_EQ(
      weft_rt_cpu_pad(ctx, reflectEmpty.data(), x.data(), nullptr, out.data()),
      WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(error().find("reflect mode"), std::string::npos);
  Params overCrop;
  overCrop.add({4, 0, 1, 4, -3, -2});
  EXPECT_EQ(
      weft_rt_cpu_pad(ctx, overCrop.data(), x.data(), nullptr, out.data()),
      WEFT_RT_INVALID_ARGUMENT);
  Params badMode;
  badMode.add({4, 4, 1, 4, 1, 1});
  EXPECT_EQ(weft_rt_cpu_pad(ctx, badMode.data(), x.data(), nullptr, out.data()),
            WEFT_RT_INVALID_ARGUMENT);
  Params negativeRepeat;
  negativeRepeat.add({4, 1, 4, -1});
  EXPECT_EQ(weft_rt_cpu_tile(ctx, negativeRepeat.data(), x.data(), out.data()),
            WEFT_RT_INVALID_ARGUMENT);
  Params badUpper;
  badUpper.add({4, 1, 4, 4, 0, 2});
  EXPECT_EQ(weft_rt_cpu_trilu(ctx, badUpper.data(), x.data(), out.data()),
            WEFT_RT_INVALID_ARGUMENT);
  Params overlap;
  overlap.add({2, 8, 0, 4, 0, 8});
  EXPECT_EQ(weft_rt_cpu_copy2d(ctx, overlap.data(), x.data(), out.data()),
            WEFT_RT_INVALID_ARGUMENT);
  Params overflow;
  overflow.add({INT64_MAX, 8, 0, INT64_MAX, 0, 8});
  EXPECT_EQ(weft_rt_cpu_copy2d(ctx, overflow.data(), x.data(), out.data()),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(error().find("overflow"), std::string::npos);
}

WEFT_KERNEL_TEST_THREADS(DataMovementTest);
