//===- KernelTestSupport.h - Helpers of the CPU kernel tests ----*- C++ -*-===//
//
// A context fixture run at 1 and 2 threads, parameter-block builders,
// seeded random tensors and element-wise comparison against references.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TEST_RUNTIME_CPU_KERNELTESTSUPPORT_H
#define WEFT_TEST_RUNTIME_CPU_KERNELTESTSUPPORT_H

#include "weft_rt.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

namespace weft::rt::test {

/// A parameter block built word by word.
class Params {
public:
  Params &add(int64_t value) {
    words.push_back(value);
    return *this;
  }
  Params &add(std::initializer_list<int64_t> values) {
    for (int64_t value : values)
      words.push_back(value);
    return *this;
  }
  Params &add(const std::vector<int64_t> &values) {
    // A loop rather than insert(): GCC 12 warns falsely about the latter.
    for (int64_t value : values)
      words.push_back(value);
    return *this;
  }
  /// A float parameter: the bits of a double.
  Params &addDouble(double value) {
    int64_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    return add(bits);
  }
  const int64_t *data() const { return words.data(); }
  std::vector<int64_t> words;
};

/// Runs each test at 1 and at 2 threads, with a fresh context.
class KernelTest : public ::testing::TestWithParam<int> {
protected:
  void SetUp() override {
    ASSERT_EQ(weft_rt_context_create(&ctx), WEFT_RT_OK);
    ASSERT_EQ(weft_rt_context_set_num_threads(ctx, GetParam()), WEFT_RT_OK);
  }
  void TearDown() override { weft_rt_context_destroy(ctx); }
  std::string error() const { return weft_rt_context_error(ctx); }
  /// A new context, dropping every cached kernel.
  void resetContext() {
    weft_rt_context_destroy(ctx);
    ASSERT_EQ(weft_rt_context_create(&ctx), WEFT_RT_OK);
    ASSERT_EQ(weft_rt_context_set_num_threads(ctx, GetParam()), WEFT_RT_OK);
  }
  weft_rt_context *ctx = nullptr;
};

#define WEFT_KERNEL_TEST_THREADS(suite)                                        \
  INSTANTIATE_TEST_SUITE_P(                                                    \
      Threads, suite, ::testing::Values(1, 2),                                 \
      [](const auto &info) { return std::to_string(info.param) + "thread"; })

/// `count` values uniform in [low, high), from a seed.
template <typename T>
std::vector<T> randomValues(size_t count, uint32_t seed, double low = -1.0,
                            double high = 1.0) {
  std::mt19937 engine(seed);
  std::vector<T> values(count);
  if constexpr (std::is_floating_point_v<T>) {
    std::uniform_real_distribution<double> dist(low, high);
    for (T &v : values)
      v = static_cast<T>(dist(engine));
  } else {
    std::uniform_int_distribution<int64_t> dist(static_cast<int64_t>(low),
                                                static_cast<int64_t>(high));
    for (T &v : values)
      v = static_cast<T>(dist(engine));
  }
  return values;
}

inline int64_t product(const std::vector<int64_t> &dims) {
  int64_t p = 1;
  for (int64_t d : dims)
    p *= d;
  return p;
}

/// Expects |actual - expected| <= atol + rtol * |expected| everywhere, NaN
/// only where NaN is expected; reports the first mismatch.
template <typename T>
::testing::AssertionResult allClose(const std::vector<T> &actual,
                                    const std::vector<double> &expected,
                                    double rtol = 1e-5, double atol = 1e-5) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure()
           << "size " << actual.size() << " != " << expected.size();
  for (size_t i = 0; i < actual.size(); ++i) {
    double a = static_cast<double>(actual[i]), e = expected[i];
    bool ok;
    if (std::isnan(e))
      ok = std::isnan(a);
    else if (std::isinf(e))
      ok = a == e;
    else
      ok = std::fabs(a - e) <= atol + rtol * std::fabs(e);
    if (!ok)
      return ::testing::AssertionFailure()
             << "element " << i << ": " << a << " != " << e << " (of "
             << actual.size() << ")";
  }
  return ::testing::AssertionSuccess();
}

/// Exact comparison for integers and moved data.
template <typename T>
::testing::AssertionResult allEqual(const std::vector<T> &actual,
                                    const std::vector<T> &expected) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure()
           << "size " << actual.size() << " != " << expected.size();
  for (size_t i = 0; i < actual.size(); ++i)
    if (std::memcmp(&actual[i], &expected[i], sizeof(T)) != 0)
      return ::testing::AssertionFailure()
             << "element " << i << ": " << +actual[i] << " != " << +expected[i]
             << " (of " << actual.size() << ")";
  return ::testing::AssertionSuccess();
}

/// Row-major strides of dims.
inline std::vector<int64_t> stridesOf(const std::vector<int64_t> &dims) {
  std::vector<int64_t> strides(dims.size());
  int64_t stride = 1;
  for (size_t i = dims.size(); i-- > 0;)
    strides[i] = stride, stride *= dims[i];
  return strides;
}

/// The multi-index of linear `index` in dims.
inline std::vector<int64_t> unravel(int64_t index,
                                    const std::vector<int64_t> &dims) {
  std::vector<int64_t> result(dims.size());
  for (size_t i = dims.size(); i-- > 0;) {
    result[i] = index % dims[i];
    index /= dims[i];
  }
  return result;
}

} // namespace weft::rt::test

#endif // WEFT_TEST_RUNTIME_CPU_KERNELTESTSUPPORT_H
