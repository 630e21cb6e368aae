//===- ConvBlockedTest.cpp - Conv on channel-blocked tensors --------------===//
//
// weft_rt_cpu_conv and conv_add with the channel-blocked layout bits (8
// input, 16 output, 32 addend: N x C/16 x spatial... x 16) against the
// plain-layout kernel on the same data, blocked and unblocked by the test:
// Winograd, strided and 1x1 convolutions, 1-D to 3-D, with bias, clamp and
// every output/addend layout pair; the blocks and algorithms they refuse.
//
//===----------------------------------------------------------------------===//

#include "KernelTestSupport.h"

#include "Conv.h"

#include <algorithm>
#include <limits>

using namespace weft::rt::test;
using weft::rt::cpu::ConvAlgorithm;

namespace {
/// The layout word's bits (weft_rt.h).
constexpr int64_t kInputChannelsLast = 1, kOutputChannelsLast = 2,
                  kWeightKernelFirst = 4, kInputBlocked = 8,
                  kOutputBlocked = 16, kAddendBlocked = 32;

constexpr int64_t kBlock = 16;
constexpr double kInf = std::numeric_limits<double>::infinity();

/// A convolution of group 1 without dilation, and what is fused into it.
struct BlockedCase {
  int64_t n, c, oc;
  std::vector<int64_t> in, kernel, strides, padsBegin, padsEnd;
  bool bias = true;
  /// The activation words: 0 none, 1 clamp to [low, high].
  int64_t activation = 0;
  double low = 0.0, high = 0.0;

  BlockedCase withBias(bool hasBias) const {
    BlockedCase copy = *this;
    copy.bias = hasBias;
    return copy;
  }
  BlockedCase clamped(double lowBound, double highBound) const {
    BlockedCase copy = *this;
    copy.activation = 1, copy.low = lowBound, copy.high = highBound;
    return copy;
  }
  std::vector<int64_t> out() const {
    std::vector<int64_t> result;
    for (size_t d = 0; d < in.size(); ++d)
      result.push_back(
          (in[d] + padsBegin[d] + padsEnd[d] - kernel[d]) / strides[d] + 1);
    return result;
  }
  int64_t inPlane() const { return product(in); }
  int64_t outPlane() const { return product(out()); }
  int64_t inputCount() const { return n * c * inPlane(); }
  int64_t weightCount() const { return oc * c * product(kernel); }
  int64_t outputCount() const { return n * oc * outPlane(); }
  Params params(int64_t layout, int64_t group = 1) const {
    Params p;
    p.add({WEFT_RT_F32, static_cast<int64_t>(in.size()), n, c, oc, group})
        .add(in)
        .add(kernel)
        .add(strides)
        .add(std::vector<int64_t>(in.size(), 1))
        .add(padsBegin)
        .add(padsEnd)
        .add(out())
        .add(activation)
        .addDouble(low)
        .addDouble(high)
        .add(layout);
    return p;
  }
  std::string describe() const {
    std::string text = "N " + std::to_string(n) + ", C " + std::to_string(c) +
                       ", OC " + std::to_string(oc) + ", in";
    for (int64_t d : in)
      text += " " + std::to_string(d);
    text += ", kernel";
    for (int64_t d : kernel)
      text += " " + std::to_string(d);
    text += ", stride";
    for (int64_t d : strides)
      text += " " + std::to_string(d);
    return text + (bias ? ", bias" : "") +
           (activation ? ", clamp [" + std::to_string(low) + ", " +
                             std::to_string(high) + "]"
                       : "");
  }
};

/// N x C x P -> N x C/16 x P x 16.
std::vector<float> toBlocked(const std::vector<float> &planes, int64_t n,
                             int64_t c, int64_t plane) {
  std::vector<float> blocked(planes.size());
  for (int64_t image = 0; image < n; ++image)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < plane; ++p)
        blocked[((image * (c / kBlock) + ch / kBlock) * plane + p) * kBlock +
                ch % kBlock] = planes[(image * c + ch) * plane + p];
  return blocked;
}

/// N x C/16 x P x 16 -> N x C x P.
std::vector<float> toPlain(const std::vector<float> &blocked, int64_t n,
                           int64_t c, int64_t plane) {
  std::vector<float> planes(blocked.size());
  for (int64_t image = 0; image < n; ++image)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < plane; ++p)
        planes[(image * c + ch) * plane + p] =
            blocked[((image * (c / kBlock) + ch / kBlock) * plane + p) *
                        kBlock +
                    ch % kBlock];
  return planes;
}

std::vector<double> toDouble(const std::vector<float> &values) {
  return std::vector<double>(values.begin(), values.end());
}

/// 3x3, stride 1, pads 1 (Winograd's shape).
BlockedCase same3x3(int64_t n, int64_t c, int64_t oc, int64_t h, int64_t w) {
  return {n, c, oc, {h, w}, {3, 3}, {1, 1}, {1, 1}, {1, 1}};
}

class ConvBlockedTest : public KernelTest {
protected:
  /// The data of a case in the plain layout.
  struct Data {
    std::vector<float> x, w, bias, addend;
  };
  static Data randomData(const BlockedCase &c) {
    return {randomValues<float>(c.inputCount(), 81),
            randomValues<float>(c.weightCount(), 82),
            randomValues<float>(c.oc, 83),
            randomValues<float>(c.outputCount(), 84)};
  }

  /// Runs `c` in `layout` with `algorithm` (Auto: the entry points) on the
  /// plain `data` blocked as the layout says, and returns the output in the
  /// plain layout; fails the test on an error.
  std::vector<float> run(const BlockedCase &c, const Data &data, int64_t layout,
                         bool withAddend,
                         ConvAlgorithm algorithm = ConvAlgorithm::Auto) {
    const std::vector<float> x = layout & kInputBlocked
                                     ? toBlocked(data.x, c.n, c.c, c.inPlane())
                                     : data.x;
    const std::vector<float> addend =
        layout & kAddendBlocked
            ? toBlocked(data.addend, c.n, c.oc, c.outPlane())
            : data.addend;
    const float *bias = c.bias ? data.bias.data() : nullptr;
    Params p = c.params(layout);
    std::vector<float> out(c.outputCount(), 99.0f);
    weft_rt_status status;
    if (algorithm != ConvAlgorithm::Auto)
      status = weft::rt::cpu::convWith(ctx, algorithm, p.data(), x.data(),
                                       data.w.data(), bias, out.data(),
                                       withAddend ? addend.data() : nullptr);
    else if (withAddend)
      status = weft_rt_cpu_conv_add(ctx, p.data(), x.data(), data.w.data(),
                                    bias, addend.data(), out.data());
    else
      status = weft_rt_cpu_conv(ctx, p.data(), x.data(), data.w.data(), bias,
                                out.data());
    EXPECT_EQ(status, WEFT_RT_OK)
        << error() << " (" << c.describe() << ", layout " << layout << ")";
    return layout & kOutputBlocked ? toPlain(out, c.n, c.oc, c.outPlane())
                                   : out;
  }

  /// Every blocked layout of `c` as conv (bits 8 and 16) and as conv_add
  /// (bits 8, 16 and 32) against the plain layout's results.
  void checkLayouts(const BlockedCase &c) {
    const Data data = randomData(c);
    for (bool withAddend : {false, true}) {
      const std::vector<double> expected =
          toDouble(run(c, data, 0, withAddend));
      const int64_t last = withAddend ? 56 : 24;
      for (int64_t layout = 8; layout <= last; layout += 8)
        EXPECT_TRUE(
            allClose(run(c, data, layout, withAddend), expected, 1e-4, 1e-4))
            << c.describe() << ", layout " << layout
            << (withAddend ? ", addend" : "");
    }
  }

  /// checkLayouts with and without bias, and with Relu and Relu6.
  void checkVariants(const BlockedCase &c) {
    checkLayouts(c.withBias(true));
    checkLayouts(c.withBias(false));
    checkLayouts(c.withBias(false).clamped(0.0, kInf));
    checkLayouts(c.withBias(true).clamped(0.0, 6.0));
  }
};
} // namespace

// Tests 3x3 stride-1 convolutions, which Auto runs on Winograd: planes that
// are not a multiple of the 16-position tiles of the addend pass, two
// images, and a plane large enough for two threads.
TEST_P(ConvBlockedTest, Winograd) {
  checkVariants(same3x3(1, 32, 32, 14, 14));
  checkVariants(same3x3(2, 16, 48, 9, 11));
  checkLayouts(same3x3(1, 64, 64, 28, 28));
}

// Tests strided convolutions, on oneDNN's direct algorithm: ResNet's 3x3
// stride-2 downsampling and its 1x1 stride-2 projection.
TEST_P(ConvBlockedTest, Strided) {
  checkVariants({1, 32, 64, {15, 15}, {3, 3}, {2, 2}, {1, 1}, {1, 1}});
  checkVariants({2, 16, 32, {10, 9}, {1, 1}, {2, 2}, {0, 0}, {0, 0}});
}

// Tests a 1-D convolution (nCw16c), a 2x1 kernel with asymmetric pads and a
// 3-D convolution (nCdhw16c).
TEST_P(ConvBlockedTest, OtherKernelsAndRanks) {
  checkVariants({2, 16, 32, {20}, {3}, {1}, {1}, {1}});
  checkVariants({1, 32, 16, {8, 6}, {2, 1}, {1, 1}, {1, 0}, {0, 0}});
  checkLayouts(
      {1, 16, 16, {4, 5, 6}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}});
}

// Tests a plain input whose channels are not a multiple of 16 (bit 8 needs
// them to be, bit 16 does not) with a blocked output and addend.
TEST_P(ConvBlockedTest, PlainInputOfAnyChannels) {
  const BlockedCase c = same3x3(1, 24, 32, 7, 9).clamped(0.0, kInf);
  const Data data = randomData(c);
  for (bool withAddend : {false, true}) {
    const std::vector<double> expected = toDouble(run(c, data, 0, withAddend));
    for (int64_t layout : {kOutputBlocked, kOutputBlocked | kAddendBlocked}) {
      if (!withAddend && layout != kOutputBlocked)
        continue;
      EXPECT_TRUE(
          allClose(run(c, data, layout, withAddend), expected, 1e-4, 1e-4))
          << "layout " << layout;
    }
  }
}

// Tests the explicit oneDNN algorithms on blocked buffers: the plain one
// (the primitive on the caller's layouts), the blocked and Winograd ones.
TEST_P(ConvBlockedTest, OneDnnAlgorithms) {
  const BlockedCase c = same3x3(1, 16, 32, 6, 7).clamped(0.0, 6.0);
  const Data data = randomData(c);
  for (bool withAddend : {false, true}) {
    const std::vector<double> expected = toDouble(run(c, data, 0, withAddend));
    for (ConvAlgorithm algorithm :
         {ConvAlgorithm::OneDnnPlain, ConvAlgorithm::OneDnnBlocked,
          ConvAlgorithm::OneDnnWinograd})
      for (int64_t layout : {8, 16, 24, 40, 56}) {
        if (!withAddend && (layout & kAddendBlocked))
          continue;
        EXPECT_TRUE(allClose(run(c, data, layout, withAddend, algorithm),
                             expected, 1e-4, 1e-4))
            << "algorithm " << static_cast<int>(algorithm) << ", layout "
            << layout;
      }
  }
}

// Tests Winograd F(2,3) on column bands against the plain layout: 2 bands
// of a CRNN-like 8x32 plane, 3 bands of a 6x48 one over a batch of two,
// widths the bands do not divide (8x25: 13 + 12 columns; 7x47: 16 + 16 +
// 15; 2x61: 31 + 30), with and without bias, clamp and a blocked or plain
// addend.
TEST_P(ConvBlockedTest, WinogradBandsAsPlain) {
  const BlockedCase cases[] = {same3x3(1, 128, 256, 8, 32).clamped(0.0, kInf),
                               same3x3(2, 32, 48, 6, 48),
                               same3x3(1, 16, 64, 8, 32).withBias(false),
                               same3x3(1, 32, 32, 8, 25),
                               same3x3(1, 16, 16, 7, 47),
                               same3x3(1, 16, 32, 2, 61)};
  for (const BlockedCase &c : cases) {
    const Data data = randomData(c);
    for (bool withAddend : {false, true}) {
      const std::vector<double> expected =
          toDouble(run(c, data, 0, withAddend));
      for (int64_t layout : {24, 56}) {
        if (!withAddend && (layout & kAddendBlocked))
          continue;
        EXPECT_TRUE(allClose(run(c, data, layout, withAddend,
                                 ConvAlgorithm::OneDnnWinogradBands),
                             expected, 1e-4, 1e-4))
            << c.describe() << ", layout " << layout
            << (withAddend ? ", addend" : "");
      }
    }
  }
}

// Tests where Auto cuts a blocked layer into bands (batch 1, F(4,3)'s
// weights of 4 MB or more, a plane over 196 pixels that 2 to 4 bands fit;
// on AVX-512 only, where oneDNN has Winograd), and that the bands then run
// F(2,3).
TEST_P(ConvBlockedTest, WinogradBandsWhere) {
  struct Where {
    BlockedCase c;
    bool bands;
  };
  const Where cases[] = {
      {same3x3(1, 256, 256, 8, 32), true},
      {same3x3(1, 128, 256, 8, 32), true},
      // 4 bands of 10 columns.
      {same3x3(1, 256, 256, 12, 40), true},
      // A width the bands do not divide: 13 + 12 columns.
      {same3x3(1, 256, 256, 8, 25), true},
      // F(2,3) already (128 pixels); 16 bands needed; 0.6 MB of F(4,3)
      // weights; 2.4 MB, which F(4,3) runs faster than bands.
      {same3x3(1, 256, 256, 4, 32), false},
      {same3x3(1, 64, 128, 16, 64), false},
      {same3x3(1, 64, 64, 8, 32), false},
      {same3x3(1, 128, 128, 8, 32), false},
      {same3x3(1, 128, 128, 12, 40), false},
      // A batch: one call per image and band.
      {same3x3(2, 256, 256, 8, 32), false},
  };
  for (const Where &w : cases) {
    Params p = w.c.params(kInputBlocked | kOutputBlocked);
    weft::rt::cpu::ConvShape shape;
    ASSERT_EQ(weft::rt::cpu::parseConv(ctx, p.data(), shape), WEFT_RT_OK)
        << error();
    EXPECT_EQ(weft::rt::cpu::winogradBandsTake(shape),
              w.bands && weft::rt::cpu::winogradBandsAvailable())
        << w.c.describe();
  }
  const BlockedCase c = same3x3(1, 128, 256, 8, 32);
  const Data data = randomData(c);
  Params p = c.params(kInputBlocked | kOutputBlocked);
  std::vector<float> x = toBlocked(data.x, c.n, c.c, c.inPlane());
  std::vector<float> out(c.outputCount());
  ASSERT_EQ(weft_rt_cpu_conv(ctx, p.data(), x.data(), data.w.data(),
                             data.bias.data(), out.data()),
            WEFT_RT_OK)
      << error();
  if (!weft::rt::cpu::winogradBandsAvailable())
    GTEST_SKIP() << "no Winograd in oneDNN on this CPU";
  const std::string implementation =
      weft::rt::cpu::winogradBandsImplementation(ctx, p.data());
  EXPECT_NE(implementation.find("wino_2x3"), std::string::npos)
      << implementation;
}

// Tests the bands' refusals: plain buffers, a stride of 2, a plane that 4
// bands do not cut small enough, pads other than 1; the output untouched.
TEST_P(ConvBlockedTest, WinogradBandsRefused) {
  BlockedCase strided = same3x3(1, 16, 16, 8, 32);
  strided.strides = {2, 2};
  BlockedCase unpadded = same3x3(1, 16, 16, 8, 32);
  unpadded.padsBegin = unpadded.padsEnd = {0, 0};
  const struct {
    BlockedCase c;
    int64_t layout;
  } refused[] = {{same3x3(1, 16, 16, 8, 32), 0},
                 {strided, 24},
                 {same3x3(1, 16, 16, 16, 64), 24},
                 {unpadded, 24}};
  for (const auto &r : refused) {
    const Data data = randomData(r.c);
    Params p = r.c.params(r.layout);
    std::vector<float> out(r.c.outputCount(), 99.0f);
    EXPECT_EQ(weft::rt::cpu::convWith(ctx, ConvAlgorithm::OneDnnWinogradBands,
                                      p.data(), data.x.data(), data.w.data(),
                                      data.bias.data(), out.data()),
              WEFT_RT_UNSUPPORTED)
        << r.c.describe() << ", layout " << r.layout;
    EXPECT_NE(error().find("Winograd on column bands needs"),
              std::string::npos)
        << error();
    EXPECT_TRUE(std::all_of(out.begin(), out.end(),
                            [](float v) { return v == 99.0f; }));
  }
}

// Tests that a Winograd convolution between blocked tensors reorders
// neither its source nor its output where oneDNN's Winograd wants the
// blocked layout (AVX-512; elsewhere oneDNN picks another implementation),
// while the plain layout's is reordered both ways.
TEST_P(ConvBlockedTest, WinogradSkipsReorders) {
  const BlockedCase c = same3x3(1, 32, 32, 14, 14);
  const Data data = randomData(c);
  for (int64_t layout : {int64_t(0), kInputBlocked | kOutputBlocked}) {
    Params p = c.params(layout);
    std::vector<float> out(c.outputCount());
    ASSERT_EQ(weft_rt_cpu_conv(ctx, p.data(), data.x.data(), data.w.data(),
                               data.bias.data(), out.data()),
              WEFT_RT_OK)
        << error();
    const std::string implementation =
        weft::rt::cpu::oneDnnConvImplementation(ctx, p.data());
    bool source = false, output = false;
    ASSERT_TRUE(
        weft::rt::cpu::oneDnnConvReorders(ctx, p.data(), source, output));
    if (implementation.find("wino") == std::string::npos ||
        implementation.find("avx512") == std::string::npos)
      GTEST_SKIP() << "oneDNN's Winograd here: " << implementation;
    EXPECT_EQ(source, layout == 0) << implementation;
    EXPECT_EQ(output, layout == 0) << implementation;
  }
}

// Tests that the cached primitive follows the layout word: the same block,
// at the same address, run plain and then with its layout word changed.
TEST_P(ConvBlockedTest, CacheKeysOnLayoutWord) {
  const BlockedCase c = same3x3(1, 16, 16, 5, 6);
  const Data data = randomData(c);
  const std::vector<double> expected = toDouble(run(c, data, 0, false));
  Params p = c.params(0);
  std::vector<float> out(c.outputCount());
  ASSERT_EQ(weft_rt_cpu_conv(ctx, p.data(), data.x.data(), data.w.data(),
                             data.bias.data(), out.data()),
            WEFT_RT_OK);
  EXPECT_TRUE(allClose(out, expected, 1e-4, 1e-4));
  p.words.back() = kInputBlocked | kOutputBlocked;
  const std::vector<float> x = toBlocked(data.x, c.n, c.c, c.inPlane());
  ASSERT_EQ(weft_rt_cpu_conv(ctx, p.data(), x.data(), data.w.data(),
                             data.bias.data(), out.data()),
            WEFT_RT_OK)
      << error();
  EXPECT_TRUE(
      allClose(toPlain(out, c.n, c.oc, c.outPlane()), expected, 1e-4, 1e-4));
}

// Tests a convolution without input channels (which oneDNN refuses): the
// clamped bias, plus the addend, in the blocked output.
TEST_P(ConvBlockedTest, NoInputChannels) {
  const BlockedCase c = same3x3(1, 0, 32, 4, 5).clamped(-0.5, 0.5);
  const Data data = randomData(c);
  for (bool withAddend : {false, true}) {
    std::vector<double> expected(c.outputCount());
    for (int64_t i = 0; i < c.outputCount(); ++i) {
      double value =
          data.bias[i / c.outPlane()] + (withAddend ? data.addend[i] : 0.0f);
      expected[i] = std::min(std::max(value, -0.5), 0.5);
    }
    for (int64_t layout : {16, 24, 48}) {
      if (!withAddend && (layout & kAddendBlocked))
        continue;
      EXPECT_TRUE(
          allClose(run(c, data, layout, withAddend), expected, 1e-6, 1e-6))
          << "layout " << layout;
    }
  }
}

// Tests that blocks the blocked layouts cannot take are refused with a
// message naming the bits.
TEST_P(ConvBlockedTest, InvalidBlocks) {
  std::vector<float> buffer(1 << 14);
  float *x = buffer.data();
  auto refuse = [&](const Params &p, const std::string &message,
                    bool withAddend = false) {
    weft_rt_status status =
        withAddend ? weft_rt_cpu_conv_add(ctx, p.data(), x, x, nullptr, x, x)
                   : weft_rt_cpu_conv(ctx, p.data(), x, x, nullptr, x);
    EXPECT_EQ(status, WEFT_RT_INVALID_ARGUMENT) << message;
    EXPECT_NE(error().find(message), std::string::npos) << error();
  };
  const BlockedCase c = same3x3(1, 16, 32, 4, 4);
  for (int64_t blocked : {kInputBlocked, kOutputBlocked, kAddendBlocked})
    for (int64_t channelsLast :
         {kInputChannelsLast, kOutputChannelsLast, kWeightKernelFirst})
      refuse(c.params(blocked | channelsLast),
             "mixes the channel-blocked bits (8 input, 16 output, 32 "
             "addend) with the channels-last or kernel-first ones",
             true);
  refuse(same3x3(1, 24, 32, 4, 4).params(kInputBlocked),
         "layout bit 8 (channel-blocked input) needs C to be a multiple of "
         "16, not 24");
  refuse(same3x3(1, 16, 24, 4, 4).params(kOutputBlocked),
         "layout bits 16 and 32 (channel-blocked output, addend) need OC to "
         "be a multiple of 16, not 24");
  refuse(same3x3(1, 16, 24, 4, 4).params(kAddendBlocked),
         "need OC to be a multiple of 16, not 24", true);
  refuse(same3x3(1, 32, 32, 4, 4).params(kInputBlocked, 2),
         "the channel-blocked layout bits (8, 16, 32) need group 1, not 2");
  refuse(c.params(kAddendBlocked | kOutputBlocked),
         "has bit 32 (channel-blocked addend) but there is no addend");
}

// Tests that the algorithms without blocked code are refused through
// convWith, and that nothing is written.
TEST_P(ConvBlockedTest, NonOneDnnAlgorithms) {
  const BlockedCase c = {1, 16, 16, {6, 6}, {1, 1}, {1, 1}, {0, 0}, {0, 0}};
  const Data data = randomData(c);
  Params p = c.params(kInputBlocked | kOutputBlocked);
  for (ConvAlgorithm algorithm :
       {ConvAlgorithm::Im2colOneDnnGemm, ConvAlgorithm::Im2colOpenBlas,
        ConvAlgorithm::Depthwise, ConvAlgorithm::Direct}) {
    std::vector<float> out(c.outputCount(), 99.0f);
    EXPECT_EQ(weft::rt::cpu::convWith(ctx, algorithm, p.data(), data.x.data(),
                                      data.w.data(), nullptr, out.data()),
              WEFT_RT_UNSUPPORTED);
    EXPECT_NE(error().find("runs on oneDNN"), std::string::npos) << error();
    EXPECT_EQ(out, std::vector<float>(c.outputCount(), 99.0f));
  }
}

WEFT_KERNEL_TEST_THREADS(ConvBlockedTest);
