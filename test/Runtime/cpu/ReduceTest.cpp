//===- ReduceTest.cpp - weft_rt_cpu_reduce and weft_rt_cpu_arg_reduce ----===//
//
// Every reduction kind over every mask of small tensors, larger shapes that
// split over threads, empty reductions and ArgMax/ArgMin tie rules.
//
//===----------------------------------------------------------------------===//

#include "KernelTestSupport.h"

#include <limits>

using namespace weft::rt::test;

namespace {
enum Kind {
  kMean = 0,
  kSum,
  kMax,
  kMin,
  kProd,
  kL1,
  kL2,
  kLogSumExp,
  kSumSquare,
  kLogSum
};

/// The reference reduction in double (integers: wrapping int64 for sums
/// and products, then the kernel's conversions).
template <typename T>
std::vector<double> referenceReduce(int kind, const std::vector<T> &x,
                                    const std::vector<int64_t> &dims,
                                    const std::vector<int64_t> &mask) {
  std::vector<int64_t> outDims;
  int64_t reduced = 1;
  for (size_t d = 0; d < dims.size(); ++d)
    mask[d] ? reduced *= dims[d] : (outDims.push_back(dims[d]), 0);
  int64_t outCount = product(outDims);
  std::vector<std::vector<double>> groups(outCount);
  for (int64_t i = 0; i < product(dims); ++i) {
    auto index = unravel(i, dims);
    int64_t o = 0;
    for (size_t d = 0; d < dims.size(); ++d)
      if (!mask[d])
        o = o * dims[d] + index[d];
    groups[o].push_back(static_cast<double>(x[i]));
  }
  constexpr bool isInt = std::is_integral_v<T>;
  std::vector<double> result(outCount);
  for (int64_t o = 0; o < outCount; ++o) {
    const auto &g = groups[o];
    double value = kind == kProd ? 1 : 0;
    uint64_t wrapped = kind == kProd ? 1 : 0;
    double max = -INFINITY, min = INFINITY;
    for (double v : g) {
      max = std::max(max, v), min = std::min(min, v);
      int64_t iv = static_cast<int64_t>(v);
      switch (kind) {
      case kProd:
        wrapped *= static_cast<uint64_t>(iv);
        value *= v;
        break;
      case kL1:
        wrapped += static_cast<uint64_t>(iv < 0 ? -iv : iv);
        value += std::fabs(v);
        break;
      case kL2:
      case kSumSquare:
        wrapped += static_cast<uint64_t>(iv * iv);
        value += v * v;
        break;
      default:
        wrapped += static_cast<uint64_t>(iv);
        value += v;
      }
    }
    double out;
    switch (kind) {
    case kMean:
      out = isInt ? double(int64_t(T(wrapped)) / int64_t(g.size()))
                  : value / g.size();
      break;
    case kMax:
      out = max;
      break;
    case kMin:
      out = min;
      break;
    case kL2:
      out = std::sqrt(value);
      break;
    case kLogSum:
      out = std::log(value);
      break;
    case kLogSumExp: {
      double sum = 0;
      for (double v : g)
        sum += std::exp(v - max);
      out = max + std::log(sum);
      break;
    }
    default:
      out = isInt ? double(T(wrapped)) : value;
    }
    if (isInt)
      out = std::trunc(out);
    result[o] = out;
  }
  return result;
}

class ReduceTest : public KernelTest {
protected:
  template <typename T>
  void check(weft_rt_dtype dtype, int kind, const std::vector<int64_t> &dims,
             const std::vector<int64_t> &mask, double low = -1,
             double high = 1) {
    auto x = randomValues<T>(product(dims), 71 + kind, low, high);
    auto expected = referenceReduce(kind, x, dims, mask);
    std::vector<T> out(expected.size(), T(5));
    Params p;
    p.add({dtype, kind, static_cast<int64_t>(dims.size())}).add(dims).add(mask);
    ASSERT_EQ(weft_rt_cpu_reduce(ctx, p.data(), x.data(), out.data()),
              WEFT_RT_OK)
        << error();
    EXPECT_TRUE(allClose(out, expected, 1e-5, 1e-5))
        << "kind " << kind << " mask " << ::testing::PrintToString(mask);
  }
};
} // namespace

// Tests every kind over every mask of a rank-3 tensor, none and all
// included.
TEST_P(ReduceTest, AllKindsAllMasks) {
  std::vector<int64_t> dims = {3, 4, 5};
  for (int kind = kMean; kind <= kLogSum; ++kind)
    for (int bits = 0; bits < 8; ++bits) {
      std::vector<int64_t> mask = {bits >> 2 & 1, bits >> 1 & 1, bits & 1};
      bool positive = kind == kLogSum;
      check<float>(WEFT_RT_F32, kind, dims, mask, positive ? 0.1 : -1, 1);
      check<double>(WEFT_RT_F64, kind, dims, mask, positive ? 0.1 : -1, 1);
    }
}

// Tests size-1 dimensions between reduced ones and a rank-0 input.
TEST_P(ReduceTest, UnitDimensionsAndScalars) {
  check<float>(WEFT_RT_F32, kSum, {1, 5, 1, 3}, {1, 0, 1, 1});
  check<float>(WEFT_RT_F32, kMax, {2, 1, 3}, {0, 1, 0});
  check<float>(WEFT_RT_F32, kMean, {}, {});
  check<float>(WEFT_RT_F32, kL1, {4, 1}, {0, 1});
}

// Tests shapes large enough to split over threads, with the tail reduced
// and kept, and a kept tail longer than one block.
TEST_P(ReduceTest, LargeShapes) {
  check<float>(WEFT_RT_F32, kSum, {2, 300, 700}, {0, 1, 0});
  check<float>(WEFT_RT_F32, kMean, {2, 300, 700}, {0, 0, 1});
  check<float>(WEFT_RT_F32, kMax, {64, 2048}, {1, 0});
  check<float>(WEFT_RT_F32, kLogSumExp, {3, 200, 90}, {1, 0, 1}, 60, 90);
}

// Tests integer reductions, including wrapping products and integer means.
TEST_P(ReduceTest, Integers) {
  for (int kind : {kMean, kSum, kMax, kMin, kL1, kL2, kSumSquare}) {
    check<int32_t>(WEFT_RT_I32, kind, {3, 4, 5}, {0, 1, 1}, -9, 9);
    check<int64_t>(WEFT_RT_I64, kind, {3, 4, 5}, {1, 0, 1}, -9, 9);
  }
  check<int32_t>(WEFT_RT_I32, kProd, {2, 40}, {0, 1}, -9, 9);
  check<int64_t>(WEFT_RT_I64, kProd, {30, 2}, {1, 0}, -9, 9);
  for (int kind : {kMax, kMin}) {
    check<int8_t>(WEFT_RT_I8, kind, {6, 7}, {1, 0}, -128, 127);
    check<uint8_t>(WEFT_RT_U8, kind, {6, 7}, {0, 1}, 0, 255);
  }
}

// Tests reductions over an empty axis: identities, infinities for max and
// min, NaN for a float mean, failures where an integer has no value.
TEST_P(ReduceTest, EmptyAxis) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::pair<int, double> floatCases[] = {
      {kSum, 0.0},        {kProd, 1.0},      {kMax, -inf},
      {kMin, inf},        {kMean, NAN},      {kL2, 0.0},
      {kLogSumExp, -inf}, {kSumSquare, 0.0}, {kLogSum, -inf}};
  for (auto [kind, value] : floatCases) {
    std::vector<float> out(3, 5.0f);
    Params p;
    p.add({WEFT_RT_F32, kind, 2, 3, 0, 0, 1});
    ASSERT_EQ(weft_rt_cpu_reduce(ctx, p.data(), nullptr, out.data()),
              WEFT_RT_OK)
        << error();
    EXPECT_TRUE(allClose(out, {value, value, value})) << "kind " << kind;
  }
  std::vector<int32_t> out(3);
  Params max;
  max.add({WEFT_RT_I32, kMax, 2, 3, 0, 0, 1});
  ASSERT_EQ(weft_rt_cpu_reduce(ctx, max.data(), nullptr, out.data()),
            WEFT_RT_OK);
  EXPECT_EQ(out[0], std::numeric_limits<int32_t>::lowest());
  for (int kind : {kMean, kLogSum, kLogSumExp}) {
    Params p;
    p.add({WEFT_RT_I32, kind, 2, 3, 0, 0, 1});
    EXPECT_EQ(weft_rt_cpu_reduce(ctx, p.data(), nullptr, out.data()),
              WEFT_RT_INVALID_ARGUMENT);
    EXPECT_NE(error().find("empty axis"), std::string::npos) << error();
  }
}

// Tests that bad blocks fail with a message.
TEST_P(ReduceTest, Errors) {
  std::vector<float> x(64), out(64);
  Params badKind;
  badKind.add({WEFT_RT_F32, 10, 1, 4, 1});
  EXPECT_EQ(weft_rt_cpu_reduce(ctx, badKind.data(), x.data(), out.data()),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(error().find("unknown kind 10"), std::string::npos);
  Params badMask;
  badMask.add({WEFT_RT_F32, kSum, 2, 4, 4, 1, 2});
  EXPECT_EQ(weft_rt_cpu_reduce(ctx, badMask.data(), x.data(), out.data()),
            WEFT_RT_INVALID_ARGUMENT);
  Params byteSum;
  byteSum.add({WEFT_RT_U8, kSum, 1, 4, 1});
  EXPECT_EQ(weft_rt_cpu_reduce(ctx, byteSum.data(), x.data(), out.data()),
            WEFT_RT_UNSUPPORTED);
  Params boolMax;
  boolMax.add({WEFT_RT_BOOL, kMax, 1, 4, 1});
  EXPECT_EQ(weft_rt_cpu_reduce(ctx, boolMax.data(), x.data(), out.data()),
            WEFT_RT_UNSUPPORTED);
  Params badRank;
  badRank.add({WEFT_RT_F32, kSum, -1});
  EXPECT_EQ(weft_rt_cpu_reduce(ctx, badRank.data(), x.data(), out.data()),
            WEFT_RT_INVALID_ARGUMENT);
}

//===----------------------------------------------------------------------===//
// ArgMax / ArgMin
//===----------------------------------------------------------------------===//

namespace {
template <typename T>
std::vector<int64_t> referenceArg(const std::vector<T> &x, int64_t outer,
                                  int64_t axis, int64_t inner, bool isMax,
                                  bool last) {
  std::vector<int64_t> result(outer * inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t best = 0;
      for (int64_t a = 1; a < axis; ++a) {
        T v = x[(o * axis + a) * inner + i];
        T b = x[(o * axis + best) * inner + i];
        if ((isMax ? v > b : v < b) || (last && v == b))
          best = a;
      }
      result[o * inner + i] = best;
    }
  return result;
}

class ArgReduceTest : public KernelTest {
protected:
  template <typename T>
  void check(weft_rt_dtype dtype, int64_t outer, int64_t axis, int64_t inner,
             double low, double high) {
    // Few distinct values, so that ties are common.
    auto x = randomValues<T>(outer * axis * inner, 81, low, high);
    if constexpr (std::is_floating_point_v<T>)
      for (T &v : x)
        v = std::round(v);
    for (int kind : {0, 1})
      for (int last : {0, 1}) {
        std::vector<int64_t> out(outer * inner, -7);
        Params p;
        p.add({dtype, kind, outer, axis, inner, last});
        ASSERT_EQ(weft_rt_cpu_arg_reduce(ctx, p.data(), x.data(), out.data()),
                  WEFT_RT_OK)
            << error();
        EXPECT_TRUE(allEqual(
            out, referenceArg(x, outer, axis, inner, kind == 0, last == 1)))
            << "kind " << kind << " last " << last;
      }
  }
};
} // namespace

// Tests ties (first or last index) along contiguous and strided axes.
TEST_P(ArgReduceTest, Ties) {
  check<float>(WEFT_RT_F32, 3, 10, 1, -3, 3);
  check<float>(WEFT_RT_F32, 2, 7, 5, -3, 3);
  check<double>(WEFT_RT_F64, 4, 9, 3, -3, 3);
  check<int32_t>(WEFT_RT_I32, 3, 11, 2, -3, 3);
  check<int64_t>(WEFT_RT_I64, 2, 6, 4, -3, 3);
  check<int8_t>(WEFT_RT_I8, 3, 12, 2, -3, 3);
  check<uint8_t>(WEFT_RT_U8, 3, 12, 2, 0, 3);
  check<float>(WEFT_RT_F32, 300, 200, 1, -50, 50);
}

// Tests that NaN wins, first NaN unless select_last_index.
TEST_P(ArgReduceTest, NaN) {
  std::vector<float> x = {1.0f, NAN, 5.0f, NAN, -2.0f};
  for (int kind : {0, 1})
    for (int last : {0, 1}) {
      int64_t out = -1;
      Params p;
      p.add({WEFT_RT_F32, kind, 1, 5, 1, last});
      ASSERT_EQ(weft_rt_cpu_arg_reduce(ctx, p.data(), x.data(), &out),
                WEFT_RT_OK);
      EXPECT_EQ(out, last ? 3 : 1);
    }
}

// Tests that an empty axis and bad blocks fail with a message.
TEST_P(ArgReduceTest, Errors) {
  std::vector<float> x(16);
  std::vector<int64_t> out(16);
  Params empty;
  empty.add({WEFT_RT_F32, 0, 2, 0, 3, 0});
  EXPECT_EQ(weft_rt_cpu_arg_reduce(ctx, empty.data(), x.data(), out.data()),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(error().find("empty"), std::string::npos);
  Params kind;
  kind.add({WEFT_RT_F32, 2, 2, 2, 2, 0});
  EXPECT_EQ(weft_rt_cpu_arg_reduce(ctx, kind.data(), x.data(), out.data()),
            WEFT_RT_INVALID_ARGUMENT);
  Params last;
  last.add({WEFT_RT_F32, 0, 2, 2, 2, 5});
  EXPECT_EQ(weft_rt_cpu_arg_reduce(ctx, last.data(), x.data(), out.data()),
            WEFT_RT_INVALID_ARGUMENT);
  Params dtype;
  dtype.add({WEFT_RT_F16, 0, 2, 2, 2, 0});
  EXPECT_EQ(weft_rt_cpu_arg_reduce(ctx, dtype.data(), x.data(), out.data()),
            WEFT_RT_UNSUPPORTED);
}

WEFT_KERNEL_TEST_THREADS(ReduceTest);
WEFT_KERNEL_TEST_THREADS(ArgReduceTest);
