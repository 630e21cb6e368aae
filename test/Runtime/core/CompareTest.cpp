//===- CompareTest.cpp - Tests of the --check comparison rule -------------===//
//
// |a - b| <= atol + rtol * |b| for floats, NaN only where NaN, integers and
// bools exact, dtypes and shapes exact.
//
//===----------------------------------------------------------------------===//

#include "Compare.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

using namespace weft::rt;

namespace {

template <typename T>
Tensor expectedTensor(weft_rt_dtype dtype, std::vector<int64_t> dims,
                      std::vector<T> values) {
  Tensor t;
  t.dtype = dtype;
  t.dims = std::move(dims);
  t.data.resize(values.size() * sizeof(T));
  if (!values.empty())
    std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

template <typename T>
CompareResult compare(weft_rt_dtype dtype, std::vector<T> actual,
                      std::vector<T> expected, Tolerance tolerance = {}) {
  std::vector<int64_t> dims = {static_cast<int64_t>(actual.size())};
  return compareTensors(dtype, dims, actual.data(),
                        expectedTensor(dtype, dims, expected), tolerance);
}

TEST(CompareTest, ExactAndWithinTolerancePass) {
  CompareResult same = compare<float>(WEFT_RT_F32, {1, 2, 3}, {1, 2, 3});
  EXPECT_TRUE(same.passed());
  EXPECT_EQ(same.maxAbsError, 0.0);
  EXPECT_EQ(same.numElements, 3);
  // 1000.5 vs 1000: |diff| 0.5 <= 1e-5 + 1e-3 * 1000.
  CompareResult close = compare<float>(WEFT_RT_F32, {1000.5f}, {1000});
  EXPECT_TRUE(close.passed());
  EXPECT_NEAR(close.maxAbsError, 0.5, 1e-9);
  EXPECT_NEAR(close.maxRelError, 5e-4, 1e-9);
  // Near zero only atol counts.
  EXPECT_TRUE(compare<double>(WEFT_RT_F64, {5e-6}, {0}).passed());
  EXPECT_FALSE(compare<double>(WEFT_RT_F64, {2e-5}, {0}).passed());
}

TEST(CompareTest, MismatchesAreCountedAndListed) {
  std::vector<float> expected(10, 1.0f), actual(10, 1.0f);
  for (int i : {2, 3, 5, 7, 8, 9})
    actual[i] = 1.1f;
  std::vector<int64_t> dims = {2, 5};
  CompareResult r =
      compareTensors(WEFT_RT_F32, dims, actual.data(),
                     expectedTensor(WEFT_RT_F32, dims, expected), {}, 4);
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(r.numMismatches, 6);
  ASSERT_EQ(r.firstMismatches.size(), 4u);
  EXPECT_EQ(r.firstMismatches[0].index, 2);
  EXPECT_EQ(formatIndex(dims, r.firstMismatches[2].index), "[1, 0]");
  EXPECT_NEAR(r.firstMismatches[0].actual, 1.1, 1e-6);
  EXPECT_EQ(r.firstMismatches[0].expected, 1.0);
  EXPECT_NEAR(r.maxAbsError, 0.1, 1e-6);
}

TEST(CompareTest, ToleranceArgumentsApply) {
  Tolerance loose{0.2, 0};
  EXPECT_TRUE(compare<float>(WEFT_RT_F32, {1.1f}, {1}, loose).passed());
  Tolerance exact{0, 0};
  EXPECT_FALSE(compare<float>(WEFT_RT_F32, {1.0001f}, {1}, exact).passed());
}

TEST(CompareTest, NaNOnlyWhereNaN) {
  float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(compare<float>(WEFT_RT_F32, {nan, 1}, {nan, 1}).passed());
  EXPECT_FALSE(compare<float>(WEFT_RT_F32, {nan}, {1}).passed());
  EXPECT_FALSE(compare<float>(WEFT_RT_F32, {1}, {nan}).passed());
  float inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(compare<float>(WEFT_RT_F32, {inf, -inf}, {inf, -inf}).passed());
  CompareResult r = compare<float>(WEFT_RT_F32, {inf}, {1e30f});
  EXPECT_FALSE(r.passed());
  EXPECT_TRUE(std::isinf(r.maxAbsError));
  EXPECT_FALSE(compare<float>(WEFT_RT_F32, {-inf}, {inf}).passed());
}

TEST(CompareTest, IntegersAreExact) {
  // 2^53 + 1 and 2^53 are the same double: the comparison must not be.
  int64_t big = (1LL << 53) + 1;
  EXPECT_FALSE(compare<int64_t>(WEFT_RT_I64, {big}, {1LL << 53}).passed());
  EXPECT_TRUE(compare<int64_t>(WEFT_RT_I64, {big}, {big}).passed());
  // Tolerances do not apply to integers.
  EXPECT_FALSE(
      compare<int32_t>(WEFT_RT_I32, {1000}, {1001}, Tolerance{1, 1}).passed());
  EXPECT_FALSE(compare<int8_t>(WEFT_RT_I8, {-1}, {1}).passed());
  EXPECT_TRUE(compare<uint8_t>(WEFT_RT_U8, {200}, {200}).passed());
  EXPECT_FALSE(compare<uint8_t>(WEFT_RT_BOOL, {1, 0}, {1, 1}).passed());
}

TEST(CompareTest, HalfFloatsCompareAsFloats) {
  // 0x3c00 = 1.0, 0x3c01 = 1.000977: within rtol 1e-3.
  EXPECT_TRUE(compare<uint16_t>(WEFT_RT_F16, {0x3c01}, {0x3c00}).passed());
  EXPECT_FALSE(compare<uint16_t>(WEFT_RT_F16, {0x3c02}, {0x3c00}).passed());
  // bf16 1.0 vs 1.0078125.
  EXPECT_FALSE(compare<uint16_t>(WEFT_RT_BF16, {0x3f81}, {0x3f80}).passed());
  EXPECT_TRUE(
      compare<uint16_t>(WEFT_RT_BF16, {0x3f81}, {0x3f80}, Tolerance{1e-2, 0})
          .passed());
}

TEST(CompareTest, DTypesAndShapesMustMatch) {
  std::vector<float> values = {1, 2, 3, 4, 5, 6};
  Tensor expected = expectedTensor(WEFT_RT_F32, {3, 2}, values);
  CompareResult shape =
      compareTensors(WEFT_RT_F32, {2, 3}, values.data(), expected, {});
  EXPECT_FALSE(shape.passed());
  EXPECT_EQ(shape.typeMismatch,
            "expected f32[3,2], the model produced f32[2,3]");
  Tensor asInt =
      expectedTensor<int32_t>(WEFT_RT_I32, {3, 2}, {1, 2, 3, 4, 5, 6});
  CompareResult dtype =
      compareTensors(WEFT_RT_F32, {3, 2}, values.data(), asInt, {});
  EXPECT_FALSE(dtype.passed());
  EXPECT_NE(dtype.typeMismatch.find("expected i32[3,2]"), std::string::npos);
}

TEST(CompareTest, EmptyTensorsMatch) {
  Tensor expected = expectedTensor<float>(WEFT_RT_F32, {0, 4}, {});
  CompareResult r = compareTensors(WEFT_RT_F32, {0, 4}, nullptr, expected, {});
  EXPECT_TRUE(r.passed());
  EXPECT_EQ(r.numElements, 0);
}

} // namespace
