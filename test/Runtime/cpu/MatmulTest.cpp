//===- MatmulTest.cpp - weft_rt_cpu_matmul against a naive product --------===//
//
// Transposes, broadcast batches, bias layouts, alpha/beta, every dtype and
// both f32 backends, checked against a triple loop in double.
//
//===----------------------------------------------------------------------===//

#include "KernelTestSupport.h"

#include "Gemm.h"

using namespace weft::rt::test;
using weft::rt::cpu::GemmBackend;

namespace {
struct MatmulCase {
  int64_t m, n, k;
  bool transA = false, transB = false;
  double alpha = 1.0, beta = 1.0;
  bool bias = false;
  int64_t biasRowStride = 0, biasColStride = 1;
  std::vector<int64_t> dims = {}, aStrides = {}, bStrides = {};
};

class MatmulTest : public KernelTest {
protected:
  /// Runs `c` with dtype T on `backend` and compares with the reference.
  template <typename T>
  void check(const MatmulCase &c, weft_rt_dtype dtype,
             GemmBackend backend = GemmBackend::Auto) {
    int64_t aSize = c.m * c.k, bSize = c.k * c.n, batch = product(c.dims);
    for (size_t d = 0; d < c.dims.size(); ++d) {
      aSize += (c.dims[d] - 1) * c.aStrides[d];
      bSize += (c.dims[d] - 1) * c.bStrides[d];
    }
    bool isFloat = std::is_floating_point_v<T>;
    auto a = randomValues<T>(aSize, 1, isFloat ? -1 : -9, isFloat ? 1 : 9);
    auto b = randomValues<T>(bSize, 2, isFloat ? -1 : -9, isFloat ? 1 : 9);
    int64_t biasSize =
        (c.m - 1) * c.biasRowStride + (c.n - 1) * c.biasColStride + 1;
    auto bias =
        randomValues<T>(biasSize, 3, isFloat ? -1 : -9, isFloat ? 1 : 9);
    std::vector<T> out(batch * c.m * c.n, T(7));
    Params p;
    p.add({dtype, c.m, c.n, c.k, c.transA, c.transB})
        .addDouble(c.alpha)
        .addDouble(c.beta)
        .add({c.biasRowStride, c.biasColStride,
              static_cast<int64_t>(c.dims.size())})
        .add(c.dims)
        .add(c.aStrides)
        .add(c.bStrides);
    ASSERT_EQ(
        weft::rt::cpu::matmulWith(ctx, backend, p.data(), a.data(), b.data(),
                                  c.bias ? bias.data() : nullptr, out.data()),
        WEFT_RT_OK)
        << error();
    std::vector<double> expected(out.size());
    for (int64_t batchIndex = 0; batchIndex < batch; ++batchIndex) {
      auto index = unravel(batchIndex, c.dims);
      int64_t aOffset = 0, bOffset = 0;
      for (size_t d = 0; d < c.dims.size(); ++d)
        aOffset += index[d] * c.aStrides[d],
            bOffset += index[d] * c.bStrides[d];
      for (int64_t i = 0; i < c.m; ++i)
        for (int64_t j = 0; j < c.n; ++j) {
          double sum = 0;
          for (int64_t p = 0; p < c.k; ++p) {
            double x = a[aOffset + (c.transA ? p * c.m + i : i * c.k + p)];
            double y = b[bOffset + (c.transB ? j * c.k + p : p * c.n + j)];
            sum += x * y;
          }
          double value = c.alpha * sum;
          if (c.bias)
            value += c.beta * bias[i * c.biasRowStride + j * c.biasColStride];
          expected[(batchIndex * c.m + i) * c.n + j] = value;
        }
    }
    EXPECT_TRUE(allClose(out, expected, 1e-4, 1e-4));
  }
};
} // namespace

// Tests a plain product and every transpose combination with a row bias.
TEST_P(MatmulTest, Transposes) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      MatmulCase c{17, 23, 19, ta, tb, 0.5, 2.0, true, 0, 1};
      check<float>(c, WEFT_RT_F32);
      check<double>(c, WEFT_RT_F64);
      check<float>(c, WEFT_RT_F32, GemmBackend::OpenBlas);
    }
}

// Tests products whose last column oneDNN's call leaves to a product of
// its own (n = 16 q + 1, q >= 1: a 7x7 plane's 49, 17, 33), every transpose
// combination, with and without a bias (beta), and n = 16 and 50 beside
// them.
TEST_P(MatmulTest, LastColumnOnItsOwn) {
  for (int64_t n : {17, 33, 49, 16, 50})
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (bool bias : {false, true}) {
          MatmulCase c{21, n, 37, ta, tb, 0.75, 1.5, bias, n, 1};
          SCOPED_TRACE("n " + std::to_string(n) + (ta ? " A^T" : "") +
                       (tb ? " B^T" : "") + (bias ? " bias" : ""));
          check<float>(c, WEFT_RT_F32);
        }
}

// Tests one-row products with B transposed (a classifier's Gemm, which runs
// on our matrix-vector kernel): row counts that are and are not multiples
// of its four, k with and without a tail after the vectors, with and
// without a bias (beta), A transposed (one column) too, and a size that
// splits between two threads.
TEST_P(MatmulTest, OneRowTimesTransposed) {
  for (int64_t n : {1, 3, 4, 7, 1000})
    for (int64_t k : {5, 16, 37, 1280})
      for (bool bias : {false, true})
        for (bool ta : {false, true}) {
          MatmulCase c{1, n, k, ta, true, 0.75, 1.5, bias, n, 1};
          SCOPED_TRACE("n " + std::to_string(n) + " k " + std::to_string(k) +
                       (bias ? " bias" : "") + (ta ? " A^T" : ""));
          check<float>(c, WEFT_RT_F32);
        }
}

// Tests bias as a column, a full matrix, a scalar and absent.
TEST_P(MatmulTest, BiasLayouts) {
  check<float>({9, 13, 7, false, false, 1.0, 1.0, true, 1, 0}, WEFT_RT_F32);
  check<float>({9, 13, 7, false, true, 1.5, -0.5, true, 13, 1}, WEFT_RT_F32);
  check<float>({9, 13, 7, true, false, 1.0, 3.0, true, 0, 0}, WEFT_RT_F32);
  check<float>({9, 13, 7, false, false, 2.0, 3.0, false}, WEFT_RT_F32);
  check<double>({9, 13, 7, false, false, 1.0, 1.0, true, 1, 0}, WEFT_RT_F64);
}

// Tests batches with broadcast operands (stride 0) on either side.
TEST_P(MatmulTest, BroadcastBatches) {
  MatmulCase c{6, 5, 4};
  c.dims = {2, 3};
  c.aStrides = {3 * 24, 24};
  c.bStrides = {0, 20};
  check<float>(c, WEFT_RT_F32);
  check<int32_t>(c, WEFT_RT_I32);
  c.aStrides = {24, 0};
  c.bStrides = {20, 2 * 20};
  c.transA = true;
  check<float>(c, WEFT_RT_F32);
  check<float>(c, WEFT_RT_F32, GemmBackend::OpenBlas);
  check<double>(c, WEFT_RT_F64);
  check<int64_t>(c, WEFT_RT_I64);
}

// Tests a [B,1,K] x [K,N] product with a shared right operand, which is run
// as one GEMM over all rows, with a bias.
TEST_P(MatmulTest, FoldedBatchRows) {
  MatmulCase c{1, 48, 32, false, false, 1.0, 1.0, true, 0, 1};
  c.dims = {37, 1};
  c.aStrides = {32, 0};
  c.bStrides = {0, 0};
  check<float>(c, WEFT_RT_F32);
  c.m = 3;
  c.dims = {5};
  c.aStrides = {96};
  c.bStrides = {0};
  check<float>(c, WEFT_RT_F32);
  check<double>(c, WEFT_RT_F64);
}

// Tests many products large enough to be run one per thread.
TEST_P(MatmulTest, ManyBatches) {
  MatmulCase c{64, 64, 32, false, true};
  c.dims = {8};
  c.aStrides = {64 * 32};
  c.bStrides = {64 * 32};
  check<float>(c, WEFT_RT_F32);
  check<float>(c, WEFT_RT_F32, GemmBackend::OpenBlas);
  check<double>(c, WEFT_RT_F64);
}

// Tests degenerate sizes: a single row or column, an empty contraction
// (only the bias remains) and an empty output.
TEST_P(MatmulTest, DegenerateSizes) {
  check<float>({1, 300, 200, false, true}, WEFT_RT_F32);
  check<float>({300, 1, 200}, WEFT_RT_F32);
  check<float>({4, 5, 0, false, false, 1.0, 2.0, true, 0, 1}, WEFT_RT_F32);
  check<int32_t>({4, 5, 0, false, false, 1.0, 2.0, true, 0, 1}, WEFT_RT_I32);
  check<float>({0, 5, 3}, WEFT_RT_F32);
}

// Tests integer products, with exact and scaled alpha/beta.
TEST_P(MatmulTest, Integers) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      check<int32_t>({7, 9, 11, ta, tb, 1.0, 1.0, true, 0, 1}, WEFT_RT_I32);
      check<int64_t>({7, 9, 11, ta, tb, 2.0, 3.0, true, 1, 0}, WEFT_RT_I64);
    }
}

// Tests that integer products wrap around instead of overflowing, and that
// scaled ones saturate.
TEST_P(MatmulTest, IntegerWrapAround) {
  std::vector<int32_t> a = {1 << 30, 1 << 30}, b = {4, 1};
  std::vector<int32_t> out(1);
  Params p;
  p.add({WEFT_RT_I32, 1, 1, 2, 0, 0}).addDouble(1).addDouble(0).add({0, 0, 0});
  ASSERT_EQ(weft_rt_cpu_matmul(ctx, p.data(), a.data(), b.data(), nullptr,
                               out.data()),
            WEFT_RT_OK);
  EXPECT_EQ(out[0], static_cast<int32_t>(5u << 30));
  // A scaled result out of range saturates; beta 0 ignores the bias.
  std::vector<int64_t> x = {int64_t(1) << 40}, y = {int64_t(1) << 20};
  std::vector<int64_t> bias = {5}, wide(1);
  Params scaled;
  scaled.add({WEFT_RT_I64, 1, 1, 1, 0, 0})
      .addDouble(16)
      .addDouble(1)
      .add({0, 0, 0});
  ASSERT_EQ(weft_rt_cpu_matmul(ctx, scaled.data(), x.data(), y.data(),
                               bias.data(), wide.data()),
            WEFT_RT_OK);
  EXPECT_EQ(wide[0], INT64_MAX);
  Params noBeta;
  noBeta.add({WEFT_RT_I64, 1, 1, 1, 0, 0})
      .addDouble(1)
      .addDouble(0)
      .add({0, 0, 0});
  ASSERT_EQ(weft_rt_cpu_matmul(ctx, noBeta.data(), x.data(), y.data(),
                               bias.data(), wide.data()),
            WEFT_RT_OK);
  EXPECT_EQ(wide[0], int64_t(1) << 60);
}

// Tests that malformed blocks fail with a message instead of crashing.
TEST_P(MatmulTest, Errors) {
  std::vector<float> a(64), b(64), out(64);
  auto run = [&](const Params &p) {
    return weft_rt_cpu_matmul(ctx, p.data(), a.data(), b.data(), nullptr,
                              out.data());
  };
  auto block = [](int64_t dtype, int64_t m, int64_t trans, int64_t rank) {
    Params p;
    p.add({dtype, m, 4, 4, trans, 0})
        .addDouble(1)
        .addDouble(0)
        .add({0, 1, rank});
    for (int64_t i = 0; i < 3 * std::max<int64_t>(rank, 0) && i < 64; ++i)
      p.add(1);
    return p;
  };
  EXPECT_EQ(run(block(99, 4, 0, 0)), WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(error().find("unknown dtype code 99"), std::string::npos);
  EXPECT_EQ(run(block(WEFT_RT_F16, 4, 0, 0)), WEFT_RT_UNSUPPORTED);
  EXPECT_NE(error().find("f16"), std::string::npos);
  EXPECT_EQ(run(block(WEFT_RT_U8, 4, 0, 0)), WEFT_RT_UNSUPPORTED);
  EXPECT_EQ(run(block(WEFT_RT_F32, -1, 0, 0)), WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(error().find("negative size"), std::string::npos);
  EXPECT_EQ(run(block(WEFT_RT_F32, 4, 2, 0)), WEFT_RT_INVALID_ARGUMENT);
  EXPECT_EQ(run(block(WEFT_RT_F32, 4, 0, 17)), WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(error().find("batch rank 17"), std::string::npos);
  Params huge;
  huge.add({WEFT_RT_F32, int64_t(1) << 40, int64_t(1) << 40, 4, 0, 0})
      .addDouble(1)
      .addDouble(0)
      .add({0, 1, 0});
  EXPECT_EQ(run(huge), WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(error().find("overflow"), std::string::npos);
  EXPECT_EQ(weft_rt_cpu_matmul(ctx, block(WEFT_RT_F32, 4, 0, 0).data(), nullptr,
                               b.data(), nullptr, out.data()),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(error().find("a is NULL"), std::string::npos);
  EXPECT_EQ(
      weft_rt_cpu_matmul(ctx, nullptr, a.data(), b.data(), nullptr, out.data()),
      WEFT_RT_INVALID_ARGUMENT);
}

WEFT_KERNEL_TEST_THREADS(MatmulTest);
