//===- GemmTest.cpp - GEMMs on cuBLAS against a host reference ------------===//
//
// Runs only where a GPU is present (skipped otherwise): f32, f16 and bf16
// GEMMs over every transpose, on integer-valued data whose results are exact
// in every dtype, and an f32 case that TF32 would get wrong.
//
//===----------------------------------------------------------------------===//

#include "cuda/Gemm.h"
#include "CudaTestSupport.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

using namespace weft::rt::cuda;
using namespace weft::rt::cuda::test;

namespace {

uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

float floatOf(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

/// Exact for the small integers used here (no rounding needed).
uint16_t toHalf(float value) {
  uint32_t bits = bitsOf(value);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  if (value == 0)
    return sign;
  int exponent = static_cast<int>((bits >> 23) & 0xff) - 127 + 15;
  return static_cast<uint16_t>(sign | (exponent << 10) |
                               ((bits >> 13) & 0x3ff));
}

float fromHalf(uint16_t half) {
  uint32_t sign = static_cast<uint32_t>(half & 0x8000) << 16;
  uint32_t exponent = (half >> 10) & 0x1f;
  uint32_t mantissa = half & 0x3ff;
  if (exponent == 0 && mantissa == 0)
    return floatOf(sign);
  return floatOf(sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
}

uint16_t toBfloat16(float value) {
  return static_cast<uint16_t>(bitsOf(value) >> 16);
}
float fromBfloat16(uint16_t value) {
  return floatOf(static_cast<uint32_t>(value) << 16);
}

/// Device buffers of one GEMM, freed at the end.
struct DeviceBuffers {
  DeviceArena arena;
  Stream stream;
  CublasHandle handle;
};

class CudaGemm : public ::testing::Test {
protected:
  void SetUp() override {
    if (!gpuPresent())
      GTEST_SKIP() << "no GPU on this machine";
    ctx = makeContext();
    DeviceInfo info;
    ASSERT_EQ(openDevice(ctx.get(), 0, {80}, &info), WEFT_RT_OK) << error();
    ASSERT_EQ(buffers.stream.create(ctx.get()), WEFT_RT_OK) << error();
    ASSERT_EQ(buffers.handle.create(ctx.get(), buffers.stream), WEFT_RT_OK)
        << error();
    ASSERT_EQ(buffers.arena.allocate(ctx.get(), 1 << 20), WEFT_RT_OK)
        << error();
  }
  const char *error() { return weft_rt_context_error(ctx.get()); }

  /// Runs `r` on the GPU with A, B and C in the arena at 0, 256 KiB and
  /// 512 KiB, values converted by `store` and `load`.
  template <typename T, typename Store, typename Load>
  std::vector<float> run(const GemmRequest &r, float alpha,
                         const std::vector<float> &a,
                         const std::vector<float> &b, float beta,
                         const std::vector<float> &c, Store store, Load load) {
    auto put = [&](const std::vector<float> &values, size_t offset) {
      std::vector<T> stored(values.size());
      for (size_t i = 0; i < values.size(); ++i)
        stored[i] = store(values[i]);
      EXPECT_EQ(buffers.arena.copyToDevice(ctx.get(), buffers.stream, offset,
                                           stored.data(),
                                           stored.size() * sizeof(T), "put"),
                WEFT_RT_OK)
          << error();
    };
    put(a, 0);
    put(b, 256 << 10);
    put(c, 512 << 10);
    char *base = static_cast<char *>(buffers.arena.data());
    EXPECT_EQ(gemm(ctx.get(), buffers.handle, r, alpha, base,
                   base + (256 << 10), beta, base + (512 << 10)),
              WEFT_RT_OK)
        << error();
    EXPECT_EQ(buffers.stream.synchronize(ctx.get()), WEFT_RT_OK) << error();
    std::vector<T> stored(c.size());
    EXPECT_EQ(buffers.arena.copyToHost(ctx.get(), buffers.stream, stored.data(),
                                       512 << 10, stored.size() * sizeof(T),
                                       "get"),
              WEFT_RT_OK)
        << error();
    std::vector<float> result(c.size());
    for (size_t i = 0; i < c.size(); ++i)
      result[i] = load(stored[i]);
    return result;
  }

  ContextPtr ctx;
  DeviceBuffers buffers;
};

std::vector<float> integers(size_t count, int seed) {
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i)
    values[i] = static_cast<float>(static_cast<int>((i * 5 + seed) % 7) - 3);
  return values;
}

void reference(const GemmRequest &r, float alpha, const std::vector<float> &a,
               const std::vector<float> &b, float beta, std::vector<float> &c) {
  for (int64_t i = 0; i < r.m; ++i)
    for (int64_t j = 0; j < r.n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < r.k; ++p)
        sum += double(r.transA ? a[p * r.lda + i] : a[i * r.lda + p]) *
               double(r.transB ? b[j * r.ldb + p] : b[p * r.ldb + j]);
      c[i * r.ldc + j] =
          static_cast<float>(alpha * sum + beta * c[i * r.ldc + j]);
    }
}

// Tests every dtype and transpose against the reference; the data keep
// every result exact, so any marshalling slip shows.
TEST_F(CudaGemm, EveryDtypeAndTranspose) {
  for (weft_rt_dtype dtype : {WEFT_RT_F32, WEFT_RT_F16, WEFT_RT_BF16})
    for (bool transA : {false, true})
      for (bool transB : {false, true}) {
        GemmRequest r;
        r.dtype = dtype;
        r.m = 5;
        r.n = 9;
        r.k = 13;
        r.transA = transA;
        r.transB = transB;
        r.lda = (transA ? r.m : r.k) + 2;
        r.ldb = (transB ? r.k : r.n) + 1;
        r.ldc = r.n + 3;
        std::vector<float> a = integers((transA ? r.k : r.m) * r.lda, 1);
        std::vector<float> b = integers((transB ? r.n : r.k) * r.ldb, 2);
        std::vector<float> c = integers(r.m * r.ldc, 3);
        std::vector<float> expected = c;
        reference(r, 1.0f, a, b, 2.0f, expected);
        std::vector<float> actual;
        if (dtype == WEFT_RT_F32)
          actual = run<float>(
              r, 1.0f, a, b, 2.0f, c, [](float v) { return v; },
              [](float v) { return v; });
        else if (dtype == WEFT_RT_F16)
          actual = run<uint16_t>(r, 1.0f, a, b, 2.0f, c, toHalf, fromHalf);
        else
          actual =
              run<uint16_t>(r, 1.0f, a, b, 2.0f, c, toBfloat16, fromBfloat16);
        EXPECT_EQ(actual, expected)
            << weft_rt_dtype_name(dtype) << " transA=" << transA
            << " transB=" << transB;
      }
}

// Tests that f32 is not computed in TF32: 1 + 2^-12 keeps its low bit only
// in f32 (TF32 has 10 mantissa bits), so 64 such products sum to 64 + 2^-6.
TEST_F(CudaGemm, F32WithoutTf32) {
  GemmRequest r;
  r.m = r.n = 64;
  r.k = 64;
  r.lda = r.ldb = r.ldc = 64;
  std::vector<float> a(64 * 64, 1.0f + std::ldexp(1.0f, -12));
  std::vector<float> b(64 * 64, 1.0f);
  std::vector<float> c(64 * 64, 0.0f);
  std::vector<float> actual = run<float>(
      r, 1.0f, a, b, 0.0f, c, [](float v) { return v; },
      [](float v) { return v; });
  for (float value : actual)
    ASSERT_EQ(value, 64.0f + std::ldexp(1.0f, -6));
}

} // namespace
