//===- PoolTest.cpp - weft_rt_cpu_pool against direct window loops --------===//
//
// Max and average pooling with ceil-mode clipping, both count_include_pad
// settings, dilations and 1-D to 3-D windows, in every dtype.
//
//===----------------------------------------------------------------------===//

#include "KernelTestSupport.h"

#include <limits>

using namespace weft::rt::test;

namespace {
struct PoolCase {
  bool isMax;
  bool countIncludePad;
  int64_t n, c;
  std::vector<int64_t> in, kernel, strides, dilations, padsBegin, padsEnd;
  bool ceil = false;
  /// The layout word: 0 NC[D]HW, 1 channel-blocked by 16.
  int64_t layout = 0;

  std::vector<int64_t> out() const {
    std::vector<int64_t> result;
    for (size_t d = 0; d < in.size(); ++d) {
      int64_t span = in[d] + padsBegin[d] + padsEnd[d] -
                     (kernel[d] - 1) * dilations[d] - 1;
      result.push_back((ceil ? (span + strides[d] - 1) : span) / strides[d] +
                       1);
    }
    return result;
  }
  Params params(weft_rt_dtype dtype) const {
    Params p;
    p.add({dtype, isMax ? 0 : 1, countIncludePad ? 1 : 0,
           static_cast<int64_t>(in.size()), n, c})
        .add(in)
        .add(kernel)
        .add(strides)
        .add(dilations)
        .add(padsBegin)
        .add(padsEnd)
        .add(out())
        .add(layout);
    return p;
  }
};

template <typename T>
std::vector<double> referencePool(const PoolCase &c, const std::vector<T> &x) {
  std::vector<int64_t> out = c.out();
  size_t rank = c.in.size();
  int64_t outPlane = product(out), inPlane = product(c.in);
  int64_t taps = product(c.kernel);
  std::vector<double> y(c.n * c.c * outPlane);
  for (int64_t plane = 0; plane < c.n * c.c; ++plane)
    for (int64_t o = 0; o < outPlane; ++o) {
      auto position = unravel(o, out);
      double best = std::numeric_limits<T>::lowest(), sum = 0;
      int64_t valid = 0, padded = 0;
      for (int64_t t = 0; t < taps; ++t) {
        auto tap = unravel(t, c.kernel);
        bool inside = true, insidePadded = true;
        int64_t offset = 0;
        for (size_t d = 0; d < rank; ++d) {
          int64_t i = position[d] * c.strides[d] - c.padsBegin[d] +
                      tap[d] * c.dilations[d];
          inside = inside && i >= 0 && i < c.in[d];
          insidePadded = insidePadded && i < c.in[d] + c.padsEnd[d];
          offset = offset * c.in[d] + i;
        }
        padded += insidePadded;
        if (!inside)
          continue;
        double v = x[plane * inPlane + offset];
        best = std::max(best, v);
        sum += v;
        ++valid;
      }
      int64_t count = c.countIncludePad ? padded : valid;
      y[plane * outPlane + o] =
          c.isMax ? best : (count ? sum / static_cast<double>(count) : 0.0);
    }
  return y;
}

/// N x C x P -> N x C/16 x P x 16, or back when `back`.
template <typename T>
std::vector<T> reblock(const std::vector<T> &from, int64_t n, int64_t c,
                       int64_t plane, bool back = false) {
  std::vector<T> to(from.size());
  for (int64_t image = 0; image < n; ++image)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < plane; ++p) {
        const int64_t plain = (image * c + ch) * plane + p;
        const int64_t blocked =
            ((image * (c / 16) + ch / 16) * plane + p) * 16 + ch % 16;
        to[back ? plain : blocked] = from[back ? blocked : plain];
      }
  return to;
}

class PoolTest : public KernelTest {
protected:
  /// Runs `c` (f32, C a multiple of 16) channel-blocked and expects what
  /// the plain layout gives on the same data, exactly for max (the same
  /// folds), and on random data what the reference gives (which differs
  /// from both on a global max that starts with NaN).
  void checkBlocked(PoolCase c, const std::vector<float> *given = nullptr) {
    const int64_t inPlane = product(c.in), outPlane = product(c.out());
    const std::vector<float> x =
        given ? *given : randomValues<float>(c.n * c.c * inPlane, 33);
    std::vector<float> plain(c.n * c.c * outPlane, 42.0f);
    c.layout = 0;
    ASSERT_EQ(weft_rt_cpu_pool(ctx, c.params(WEFT_RT_F32).data(), x.data(),
                               plain.data()),
              WEFT_RT_OK)
        << error();
    c.layout = 1;
    std::vector<float> blocked(plain.size(), 42.0f);
    const std::vector<float> blockedX = reblock(x, c.n, c.c, inPlane);
    ASSERT_EQ(weft_rt_cpu_pool(ctx, c.params(WEFT_RT_F32).data(),
                               blockedX.data(), blocked.data()),
              WEFT_RT_OK)
        << error();
    const std::vector<float> out =
        reblock(blocked, c.n, c.c, outPlane, /*back=*/true);
    const double tolerance = c.isMax ? 0.0 : 1e-6;
    EXPECT_TRUE(allClose(out, std::vector<double>(plain.begin(), plain.end()),
                         tolerance, tolerance));
    if (!given) {
      EXPECT_TRUE(allClose(out, referencePool(c, x), 1e-5, 1e-6));
    }
  }

  template <typename T> void check(const PoolCase &c, weft_rt_dtype dtype) {
    bool isFloat = std::is_floating_point_v<T>;
    auto x = randomValues<T>(c.n * c.c * product(c.in), 31,
                             isFloat ? -1.0 : (std::is_signed_v<T> ? -128 : 0),
                             isFloat ? 1.0 : (std::is_signed_v<T> ? 127 : 255));
    auto expected = referencePool(c, x);
    std::vector<T> out(expected.size(), T(42));
    Params p = c.params(dtype);
    ASSERT_EQ(weft_rt_cpu_pool(ctx, p.data(), x.data(), out.data()), WEFT_RT_OK)
        << error();
    EXPECT_TRUE(allClose(out, expected, 1e-5, 1e-6));
  }
};
} // namespace

// Tests ResNet's 3x3 stride-2 max pool and a global average pool.
TEST_P(PoolTest, ResNetShapes) {
  check<float>(
      {true, false, 1, 4, {12, 12}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
      WEFT_RT_F32);
  check<float>(
      {false, false, 1, 8, {7, 7}, {7, 7}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
      WEFT_RT_F32);
}

// Tests ceil-mode windows clipped at the end, for max and both averages.
TEST_P(PoolTest, CeilModeClipping) {
  for (bool isMax : {true, false})
    for (bool includePad : {false, true}) {
      // Ceil mode adds a window on each axis; the last one on axis 1 starts
      // in the end padding and runs past it.
      PoolCase c{isMax,  includePad, 2,      3,      {8, 9}, {3, 2},
                 {2, 2}, {1, 1},     {0, 1}, {0, 1}, true};
      ASSERT_EQ(c.out(), (std::vector<int64_t>{4, 6}));
      check<float>(c, WEFT_RT_F32);
      check<double>(c, WEFT_RT_F64);
    }
}

// Tests count_include_pad with pads on both sides and no ceil mode.
TEST_P(PoolTest, AveragePadding) {
  for (bool includePad : {false, true}) {
    check<float>({false,
                  includePad,
                  1,
                  2,
                  {5, 6},
                  {3, 3},
                  {1, 1},
                  {1, 1},
                  {1, 2},
                  {2, 1}},
                 WEFT_RT_F32);
    check<double>({false, includePad, 1, 2, {6}, {4}, {3}, {1}, {2}, {2}, true},
                  WEFT_RT_F64);
  }
}

// Tests dilated windows with pads.
TEST_P(PoolTest, Dilations) {
  for (bool isMax : {true, false})
    check<float>({isMax,
                  false,
                  1,
                  3,
                  {11, 10},
                  {3, 2},
                  {1, 2},
                  {2, 3},
                  {2, 1},
                  {1, 2},
                  true},
                 WEFT_RT_F32);
}

// Tests 1-D and 3-D windows.
TEST_P(PoolTest, OneAndThreeDimensions) {
  check<float>({true, false, 2, 3, {15}, {4}, {3}, {1}, {1}, {2}}, WEFT_RT_F32);
  check<float>({false,
                true,
                1,
                2,
                {5, 6, 7},
                {2, 3, 2},
                {2, 1, 2},
                {1, 1, 2},
                {1, 0, 1},
                {0, 1, 1}},
               WEFT_RT_F32);
}

// Tests max pooling of bytes and doubles.
TEST_P(PoolTest, MaxDtypes) {
  PoolCase c{true,   false,  1,      3,      {9, 9}, {3, 3},
             {2, 2}, {1, 1}, {1, 1}, {1, 1}, true};
  check<int8_t>(c, WEFT_RT_I8);
  check<uint8_t>(c, WEFT_RT_U8);
  check<double>(c, WEFT_RT_F64);
}

// Tests rows wide enough for the 16-output vector blocks, with strides 1
// and 2, dilations, and interiors that are not a multiple of 16.
TEST_P(PoolTest, WideRows) {
  for (bool isMax : {true, false})
    for (bool includePad : {false, true}) {
      check<float>({isMax,
                    includePad,
                    1,
                    3,
                    {6, 70},
                    {3, 5},
                    {1, 1},
                    {1, 1},
                    {1, 2},
                    {1, 2}},
                   WEFT_RT_F32);
      check<float>({isMax,
                    includePad,
                    2,
                    2,
                    {7, 83},
                    {2, 3},
                    {2, 2},
                    {1, 2},
                    {0, 1},
                    {1, 3},
                    true},
                   WEFT_RT_F32);
      check<float>({isMax,
                    includePad,
                    1,
                    2,
                    {4, 3, 50},
                    {2, 2, 3},
                    {1, 1, 2},
                    {1, 1, 1},
                    {1, 0, 1},
                    {0, 1, 1}},
                   WEFT_RT_F32);
    }
}

// Tests the separable f32 max pool (2-D, no dilation, windows of 1 to 4 or
// 8 rows) against the reference, and a window of 6 rows that the general
// path takes: strides 1 to 3, rows shorter and longer than its 16-output
// blocks, pads on either side, ceil mode, and inputs with NaN (skipped, as
// the general path skips it) and -infinity (below the lowest float the
// windows start from).
TEST_P(PoolTest, SeparableMax) {
  for (int64_t rows : {1, 2, 3, 4, 6, 8})
    for (int64_t stride : {1, 2, 3})
      for (int64_t width : {15, 16, 33, 60}) {
        PoolCase c{true,
                   false,
                   1,
                   3,
                   {rows + 7, width},
                   {rows, 3},
                   {stride, stride},
                   {1, 1},
                   {rows / 2, 1},
                   {0, 2},
                   stride == 2};
        SCOPED_TRACE("rows " + std::to_string(rows) + " stride " +
                     std::to_string(stride) + " width " +
                     std::to_string(width));
        check<float>(c, WEFT_RT_F32);
      }
  PoolCase c{true,   false,  1,      2,      {9, 40}, {3, 3},
             {2, 2}, {1, 1}, {1, 1}, {1, 1}};
  auto x = randomValues<float>(2 * 9 * 40, 32, -1.0, 1.0);
  x[3 * 40 + 7] = std::numeric_limits<float>::quiet_NaN();
  for (int64_t i = 0; i < 9 * 40; ++i)
    x[9 * 40 + i] = -std::numeric_limits<float>::infinity();
  x[9 * 40 + 100] = 0.5f;
  auto expected = referencePool(c, x);
  std::vector<float> out(expected.size(), 42.0f);
  Params p = c.params(WEFT_RT_F32);
  ASSERT_EQ(weft_rt_cpu_pool(ctx, p.data(), x.data(), out.data()), WEFT_RT_OK)
      << error();
  EXPECT_TRUE(allClose(out, expected, 0.0, 0.0));
}

// Tests a large pool, split over threads.
TEST_P(PoolTest, LargePlanes) {
  check<float>(
      {true, false, 1, 64, {56, 56}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
      WEFT_RT_F32);
}

// Tests that bad blocks fail with a message.
TEST_P(PoolTest, Errors) {
  std::vector<float> x(4096), out(4096);
  PoolCase c{false,  false,  1,      2,      {8, 8},
             {3, 3}, {2, 2}, {1, 1}, {0, 0}, {0, 0}};
  EXPECT_EQ(
      weft_rt_cpu_pool(ctx, c.params(WEFT_RT_I8).data(), x.data(), out.data()),
      WEFT_RT_UNSUPPORTED);
  EXPECT_NE(error().find("average pool: dtype i8"), std::string::npos)
      << error();
  Params p = c.params(WEFT_RT_F32);
  p.words[p.words.size() - 2] = 5; // the last output size
  EXPECT_EQ(weft_rt_cpu_pool(ctx, p.data(), x.data(), out.data()),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(error().find("expected 3 (or 4 in ceil mode)"), std::string::npos)
      << error();
  p = c.params(WEFT_RT_F32);
  p.words[1] = 2;
  EXPECT_EQ(weft_rt_cpu_pool(ctx, p.data(), x.data(), out.data()),
            WEFT_RT_INVALID_ARGUMENT);
  p = c.params(WEFT_RT_F32);
  p.words[3] = 0;
  EXPECT_EQ(weft_rt_cpu_pool(ctx, p.data(), x.data(), out.data()),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_EQ(
      weft_rt_cpu_pool(ctx, c.params(WEFT_RT_F32).data(), nullptr, out.data()),
      WEFT_RT_INVALID_ARGUMENT);
}

// Tests the channel-blocked layout against the plain one: ResNet's 3x3
// stride-2 max pool (large enough for two threads), 2x2 stride 2, a CRNN's
// 2x1 stride (2, 1), max and both averages with pads, ceil-mode windows
// clipped, global pools, and 1-D and 3-D windows.
TEST_P(PoolTest, ChannelBlocked) {
  checkBlocked(
      {true, false, 1, 64, {56, 56}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}});
  for (bool isMax : {true, false})
    for (bool includePad : {false, true}) {
      SCOPED_TRACE(std::string(isMax ? "max" : "average") +
                   (includePad ? ", count_include_pad" : ""));
      checkBlocked({isMax,
                    includePad,
                    2,
                    32,
                    {14, 15},
                    {2, 2},
                    {2, 2},
                    {1, 1},
                    {0, 0},
                    {0, 0}});
      checkBlocked({isMax,
                    includePad,
                    1,
                    16,
                    {8, 25},
                    {2, 1},
                    {2, 1},
                    {1, 1},
                    {0, 1},
                    {0, 1}});
      checkBlocked({isMax,
                    includePad,
                    1,
                    32,
                    {9, 10},
                    {3, 3},
                    {2, 2},
                    {1, 1},
                    {1, 1},
                    {1, 1}});
      PoolCase ceil{isMax,  includePad, 2,      16,     {8, 9}, {3, 2},
                    {2, 2}, {1, 1},     {0, 1}, {0, 1}, true};
      ASSERT_EQ(ceil.out(), (std::vector<int64_t>{4, 6}));
      checkBlocked(ceil);
      checkBlocked({isMax,
                    includePad,
                    1,
                    48,
                    {7, 7},
                    {7, 7},
                    {1, 1},
                    {1, 1},
                    {0, 0},
                    {0, 0}});
      checkBlocked(
          {isMax, includePad, 2, 16, {15}, {4}, {3}, {1}, {1}, {2}, true});
      checkBlocked({isMax,
                    includePad,
                    1,
                    16,
                    {5, 6, 7},
                    {2, 3, 2},
                    {2, 1, 2},
                    {1, 1, 2},
                    {1, 0, 1},
                    {0, 1, 1}});
    }
}

// Tests channel-blocked max pools of inputs with NaN (skipped, as the plain
// layout skips it unless it starts a global window) and -infinity.
TEST_P(PoolTest, ChannelBlockedSpecialValues) {
  for (const PoolCase &c :
       {PoolCase{
            true, false, 1, 16, {6, 6}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
        PoolCase{true,
                 false,
                 1,
                 16,
                 {3, 3},
                 {3, 3},
                 {1, 1},
                 {1, 1},
                 {0, 0},
                 {0, 0}}}) {
    std::vector<float> x = randomValues<float>(16 * product(c.in), 34);
    const int64_t plane = product(c.in);
    x[3 * plane] = std::numeric_limits<float>::quiet_NaN();
    x[5 * plane + 4] = std::numeric_limits<float>::quiet_NaN();
    for (int64_t i = 0; i < plane; ++i)
      x[7 * plane + i] = -std::numeric_limits<float>::infinity();
    checkBlocked(c, &x);
  }
}

// Tests that bad layout words and blocks the channel-blocked layout cannot
// take are refused with a message.
TEST_P(PoolTest, ChannelBlockedErrors) {
  std::vector<float> x(4096), out(4096);
  PoolCase c{true,   false,  1,      32,     {4, 4},
             {2, 2}, {2, 2}, {1, 1}, {0, 0}, {0, 0}};
  for (int64_t layout : {int64_t(2), int64_t(-1), int64_t(16)}) {
    c.layout = layout;
    EXPECT_EQ(weft_rt_cpu_pool(ctx, c.params(WEFT_RT_F32).data(), x.data(),
                               out.data()),
              WEFT_RT_INVALID_ARGUMENT);
    EXPECT_NE(error().find("layout " + std::to_string(layout) +
                           " is neither 0 (NC[D]HW) nor 1"),
              std::string::npos)
        << error();
  }
  c.layout = 1;
  EXPECT_EQ(
      weft_rt_cpu_pool(ctx, c.params(WEFT_RT_F64).data(), x.data(), out.data()),
      WEFT_RT_UNSUPPORTED);
  EXPECT_NE(error().find("channel-blocked pool: dtype f64 is not supported"),
            std::string::npos)
      << error();
  EXPECT_EQ(
      weft_rt_cpu_pool(ctx, c.params(WEFT_RT_I8).data(), x.data(), out.data()),
      WEFT_RT_UNSUPPORTED);
  c.c = 24;
  EXPECT_EQ(
      weft_rt_cpu_pool(ctx, c.params(WEFT_RT_F32).data(), x.data(), out.data()),
      WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(error().find("needs C to be a multiple of 16, not 24"),
            std::string::npos)
      << error();
}

WEFT_KERNEL_TEST_THREADS(PoolTest);
