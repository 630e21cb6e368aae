//===- ConvTest.cpp - weft_rt_cpu_conv against a direct convolution -------===//
//
// 1-D to 3-D convolutions with groups, strides, dilations and asymmetric
// pads, on every algorithm, checked against nested loops in double.
//
//===----------------------------------------------------------------------===//

#include "KernelTestSupport.h"

#include "Conv.h"

using namespace weft::rt::test;
using weft::rt::cpu::ConvAlgorithm;

namespace {
struct ConvCase {
  int64_t n, c, oc, group;
  std::vector<int64_t> in, kernel, strides, dilations, padsBegin, padsEnd;
  bool bias = true;

  std::vector<int64_t> out() const {
    std::vector<int64_t> result;
    for (size_t d = 0; d < in.size(); ++d)
      result.push_back((in[d] + padsBegin[d] + padsEnd[d] -
                        (kernel[d] - 1) * dilations[d] - 1) /
                           strides[d] +
                       1);
    return result;
  }
  Params params() const {
    Params p;
    p.add({WEFT_RT_F32, static_cast<int64_t>(in.size()), n, c, oc, group})
        .add(in)
        .add(kernel)
        .add(strides)
        .add(dilations)
        .add(padsBegin)
        .add(padsEnd)
        .add(out());
    return p;
  }
};

const ConvAlgorithm kAlgorithms[] = {ConvAlgorithm::Auto,
                                     ConvAlgorithm::OneDnnPlain,
                                     ConvAlgorithm::OneDnnBlocked,
                                     ConvAlgorithm::OneDnnWinograd,
                                     ConvAlgorithm::Im2colOneDnnGemm,
                                     ConvAlgorithm::Im2colOpenBlas};

std::vector<double> referenceConv(const ConvCase &c,
                                  const std::vector<float> &x,
                                  const std::vector<float> &w,
                                  const std::vector<float> &bias) {
  std::vector<int64_t> out = c.out();
  size_t rank = c.in.size();
  int64_t cg = c.c / c.group, ocg = c.oc / c.group;
  int64_t outPlane = product(out), inPlane = product(c.in);
  int64_t taps = product(c.kernel);
  std::vector<double> y(c.n * c.oc * outPlane);
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t oc = 0; oc < c.oc; ++oc)
      for (int64_t o = 0; o < outPlane; ++o) {
        auto position = unravel(o, out);
        double sum = c.bias ? bias[oc] : 0.0;
        int64_t g = oc / ocg;
        for (int64_t ci = 0; ci < cg; ++ci)
          for (int64_t t = 0; t < taps; ++t) {
            auto tap = unravel(t, c.kernel);
            int64_t offset = 0;
            bool inside = true;
            for (size_t d = 0; d < rank; ++d) {
              int64_t i = position[d] * c.strides[d] - c.padsBegin[d] +
                          tap[d] * c.dilations[d];
              inside = inside && i >= 0 && i < c.in[d];
              offset = offset * c.in[d] + i;
            }
            if (!inside)
              continue;
            sum += static_cast<double>(
                       x[(n * c.c + g * cg + ci) * inPlane + offset]) *
                   w[(oc * cg + ci) * taps + t];
          }
        y[(n * c.oc + oc) * outPlane + o] = sum;
      }
  return y;
}

class ConvTest : public KernelTest {
protected:
  void check(const ConvCase &c) {
    Params p = c.params();
    auto x = randomValues<float>(c.n * c.c * product(c.in), 11);
    auto w =
        randomValues<float>(c.oc * (c.c / c.group) * product(c.kernel), 12);
    auto bias = randomValues<float>(c.oc, 13);
    auto expected = referenceConv(c, x, w, bias);
    for (ConvAlgorithm algorithm : kAlgorithms) {
      std::vector<float> out(expected.size(), 99.0f);
      ASSERT_EQ(
          weft::rt::cpu::convWith(ctx, algorithm, p.data(), x.data(), w.data(),
                                  c.bias ? bias.data() : nullptr, out.data()),
          WEFT_RT_OK)
          << error() << " (algorithm " << static_cast<int>(algorithm) << ")";
      EXPECT_TRUE(allClose(out, expected, 1e-4, 1e-4))
          << "algorithm " << static_cast<int>(algorithm);
    }
  }
};
} // namespace

// Tests a 3x3 convolution with same padding, with and without bias.
TEST_P(ConvTest, Basic2d) {
  ConvCase c{1, 3, 4, 1, {10, 10}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}};
  check(c);
  c.bias = false;
  c.n = 2;
  check(c);
}

// Tests strides, dilations and asymmetric pads together.
TEST_P(ConvTest, StridesDilationsAsymmetricPads) {
  check({1, 5, 7, 1, {13, 11}, {3, 2}, {2, 3}, {2, 1}, {0, 2}, {1, 0}});
  check({2, 4, 8, 1, {9, 9}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}});
}

// Tests grouped and depthwise convolutions.
TEST_P(ConvTest, Groups) {
  check({1, 4, 6, 2, {8, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}});
  check({2, 8, 8, 8, {9, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}});
  check({1, 6, 12, 3, {7, 7}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}});
}

// Tests 1-D and 3-D convolutions.
TEST_P(ConvTest, OneAndThreeDimensions) {
  check({2, 3, 5, 1, {17}, {4}, {2}, {2}, {3}, {1}});
  check({1,
         3,
         4,
         1,
         {5, 6, 7},
         {2, 3, 3},
         {1, 2, 1},
         {1, 1, 2},
         {1, 0, 2},
         {0, 1, 2}});
}

// Tests a 1x1 convolution (no im2col) and a ResNet-like stem.
TEST_P(ConvTest, PointwiseAndStem) {
  check({1, 16, 8, 1, {6, 6}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}});
  check({1, 3, 16, 1, {32, 32}, {7, 7}, {2, 2}, {1, 1}, {3, 3}, {3, 3}});
}

// Tests that a cached primitive is reused across calls, rebuilt for another
// thread count, and that new weights in the same buffer are picked up.
TEST_P(ConvTest, CachedPrimitiveFollowsWeights) {
  ConvCase c{1, 16, 16, 1, {8, 8}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}};
  Params p = c.params();
  auto x = randomValues<float>(16 * 64, 21);
  auto w = randomValues<float>(16 * 16 * 9, 22);
  auto bias = randomValues<float>(16, 23);
  std::vector<float> out(16 * 64);
  for (int round = 0; round < 4; ++round) {
    if (round == 1) {
      ASSERT_EQ(weft_rt_context_set_num_threads(ctx, 3 - GetParam()),
                WEFT_RT_OK);
    }
    if (round == 2) {
      // Same buffer, new contents.
      auto fresh = randomValues<float>(w.size(), 24);
      std::copy(fresh.begin(), fresh.end(), w.begin());
    }
    ASSERT_EQ(weft_rt_cpu_conv(ctx, p.data(), x.data(), w.data(), bias.data(),
                               out.data()),
              WEFT_RT_OK)
        << error();
    EXPECT_TRUE(allClose(out, referenceConv(c, x, w, bias), 1e-4, 1e-4))
        << "round " << round;
  }
}

// Tests that zero input channels give the bias and empty batches nothing.
TEST_P(ConvTest, EmptyTensors) {
  ConvCase c{1, 0, 3, 1, {4, 4}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}};
  Params p = c.params();
  std::vector<float> bias = {1, 2, 3}, out(48);
  ASSERT_EQ(weft_rt_cpu_conv(ctx, p.data(), nullptr, nullptr, bias.data(),
                             out.data()),
            WEFT_RT_OK)
      << error();
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[47], 3.0f);
  c.c = 2, c.n = 0;
  p = c.params();
  EXPECT_EQ(weft_rt_cpu_conv(ctx, p.data(), nullptr, nullptr, nullptr, nullptr),
            WEFT_RT_OK);
}

// Tests that inconsistent blocks fail with a message.
TEST_P(ConvTest, Errors) {
  std::vector<float> x(1000), w(1000), out(1000);
  auto run = [&](const Params &p) {
    return weft_rt_cpu_conv(ctx, p.data(), x.data(), w.data(), nullptr,
                            out.data());
  };
  ConvCase good{1, 4, 4, 2, {6, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}};
  Params p = good.params();
  p.words.back() = 5;
  EXPECT_EQ(run(p), WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(error().find("output size 5 on spatial axis 1, expected 6"),
            std::string::npos)
      << error();
  ConvCase badGroup = good;
  badGroup.group = 3;
  EXPECT_EQ(run(badGroup.params()), WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(error().find("group 3"), std::string::npos);
  p = good.params();
  p.words[0] = WEFT_RT_F64;
  EXPECT_EQ(run(p), WEFT_RT_UNSUPPORTED);
  p.words[0] = 1234;
  EXPECT_EQ(run(p), WEFT_RT_INVALID_ARGUMENT);
  p = good.params();
  p.words[1] = 4;
  EXPECT_EQ(run(p), WEFT_RT_INVALID_ARGUMENT);
  ConvCase tooBig{1, 1, 1, 1, {2, 2}, {5, 5}, {1, 1}, {1, 1}, {0, 0}, {0, 0}};
  Params big = tooBig.params();
  big.words[big.words.size() - 1] = 0;
  big.words[big.words.size() - 2] = 0;
  EXPECT_EQ(run(big), WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(error().find("larger than the padded input"), std::string::npos);
  ConvCase zeroStride = good;
  zeroStride.strides = {1, 1};
  p = zeroStride.params();
  p.words[6 + 2 * 2] = 0;
  EXPECT_EQ(run(p), WEFT_RT_INVALID_ARGUMENT);
  EXPECT_EQ(weft_rt_cpu_conv(ctx, good.params().data(), nullptr, w.data(),
                             nullptr, out.data()),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(error().find("input is NULL"), std::string::npos);
}

WEFT_KERNEL_TEST_THREADS(ConvTest);
