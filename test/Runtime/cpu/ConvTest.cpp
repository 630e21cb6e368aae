//===- ConvTest.cpp - weft_rt_cpu_conv against a direct convolution -------===//
//
// 1-D to 3-D convolutions with groups, strides, dilations and asymmetric
// pads, with and without the fused clamp, on every algorithm, checked
// against nested loops in double; the depthwise kernel on many shapes.
//
//===----------------------------------------------------------------------===//

#include "KernelTestSupport.h"

#include "Conv.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace weft::rt::test;
using weft::rt::cpu::ConvAlgorithm;

namespace {
struct ConvCase {
  int64_t n, c, oc, group;
  std::vector<int64_t> in, kernel, strides, dilations, padsBegin, padsEnd;
  bool bias = true;
  /// The activation words: 0 none, 1 clamp to [low, high].
  int64_t activation = 0;
  double low = 0.0, high = 0.0;
  /// The layout word (0: NC[D]HW, OIHW weights).
  int64_t layout = 0;

  ConvCase &clamp(double lowBound, double highBound) {
    activation = 1, low = lowBound, high = highBound;
    return *this;
  }
  bool isDepthwise() const { return group == c && group == oc; }
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
        .add(out())
        .add(activation)
        .addDouble(low)
        .addDouble(high)
        .add(layout);
    return p;
  }
};

constexpr double kInf = std::numeric_limits<double>::infinity();

const ConvAlgorithm kAlgorithms[] = {ConvAlgorithm::Auto,
                                     ConvAlgorithm::OneDnnPlain,
                                     ConvAlgorithm::OneDnnBlocked,
                                     ConvAlgorithm::OneDnnWinograd,
                                     ConvAlgorithm::Im2colOneDnnGemm,
                                     ConvAlgorithm::Im2colOpenBlas,
                                     ConvAlgorithm::Depthwise,
                                     ConvAlgorithm::Direct};

/// Whether ConvAlgorithm::Direct takes `c`: 2-D (or 1-D), one group, at
/// most 256 input channels x kernel taps, on a CPU with AVX2 or AVX-512.
bool directTakes(const ConvCase &c) {
  __builtin_cpu_init();
  bool vectors = __builtin_cpu_supports("avx512f") ||
                 (__builtin_cpu_supports("avx2") &&
                  __builtin_cpu_supports("fma"));
  return vectors && c.group == 1 && c.in.size() <= 2 &&
         c.c * product(c.kernel) <= 256;
}

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

/// The fused clamp of `c` applied to a reference, with the bounds rounded
/// to float as the kernels round them.
std::vector<double> clampReference(const ConvCase &c, std::vector<double> y) {
  if (c.activation != 1)
    return y;
  double low = static_cast<float>(c.low), high = static_cast<float>(c.high);
  for (double &v : y)
    v = std::min(std::max(v, low), high);
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
    auto expected = clampReference(c, referenceConv(c, x, w, bias));
    for (ConvAlgorithm algorithm : kAlgorithms) {
      if (algorithm == ConvAlgorithm::Depthwise && !c.isDepthwise())
        continue;
      if (algorithm == ConvAlgorithm::Direct && !directTakes(c))
        continue;
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

// Tests the direct convolution of first layers (Auto takes it for at most 4
// input channels; check() also runs it on the other shapes it takes):
// MobileNetV2's and ResNet's stems, a grey-scale text recognizer's first
// layer, rows shorter than a vector and not a multiple of one, output
// channels not a multiple of its block of 4, dilations, strides of 3,
// asymmetric and large pads, 1-D, two images, with and without a clamp.
TEST_P(ConvTest, DirectFewInputChannels) {
  const ConvCase shapes[] = {
      {1, 3, 32, 1, {30, 34}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
      {1, 3, 8, 1, {40, 36}, {7, 7}, {2, 2}, {1, 1}, {3, 3}, {3, 3}},
      {1, 1, 64, 1, {32, 128}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {2, 2, 5, 1, {5, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {1, 4, 7, 1, {19, 37}, {5, 3}, {3, 2}, {2, 3}, {2, 0}, {1, 4}},
      {1, 3, 6, 1, {11, 50}, {4, 4}, {1, 3}, {1, 1}, {0, 5}, {3, 0}},
      {2, 1, 3, 1, {70}, {5}, {2}, {1}, {2}, {2}},
      {1, 3, 9, 1, {1, 1}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
  };
  for (const ConvCase &shape : shapes) {
    ConvCase c = shape;
    check(c);
    c.bias = false;
    check(c);
    c.bias = true;
    c.clamp(0.0, 6.0);
    check(c);
  }
}

// Tests weft_rt_cpu_conv_add (a residual Add fused into the convolution:
// clamp(conv + bias + addend)) on every algorithm that takes each shape:
// pointwise (its epilogue adds it; at two threads split between them),
// dense 3x3 (Winograd), strided 3x3, depthwise (both paths), a first layer
// (the direct kernel), grouped, 1-D and 3-D (a pass after the algorithm,
// which then runs unclamped), with and without bias and clamp.
TEST_P(ConvTest, FusedAddend) {
  const ConvCase shapes[] = {
      {2, 24, 40, 1, {11, 13}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
      {1, 40, 72, 1, {7, 7}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
      {1, 8, 8, 1, {10, 10}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {1, 8, 16, 1, {13, 13}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
      {1, 20, 20, 20, {14, 14}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {1, 20, 20, 20, {28, 28}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
      {1, 3, 8, 1, {20, 24}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
      {1, 4, 6, 2, {8, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {2, 3, 5, 1, {17}, {4}, {2}, {2}, {3}, {1}},
      {1, 2, 3, 1, {5, 6, 7}, {2, 3, 3}, {1, 2, 1}, {1, 1, 2}, {1, 0, 2},
       {0, 1, 2}},
  };
  for (const ConvCase &shape : shapes)
    for (int variant = 0; variant < 3; ++variant) {
      ConvCase c = shape;
      c.bias = variant != 1;
      if (variant == 2)
        c.clamp(0.0, 0.75);
      Params p = c.params();
      auto x = randomValues<float>(c.n * c.c * product(c.in), 61);
      auto w =
          randomValues<float>(c.oc * (c.c / c.group) * product(c.kernel), 62);
      auto bias = randomValues<float>(c.oc, 63);
      std::vector<double> sum = referenceConv(c, x, w, bias);
      auto addend = randomValues<float>(sum.size(), 64);
      for (size_t i = 0; i < sum.size(); ++i)
        sum[i] += addend[i];
      std::vector<double> expected = clampReference(c, sum);
      for (ConvAlgorithm algorithm : kAlgorithms) {
        if (algorithm == ConvAlgorithm::Depthwise && !c.isDepthwise())
          continue;
        if (algorithm == ConvAlgorithm::Direct && !directTakes(c))
          continue;
        // Both depthwise paths where they apply.
        for (auto path : {weft::rt::cpu::DepthwisePath::Planes,
                          weft::rt::cpu::DepthwisePath::ChannelBlocked}) {
          weft::rt::cpu::forceDepthwisePath(path);
          std::vector<float> out(expected.size(), 99.0f);
          ASSERT_EQ(weft::rt::cpu::convWith(ctx, algorithm, p.data(), x.data(),
                                            w.data(),
                                            c.bias ? bias.data() : nullptr,
                                            out.data(), addend.data()),
                    WEFT_RT_OK)
              << error() << " (algorithm " << static_cast<int>(algorithm)
              << ")";
          EXPECT_TRUE(allClose(out, expected, 1e-4, 1e-4))
              << "algorithm " << static_cast<int>(algorithm) << ", variant "
              << variant << ", C " << c.c << ", OC " << c.oc;
        }
        weft::rt::cpu::forceDepthwisePath(weft::rt::cpu::DepthwisePath::Auto);
      }
      // The entry point, and the same block without the addend afterwards
      // (a cached oneDNN primitive built without the clamp is not reused).
      std::vector<float> out(expected.size(), 99.0f);
      ASSERT_EQ(weft_rt_cpu_conv_add(ctx, p.data(), x.data(), w.data(),
                                     c.bias ? bias.data() : nullptr,
                                     addend.data(), out.data()),
                WEFT_RT_OK)
          << error();
      EXPECT_TRUE(allClose(out, expected, 1e-4, 1e-4)) << "conv_add";
      std::vector<double> plain =
          clampReference(c, referenceConv(c, x, w, bias));
      ASSERT_EQ(weft_rt_cpu_conv(ctx, p.data(), x.data(), w.data(),
                                 c.bias ? bias.data() : nullptr, out.data()),
                WEFT_RT_OK)
          << error();
      EXPECT_TRUE(allClose(out, plain, 1e-4, 1e-4)) << "conv after conv_add";
    }
  // No input channels: the clamped bias plus the addend; a NULL addend is
  // refused.
  ConvCase empty{1, 0, 3, 1, {4, 4}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}};
  empty.clamp(-0.5, 1.5);
  Params p = empty.params();
  std::vector<float> bias = {-1, 1, 2}, addend(48, 0.25f), out(48, 99.0f);
  ASSERT_EQ(weft_rt_cpu_conv_add(ctx, p.data(), nullptr, nullptr, bias.data(),
                                 addend.data(), out.data()),
            WEFT_RT_OK)
      << error();
  EXPECT_FLOAT_EQ(out[0], -0.5f);
  EXPECT_FLOAT_EQ(out[16], 1.25f);
  EXPECT_FLOAT_EQ(out[47], 1.5f);
  EXPECT_EQ(weft_rt_cpu_conv_add(ctx, p.data(), nullptr, nullptr, bias.data(),
                                 nullptr, out.data()),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(error().find("addend is NULL"), std::string::npos) << error();
}

// Tests pointwise (1x1, stride 1) convolutions, whose bias and clamp pass
// runs vectorized after the GEMM: two images, odd planes (a tail after the
// vector lanes), a single input or output channel, bias absent or present,
// clamp absent or present (Relu6, and bounds that clip both sides); and a
// strided 1x1 projection as in ResNet-18 (im2col subsamples it). At two
// threads the larger ones split the product between the threads (each
// finishing its own block): by columns (40 channels, 143 columns: blocks of
// 16 and a tail) and by output channels (72 channels, 7x7's 49 columns).
TEST_P(ConvTest, PointwiseBiasAndClamp) {
  const ConvCase shapes[] = {
      {2, 5, 7, 1, {7, 7}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
      {2, 1, 6, 1, {9, 5}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
      {2, 6, 1, 1, {5, 7}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
      {2, 24, 40, 1, {11, 13}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
      {1, 40, 72, 1, {7, 7}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
      {2, 8, 16, 1, {13, 13}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}},
  };
  for (const ConvCase &shape : shapes)
    for (bool bias : {false, true})
      for (int clamp = 0; clamp < 3; ++clamp) {
        ConvCase c = shape;
        c.bias = bias;
        if (clamp == 1)
          c.clamp(0.0, 6.0);
        if (clamp == 2)
          c.clamp(-0.5, 0.25);
        SCOPED_TRACE(testing::Message()
                     << "C " << c.c << ", OC " << c.oc << ", bias " << bias
                     << ", clamp " << clamp);
        check(c);
      }
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
  // The output width, before the three activation words and the layout
  // word.
  p.words[p.words.size() - 5] = 5;
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
  big.words[big.words.size() - 5] = 0;
  big.words[big.words.size() - 6] = 0;
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

// Tests the fused clamp on every algorithm: dense 3x3 (Winograd), strided,
// 1x1, grouped, depthwise and 3-D shapes, with two-sided, Relu-like and
// upper-only bounds, and bounds that meet.
TEST_P(ConvTest, ClampOnEveryAlgorithm) {
  const ConvCase shapes[] = {
      {1, 3, 4, 1, {10, 10}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {1, 5, 7, 1, {13, 11}, {3, 2}, {2, 3}, {2, 1}, {0, 2}, {1, 0}},
      {2, 16, 8, 1, {6, 6}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
      {1, 4, 6, 2, {8, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {2, 8, 8, 8, {9, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
      {1, 6, 6, 6, {11, 12}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {1,
       2,
       3,
       1,
       {5, 6, 7},
       {2, 3, 3},
       {1, 2, 1},
       {1, 1, 2},
       {1, 0, 2},
       {0, 1, 2}},
  };
  const double bounds[][2] = {
      {-0.5, 0.5}, {0.0, kInf}, {-kInf, 0.1}, {0.0, 6.0}, {0.25, 0.25}};
  for (const ConvCase &shape : shapes)
    for (const auto &bound : bounds) {
      ConvCase c = shape;
      c.clamp(bound[0], bound[1]);
      SCOPED_TRACE("clamp [" + std::to_string(bound[0]) + ", " +
                   std::to_string(bound[1]) + "]");
      check(c);
      c.bias = false;
      check(c);
    }
}

// Tests that the fused clamp keeps NaN on every algorithm, as weft_rt.h
// says: outputs whose window holds a NaN input are NaN, and the others are
// clamped. oneDNN's eltwise post-ops turn NaN into the lower bound (its
// blocked direct kernel with Relu, Winograd with Relu6), so the oneDNN
// algorithms clamp in a pass of their own.
TEST_P(ConvTest, ClampKeepsNaNOnEveryAlgorithm) {
  const ConvCase shapes[] = {
      {1, 16, 16, 1, {8, 8}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {1, 16, 32, 1, {9, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
      {1, 16, 16, 1, {12}, {3}, {1}, {1}, {1}, {1}},
  };
  const double bounds[][2] = {{0.0, kInf}, {0.0, 6.0}};
  for (const ConvCase &shape : shapes)
    for (const auto &bound : bounds) {
      ConvCase c = shape;
      c.clamp(bound[0], bound[1]);
      SCOPED_TRACE("clamp [" + std::to_string(bound[0]) + ", " +
                   std::to_string(bound[1]) + "]");
      Params p = c.params();
      auto x = randomValues<float>(c.n * c.c * product(c.in), 21);
      x[x.size() / 2 + 1] = std::numeric_limits<float>::quiet_NaN();
      auto w = randomValues<float>(c.oc * c.c * product(c.kernel), 22);
      auto bias = randomValues<float>(c.oc, 23);
      auto expected = clampReference(c, referenceConv(c, x, w, bias));
      int64_t nans = 0;
      for (double v : expected)
        nans += std::isnan(v) ? 1 : 0;
      ASSERT_GT(nans, 0);
      for (ConvAlgorithm algorithm : kAlgorithms) {
        if (algorithm == ConvAlgorithm::Depthwise ||
            (algorithm == ConvAlgorithm::Direct && !directTakes(c)))
          continue;
        std::vector<float> out(expected.size(), 99.0f);
        ASSERT_EQ(weft::rt::cpu::convWith(ctx, algorithm, p.data(), x.data(),
                                          w.data(), bias.data(), out.data()),
                  WEFT_RT_OK)
            << error() << " (algorithm " << static_cast<int>(algorithm) << ")";
        for (size_t i = 0; i < out.size(); ++i) {
          if (std::isnan(expected[i]))
            EXPECT_TRUE(std::isnan(out[i]))
                << "algorithm " << static_cast<int>(algorithm) << ", output "
                << i << " is " << out[i];
          else
            EXPECT_NEAR(out[i], expected[i], 1e-4)
                << "algorithm " << static_cast<int>(algorithm) << ", output "
                << i;
        }
      }
    }
}

// Tests that zero input channels give the clamped bias.
TEST_P(ConvTest, ClampOfBiasOnly) {
  ConvCase c{2, 0, 3, 1, {4, 4}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}};
  c.clamp(-0.5, 1.5);
  Params p = c.params();
  std::vector<float> bias = {-1, 1, 2}, out(2 * 48, 99.0f);
  ASSERT_EQ(weft_rt_cpu_conv(ctx, p.data(), nullptr, nullptr, bias.data(),
                             out.data()),
            WEFT_RT_OK)
      << error();
  for (int64_t image = 0; image < 2; ++image) {
    EXPECT_EQ(out[image * 48 + 0], -0.5f);
    EXPECT_EQ(out[image * 48 + 16], 1.0f);
    EXPECT_EQ(out[image * 48 + 47], 1.5f);
  }
}

// Tests that a block whose activation words change in place (same address,
// as a freed and reused block can) is not served the primitive cached for
// the old words.
TEST_P(ConvTest, CacheKeysOnActivationWords) {
  ConvCase c{1, 8, 8, 1, {9, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}};
  auto x = randomValues<float>(8 * 81, 31);
  auto w = randomValues<float>(8 * 8 * 9, 32);
  auto bias = randomValues<float>(8, 33);
  Params p = c.params();
  for (ConvAlgorithm algorithm :
       {ConvAlgorithm::OneDnnBlocked, ConvAlgorithm::OneDnnPlain}) {
    std::vector<float> out(8 * 25);
    ASSERT_EQ(weft::rt::cpu::convWith(ctx, algorithm, p.data(), x.data(),
                                      w.data(), bias.data(), out.data()),
              WEFT_RT_OK)
        << error();
    EXPECT_TRUE(allClose(out, referenceConv(c, x, w, bias), 1e-4, 1e-4));
    ConvCase clamped = c;
    clamped.clamp(-0.2, 0.3);
    p.words = clamped.params().words;
    ASSERT_EQ(weft::rt::cpu::convWith(ctx, algorithm, p.data(), x.data(),
                                      w.data(), bias.data(), out.data()),
              WEFT_RT_OK)
        << error();
    EXPECT_TRUE(allClose(out,
                         clampReference(clamped, referenceConv(c, x, w, bias)),
                         1e-4, 1e-4));
    p.words = c.params().words;
  }
}

// Tests that bad activation words fail with a message, and that the bounds
// of activation 0 are ignored.
TEST_P(ConvTest, ActivationErrors) {
  std::vector<float> x(1000), w(1000), out(1000);
  auto run = [&](const Params &p) {
    return weft_rt_cpu_conv(ctx, p.data(), x.data(), w.data(), nullptr,
                            out.data());
  };
  ConvCase good{1, 4, 4, 2, {6, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}};
  const size_t activationWord = good.params().words.size() - 4;
  for (int64_t activation : {2, -1, 7}) {
    Params p = good.params();
    p.words[activationWord] = activation;
    EXPECT_EQ(run(p), WEFT_RT_INVALID_ARGUMENT);
    EXPECT_NE(error().find("unknown activation " + std::to_string(activation)),
              std::string::npos)
        << error();
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double badBounds[][2] = {
      {1.0, 0.5}, {nan, 1.0}, {0.0, nan}, {kInf, -kInf}, {nan, nan}};
  for (const auto &bound : badBounds) {
    ConvCase c = good;
    c.clamp(bound[0], bound[1]);
    EXPECT_EQ(run(c.params()), WEFT_RT_INVALID_ARGUMENT);
    EXPECT_NE(error().find("invalid clamp bounds"), std::string::npos)
        << error();
  }
  ConvCase ignored = good;
  ignored.low = nan, ignored.high = -kInf;
  EXPECT_EQ(run(ignored.params()), WEFT_RT_OK) << error();
  ConvCase unbounded = good;
  unbounded.clamp(-kInf, kInf);
  EXPECT_EQ(run(unbounded.params()), WEFT_RT_OK) << error();
}

namespace {
/// A 2-D depthwise case (group == C == OC).
ConvCase depthwise(int64_t n, int64_t c, std::vector<int64_t> in,
                   std::vector<int64_t> kernel, int64_t stride,
                   int64_t dilation, std::vector<int64_t> padsBegin,
                   std::vector<int64_t> padsEnd) {
  return ConvCase{n,
                  c,
                  c,
                  c,
                  in,
                  kernel,
                  {stride, stride},
                  {dilation, dilation},
                  padsBegin,
                  padsEnd};
}

/// A 2-D depthwise convolution, plainly, in double.
std::vector<double> referenceDepthwise(const ConvCase &c,
                                       const std::vector<float> &x,
                                       const std::vector<float> &w,
                                       const std::vector<float> &bias) {
  std::vector<int64_t> out = c.out();
  const int64_t h = c.in[0], wd = c.in[1], oh = out[0], ow = out[1];
  const int64_t kh = c.kernel[0], kw = c.kernel[1];
  std::vector<double> y(c.n * c.c * oh * ow);
  for (int64_t p = 0; p < c.n * c.c; ++p) {
    const int64_t channel = p % c.c;
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        double sum = c.bias ? bias[channel] : 0.0;
        for (int64_t a = 0; a < kh; ++a)
          for (int64_t b = 0; b < kw; ++b) {
            int64_t r = i * c.strides[0] - c.padsBegin[0] + a * c.dilations[0];
            int64_t q = j * c.strides[1] - c.padsBegin[1] + b * c.dilations[1];
            if (r < 0 || r >= h || q < 0 || q >= wd)
              continue;
            sum += static_cast<double>(x[(p * h + r) * wd + q]) *
                   w[(channel * kh + a) * kw + b];
          }
        y[(p * oh + i) * ow + j] = sum;
      }
  }
  return clampReference(c, y);
}

class DepthwiseTest : public KernelTest {
protected:
  /// Runs `c` on the depthwise kernel and on the Auto choice; with
  /// `input`, on that input instead of random values.
  void check(const ConvCase &c, const std::vector<float> *input = nullptr) {
    Params p = c.params();
    auto x =
        input ? *input : randomValues<float>(c.n * c.c * product(c.in), 41);
    auto w = randomValues<float>(c.c * product(c.kernel), 42);
    auto bias = randomValues<float>(c.c, 43);
    auto expected = referenceDepthwise(c, x, w, bias);
    std::string what =
        "C=" + std::to_string(c.c) + " in " + std::to_string(c.in[0]) + "x" +
        std::to_string(c.in[1]) + " k " + std::to_string(c.kernel[0]) + "x" +
        std::to_string(c.kernel[1]) + " s" + std::to_string(c.strides[0]) +
        " d" + std::to_string(c.dilations[0]) + " pads " +
        std::to_string(c.padsBegin[0]) + "," + std::to_string(c.padsBegin[1]) +
        "," + std::to_string(c.padsEnd[0]) + "," +
        std::to_string(c.padsEnd[1]) + (c.bias ? "" : " no bias") +
        (c.activation ? " clamped" : "");
    // Both paths on each instruction set the CPU has (16 lanes on AVX-512,
    // 8 on AVX2 and the baseline; the channel-blocked path falls back to
    // the plane path on the baseline and on shapes it does not take), then
    // Auto.
    using weft::rt::cpu::DepthwiseIsa;
    using weft::rt::cpu::DepthwisePath;
    for (DepthwisePath path :
         {DepthwisePath::Planes, DepthwisePath::ChannelBlocked}) {
      weft::rt::cpu::forceDepthwisePath(path);
      std::vector<DepthwiseIsa> done;
      for (DepthwiseIsa cap : {DepthwiseIsa::Avx512, DepthwiseIsa::Avx2,
                               DepthwiseIsa::Baseline}) {
        DepthwiseIsa isa = weft::rt::cpu::capDepthwiseIsa(cap);
        if (std::find(done.begin(), done.end(), isa) != done.end())
          continue;
        done.push_back(isa);
        run(c, p, x, w, bias, expected, ConvAlgorithm::Depthwise,
            what + ", isa " + std::to_string(static_cast<int>(isa)) +
                (path == DepthwisePath::Planes ? ", planes" : ", blocked"));
      }
    }
    weft::rt::cpu::forceDepthwisePath(DepthwisePath::Auto);
    weft::rt::cpu::capDepthwiseIsa(DepthwiseIsa::Avx512);
    run(c, p, x, w, bias, expected, ConvAlgorithm::Auto, what + ", Auto");
  }
  void run(const ConvCase &c, const Params &p, const std::vector<float> &x,
           const std::vector<float> &w, const std::vector<float> &bias,
           const std::vector<double> &expected, ConvAlgorithm algorithm,
           const std::string &what) {
    std::vector<float> out(expected.size(), 99.0f);
    ASSERT_EQ(weft::rt::cpu::convWith(ctx, algorithm, p.data(), x.data(),
                                      w.data(), c.bias ? bias.data() : nullptr,
                                      out.data()),
              WEFT_RT_OK)
        << error() << " (" << what << ")";
    EXPECT_TRUE(allClose(out, expected, 1e-5, 1e-5)) << what;
  }
  /// check(c) with and without bias, and clamped.
  void checkVariants(ConvCase c) {
    check(c);
    c.bias = false;
    check(c);
    c.bias = true;
    c.clamp(-0.4, 0.6);
    check(c);
  }
};
} // namespace

// Tests MobileNet's 3x3 layers, stride 1 and 2 with pads 1, on small and
// odd-sized planes, one and two images.
TEST_P(DepthwiseTest, ThreeByThreeSamePads) {
  for (int64_t stride : {1, 2})
    for (std::vector<int64_t> in : {std::vector<int64_t>{28, 28},
                                    {14, 14},
                                    {7, 7},
                                    {8, 6},
                                    {9, 10},
                                    {15, 13},
                                    {13, 16},
                                    {1, 1},
                                    {2, 2},
                                    {1, 30},
                                    {30, 1},
                                    {3, 17},
                                    {17, 18}})
      for (int64_t n : {1, 2})
        checkVariants(depthwise(n, 5, in, {3, 3}, stride, 1, {1, 1}, {1, 1}));
}

// Tests other pads: none, TensorFlow's SAME for stride 2 (0 before, 1
// after), asymmetric and larger ones.
TEST_P(DepthwiseTest, AsymmetricPads) {
  const std::vector<int64_t> pads[][2] = {
      {{0, 0}, {0, 0}}, {{0, 0}, {1, 1}}, {{1, 0}, {0, 1}}, {{0, 2}, {2, 0}},
      {{2, 0}, {1, 1}}, {{2, 2}, {2, 2}}, {{0, 1}, {2, 1}}, {{1, 2}, {0, 0}}};
  for (int64_t stride : {1, 2, 3})
    for (const auto &pad : pads)
      for (std::vector<int64_t> in :
           {std::vector<int64_t>{10, 12}, {11, 9}, {16, 16}})
        checkVariants(depthwise(2, 3, in, {3, 3}, stride, 1, pad[0], pad[1]));
}

// Tests kernels of 1, 5 and rectangular ones, strides up to 3 and
// dilation 2.
TEST_P(DepthwiseTest, OtherKernelsStridesDilations) {
  checkVariants(depthwise(1, 6, {20, 20}, {5, 5}, 1, 1, {2, 2}, {2, 2}));
  checkVariants(depthwise(1, 6, {20, 20}, {5, 5}, 2, 1, {2, 2}, {2, 2}));
  checkVariants(depthwise(1, 6, {20, 22}, {5, 5}, 2, 1, {1, 1}, {2, 2}));
  checkVariants(depthwise(2, 4, {13, 11}, {5, 5}, 1, 1, {4, 0}, {0, 4}));
  checkVariants(depthwise(2, 4, {13, 11}, {5, 5}, 3, 1, {2, 2}, {2, 2}));
  checkVariants(depthwise(1, 8, {9, 9}, {1, 1}, 1, 1, {0, 0}, {0, 0}));
  checkVariants(depthwise(1, 8, {9, 10}, {1, 1}, 2, 1, {0, 0}, {0, 0}));
  checkVariants(depthwise(1, 8, {9, 10}, {1, 1}, 1, 1, {1, 0}, {1, 2}));
  checkVariants(depthwise(2, 3, {12, 11}, {3, 3}, 1, 2, {2, 2}, {2, 2}));
  checkVariants(depthwise(2, 3, {12, 11}, {3, 3}, 2, 2, {1, 2}, {2, 1}));
  checkVariants(depthwise(1, 3, {17, 16}, {3, 3}, 3, 1, {1, 1}, {1, 1}));
  checkVariants(depthwise(1, 3, {17, 16}, {3, 3}, 3, 3, {3, 3}, {3, 3}));
  checkVariants(depthwise(1, 3, {10, 14}, {3, 5}, 1, 1, {1, 2}, {1, 2}));
  checkVariants(depthwise(1, 3, {10, 14}, {2, 4}, 2, 1, {0, 1}, {1, 2}));
  checkVariants(depthwise(1, 3, {10, 14}, {7, 7}, 1, 1, {3, 3}, {3, 3}));
  checkVariants(depthwise(1, 2, {6, 5}, {6, 5}, 1, 1, {0, 0}, {0, 0}));
}

// Tests rows of 16 outputs and more with pads of 1 before (AVX-512 computes
// them from the input rows in place, without masks where a vector's loads
// lie inside a row that is not a pad): whole and partial vectors (stride-1
// rows of 48 outputs or more need not be whole vectors), odd heights, pads
// of 0 to 2 after.
TEST_P(DepthwiseTest, WideRows) {
  for (std::vector<int64_t> in :
       {std::vector<int64_t>{5, 32}, {6, 48}, {3, 64}, {9, 112}, {1, 16},
        {4, 56}, {7, 50}, {3, 49}})
    for (int64_t padBottom : {1, 0, 2})
      if (in[0] + 1 + padBottom >= 3)
        checkVariants(
            depthwise(2, 3, in, {3, 3}, 1, 1, {1, 1}, {padBottom, 1}));
  for (std::vector<int64_t> in : {std::vector<int64_t>{5, 32},
                                  {6, 34},
                                  {7, 36},
                                  {4, 62},
                                  {9, 112},
                                  {1, 40},
                                  {2, 200}})
    for (int64_t padEnd : {1, 0})
      for (int64_t padBottom : {0, 1, 2})
        if (in[0] + 1 + padBottom >= 3)
          checkVariants(
              depthwise(2, 3, in, {3, 3}, 2, 1, {1, 1}, {padBottom, padEnd}));
}

// Tests planes larger than one band of the fast path (the band's rows and
// the rows around it are redone per band), and a row too wide for a band.
TEST_P(DepthwiseTest, LargePlanes) {
  check(depthwise(1, 3, {150, 150}, {3, 3}, 1, 1, {1, 1}, {1, 1}));
  check(depthwise(1, 2, {181, 200}, {3, 3}, 2, 1, {1, 1}, {1, 1}));
  check(depthwise(1, 2, {90, 120}, {5, 5}, 2, 1, {2, 2}, {2, 2}));
  check(depthwise(1, 2, {100, 130}, {5, 5}, 1, 1, {2, 2}, {2, 2}));
  check(depthwise(1, 2, {3, 9000}, {3, 3}, 1, 1, {1, 1}, {1, 1}));
  check(depthwise(1, 2, {3, 9000}, {3, 3}, 2, 1, {1, 1}, {1, 1}));
}

// Tests shapes large enough to run on two threads (both paths), including
// fewer planes than threads would take.
TEST_P(DepthwiseTest, ManyPlanes) {
  check(depthwise(2, 16, {40, 40}, {3, 3}, 1, 1, {1, 1}, {1, 1}));
  check(depthwise(1, 24, {40, 40}, {3, 3}, 2, 1, {1, 1}, {1, 1}));
  check(depthwise(2, 16, {33, 31}, {3, 3}, 3, 1, {1, 1}, {1, 1}));
  check(depthwise(1, 1, {300, 300}, {3, 3}, 1, 1, {1, 1}, {1, 1}));
  ConvCase c = depthwise(1, 96, {14, 14}, {3, 3}, 1, 1, {1, 1}, {1, 1});
  c.clamp(0.0, 6.0);
  check(c);
}

// Tests that an infinity at a row's end reaches only the outputs whose
// window holds it: taps that wrap to a neighbouring row are masked, not
// multiplied by zero.
TEST_P(DepthwiseTest, InfinityStaysInItsWindow) {
  // 8-wide rows (the band path) and 64-wide ones (the wide-row path, whose
  // inner vectors load without masks).
  for (int64_t width : {8, 64})
    for (int64_t stride : {1, 2}) {
      ConvCase c =
          depthwise(1, 2, {6, width}, {3, 3}, stride, 1, {1, 1}, {1, 1});
      const int64_t plane = 6 * width;
      std::vector<float> x = randomValues<float>(2 * plane, 44);
      x[2 * width + width - 1] = std::numeric_limits<float>::infinity();
      x[plane + 3 * width] = -std::numeric_limits<float>::infinity();
      x[plane + 5 * width + width - 1] =
          std::numeric_limits<float>::quiet_NaN();
      x[plane + 2 * width + 17] = std::numeric_limits<float>::infinity();
      check(c, &x);
    }
}

// Tests 1-D and 3-D depthwise convolutions (the general path).
TEST_P(ConvTest, DepthwiseOneAndThreeDimensions) {
  check({2, 5, 5, 5, {37}, {3}, {1}, {1}, {1}, {1}});
  check({1, 4, 4, 4, {40}, {5}, {2}, {2}, {3}, {0}});
  check({1,
         3,
         3,
         3,
         {4, 5, 6},
         {3, 3, 3},
         {1, 2, 1},
         {1, 1, 2},
         {1, 0, 2},
         {0, 1, 2}});
}

// Tests that the depthwise algorithm refuses other grouped convolutions and
// that Auto picks it for 2-D depthwise ones (no oneDNN primitive cached).
TEST_P(ConvTest, DepthwiseChoice) {
  ConvCase grouped{1, 4, 8, 4, {6, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}};
  std::vector<float> x(1000, 1.0f), w(1000, 1.0f), out(1000);
  Params p = grouped.params();
  EXPECT_EQ(weft::rt::cpu::convWith(ctx, ConvAlgorithm::Depthwise, p.data(),
                                    x.data(), w.data(), nullptr, out.data()),
            WEFT_RT_UNSUPPORTED);
  EXPECT_NE(error().find("group == C == OC"), std::string::npos) << error();
  ConvCase dw{1, 4, 4, 4, {6, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}};
  p = dw.params();
  ASSERT_EQ(
      weft_rt_cpu_conv(ctx, p.data(), x.data(), w.data(), nullptr, out.data()),
      WEFT_RT_OK);
  EXPECT_EQ(weft::rt::cpu::oneDnnConvImplementation(ctx, p.data()), "");
  ASSERT_EQ(weft::rt::cpu::convWith(ctx, ConvAlgorithm::OneDnnBlocked, p.data(),
                                    x.data(), w.data(), nullptr, out.data()),
            WEFT_RT_OK);
  EXPECT_NE(weft::rt::cpu::oneDnnConvImplementation(ctx, p.data()), "");
}

WEFT_KERNEL_TEST_THREADS(ConvTest);
WEFT_KERNEL_TEST_THREADS(DepthwiseTest);

// Tests that oneDNN convolutions of one context, which share its working
// memory (reordered inputs and outputs, scratchpads), each get it right
// when they alternate and the memory grows between them: a small blocked
// convolution, a Winograd one that needs more, and the small one again.
TEST_P(ConvTest, OneDnnConvolutionsShareWorkingMemory) {
  ConvCase small{1, 4, 8, 1, {6, 6}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}};
  ConvCase large{1, 32, 48, 1, {20, 20}, {3, 3},
                  {1, 1}, {1, 1}, {1, 1}, {1, 1}};
  struct Run {
    ConvCase c;
    ConvAlgorithm algorithm;
    Params p;
    std::vector<float> x, w, bias;
    std::vector<double> expected;
  };
  auto make = [](const ConvCase &c, ConvAlgorithm algorithm) {
    Run r{c,
          algorithm,
          c.params(),
          randomValues<float>(c.n * c.c * product(c.in), 21),
          randomValues<float>(c.oc * (c.c / c.group) * product(c.kernel), 22),
          randomValues<float>(c.oc, 23),
          {}};
    r.expected = clampReference(c, referenceConv(c, r.x, r.w, r.bias));
    return r;
  };
  Run runs[] = {make(small, ConvAlgorithm::OneDnnBlocked),
                make(large, ConvAlgorithm::OneDnnWinograd)};
  for (int i : {0, 1, 0, 1, 0}) {
    Run &r = runs[i];
    std::vector<float> out(r.expected.size(), 99.0f);
    ASSERT_EQ(weft::rt::cpu::convWith(ctx, r.algorithm, r.p.data(), r.x.data(),
                                      r.w.data(), r.bias.data(), out.data()),
              WEFT_RT_OK)
        << error();
    EXPECT_TRUE(allClose(out, r.expected, 1e-4, 1e-4)) << "run of case " << i;
  }
}
