//===- NormalizationTest.cpp - batch_norm, normalize and softmax ----------===//
//
// The per-row and per-channel kernels against direct formulas in double,
// including in-place calls and numerically hard inputs.
//
//===----------------------------------------------------------------------===//

#include "KernelTestSupport.h"

#include <limits>

using namespace weft::rt::test;

namespace {
class NormalizationTest : public KernelTest {
protected:
  template <typename T>
  void checkBatchNorm(weft_rt_dtype dtype, int64_t n, int64_t c,
                      int64_t inner) {
    auto x = randomValues<T>(n * c * inner, 41, -3, 3);
    auto scale = randomValues<T>(c, 42), bias = randomValues<T>(c, 43);
    auto mean = randomValues<T>(c, 44), var = randomValues<T>(c, 45, 0.1, 2);
    double epsilon = 1e-5;
    Params p;
    p.add({dtype, n, c, inner}).addDouble(epsilon);
    std::vector<T> out(x.size());
    ASSERT_EQ(weft_rt_cpu_batch_norm(ctx, p.data(), x.data(), scale.data(),
                                     bias.data(), mean.data(), var.data(),
                                     out.data()),
              WEFT_RT_OK)
        << error();
    std::vector<double> expected(x.size());
    for (int64_t i = 0; i < n * c * inner; ++i) {
      int64_t ch = (i / inner) % c;
      expected[i] = (x[i] - double(mean[ch])) /
                        std::sqrt(double(var[ch]) + epsilon) * scale[ch] +
                    bias[ch];
    }
    EXPECT_TRUE(allClose(out, expected, 1e-5, 1e-5));
  }

  template <typename T>
  void checkNormalize(weft_rt_dtype dtype, bool instance, int64_t outer,
                      int64_t size, int64_t channels, bool withBias,
                      bool inPlace = false) {
    // Rows far from zero make a one-pass variance lose digits.
    auto x = randomValues<T>(outer * size, 51, 90, 110);
    int64_t params = instance ? channels : size;
    auto scale = randomValues<T>(params, 52),
         bias = randomValues<T>(params, 53);
    double epsilon = 1e-5;
    Params p;
    p.add({dtype, instance ? 1 : 0, outer, size, channels}).addDouble(epsilon);
    std::vector<double> expected(x.size()), expectedMeans(outer),
        expectedInverses(outer);
    for (int64_t r = 0; r < outer; ++r) {
      double mean = 0, var = 0;
      for (int64_t j = 0; j < size; ++j)
        mean += x[r * size + j];
      mean /= size;
      for (int64_t j = 0; j < size; ++j)
        var += (x[r * size + j] - mean) * (x[r * size + j] - mean);
      var /= size;
      expectedMeans[r] = mean;
      expectedInverses[r] = 1.0 / std::sqrt(var + epsilon);
      for (int64_t j = 0; j < size; ++j) {
        int64_t k = instance ? r % channels : j;
        expected[r * size + j] =
            (x[r * size + j] - mean) / std::sqrt(var + epsilon) * scale[k] +
            (withBias ? double(bias[k]) : 0.0);
      }
    }
    std::vector<T> out(x.size()), means(outer), inverses(outer);
    T *target = inPlace ? x.data() : out.data();
    ASSERT_EQ(weft_rt_cpu_normalize(ctx, p.data(), x.data(), scale.data(),
                                    withBias ? bias.data() : nullptr, target,
                                    means.data(), inverses.data()),
              WEFT_RT_OK)
        << error();
    EXPECT_TRUE(allClose(inPlace ? x : out, expected, 1e-4, 1e-4));
    EXPECT_TRUE(allClose(means, expectedMeans, 1e-5, 1e-5));
    EXPECT_TRUE(allClose(inverses, expectedInverses, 1e-4, 1e-5));
  }

  template <typename T>
  void checkSoftmax(weft_rt_dtype dtype, int64_t outer, int64_t axis,
                    int64_t inner, bool log, double spread = 5.0,
                    bool inPlace = false) {
    auto x = randomValues<T>(outer * axis * inner, 61, -spread, spread);
    std::vector<double> expected(x.size());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        auto at = [&](int64_t a) { return (o * axis + a) * inner + i; };
        double max = -INFINITY, sum = 0;
        for (int64_t a = 0; a < axis; ++a)
          max = std::max(max, double(x[at(a)]));
        for (int64_t a = 0; a < axis; ++a)
          sum += std::exp(double(x[at(a)]) - max);
        for (int64_t a = 0; a < axis; ++a)
          expected[at(a)] = log ? double(x[at(a)]) - max - std::log(sum)
                                : std::exp(double(x[at(a)]) - max) / sum;
      }
    Params p;
    p.add({dtype, outer, axis, inner, log ? 1 : 0});
    std::vector<T> out(x.size());
    T *target = inPlace ? x.data() : out.data();
    ASSERT_EQ(weft_rt_cpu_softmax(ctx, p.data(), x.data(), target), WEFT_RT_OK)
        << error();
    EXPECT_TRUE(allClose(inPlace ? x : out, expected, 2e-5, 1e-6));
  }
};
} // namespace

// Tests BatchNormalization with spatial planes and without (inner 1).
TEST_P(NormalizationTest, BatchNorm) {
  checkBatchNorm<float>(WEFT_RT_F32, 2, 5, 37);
  checkBatchNorm<float>(WEFT_RT_F32, 3, 7, 1);
  checkBatchNorm<double>(WEFT_RT_F64, 1, 4, 9);
  checkBatchNorm<float>(WEFT_RT_F32, 1, 64, 56 * 56);
}

// Tests layer normalization with and without bias, and in place.
TEST_P(NormalizationTest, LayerNorm) {
  checkNormalize<float>(WEFT_RT_F32, false, 128, 128, 0, true);
  checkNormalize<float>(WEFT_RT_F32, false, 7, 33, 0, false);
  checkNormalize<double>(WEFT_RT_F64, false, 5, 10, 0, true);
  checkNormalize<float>(WEFT_RT_F32, false, 512, 128, 0, true, true);
}

// Tests instance normalization: rows (n, c) take channel c's scale and bias.
TEST_P(NormalizationTest, InstanceNorm) {
  checkNormalize<float>(WEFT_RT_F32, true, 2 * 3, 49, 3, true);
  checkNormalize<float>(WEFT_RT_F32, true, 4, 16, 4, false);
  checkNormalize<double>(WEFT_RT_F64, true, 6, 25, 2, true);
}

// Tests softmax and log-softmax along the last axis and a middle one.
TEST_P(NormalizationTest, Softmax) {
  for (bool log : {false, true}) {
    checkSoftmax<float>(WEFT_RT_F32, 2 * 128, 128, 1, log);
    checkSoftmax<float>(WEFT_RT_F32, 3, 17, 5, log);
    checkSoftmax<float>(WEFT_RT_F32, 2, 9, 300, log);
    checkSoftmax<double>(WEFT_RT_F64, 4, 31, 1, log);
    checkSoftmax<double>(WEFT_RT_F64, 2, 6, 7, log);
    checkSoftmax<float>(WEFT_RT_F32, 64, 1000, 1, log, 5.0, true);
    checkSoftmax<float>(WEFT_RT_F32, 4, 300, 200, log, 5.0, true);
  }
}

// Tests that huge logits neither overflow nor lose the small entries.
TEST_P(NormalizationTest, SoftmaxStability) {
  for (bool log : {false, true}) {
    checkSoftmax<float>(WEFT_RT_F32, 8, 50, 1, log, 80.0);
    checkSoftmax<float>(WEFT_RT_F32, 3, 20, 4, log, 80.0);
    checkSoftmax<double>(WEFT_RT_F64, 8, 50, 1, log, 700.0);
  }
  std::vector<float> x = {1e30f, -1e30f, 0.0f,
                          -std::numeric_limits<float>::infinity()};
  std::vector<float> out(4);
  Params p;
  p.add({WEFT_RT_F32, 1, 4, 1, 0});
  ASSERT_EQ(weft_rt_cpu_softmax(ctx, p.data(), x.data(), out.data()),
            WEFT_RT_OK);
  EXPECT_TRUE(allClose(out, {1.0, 0.0, 0.0, 0.0}));
}

// Tests that bad blocks and buffers fail with a message.
TEST_P(NormalizationTest, Errors) {
  std::vector<float> x(64), out(64);
  Params p;
  p.add({WEFT_RT_I32, 1, 8, 8}).addDouble(1e-5);
  EXPECT_EQ(weft_rt_cpu_batch_norm(ctx, p.data(), x.data(), x.data(), x.data(),
                                   x.data(), x.data(), out.data()),
            WEFT_RT_UNSUPPORTED);
  Params bn;
  bn.add({WEFT_RT_F32, 1, 8, 8}).addDouble(1e-5);
  EXPECT_EQ(weft_rt_cpu_batch_norm(ctx, bn.data(), x.data(), x.data(), nullptr,
                                   x.data(), x.data(), out.data()),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(error().find("bias is NULL"), std::string::npos);
  Params instance;
  instance.add({WEFT_RT_F32, 1, 6, 8, 4}).addDouble(1e-5);
  EXPECT_EQ(weft_rt_cpu_normalize(ctx, instance.data(), x.data(), x.data(),
                                  nullptr, out.data(), nullptr, nullptr),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(error().find("not a multiple of 4 channels"), std::string::npos);
  Params kind;
  kind.add({WEFT_RT_F32, 2, 6, 8, 4}).addDouble(1e-5);
  EXPECT_EQ(weft_rt_cpu_normalize(ctx, kind.data(), x.data(), x.data(), nullptr,
                                  out.data(), nullptr, nullptr),
            WEFT_RT_INVALID_ARGUMENT);
  Params softmax;
  softmax.add({WEFT_RT_F32, 4, 4, 4, 3});
  EXPECT_EQ(weft_rt_cpu_softmax(ctx, softmax.data(), x.data(), out.data()),
            WEFT_RT_INVALID_ARGUMENT);
  Params softmaxBf16;
  softmaxBf16.add({WEFT_RT_BF16, 4, 4, 4, 0});
  EXPECT_EQ(weft_rt_cpu_softmax(ctx, softmaxBf16.data(), x.data(), out.data()),
            WEFT_RT_UNSUPPORTED);
  EXPECT_NE(error().find("bf16"), std::string::npos);
  Params negative;
  negative.add({WEFT_RT_F32, 4, -4, 4, 0});
  EXPECT_EQ(weft_rt_cpu_softmax(ctx, negative.data(), x.data(), out.data()),
            WEFT_RT_INVALID_ARGUMENT);
}

WEFT_KERNEL_TEST_THREADS(NormalizationTest);
