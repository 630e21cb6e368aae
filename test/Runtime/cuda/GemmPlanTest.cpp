//===- GemmPlanTest.cpp - Row-major GEMMs as cuBLAS calls -----------------===//
//
// planGemm's arguments, checked field by field and by running them through
// a host model of cuBLAS's column-major GEMM against a row-major reference.
// Needs no GPU.
//
//===----------------------------------------------------------------------===//

#include "cuda/GemmPlan.h"
#include "CudaTestSupport.h"

#include <gtest/gtest.h>

#include <climits>
#include <string>
#include <vector>

using namespace weft::rt::cuda;
using namespace weft::rt::cuda::test;

namespace {

GemmRequest makeRequest(int64_t m, int64_t n, int64_t k, bool transA,
                        bool transB, int64_t padding = 0) {
  GemmRequest r;
  r.m = m;
  r.n = n;
  r.k = k;
  r.transA = transA;
  r.transB = transB;
  r.lda = (transA ? m : k) + padding;
  r.ldb = (transB ? k : n) + padding;
  r.ldc = n + padding;
  return r;
}

/// cuBLAS's definition: column-major C (m x n, ldc) = alpha op(X) op(Y) +
/// beta C, X being m x k (k x m when transa) with lda, Y k x n (n x k).
void columnMajorGemm(const CublasGemmCall &call, float alpha, const float *x,
                     const float *y, float beta, float *c) {
  for (int i = 0; i < call.m; ++i)
    for (int j = 0; j < call.n; ++j) {
      float sum = 0;
      for (int p = 0; p < call.k; ++p) {
        float xv = call.transa == CUBLAS_OP_N ? x[i + p * call.lda]
                                              : x[p + i * call.lda];
        float yv = call.transb == CUBLAS_OP_N ? y[p + j * call.ldb]
                                              : y[j + p * call.ldb];
        sum += xv * yv;
      }
      c[i + j * call.ldc] = alpha * sum + beta * c[i + j * call.ldc];
    }
}

/// Row-major C = alpha op(A) op(B) + beta C, straight from the definition.
void rowMajorGemm(const GemmRequest &r, float alpha, const float *a,
                  const float *b, float beta, float *c) {
  for (int64_t i = 0; i < r.m; ++i)
    for (int64_t j = 0; j < r.n; ++j) {
      float sum = 0;
      for (int64_t p = 0; p < r.k; ++p) {
        float av = r.transA ? a[p * r.lda + i] : a[i * r.lda + p];
        float bv = r.transB ? b[j * r.ldb + p] : b[p * r.ldb + j];
        sum += av * bv;
      }
      c[i * r.ldc + j] = alpha * sum + beta * c[i * r.ldc + j];
    }
}

std::vector<float> pattern(size_t count, int seed) {
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i)
    values[i] = static_cast<float>(static_cast<int>((i * 7 + seed) % 11) - 5);
  return values;
}

// Tests that a plain row-major GEMM becomes B first, A second, m = N, n = M.
TEST(GemmPlan, PlainSwapsOperands) {
  auto ctx = makeContext();
  CublasGemmCall call;
  ASSERT_EQ(planGemm(ctx.get(), makeRequest(2, 3, 4, false, false), &call),
            WEFT_RT_OK);
  EXPECT_EQ(call.transa, CUBLAS_OP_N);
  EXPECT_EQ(call.transb, CUBLAS_OP_N);
  EXPECT_EQ(call.m, 3);
  EXPECT_EQ(call.n, 2);
  EXPECT_EQ(call.k, 4);
  EXPECT_EQ(call.first, GemmOperand::B);
  EXPECT_EQ(call.second, GemmOperand::A);
  EXPECT_EQ(call.lda, 3); // B's row length N
  EXPECT_EQ(call.ldb, 4); // A's row length K
  EXPECT_EQ(call.ldc, 3);
  EXPECT_EQ(call.dataType, CUDA_R_32F);
  EXPECT_EQ(call.computeType, CUBLAS_COMPUTE_32F);
}

// Tests that transA transposes cuBLAS's second operand and transB its first,
// and that padded leading dimensions carry over.
TEST(GemmPlan, TransposesAndLeadingDims) {
  auto ctx = makeContext();
  CublasGemmCall call;
  ASSERT_EQ(planGemm(ctx.get(), makeRequest(2, 3, 4, true, false, 5), &call),
            WEFT_RT_OK);
  EXPECT_EQ(call.transa, CUBLAS_OP_N);
  EXPECT_EQ(call.transb, CUBLAS_OP_T);
  EXPECT_EQ(call.lda, 3 + 5);
  EXPECT_EQ(call.ldb, 2 + 5); // A stored K x M: rows of M
  EXPECT_EQ(call.ldc, 3 + 5);

  ASSERT_EQ(planGemm(ctx.get(), makeRequest(2, 3, 4, false, true, 1), &call),
            WEFT_RT_OK);
  EXPECT_EQ(call.transa, CUBLAS_OP_T);
  EXPECT_EQ(call.transb, CUBLAS_OP_N);
  EXPECT_EQ(call.lda, 4 + 1); // B stored N x K: rows of K
  EXPECT_EQ(call.ldb, 4 + 1);
  EXPECT_EQ(call.m, 3);
  EXPECT_EQ(call.n, 2);
}

// Tests that f16 and bf16 keep their storage type and accumulate in f32.
TEST(GemmPlan, HalfTypesAccumulateInF32) {
  auto ctx = makeContext();
  CublasGemmCall call;
  GemmRequest r = makeRequest(8, 8, 8, false, false);
  r.dtype = WEFT_RT_F16;
  ASSERT_EQ(planGemm(ctx.get(), r, &call), WEFT_RT_OK);
  EXPECT_EQ(call.dataType, CUDA_R_16F);
  EXPECT_EQ(call.computeType, CUBLAS_COMPUTE_32F);
  r.dtype = WEFT_RT_BF16;
  ASSERT_EQ(planGemm(ctx.get(), r, &call), WEFT_RT_OK);
  EXPECT_EQ(call.dataType, CUDA_R_16BF);
  EXPECT_EQ(call.computeType, CUBLAS_COMPUTE_32F);
}

// Tests that f64 computes in f64 with double scalars.
TEST(GemmPlan, F64ComputesInF64) {
  auto ctx = makeContext();
  CublasGemmCall call;
  GemmRequest r = makeRequest(8, 8, 8, false, false);
  r.dtype = WEFT_RT_F64;
  ASSERT_EQ(planGemm(ctx.get(), r, &call), WEFT_RT_OK);
  EXPECT_EQ(call.dataType, CUDA_R_64F);
  EXPECT_EQ(call.computeType, CUBLAS_COMPUTE_64F);
  EXPECT_TRUE(call.doubleScalars);
  r.dtype = WEFT_RT_F32;
  ASSERT_EQ(planGemm(ctx.get(), r, &call), WEFT_RT_OK);
  EXPECT_FALSE(call.doubleScalars);
}

// Tests that batch strides follow the operand swap (cuBLAS's first operand
// is B) and that overlapping or negative batches are refused.
TEST(GemmPlan, BatchedStrides) {
  auto ctx = makeContext();
  CublasGemmCall call;
  GemmRequest r = makeRequest(4, 5, 6, false, false);
  r.batch = 3;
  r.strideA = 24;
  r.strideB = 0;
  r.strideC = 20;
  ASSERT_EQ(planGemm(ctx.get(), r, &call), WEFT_RT_OK);
  EXPECT_EQ(call.batchCount, 3);
  EXPECT_EQ(call.strideFirst, 0);
  EXPECT_EQ(call.strideSecond, 24);
  EXPECT_EQ(call.strideC, 20);
  r.strideC = 19; // the last row of one product is the next one's first
  EXPECT_EQ(planGemm(ctx.get(), r, &call), WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(weft_rt_context_error(ctx.get())).find("overlap"),
            std::string::npos);
  r.ldc = 7; // padded rows: 3 * 7 + 5 elements per product
  r.strideC = 26;
  EXPECT_EQ(planGemm(ctx.get(), r, &call), WEFT_RT_OK);
  r.strideC = 25;
  EXPECT_EQ(planGemm(ctx.get(), r, &call), WEFT_RT_INVALID_ARGUMENT);
  r.strideC = 26;
  r.strideA = -1;
  EXPECT_EQ(planGemm(ctx.get(), r, &call), WEFT_RT_INVALID_ARGUMENT);
  r.strideA = 24;
  r.batch = int64_t(INT_MAX) + 1;
  EXPECT_EQ(planGemm(ctx.get(), r, &call), WEFT_RT_UNSUPPORTED);
}

// Tests that the plan, run through cuBLAS's column-major definition, gives
// the row-major answer for every transpose and padding.
TEST(GemmPlan, MatchesRowMajorReference) {
  auto ctx = makeContext();
  for (bool transA : {false, true})
    for (bool transB : {false, true})
      for (int64_t padding : {0, 3}) {
        GemmRequest r = makeRequest(5, 7, 3, transA, transB, padding);
        CublasGemmCall call;
        ASSERT_EQ(planGemm(ctx.get(), r, &call), WEFT_RT_OK);
        std::vector<float> a = pattern((transA ? r.k : r.m) * r.lda, 1);
        std::vector<float> b = pattern((transB ? r.n : r.k) * r.ldb, 2);
        std::vector<float> expected = pattern(r.m * r.ldc, 3);
        std::vector<float> actual = expected;
        rowMajorGemm(r, 0.5f, a.data(), b.data(), 2.0f, expected.data());
        const float *first = call.first == GemmOperand::A ? a.data() : b.data();
        const float *second =
            call.second == GemmOperand::A ? a.data() : b.data();
        columnMajorGemm(call, 0.5f, first, second, 2.0f, actual.data());
        EXPECT_EQ(actual, expected)
            << "transA=" << transA << " transB=" << transB
            << " padding=" << padding;
      }
}

// Tests that leading dimensions shorter than a row are refused, by name.
TEST(GemmPlan, RejectsShortLeadingDims) {
  auto ctx = makeContext();
  CublasGemmCall call;
  GemmRequest r = makeRequest(2, 3, 4, false, false);
  r.lda = 3;
  EXPECT_EQ(planGemm(ctx.get(), r, &call), WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(weft_rt_context_error(ctx.get())).find("lda = 3"),
            std::string::npos)
      << weft_rt_context_error(ctx.get());
  r = makeRequest(2, 3, 4, false, true);
  r.ldb = 3; // N x K: rows of 4
  EXPECT_EQ(planGemm(ctx.get(), r, &call), WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(weft_rt_context_error(ctx.get())).find("ldb = 3"),
            std::string::npos);
  r = makeRequest(2, 3, 4, false, false);
  r.ldc = 2;
  EXPECT_EQ(planGemm(ctx.get(), r, &call), WEFT_RT_INVALID_ARGUMENT);
  // Empty matrices still need leading dimensions of at least 1.
  r = makeRequest(0, 0, 0, false, false);
  EXPECT_EQ(planGemm(ctx.get(), r, &call), WEFT_RT_INVALID_ARGUMENT);
  r.lda = r.ldb = r.ldc = 1;
  EXPECT_EQ(planGemm(ctx.get(), r, &call), WEFT_RT_OK);
}

// Tests negative sizes, other dtypes and sizes beyond 32 bits.
TEST(GemmPlan, RejectsWhatCublasCannotDo) {
  auto ctx = makeContext();
  CublasGemmCall call;
  GemmRequest r = makeRequest(2, 3, 4, false, false);
  r.m = -1;
  EXPECT_EQ(planGemm(ctx.get(), r, &call), WEFT_RT_INVALID_ARGUMENT);
  r = makeRequest(2, 3, 4, false, false);
  r.dtype = WEFT_RT_I32;
  EXPECT_EQ(planGemm(ctx.get(), r, &call), WEFT_RT_UNSUPPORTED);
  EXPECT_NE(std::string(weft_rt_context_error(ctx.get())).find("i32"),
            std::string::npos);
  r = makeRequest(2, int64_t(INT_MAX) + 1, 4, false, false);
  EXPECT_EQ(planGemm(ctx.get(), r, &call), WEFT_RT_UNSUPPORTED);
  EXPECT_NE(std::string(weft_rt_context_error(ctx.get())).find("32-bit"),
            std::string::npos);
}

} // namespace
