//===- ConvChannelsLastTest.cpp - Conv in channels-last layouts -----------===//
//
// weft_rt_cpu_conv and conv_add with every layout word (channels-last
// input, channels-last output and addend, kernel-first weight) against the
// plain-layout kernel on the same data, transposed: 1x1 convolutions (one
// GEMM on either backend) and depthwise ones (the channel-blocked tiles on
// each instruction set the CPU has, and the plain loop they fall back to),
// with bias, clamp and addend; NaN and infinities; the blocks they refuse.
//
//===----------------------------------------------------------------------===//

#include "KernelTestSupport.h"

#include "Conv.h"

#include <algorithm>
#include <limits>

using namespace weft::rt::test;
using weft::rt::cpu::ConvAlgorithm;
using weft::rt::cpu::CpuVectors;
using weft::rt::cpu::DepthwiseIsa;
using weft::rt::cpu::DepthwisePath;

namespace {
/// The layout word's bits (weft_rt.h).
constexpr int64_t kInputChannelsLast = 1, kOutputChannelsLast = 2,
                  kWeightKernelFirst = 4, kWeightPacked = 64;
/// Channels-last input and output, the weight in panels.
constexpr int64_t kPackedLayout =
    kInputChannelsLast | kOutputChannelsLast | kWeightPacked;

/// A 2-D convolution and what is fused into it.
struct LayoutCase {
  int64_t n, c, oc, group;
  int64_t h, w, kh, kw, stride, dilation;
  int64_t padTop, padLeft, padBottom, padRight;
  bool bias = true, addend = false;
  /// The activation words: 0 none, 1 clamp to [low, high].
  int64_t activation = 0;
  double low = 0.0, high = 0.0;

  int64_t oh() const {
    return (h + padTop + padBottom - (kh - 1) * dilation - 1) / stride + 1;
  }
  int64_t ow() const {
    return (w + padLeft + padRight - (kw - 1) * dilation - 1) / stride + 1;
  }
  int64_t inputCount() const { return n * c * h * w; }
  int64_t weightCount() const { return oc * (c / group) * kh * kw; }
  int64_t outputCount() const { return n * oc * oh() * ow(); }
  Params params(int64_t layout) const {
    Params p;
    p.add({WEFT_RT_F32, 2, n, c, oc, group, h, w, kh, kw, stride, stride,
           dilation, dilation, padTop, padLeft, padBottom, padRight, oh(),
           ow(), activation})
        .addDouble(low)
        .addDouble(high)
        .add(layout);
    return p;
  }
  std::string describe() const {
    return "N " + std::to_string(n) + ", C " + std::to_string(c) + ", OC " +
           std::to_string(oc) + ", group " + std::to_string(group) + ", " +
           std::to_string(h) + "x" + std::to_string(w) + ", kernel " +
           std::to_string(kh) + "x" + std::to_string(kw) + " s" +
           std::to_string(stride) + " d" + std::to_string(dilation) +
           ", pads " + std::to_string(padTop) + "," + std::to_string(padLeft) +
           "," + std::to_string(padBottom) + "," + std::to_string(padRight) +
           (bias ? ", bias" : "") + (activation ? ", clamp" : "") +
           (addend ? ", addend" : "");
  }
};

/// A 1x1 convolution (group 1, stride 1, no pads).
LayoutCase pointwise(int64_t n, int64_t c, int64_t oc, int64_t h, int64_t w) {
  return {n, c, oc, 1, h, w, 1, 1, 1, 1, 0, 0, 0, 0};
}

/// A depthwise convolution (group == C == OC) with pads `pad` all round.
LayoutCase depthwise(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k,
                     int64_t stride, int64_t pad, int64_t dilation = 1) {
  return {n, c, c, c, h, w, k, k, stride, dilation, pad, pad, pad, pad};
}

/// N x C x P -> N x P x C.
std::vector<float> toChannelsLast(const std::vector<float> &planes, int64_t n,
                                  int64_t c, int64_t plane) {
  std::vector<float> pixels(planes.size());
  for (int64_t image = 0; image < n; ++image)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < plane; ++p)
        pixels[(image * plane + p) * c + ch] =
            planes[(image * c + ch) * plane + p];
  return pixels;
}

/// N x P x C -> N x C x P.
std::vector<float> toChannelsFirst(const std::vector<float> &pixels,
                                   int64_t n, int64_t c, int64_t plane) {
  std::vector<float> planes(pixels.size());
  for (int64_t image = 0; image < n; ++image)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < plane; ++p)
        planes[(image * c + ch) * plane + p] =
            pixels[(image * plane + p) * c + ch];
  return planes;
}

/// OC x C/group x taps -> taps x C/group x OC.
std::vector<float> toKernelFirst(const std::vector<float> &w, int64_t oc,
                                 int64_t cg, int64_t taps) {
  std::vector<float> result(w.size());
  for (int64_t o = 0; o < oc; ++o)
    for (int64_t i = 0; i < cg; ++i)
      for (int64_t t = 0; t < taps; ++t)
        result[(t * cg + i) * oc + o] = w[(o * cg + i) * taps + t];
  return result;
}

/// OC x C (a 1x1 weight) -> OC/32 x C x 32, the panels of layout bit 64.
std::vector<float> toPanels(const std::vector<float> &w, int64_t oc,
                            int64_t c) {
  std::vector<float> panels(w.size());
  for (int64_t o = 0; o < oc; ++o)
    for (int64_t i = 0; i < c; ++i)
      panels[((o / 32) * c + i) * 32 + o % 32] = w[o * c + i];
  return panels;
}

std::vector<double> toDouble(const std::vector<float> &values) {
  return std::vector<double>(values.begin(), values.end());
}

class ConvChannelsLastTest : public KernelTest {
protected:
  /// The data of a case in the plain layout.
  struct Data {
    std::vector<float> x, w, bias, addend;
  };
  Data randomData(const LayoutCase &c) {
    return {randomValues<float>(c.inputCount(), 71),
            randomValues<float>(c.weightCount(), 72),
            randomValues<float>(c.oc, 73),
            randomValues<float>(c.outputCount(), 74)};
  }

  /// The plain layout's result (Auto, the depthwise kernel unforced).
  std::vector<float> oracle(const LayoutCase &c, const Data &data) {
    weft::rt::cpu::forceDepthwisePath(DepthwisePath::Auto);
    weft::rt::cpu::capDepthwiseIsa(DepthwiseIsa::Avx512);
    Params p = c.params(0);
    std::vector<float> out(c.outputCount(), 99.0f);
    const float *bias = c.bias ? data.bias.data() : nullptr;
    weft_rt_status status =
        c.addend ? weft_rt_cpu_conv_add(ctx, p.data(), data.x.data(),
                                        data.w.data(), bias,
                                        data.addend.data(), out.data())
                 : weft_rt_cpu_conv(ctx, p.data(), data.x.data(),
                                    data.w.data(), bias, out.data());
    EXPECT_EQ(status, WEFT_RT_OK) << error();
    return out;
  }

  /// Runs `c` in `layout` with `algorithm` (Auto: the entry points) and
  /// expects the plain layout's `expected`.
  void runLayout(const LayoutCase &c, const Data &data,
                 const std::vector<float> &expected, int64_t layout,
                 ConvAlgorithm algorithm, double tolerance,
                 const std::string &what) {
    const int64_t inPlane = c.h * c.w, outPlane = c.oh() * c.ow();
    const std::vector<float> x =
        layout & kInputChannelsLast ? toChannelsLast(data.x, c.n, c.c, inPlane)
                                    : data.x;
    const std::vector<float> w =
        layout & kWeightPacked ? toPanels(data.w, c.oc, c.c)
        : layout & kWeightKernelFirst
            ? toKernelFirst(data.w, c.oc, c.c / c.group, c.kh * c.kw)
            : data.w;
    const bool outLast = layout & kOutputChannelsLast;
    const std::vector<float> addend =
        outLast ? toChannelsLast(data.addend, c.n, c.oc, outPlane)
                : data.addend;
    const float *bias = c.bias ? data.bias.data() : nullptr;
    Params p = c.params(layout);
    std::vector<float> out(c.outputCount(), 99.0f);
    weft_rt_status status;
    if (algorithm != ConvAlgorithm::Auto)
      status = weft::rt::cpu::convWith(ctx, algorithm, p.data(), x.data(),
                                       w.data(), bias, out.data(),
                                       c.addend ? addend.data() : nullptr);
    else if (c.addend)
      status = weft_rt_cpu_conv_add(ctx, p.data(), x.data(), w.data(), bias,
                                    addend.data(), out.data());
    else
      status = weft_rt_cpu_conv(ctx, p.data(), x.data(), w.data(), bias,
                                out.data());
    ASSERT_EQ(status, WEFT_RT_OK) << error() << " (" << what << ")";
    if (outLast)
      out = toChannelsFirst(out, c.n, c.oc, outPlane);
    EXPECT_TRUE(allClose(out, toDouble(expected), tolerance, tolerance))
        << what;
  }

  /// Every non-zero layout of a 1x1 case on both GEMM backends, and layout
  /// 0 through the same code as a check of the test's own transposes.
  void checkPointwise(const LayoutCase &c, const Data *given = nullptr) {
    const Data data = given ? *given : randomData(c);
    const std::vector<float> expected = oracle(c, data);
    for (int64_t layout = 0; layout < 8; ++layout)
      for (ConvAlgorithm algorithm :
           {ConvAlgorithm::Auto, ConvAlgorithm::Im2colOpenBlas})
        runLayout(c, data, expected, layout, algorithm, 1e-4,
                  c.describe() + ", layout " + std::to_string(layout) +
                      ", algorithm " +
                      std::to_string(static_cast<int>(algorithm)));
  }

  /// A 1x1 case with its weight packed (layout 67) through the entry
  /// points, then on each instruction set the CPU has (the tiles of AVX-512
  /// and of AVX2, the plain loop), against the plain layout.
  void checkPacked(const LayoutCase &c, const Data *given = nullptr) {
    const Data data = given ? *given : randomData(c);
    const std::vector<float> expected = oracle(c, data);
    runLayout(c, data, expected, kPackedLayout, ConvAlgorithm::Auto, 1e-4,
              c.describe() + ", packed, Auto");
    const int64_t inPlane = c.h * c.w, outPlane = c.oh() * c.ow();
    const std::vector<float> x = toChannelsLast(data.x, c.n, c.c, inPlane);
    const std::vector<float> w = toPanels(data.w, c.oc, c.c);
    const std::vector<float> addend =
        toChannelsLast(data.addend, c.n, c.oc, outPlane);
    Params p = c.params(kPackedLayout);
    weft::rt::cpu::ConvShape shape;
    ASSERT_EQ(weft::rt::cpu::parseConv(ctx, p.data(), shape), WEFT_RT_OK)
        << error();
    for (CpuVectors vectors :
         {CpuVectors::Avx512, CpuVectors::Avx2, CpuVectors::None}) {
      if (vectors > weft::rt::cpu::cpuVectors())
        continue;
      std::vector<float> out(c.outputCount(), 99.0f);
      ASSERT_EQ(weft::rt::cpu::convPointwisePackedOn(
                    vectors, ctx, shape, x.data(), w.data(),
                    c.bias ? data.bias.data() : nullptr, out.data(),
                    c.addend ? addend.data() : nullptr),
                WEFT_RT_OK)
          << error();
      EXPECT_TRUE(allClose(toChannelsFirst(out, c.n, c.oc, outPlane),
                           toDouble(expected), 1e-4, 1e-4))
          << c.describe() << ", packed, vectors "
          << static_cast<int>(vectors);
    }
  }

  /// Every layout of a depthwise case on each path the layouts have (the
  /// tiles; the plain loop, forced by DepthwisePath::Planes) and each
  /// instruction set the CPU has (the baseline runs the plain loop).
  void checkDepthwise(const LayoutCase &c, const Data *given = nullptr) {
    const Data data = given ? *given : randomData(c);
    const std::vector<float> expected = oracle(c, data);
    for (DepthwisePath path :
         {DepthwisePath::ChannelBlocked, DepthwisePath::Planes}) {
      std::vector<DepthwiseIsa> done;
      for (DepthwiseIsa cap :
           {DepthwiseIsa::Avx512, DepthwiseIsa::Avx2, DepthwiseIsa::Baseline}) {
        const DepthwiseIsa isa = weft::rt::cpu::capDepthwiseIsa(cap);
        if (std::find(done.begin(), done.end(), isa) != done.end())
          continue;
        done.push_back(isa);
        weft::rt::cpu::forceDepthwisePath(path);
        for (int64_t layout = 1; layout < 8; ++layout)
          runLayout(c, data, expected, layout, ConvAlgorithm::Auto, 1e-5,
                    c.describe() + ", layout " + std::to_string(layout) +
                        ", isa " + std::to_string(static_cast<int>(isa)) +
                        (path == DepthwisePath::Planes ? ", plain loop"
                                                       : ", tiles"));
      }
    }
    weft::rt::cpu::forceDepthwisePath(DepthwisePath::Auto);
    weft::rt::cpu::capDepthwiseIsa(DepthwiseIsa::Avx512);
  }

  /// check(c) plain (bias), with a clamp and no bias, and with a clamp, a
  /// bias and an addend (conv_add).
  template <typename Check> void variants(LayoutCase c, Check check) {
    check(c);
    c.bias = false;
    c.activation = 1, c.low = -0.3, c.high = 0.4;
    check(c);
    c.bias = true, c.addend = true;
    check(c);
  }
};
} // namespace

// Tests 1x1 convolutions in every layout: planes of 143 pixels (at two
// threads split by pixels, or by channels where the output is planes),
// 7x7 (49 pixels: split by 16-channel blocks), channels not a multiple of
// 16, one pixel, one input or output channel, two images (one product for
// the batch when input and output are channels-last).
TEST_P(ConvChannelsLastTest, PointwiseEveryLayout) {
  const LayoutCase shapes[] = {
      pointwise(2, 24, 40, 11, 13), pointwise(1, 40, 72, 7, 7),
      pointwise(1, 5, 7, 7, 7),     pointwise(2, 17, 33, 1, 1),
      pointwise(2, 1, 6, 9, 5),     pointwise(2, 6, 1, 5, 7),
      pointwise(1, 32, 16, 16, 16), pointwise(1, 96, 24, 14, 14),
  };
  for (const LayoutCase &shape : shapes)
    variants(shape, [&](const LayoutCase &c) { checkPointwise(c); });
}

// Tests that a 1x1 convolution without input channels gives the clamped
// bias (plus the addend) in each output layout, reading neither input nor
// weight.
TEST_P(ConvChannelsLastTest, PointwiseNoInputChannels) {
  LayoutCase c = pointwise(2, 0, 3, 2, 2);
  c.activation = 1, c.low = -0.5, c.high = 1.5;
  c.addend = true;
  const std::vector<float> bias = {-1, 1, 2};
  const std::vector<float> addend(24, 0.25f);
  for (int64_t layout : {2, 3, 6, 7}) {
    Params p = c.params(layout);
    std::vector<float> out(24, 99.0f);
    ASSERT_EQ(weft_rt_cpu_conv_add(ctx, p.data(), nullptr, nullptr,
                                   bias.data(), addend.data(), out.data()),
              WEFT_RT_OK)
        << error();
    // Pixel-major: each pixel's three channels.
    for (int64_t pixel = 0; pixel < 8; ++pixel) {
      EXPECT_EQ(out[pixel * 3 + 0], -0.5f) << "layout " << layout;
      EXPECT_EQ(out[pixel * 3 + 1], 1.25f) << "layout " << layout;
      EXPECT_EQ(out[pixel * 3 + 2], 1.5f) << "layout " << layout;
    }
  }
}

// Tests depthwise convolutions in every layout: MobileNetV2's 3x3 layers
// scaled down (stride 1 and 2, pads 1), channels a multiple of 16, of 8
// only, and of neither (a partial group), two images, 7-wide and 1-wide
// planes, a 5x5 kernel, asymmetric pads; the plain loop for each. Rows of
// more than 8 outputs read a channels-last input in place (strides 1 and 2
// with constant offsets, 3 without; pads of 2 around a 3x3 kernel, whose
// edge outputs skip whole kernel rows and columns), the others through the
// tile, as does a partial group of channels (alone with 5 channels, or 8
// on AVX-512).
TEST_P(ConvChannelsLastTest, DepthwiseEveryLayout) {
  const LayoutCase shapes[] = {
      depthwise(1, 32, 28, 28, 3, 1, 1), depthwise(1, 48, 14, 14, 3, 2, 1),
      depthwise(2, 24, 9, 10, 3, 1, 1),  depthwise(1, 20, 15, 13, 3, 2, 1),
      depthwise(1, 96, 7, 7, 3, 1, 1),   depthwise(1, 19, 7, 7, 3, 2, 1),
      depthwise(1, 5, 9, 1, 3, 1, 1),    depthwise(1, 40, 12, 11, 5, 2, 2),
      depthwise(1, 16, 1, 1, 3, 1, 1),   depthwise(1, 40, 20, 20, 3, 2, 1),
      depthwise(2, 32, 11, 19, 5, 1, 2), depthwise(1, 16, 13, 29, 3, 3, 1),
      depthwise(1, 16, 10, 12, 3, 1, 2), depthwise(1, 64, 16, 18, 3, 1, 1),
      depthwise(2, 5, 6, 12, 3, 1, 1),   depthwise(1, 8, 9, 13, 3, 2, 1),
  };
  for (const LayoutCase &shape : shapes)
    variants(shape, [&](const LayoutCase &c) { checkDepthwise(c); });
  LayoutCase asymmetric = depthwise(2, 21, 10, 12, 3, 2, 0);
  asymmetric.padBottom = 1, asymmetric.padRight = 2;
  variants(asymmetric, [&](const LayoutCase &c) { checkDepthwise(c); });
  LayoutCase wideAsymmetric = depthwise(1, 24, 12, 20, 3, 1, 0);
  wideAsymmetric.padBottom = 2, wideAsymmetric.padRight = 1;
  variants(wideAsymmetric, [&](const LayoutCase &c) { checkDepthwise(c); });
}

// Tests depthwise shapes the tiles do not take, which run the plain loop
// on every path: dilation 2 (at strides 1 to 3), a 9x9 kernel (over 7x7),
// and rows too wide for a tile on AVX-512 and AVX2 (700 pixels).
TEST_P(ConvChannelsLastTest, DepthwiseFallback) {
  const LayoutCase shapes[] = {
      depthwise(2, 18, 12, 11, 3, 1, 2, 2), depthwise(1, 17, 12, 13, 3, 2, 1, 2),
      depthwise(1, 9, 10, 16, 3, 3, 1, 2),  depthwise(1, 10, 13, 12, 9, 1, 4),
      depthwise(1, 3, 3, 700, 3, 1, 1),
  };
  for (const LayoutCase &shape : shapes)
    variants(shape, [&](const LayoutCase &c) { checkDepthwise(c); });
}

// Tests that NaN and infinities in the input come out as the plain layout
// gives them: only in the windows that hold them (at a row's end, the
// tile's neighbouring pixels are not multiplied by them), and kept through
// the clamp.
TEST_P(ConvChannelsLastTest, NanAndInfinityAsInPlainLayout) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // 8-wide rows (through the tile) and 20-wide ones (read in place).
  for (int64_t width : {8, 20})
    for (int64_t stride : {1, 2}) {
      LayoutCase c = depthwise(1, 18, 6, width, 3, stride, 1);
      c.activation = 1, c.low = -0.5, c.high = 0.5;
      Data data = randomData(c);
      const int64_t plane = 6 * width;
      data.x[2 * width + width - 1] = inf; // channel 0, a row's end
      data.x[plane + 3 * width] = -inf;    // channel 1, a row's start
      data.x[17 * plane + 5 * width + width - 1] = nan; // the partial group
      data.x[16 * plane + 2 * width + 3] = inf;         // inside
      data.x[5 * plane + 4 * width + 6] = nan;          // inside
      checkDepthwise(c, &data);
    }
  LayoutCase c = pointwise(1, 20, 24, 5, 7);
  c.activation = 1, c.low = -0.5, c.high = 0.5;
  Data data = randomData(c);
  data.x[3] = inf;
  data.x[35 + 4] = nan;
  data.x[5 * 35 + 9] = -inf;
  checkPointwise(c, &data);
}

// Tests 1x1 convolutions on packed weights (layout 67): every tile height
// and a tile and a half (1 to 30 pixels: the AVX-512 tiles are 14 tall, the
// AVX2 ones 6), one to three panels, one input channel and many, two
// images, and more pixels than tiles for two threads (split by pixels)
// or fewer (split by panels).
TEST_P(ConvChannelsLastTest, PointwisePackedWeight) {
  for (int64_t pixels = 1; pixels <= 30; ++pixels)
    checkPacked(pointwise(1, 5, 32, 1, pixels));
  const LayoutCase shapes[] = {
      pointwise(1, 1, 64, 3, 3),  pointwise(2, 96, 96, 7, 7),
      pointwise(1, 40, 64, 14, 14), pointwise(2, 17, 32, 5, 3),
      pointwise(1, 160, 96, 2, 2),
  };
  for (const LayoutCase &shape : shapes)
    variants(shape, [&](const LayoutCase &c) { checkPacked(c); });
}

// Tests the packed convolution on planes of too few pixels to split by
// rows, where the threads share (pass, band of pixels) units: 5 passes of
// 32 channels (10 of 16 on AVX2) over 3 to 5 threads, bands of whole
// tiles and a last short one; every output written once, as the plain
// layout gives it.
TEST_P(ConvChannelsLastTest, PointwisePackedBandsOfPixels) {
  const LayoutCase shapes[] = {
      pointwise(1, 160, 160, 7, 7), pointwise(1, 64, 96, 5, 5),
      pointwise(2, 24, 160, 3, 9), pointwise(1, 40, 32, 1, 30)};
  for (int threads : {GetParam(), GetParam() + 2, GetParam() + 3}) {
    ASSERT_EQ(weft_rt_context_set_num_threads(ctx, threads), WEFT_RT_OK);
    for (const LayoutCase &shape : shapes)
      checkPacked(shape);
  }
}

// Tests that NaN and infinities in a packed convolution's input come out as
// the plain layout gives them, NaN kept through the clamp on every
// instruction set.
TEST_P(ConvChannelsLastTest, PointwisePackedNanAndInfinity) {
  LayoutCase c = pointwise(1, 20, 64, 5, 7);
  c.activation = 1, c.low = -0.5, c.high = 0.5;
  Data data = randomData(c);
  data.x[3] = std::numeric_limits<float>::infinity();
  data.x[35 + 4] = std::numeric_limits<float>::quiet_NaN();
  data.x[5 * 35 + 9] = -std::numeric_limits<float>::infinity();
  checkPacked(c, &data);
}

// Tests the packed layout's refusals: bit 64 without bits 1 and 2 or with
// bit 4, an OC that is not whole panels, a strided convolution; and an
// algorithm other than Auto.
TEST_P(ConvChannelsLastTest, PointwisePackedRefused) {
  struct Refused {
    LayoutCase c;
    int64_t layout;
    const char *message;
  };
  LayoutCase strided = pointwise(1, 8, 32, 6, 6);
  strided.stride = 2;
  const Refused refused[] = {
      {pointwise(1, 8, 32, 3, 3), 64 | 1,
       "layout bit 64 (packed weight) needs bits 1 and 2 (channels-last "
       "input and output) and no other, got layout 65"},
      {pointwise(1, 8, 32, 3, 3), 64 | 7,
       "and no other, got layout 71"},
      {pointwise(1, 8, 48, 3, 3), 67,
       "layout bit 64 (packed weight) needs OC to be a multiple of 32, not "
       "48"},
      {strided, 67,
       "layout bit 64 (packed weight) is for 2-D 1x1 convolutions of group "
       "1, strides 1 and no pads"},
  };
  std::vector<float> x(2000, 1.0f), w(2000, 1.0f), out(2000, 99.0f);
  for (const Refused &r : refused) {
    Params p = r.c.params(r.layout);
    EXPECT_EQ(weft_rt_cpu_conv(ctx, p.data(), x.data(), w.data(), nullptr,
                               out.data()),
              WEFT_RT_INVALID_ARGUMENT);
    EXPECT_NE(error().find(r.message), std::string::npos) << error();
  }
  EXPECT_TRUE(std::all_of(out.begin(), out.end(),
                          [](float v) { return v == 99.0f; }));
  Params p = pointwise(1, 8, 32, 3, 3).params(67);
  EXPECT_EQ(weft::rt::cpu::convWith(ctx, ConvAlgorithm::Im2colOneDnnGemm,
                                    p.data(), x.data(), w.data(), nullptr,
                                    out.data()),
            WEFT_RT_UNSUPPORTED);
  EXPECT_NE(error().find("a packed weight (layout bit 64) runs on Auto only"),
            std::string::npos)
      << error();
}

// Tests that a layout word with unknown bits is refused with a message
// naming the word and the bits it knows.
TEST_P(ConvChannelsLastTest, UnknownLayoutBits) {
  const LayoutCase c = pointwise(1, 4, 4, 3, 3);
  std::vector<float> x(64), w(64), out(64);
  for (int64_t layout : {int64_t(128), int64_t(129), int64_t(152),
                         int64_t(-1), int64_t(1) << 40}) {
    Params p = c.params(layout);
    EXPECT_EQ(weft_rt_cpu_conv(ctx, p.data(), x.data(), w.data(), nullptr,
                               out.data()),
              WEFT_RT_INVALID_ARGUMENT);
    EXPECT_NE(error().find("unknown bits in the layout word " +
                           std::to_string(layout) +
                           " (known: 1, channels-last input; 2, "
                           "channels-last output and addend; 4, kernel-first "
                           "weight; 8, 16 and 32, channel-blocked input, "
                           "output and addend; 64, packed weight)"),
              std::string::npos)
        << error();
  }
}

// Tests that shapes without channels-last code fail with a message saying
// which shapes have it, and write nothing: a 3x3 convolution of group 1, a
// strided and a padded 1x1 one, a grouped one, a 1-D depthwise one; and
// that an algorithm without channels-last code is refused.
TEST_P(ConvChannelsLastTest, UnsupportedShapes) {
  struct Refused {
    LayoutCase c;
    int64_t layout;
    const char *detail;
  };
  LayoutCase padded = pointwise(1, 4, 4, 6, 6);
  padded.padTop = padded.padBottom = 1;
  LayoutCase strided = pointwise(1, 4, 4, 6, 6);
  strided.stride = 2;
  const Refused refused[] = {
      {{1, 8, 16, 1, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1}, 3,
       "this one has kernel 3x3, strides 1x1, pads 1x1 and 1x1, group 1 (C "
       "8, OC 16)"},
      {strided, 7, "kernel 1x1, strides 2x2, pads 0x0 and 0x0, group 1"},
      {padded, 1, "kernel 1x1, strides 1x1, pads 1x0 and 1x0, group 1"},
      {{1, 8, 8, 2, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1}, 2,
       "kernel 3x3, strides 1x1, pads 1x1 and 1x1, group 2 (C 8, OC 8)"},
  };
  std::vector<float> x(1000, 1.0f), w(1000, 1.0f), out(1000, 99.0f);
  for (const Refused &r : refused) {
    Params p = r.c.params(r.layout);
    EXPECT_EQ(weft_rt_cpu_conv(ctx, p.data(), x.data(), w.data(), nullptr,
                               out.data()),
              WEFT_RT_UNSUPPORTED);
    EXPECT_NE(error().find("conv: channels-last layouts (layout " +
                           std::to_string(r.layout) +
                           ") are supported for 2-D 1x1 unstrided unpadded "
                           "convolutions of group 1 and 2-D depthwise ones; "),
              std::string::npos)
        << error();
    EXPECT_NE(error().find(r.detail), std::string::npos) << error();
    EXPECT_TRUE(std::all_of(out.begin(), out.end(),
                            [](float v) { return v == 99.0f; }));
  }
  // A 1-D depthwise convolution (S 1).
  Params oneD;
  oneD.add({WEFT_RT_F32, 1, 1, 4, 4, 4, 9, 3, 1, 1, 1, 1, 9, 0, 0, 0, 3});
  EXPECT_EQ(weft_rt_cpu_conv(ctx, oneD.data(), x.data(), w.data(), nullptr,
                             out.data()),
            WEFT_RT_UNSUPPORTED);
  EXPECT_NE(error().find("this one has kernel 3, strides 1, pads 1 and 1"),
            std::string::npos)
      << error();
  // Algorithms without channels-last code.
  Params p = pointwise(1, 4, 4, 6, 6).params(7);
  for (ConvAlgorithm algorithm :
       {ConvAlgorithm::OneDnnPlain, ConvAlgorithm::OneDnnBlocked,
        ConvAlgorithm::Direct}) {
    EXPECT_EQ(weft::rt::cpu::convWith(ctx, algorithm, p.data(), x.data(),
                                      w.data(), nullptr, out.data()),
              WEFT_RT_UNSUPPORTED);
    EXPECT_NE(error().find("with layout 7, a 1x1 convolution runs on Auto or "
                           "an im2col algorithm"),
              std::string::npos)
        << error();
  }
  p = depthwise(1, 4, 6, 6, 3, 1, 1).params(3);
  EXPECT_EQ(weft::rt::cpu::convWith(ctx, ConvAlgorithm::Im2colOneDnnGemm,
                                    p.data(), x.data(), w.data(), nullptr,
                                    out.data()),
            WEFT_RT_UNSUPPORTED);
  EXPECT_TRUE(
      std::all_of(out.begin(), out.end(), [](float v) { return v == 99.0f; }));
}

WEFT_KERNEL_TEST_THREADS(ConvChannelsLastTest);

namespace {
/// The rows of the busiest of `team` threads, counted band by band: bands of
/// `bandRows` (an image's last one shorter), dealt out as
/// runBlockedDepthwise deals its units.
int64_t busiestByCounting(int64_t images, int64_t rows, int64_t bandRows,
                          int64_t team) {
  const int64_t bands = (rows + bandRows - 1) / bandRows;
  const int64_t units = images * bands;
  int64_t busiest = 0;
  for (int64_t rank = 0; rank < team; ++rank) {
    int64_t mine = 0;
    for (int64_t u = units * rank / team; u < units * (rank + 1) / team; ++u) {
      const int64_t band = u % bands;
      mine += std::min(rows, (band + 1) * bandRows) - band * bandRows;
    }
    busiest = std::max(busiest, mine);
  }
  return busiest;
}
} // namespace

// Tests the band height of the channel-blocked depthwise path against a
// search that counts every thread's rows: no height up to the limit leaves
// the busiest thread fewer rows, and none taller ties it. MobileNetV2's
// 14-row planes on two threads take bands of one row (7 each), not two
// (4 and 3 bands); its 28-row ones bands of two.
TEST(DepthwiseBands, EvenestTallestHeight) {
  EXPECT_EQ(weft::rt::cpu::evenBandRows(1, 14, 2, 2), 1);
  EXPECT_EQ(weft::rt::cpu::evenBandRows(1, 28, 4, 2), 2);
  EXPECT_EQ(weft::rt::cpu::evenBandRows(1, 14, 14, 1), 14);
  for (int64_t images = 1; images <= 3; ++images)
    for (int64_t rows = 1; rows <= 40; ++rows)
      for (int64_t most = 1; most <= rows; ++most)
        for (int64_t team = 1; team <= 4; ++team) {
          const int64_t chosen =
              weft::rt::cpu::evenBandRows(images, rows, most, team);
          ASSERT_GE(chosen, 1);
          ASSERT_LE(chosen, most);
          const int64_t fewest = busiestByCounting(images, rows, chosen, team);
          for (int64_t other = 1; other <= most; ++other) {
            const int64_t busiest =
                busiestByCounting(images, rows, other, team);
            EXPECT_GE(busiest, fewest)
                << images << " images of " << rows << " rows, at most "
                << most << ", " << team << " threads: " << other
                << " beats " << chosen;
            if (other > chosen) {
              EXPECT_GT(busiest, fewest)
                  << images << " images of " << rows << " rows, at most "
                  << most << ", " << team << " threads: " << other
                  << " ties " << chosen << " and is taller";
            }
          }
        }
}
