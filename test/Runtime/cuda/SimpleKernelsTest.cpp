//===- SimpleKernelsTest.cpp - Row-wise and movement kernels on CUDA ------===//
//
// Everywhere: bad parameter blocks fail with INVALID_ARGUMENT before the
// device is touched, a missing device state with INTERNAL, and the plans
// simplify shapes as the CPU kernels do. With a GPU: every kernel on random
// inputs of many shapes (odd sizes, non-multiples of the block) against its
// CPU namesake on the same parameter block.
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"
#include "cuda/DeviceState.h"
#include "cuda/kernels/SimpleParams.h"
#include "weft_rt_cuda.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

using namespace weft::rt::cuda;
using namespace weft::rt::cuda::test;

namespace {

int64_t bitsOf(double value) {
  int64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

/// Pointers the plans check but never dereference (nothing reaches a device
/// without a GPU).
void *const kFakeA = reinterpret_cast<void *>(uintptr_t(0x10000));
void *const kFakeB = reinterpret_cast<void *>(uintptr_t(0x20000));
void *const kFakeC = reinterpret_cast<void *>(uintptr_t(0x30000));
void *const kFakeD = reinterpret_cast<void *>(uintptr_t(0x40000));

/// A context with a default-constructed (GPU-less) device state attached.
class CudaSimpleChecks : public ::testing::Test {
protected:
  void SetUp() override {
    ctx = makeContext();
    ASSERT_TRUE(ctx);
    attachDeviceState(ctx.get(), &state);
  }
  void TearDown() override {
    if (ctx)
      attachDeviceState(ctx.get(), nullptr);
  }
  /// Expects `status` to be `expected` with a message containing `part`.
  void expectFailure(weft_rt_status status, weft_rt_status expected,
                     const std::string &part) {
    EXPECT_EQ(status, expected) << weft_rt_context_error(ctx.get());
    EXPECT_TRUE(contains(weft_rt_context_error(ctx.get()), part))
        << "message: " << weft_rt_context_error(ctx.get())
        << "\nexpected to contain: " << part;
  }
  void expectInvalid(weft_rt_status status, const std::string &part) {
    expectFailure(status, WEFT_RT_INVALID_ARGUMENT, part);
  }
  ContextPtr ctx;
  DeviceState state;
};

// Tests that every kernel refuses a NULL context or parameter block.
TEST_F(CudaSimpleChecks, NullContextAndBlock) {
  weft_rt_context *c = ctx.get();
  EXPECT_EQ(weft_rt_cuda_softmax(nullptr, nullptr, kFakeA, kFakeB),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_EQ(weft_rt_cuda_copy2d(nullptr, nullptr, kFakeA, kFakeB),
            WEFT_RT_INVALID_ARGUMENT);
  expectInvalid(weft_rt_cuda_softmax(c, nullptr, kFakeA, kFakeB),
                "softmax: parameter block is NULL");
  expectInvalid(weft_rt_cuda_normalize(c, nullptr, kFakeA, kFakeB, nullptr,
                                       kFakeC, nullptr, nullptr),
                "normalize: parameter block is NULL");
  expectInvalid(weft_rt_cuda_reduce(c, nullptr, kFakeA, kFakeB),
                "reduce: parameter block is NULL");
  expectInvalid(weft_rt_cuda_arg_reduce(c, nullptr, kFakeA, kFakeB),
                "arg_reduce: parameter block is NULL");
  expectInvalid(weft_rt_cuda_transpose(c, nullptr, kFakeA, kFakeB),
                "transpose: parameter block is NULL");
  expectInvalid(weft_rt_cuda_gather(c, nullptr, kFakeA, kFakeB, kFakeC),
                "gather: parameter block is NULL");
  expectInvalid(
      weft_rt_cuda_gather_elements(c, nullptr, kFakeA, kFakeB, kFakeC),
      "gather_elements: parameter block is NULL");
  expectInvalid(weft_rt_cuda_slice(c, nullptr, kFakeA, kFakeB),
                "slice: parameter block is NULL");
  expectInvalid(weft_rt_cuda_pad(c, nullptr, kFakeA, nullptr, kFakeB),
                "pad: parameter block is NULL");
  expectInvalid(weft_rt_cuda_tile(c, nullptr, kFakeA, kFakeB),
                "tile: parameter block is NULL");
  expectInvalid(weft_rt_cuda_trilu(c, nullptr, kFakeA, kFakeB),
                "trilu: parameter block is NULL");
  expectInvalid(weft_rt_cuda_copy2d(c, nullptr, kFakeA, kFakeB),
                "copy2d: parameter block is NULL");
}

// Tests the row-wise kernels' parameter checks.
TEST_F(CudaSimpleChecks, RowKernelBlocks) {
  weft_rt_context *c = ctx.get();
  const int64_t softmaxDtype[] = {WEFT_RT_I32, 2, 3, 1, 0};
  expectFailure(weft_rt_cuda_softmax(c, softmaxDtype, kFakeA, kFakeB),
                WEFT_RT_UNSUPPORTED, "softmax: dtype i32 is not supported");
  const int64_t softmaxUnknown[] = {99, 2, 3, 1, 0};
  expectInvalid(weft_rt_cuda_softmax(c, softmaxUnknown, kFakeA, kFakeB),
                "softmax: unknown dtype code 99");
  const int64_t softmaxLog[] = {WEFT_RT_F32, 2, 3, 1, 2};
  expectInvalid(weft_rt_cuda_softmax(c, softmaxLog, kFakeA, kFakeB),
                "softmax: log flag 2 is not 0 or 1");
  const int64_t softmaxNegative[] = {WEFT_RT_F32, 2, -3, 1, 0};
  expectInvalid(weft_rt_cuda_softmax(c, softmaxNegative, kFakeA, kFakeB),
                "are negative or overflow");
  const int64_t softmaxOverflow[] = {WEFT_RT_F32, int64_t(1) << 40,
                                     int64_t(1) << 40, 1, 0};
  expectInvalid(weft_rt_cuda_softmax(c, softmaxOverflow, kFakeA, kFakeB),
                "are negative or overflow");
  const int64_t softmaxOk[] = {WEFT_RT_F32, 2, 3, 1, 0};
  expectInvalid(weft_rt_cuda_softmax(c, softmaxOk, nullptr, kFakeB),
                "softmax: input is NULL");
  void *misaligned = reinterpret_cast<void *>(uintptr_t(0x10002));
  expectInvalid(weft_rt_cuda_softmax(c, softmaxOk, misaligned, kFakeB),
                "is not aligned to its 4-byte elements");

  const int64_t layerKind[] = {WEFT_RT_F32, 2, 4, 8, 1, bitsOf(1e-5)};
  expectInvalid(weft_rt_cuda_normalize(c, layerKind, kFakeA, kFakeB, nullptr,
                                       kFakeC, nullptr, nullptr),
                "normalize: kind 2 is neither 0 (layer) nor 1 (instance)");
  const int64_t layerEpsilon[] = {WEFT_RT_F32, 0, 4, 8, 1, bitsOf(-1.0)};
  expectInvalid(weft_rt_cuda_normalize(c, layerEpsilon, kFakeA, kFakeB, nullptr,
                                       kFakeC, nullptr, nullptr),
                "normalize: epsilon -1 is negative or NaN");
  const int64_t instanceChannels[] = {WEFT_RT_F32, 1, 7, 8, 3, bitsOf(1e-5)};
  expectInvalid(weft_rt_cuda_normalize(c, instanceChannels, kFakeA, kFakeB,
                                       nullptr, kFakeC, nullptr, nullptr),
                "7 instance rows are not a multiple of 3 channels");
  const int64_t layerOk[] = {WEFT_RT_F32, 0, 4, 8, 1, bitsOf(1e-5)};
  expectInvalid(weft_rt_cuda_normalize(c, layerOk, kFakeA, nullptr, nullptr,
                                       kFakeC, nullptr, nullptr),
                "normalize: scale is NULL");

  const int64_t reduceKind[] = {WEFT_RT_F32, 10, 1, 4, 1};
  expectInvalid(weft_rt_cuda_reduce(c, reduceKind, kFakeA, kFakeB),
                "reduce: unknown kind 10");
  const int64_t reduceBytes[] = {WEFT_RT_I8, 1, 1, 4, 1};
  expectFailure(weft_rt_cuda_reduce(c, reduceBytes, kFakeA, kFakeB),
                WEFT_RT_UNSUPPORTED, "reduce: dtype i8 is not supported");
  const int64_t reduceRank[] = {WEFT_RT_F32, 1, 17};
  expectInvalid(weft_rt_cuda_reduce(c, reduceRank, kFakeA, kFakeB),
                "reduce: rank 17 is not between 0 and 16");
  const int64_t reduceMask[] = {WEFT_RT_F32, 1, 2, 4, 5, 1, 2};
  expectInvalid(weft_rt_cuda_reduce(c, reduceMask, kFakeA, kFakeB),
                "reduce: mask entry 1 is 2, not 0 or 1");
  const int64_t reduceDims[] = {WEFT_RT_F32, 1, 2, 4, -5, 1, 0};
  expectInvalid(weft_rt_cuda_reduce(c, reduceDims, kFakeA, kFakeB),
                "reduce: dimensions are negative or overflow");
  const int64_t reduceEmptyMean[] = {WEFT_RT_I32, 0, 2, 3, 0, 0, 1};
  expectInvalid(weft_rt_cuda_reduce(c, reduceEmptyMean, kFakeA, kFakeB),
                "reduce: mean over an empty axis has no integer value");
  const int64_t reduceOk[] = {WEFT_RT_F32, 1, 2, 3, 4, 0, 1};
  expectInvalid(weft_rt_cuda_reduce(c, reduceOk, kFakeA, nullptr),
                "reduce: out is NULL");
  expectInvalid(weft_rt_cuda_reduce(c, reduceOk, nullptr, kFakeB),
                "reduce: input is NULL");

  const int64_t argKind[] = {WEFT_RT_F32, 2, 2, 3, 1, 0};
  expectInvalid(weft_rt_cuda_arg_reduce(c, argKind, kFakeA, kFakeB),
                "arg_reduce: kind 2 is neither 0 (argmax) nor 1 (argmin)");
  const int64_t argLast[] = {WEFT_RT_F32, 0, 2, 3, 1, 5};
  expectInvalid(weft_rt_cuda_arg_reduce(c, argLast, kFakeA, kFakeB),
                "arg_reduce: select_last_index is 5, not 0 or 1");
  const int64_t argEmpty[] = {WEFT_RT_F32, 0, 2, 0, 1, 0};
  expectInvalid(weft_rt_cuda_arg_reduce(c, argEmpty, kFakeA, kFakeB),
                "the reduced axis is empty");
  const int64_t argBool[] = {WEFT_RT_BOOL, 0, 2, 3, 1, 0};
  expectFailure(weft_rt_cuda_arg_reduce(c, argBool, kFakeA, kFakeB),
                WEFT_RT_UNSUPPORTED, "arg_reduce: dtype bool is not supported");
}

// Tests the data-movement kernels' parameter checks.
TEST_F(CudaSimpleChecks, MovementKernelBlocks) {
  weft_rt_context *c = ctx.get();
  const int64_t transposeBytes[] = {3, 2, 2, 3, 1, 0};
  expectInvalid(weft_rt_cuda_transpose(c, transposeBytes, kFakeA, kFakeB),
                "transpose: element size 3 is not 1, 2, 4, 8 or 16 bytes");
  const int64_t transposePerm[] = {4, 2, 2, 3, 1, 1};
  expectInvalid(weft_rt_cuda_transpose(c, transposePerm, kFakeA, kFakeB),
                "perm[1] = 1 does not make a permutation of 2 dimensions");
  const int64_t transposeRank[] = {4, 17};
  expectInvalid(weft_rt_cuda_transpose(c, transposeRank, kFakeA, kFakeB),
                "transpose: rank 17 is not between 0 and 16");

  const int64_t sliceStep[] = {4, 1, 5, 2, 0, 0};
  expectInvalid(weft_rt_cuda_slice(c, sliceStep, kFakeA, kFakeB),
                "slice: step of dimension 0 is 0");
  const int64_t sliceRange[] = {4, 1, 5, 3, 3, 1};
  expectInvalid(weft_rt_cuda_slice(c, sliceRange, kFakeA, kFakeB),
                "slice: dimension 0 reads 3 elements from 3 with step 1");
  const int64_t sliceBackward[] = {4, 1, 5, 3, 1, -1};
  expectInvalid(weft_rt_cuda_slice(c, sliceBackward, kFakeA, kFakeB),
                "outside its size 5");

  const int64_t padMode[] = {4, 4, 1, 3, 1, 1};
  expectInvalid(weft_rt_cuda_pad(c, padMode, kFakeA, nullptr, kFakeB),
                "pad: mode 4 is not 0 (constant)");
  const int64_t padNegative[] = {4, 0, 1, 3, -2, -2};
  expectInvalid(weft_rt_cuda_pad(c, padNegative, kFakeA, nullptr, kFakeB),
                "has a negative or overflowing size");
  const int64_t padEmpty[] = {4, 1, 1, 0, 1, 1};
  expectInvalid(weft_rt_cuda_pad(c, padEmpty, kFakeA, nullptr, kFakeB),
                "pad: reflect mode cannot pad dimension 0, which is empty");
  const int64_t padOk[] = {8, 0, 1, 3, 1, 1};
  void *misaligned = reinterpret_cast<void *>(uintptr_t(0x10004));
  expectInvalid(weft_rt_cuda_pad(c, padOk, kFakeA, misaligned, kFakeB),
                "pad: value");

  const int64_t tileRepeats[] = {4, 2, 2, 3, 1, -1};
  expectInvalid(weft_rt_cuda_tile(c, tileRepeats, kFakeA, kFakeB),
                "tile: repeats[1] = -1 is negative");

  const int64_t triluUpper[] = {4, 1, 3, 3, 0, 2};
  expectInvalid(weft_rt_cuda_trilu(c, triluUpper, kFakeA, kFakeB),
                "trilu: upper is 2, not 0 or 1");
  const int64_t triluDims[] = {4, 1, -3, 3, 0, 1};
  expectInvalid(weft_rt_cuda_trilu(c, triluDims, kFakeA, kFakeB),
                "trilu: batch, rows and cols are negative");

  const int64_t gatherIndex[] = {4, WEFT_RT_F32, 1, 5, 1, 2};
  expectInvalid(weft_rt_cuda_gather(c, gatherIndex, kFakeA, kFakeB, kFakeC),
                "gather: index dtype f32 (code 1) is not i32 or i64");
  const int64_t gatherCount[] = {4, WEFT_RT_I64, 1, 5, 1, -2};
  expectInvalid(weft_rt_cuda_gather(c, gatherCount, kFakeA, kFakeB, kFakeC),
                "are negative or overflow");
  const int64_t gatherOk[] = {4, WEFT_RT_I64, 1, 5, 1, 2};
  expectInvalid(weft_rt_cuda_gather(c, gatherOk, kFakeA, nullptr, kFakeC),
                "gather: indices is NULL");

  const int64_t elementsAxis[] = {4, WEFT_RT_I64, 2, 2, 3, 4, 3, 4};
  expectInvalid(
      weft_rt_cuda_gather_elements(c, elementsAxis, kFakeA, kFakeB, kFakeC),
      "gather_elements: axis 2 is not in [0, 2)");
  const int64_t elementsDims[] = {4, WEFT_RT_I64, 2, 0, 3, 4, 3, 5};
  expectInvalid(
      weft_rt_cuda_gather_elements(c, elementsDims, kFakeA, kFakeB, kFakeC),
      "indices have 5 entries along dimension 1, the input only 4");

  const int64_t copyNegative[] = {2, 8, 0, -8, 0, 8};
  expectInvalid(weft_rt_cuda_copy2d(c, copyNegative, kFakeA, kFakeB),
                "copy2d: negative rows, row bytes, offsets or strides");
  const int64_t copyStride[] = {2, 8, 0, 4, 0, 8};
  expectInvalid(weft_rt_cuda_copy2d(c, copyStride, kFakeA, kFakeB),
                "copy2d: strides 4 and 8 are shorter than the rows (8 bytes)");
  const int64_t copyOverflow[] = {3, 8, 0, int64_t(1) << 62, 0, 8};
  expectInvalid(weft_rt_cuda_copy2d(c, copyOverflow, kFakeA, kFakeB),
                "copy2d: offsets overflow");
  const int64_t copyOk[] = {2, 8, 0, 8, 0, 8};
  expectInvalid(weft_rt_cuda_copy2d(c, copyOk, kFakeA, nullptr),
                "copy2d: dst is NULL");
}

// Tests that a kernel called outside a CUDA model fails as an internal
// error, and that an empty op needs no device.
TEST(CudaSimpleState, MissingState) {
  ContextPtr ctx = makeContext();
  ASSERT_TRUE(ctx);
  const int64_t softmax[] = {WEFT_RT_F32, 2, 3, 1, 0};
  EXPECT_EQ(weft_rt_cuda_softmax(ctx.get(), softmax, kFakeA, kFakeB),
            WEFT_RT_INTERNAL);
  EXPECT_TRUE(contains(weft_rt_context_error(ctx.get()),
                       "CUDA kernel softmax was called without a CUDA device"))
      << weft_rt_context_error(ctx.get());
  const int64_t transpose[] = {4, 2, 2, 3, 1, 0};
  EXPECT_EQ(weft_rt_cuda_transpose(ctx.get(), transpose, kFakeA, kFakeB),
            WEFT_RT_INTERNAL);
  EXPECT_TRUE(contains(weft_rt_context_error(ctx.get()), "transpose"));
  const int64_t copy[] = {2, 8, 0, 8, 0, 8};
  EXPECT_EQ(weft_rt_cuda_copy2d(ctx.get(), copy, kFakeA, kFakeB),
            WEFT_RT_INTERNAL);
  const int64_t reduce[] = {WEFT_RT_F32, 1, 2, 3, 4, 0, 1};
  EXPECT_EQ(weft_rt_cuda_reduce(ctx.get(), reduce, kFakeA, kFakeB),
            WEFT_RT_INTERNAL);
}

// Tests that a valid call without a GPU reaches the launch and reports the
// device as unavailable (on a GPU machine the fake pointers would be used,
// so this runs only where there is none).
TEST_F(CudaSimpleChecks, ValidCallWithoutGpu) {
  if (gpuPresent())
    GTEST_SKIP() << "a GPU is present";
  const int64_t softmax[] = {WEFT_RT_F32, 2, 3, 1, 0};
  EXPECT_EQ(weft_rt_cuda_softmax(ctx.get(), softmax, kFakeA, kFakeB),
            WEFT_RT_DEVICE_UNAVAILABLE)
      << weft_rt_context_error(ctx.get());
  const int64_t transpose[] = {4, 2, 2, 3, 1, 0};
  EXPECT_EQ(weft_rt_cuda_transpose(ctx.get(), transpose, kFakeA, kFakeB),
            WEFT_RT_DEVICE_UNAVAILABLE)
      << weft_rt_context_error(ctx.get());
  const int64_t copy[] = {2, 8, 0, 16, 0, 8};
  EXPECT_EQ(weft_rt_cuda_copy2d(ctx.get(), copy, kFakeA, kFakeB),
            WEFT_RT_DEVICE_UNAVAILABLE)
      << weft_rt_context_error(ctx.get());
  // Nothing to do: no launch, no failure.
  const int64_t empty[] = {WEFT_RT_F32, 0, 3, 1, 0};
  EXPECT_EQ(weft_rt_cuda_softmax(ctx.get(), empty, nullptr, nullptr),
            WEFT_RT_OK);
}

// Tests how reductions merge dimensions into kept and reduced ones.
TEST(CudaSimplePlans, ReduceLayout) {
  ContextPtr ctx = makeContext();
  ReducePlan p;
  const int64_t middle[] = {WEFT_RT_F32, 1, 4, 2, 3, 4, 5, 0, 1, 1, 0};
  ASSERT_EQ(planReduce(ctx.get(), middle, kFakeA, kFakeB, &p), WEFT_RT_OK);
  EXPECT_EQ(p.outCount, 10);
  EXPECT_EQ(p.reducedCount, 12);
  ASSERT_EQ(p.keptRank, 2);
  EXPECT_EQ(p.keptSizes[0], 2);
  EXPECT_EQ(p.keptStrides[0], 60);
  EXPECT_EQ(p.keptSizes[1], 5);
  EXPECT_EQ(p.keptStrides[1], 1);
  ASSERT_EQ(p.reducedRank, 1);
  EXPECT_EQ(p.reducedSizes[0], 12);
  EXPECT_EQ(p.reducedStrides[0], 5);
  EXPECT_TRUE(p.tailKept);
  EXPECT_EQ(p.tail, 5);

  const int64_t ones[] = {WEFT_RT_F32, 1, 3, 1, 1, 1, 0, 1, 0};
  ASSERT_EQ(planReduce(ctx.get(), ones, kFakeA, kFakeB, &p), WEFT_RT_OK);
  EXPECT_EQ(p.outCount, 1);
  EXPECT_EQ(p.keptRank, 0);
  EXPECT_EQ(p.reducedRank, 1);
  EXPECT_FALSE(p.tailKept);

  const int64_t empty[] = {WEFT_RT_I32, 3, 2, 4, 0, 0, 1};
  ASSERT_EQ(planReduce(ctx.get(), empty, kFakeA, kFakeB, &p), WEFT_RT_OK);
  EXPECT_TRUE(p.fill);
  int32_t value;
  std::memcpy(&value, p.fillBytes, 4);
  EXPECT_EQ(value, INT32_MAX); // min over nothing
}

// Tests which path a transpose takes.
TEST(CudaSimplePlans, TransposePaths) {
  ContextPtr ctx = makeContext();
  TransposePlan p;
  const int64_t swapLast[] = {4, 3, 2, 3, 4, 0, 2, 1};
  ASSERT_EQ(planTranspose(ctx.get(), swapLast, kFakeA, kFakeB, &p), WEFT_RT_OK);
  EXPECT_EQ(p.path, TransposePlan::kTiled);
  EXPECT_EQ(p.rank, 3);
  EXPECT_EQ(p.tiledDim, 1);
  const int64_t rotate[] = {4, 3, 2, 3, 4, 1, 2, 0};
  ASSERT_EQ(planTranspose(ctx.get(), rotate, kFakeA, kFakeB, &p), WEFT_RT_OK);
  EXPECT_EQ(p.path, TransposePlan::kTiled);
  EXPECT_EQ(p.rank, 2);
  EXPECT_EQ(p.sizes[0], 12);
  EXPECT_EQ(p.tiledDim, 0);
  const int64_t outer[] = {4, 3, 2, 3, 4, 1, 0, 2};
  ASSERT_EQ(planTranspose(ctx.get(), outer, kFakeA, kFakeB, &p), WEFT_RT_OK);
  EXPECT_EQ(p.path, TransposePlan::kStrided);
  const int64_t unit[] = {4, 3, 2, 1, 4, 1, 0, 2};
  ASSERT_EQ(planTranspose(ctx.get(), unit, kFakeA, kFakeB, &p), WEFT_RT_OK);
  EXPECT_EQ(p.path, TransposePlan::kCopy);
}

//===----------------------------------------------------------------------===//
// Against the CPU kernels, on a GPU
//===----------------------------------------------------------------------===//

using Bytes = std::vector<uint8_t>;

/// Random values of `dtype` in [low, high] (integers: whole numbers).
Bytes randomValues(std::mt19937 &rng, int64_t dtype, int64_t count, double low,
                   double high) {
  size_t size = weft_rt_dtype_size(static_cast<weft_rt_dtype>(dtype));
  Bytes bytes(static_cast<size_t>(count) * size);
  std::uniform_real_distribution<double> real(low, high);
  std::uniform_int_distribution<int64_t> whole(static_cast<int64_t>(low),
                                               static_cast<int64_t>(high));
  for (int64_t i = 0; i < count; ++i) {
    uint8_t *at = bytes.data() + i * size;
    switch (dtype) {
    case WEFT_RT_F32: {
      float v = static_cast<float>(real(rng));
      std::memcpy(at, &v, 4);
      break;
    }
    case WEFT_RT_F64: {
      double v = real(rng);
      std::memcpy(at, &v, 8);
      break;
    }
    case WEFT_RT_I32: {
      int32_t v = static_cast<int32_t>(whole(rng));
      std::memcpy(at, &v, 4);
      break;
    }
    case WEFT_RT_I64: {
      int64_t v = whole(rng);
      std::memcpy(at, &v, 8);
      break;
    }
    default: {
      uint8_t v = static_cast<uint8_t>(whole(rng));
      *at = v;
      break;
    }
    }
  }
  return bytes;
}

/// Random bytes, for the kernels that only move elements.
Bytes randomBytes(std::mt19937 &rng, size_t count) {
  Bytes bytes(count);
  for (uint8_t &b : bytes)
    b = static_cast<uint8_t>(rng());
  return bytes;
}

/// Compares outputs of `dtype`: floats within atol + rtol * |expected| (NaN
/// only where NaN), everything else exactly.
void expectMatches(int64_t dtype, const Bytes &expected, const Bytes &actual,
                   const std::string &what, double rtol = 1e-5,
                   double atol = 1e-6) {
  ASSERT_EQ(expected.size(), actual.size()) << what;
  if (dtype != WEFT_RT_F32 && dtype != WEFT_RT_F64) {
    for (size_t i = 0; i < expected.size(); ++i)
      if (expected[i] != actual[i]) {
        ADD_FAILURE() << what << ": byte " << i << " is " << int(actual[i])
                      << ", expected " << int(expected[i]);
        return;
      }
    return;
  }
  size_t size = dtype == WEFT_RT_F32 ? 4 : 8;
  int failures = 0;
  for (size_t i = 0; i < expected.size() / size; ++i) {
    double e, a;
    if (size == 4) {
      float ef, af;
      std::memcpy(&ef, &expected[i * 4], 4);
      std::memcpy(&af, &actual[i * 4], 4);
      e = ef, a = af;
    } else {
      std::memcpy(&e, &expected[i * 8], 8);
      std::memcpy(&a, &actual[i * 8], 8);
    }
    bool ok = std::isnan(e)   ? std::isnan(a)
              : std::isinf(e) ? a == e
                              : std::fabs(a - e) <= atol + rtol * std::fabs(e);
    if (!ok && failures++ < 5)
      ADD_FAILURE() << what << ": element " << i << " is " << a << ", expected "
                    << e;
  }
}

/// A context on GPU 0 with a real device state, and device buffers freed
/// after the test; skips without a GPU.
class CudaSimpleKernels : public ::testing::Test {
protected:
  void SetUp() override {
    int devices = 0;
    if (!gpuPresent() || cudaGetDeviceCount(&devices) != cudaSuccess ||
        devices == 0)
      GTEST_SKIP() << "no GPU";
    ctx = makeContext();
    cpu = makeContext();
    ASSERT_TRUE(ctx && cpu);
    ASSERT_EQ(createDeviceState(ctx.get(), 0, {80, 90}, kDefaultWorkspaceBytes,
                                &state),
              WEFT_RT_OK)
        << weft_rt_context_error(ctx.get());
    attachDeviceState(ctx.get(), state.get());
  }
  void TearDown() override {
    for (void *p : allocations)
      cudaFree(p);
    if (ctx)
      attachDeviceState(ctx.get(), nullptr);
  }
  /// A device copy of `bytes` (at least 16 bytes are allocated).
  void *device(const Bytes &bytes) {
    void *p = nullptr;
    if (cudaMalloc(&p, std::max<size_t>(bytes.size(), 16)) != cudaSuccess) {
      ADD_FAILURE() << "cudaMalloc failed";
      return nullptr;
    }
    allocations.push_back(p);
    if (!bytes.empty()) {
      EXPECT_EQ(
          cudaMemcpy(p, bytes.data(), bytes.size(), cudaMemcpyHostToDevice),
          cudaSuccess);
    }
    return p;
  }
  /// A device buffer of `size` bytes holding a pattern that no kernel
  /// writes by chance, so that missed elements show.
  void *output(size_t size) { return device(Bytes(size, 0xCD)); }
  /// Waits for the stream and copies `size` bytes back.
  Bytes fetch(const void *p, size_t size) {
    EXPECT_EQ(state->stream.synchronize(ctx.get()), WEFT_RT_OK)
        << weft_rt_context_error(ctx.get());
    Bytes bytes(size);
    if (size) {
      EXPECT_EQ(cudaMemcpy(bytes.data(), p, size, cudaMemcpyDeviceToHost),
                cudaSuccess);
    }
    return bytes;
  }
  void expectOk(weft_rt_status status, weft_rt_context *c) {
    EXPECT_EQ(status, WEFT_RT_OK) << weft_rt_context_error(c);
  }

  ContextPtr ctx, cpu;
  std::unique_ptr<DeviceState> state;
  std::vector<void *> allocations;
  std::mt19937 rng{20240607};
};

std::string shapeName(std::initializer_list<int64_t> values) {
  std::string text;
  for (int64_t v : values)
    text += (text.empty() ? "" : " ") + std::to_string(v);
  return text;
}

TEST_F(CudaSimpleKernels, Softmax) {
  const int64_t shapes[][3] = {{1, 1, 1},    {3, 7, 1},    {5, 1000, 1},
                               {2, 5000, 1}, {4, 33, 3},   {2, 300, 17},
                               {1, 3, 1000}, {7, 1, 5},    {300, 31, 1},
                               {3, 1025, 1}, {2, 2, 4097}, {1000, 10, 1}};
  for (int64_t dtype : {WEFT_RT_F32, WEFT_RT_F64})
    for (const auto &s : shapes)
      for (int64_t log : {0, 1})
        for (bool inPlace : {false, true}) {
          const int64_t params[] = {dtype, s[0], s[1], s[2], log};
          const bool f32 = dtype == WEFT_RT_F32;
          int64_t count = s[0] * s[1] * s[2];
          Bytes x = randomValues(rng, dtype, count, -8, 8);
          Bytes expected(x.size());
          expectOk(
              weft_rt_cpu_softmax(cpu.get(), params, x.data(), expected.data()),
              cpu.get());
          void *in = device(x);
          void *out = inPlace ? in : output(x.size());
          expectOk(weft_rt_cuda_softmax(ctx.get(), params, in, out), ctx.get());
          expectMatches(dtype, expected, fetch(out, x.size()),
                        "softmax " +
                            shapeName({dtype, s[0], s[1], s[2], log, inPlace}),
                        f32 ? 1e-4 : 1e-9, f32 ? 1e-6 : 1e-12);
        }
}

TEST_F(CudaSimpleKernels, Normalize) {
  struct Case {
    int64_t kind, outer, size, channels;
  };
  const Case cases[] = {{0, 1, 1, 1},    {0, 3, 10, 1},   {0, 7, 1000, 1},
                        {0, 2, 5000, 1}, {0, 33, 257, 1}, {0, 500, 24, 1},
                        {1, 6, 49, 3},   {1, 8, 3000, 4}, {1, 35, 7, 5}};
  for (int64_t dtype : {WEFT_RT_F32, WEFT_RT_F64})
    for (const Case &c : cases)
      for (bool withBias : {false, true})
        for (bool withStats : {false, true}) {
          const int64_t params[] = {dtype,  c.kind,     c.outer,
                                    c.size, c.channels, bitsOf(1e-5)};
          size_t size = weft_rt_dtype_size(static_cast<weft_rt_dtype>(dtype));
          int64_t count = c.outer * c.size;
          int64_t affine = c.kind == 0 ? c.size : c.channels;
          // Rows far from zero: the variance must not cancel away.
          Bytes x = randomValues(rng, dtype, count, 95, 105);
          Bytes scale = randomValues(rng, dtype, affine, -2, 2);
          Bytes bias = randomValues(rng, dtype, affine, -1, 1);
          Bytes expected(x.size()), means(c.outer * size),
              inverses(c.outer * size);
          expectOk(weft_rt_cpu_normalize(
                       cpu.get(), params, x.data(), scale.data(),
                       withBias ? bias.data() : nullptr, expected.data(),
                       means.data(), inverses.data()),
                   cpu.get());
          void *dMeans = withStats ? output(means.size()) : nullptr;
          void *dInverses = withStats ? output(inverses.size()) : nullptr;
          void *out = output(x.size());
          expectOk(weft_rt_cuda_normalize(ctx.get(), params, device(x),
                                          device(scale),
                                          withBias ? device(bias) : nullptr,
                                          out, dMeans, dInverses),
                   ctx.get());
          std::string what = "normalize " + shapeName({dtype, c.kind, c.outer,
                                                       c.size, withBias});
          // The CPU kernel sums f32 rows in float lanes: its mean is off by
          // up to ~1e-5 on rows of thousands of elements near 100.
          const bool f32 = dtype == WEFT_RT_F32;
          expectMatches(dtype, expected, fetch(out, x.size()), what,
                        f32 ? 1e-4 : 1e-9, f32 ? 1e-4 : 1e-10);
          if (withStats) {
            expectMatches(dtype, means, fetch(dMeans, means.size()),
                          what + " mean", f32 ? 1e-6 : 1e-12, 0);
            expectMatches(dtype, inverses, fetch(dInverses, inverses.size()),
                          what + " inv_std_dev", f32 ? 1e-4 : 1e-9, 0);
          }
        }
}

TEST_F(CudaSimpleKernels, Reduce) {
  struct Case {
    std::vector<int64_t> dims, mask;
  };
  const Case cases[] = {
      {{7}, {1}},
      {{3, 5}, {0, 1}},
      {{3, 5}, {1, 0}},
      {{2, 3, 4, 5}, {0, 1, 1, 0}},
      {{2, 3, 4, 5}, {1, 0, 1, 0}},
      {{4, 1, 6}, {1, 1, 0}},
      {{1000, 3}, {1, 0}},
      {{3, 3000}, {0, 1}},
      {{5000}, {1}},
      {{2, 1, 3}, {0, 0, 0}},
      {{6, 4, 2}, {1, 1, 1}},
      {{33, 65, 2}, {0, 1, 1}},
      {{2, 700, 37}, {0, 1, 0}},
      {{300, 2}, {0, 1}},
      {{2, 0, 3}, {0, 1, 0}},
      {{}, {}},
  };
  const int64_t dtypes[] = {WEFT_RT_F32, WEFT_RT_F64, WEFT_RT_I32,
                            WEFT_RT_I64, WEFT_RT_I8,  WEFT_RT_U8};
  for (int64_t dtype : dtypes)
    for (int64_t kind = 0; kind < 10; ++kind) {
      bool bytes = dtype == WEFT_RT_I8 || dtype == WEFT_RT_U8;
      if (bytes && kind != 2 && kind != 3)
        continue;
      bool isFloat = dtype == WEFT_RT_F32 || dtype == WEFT_RT_F64;
      for (const Case &c : cases) {
        int64_t rank = static_cast<int64_t>(c.dims.size());
        std::vector<int64_t> params = {dtype, kind, rank};
        params.insert(params.end(), c.dims.begin(), c.dims.end());
        params.insert(params.end(), c.mask.begin(), c.mask.end());
        int64_t inCount = 1, outCount = 1, reduced = 1;
        for (int64_t d = 0; d < rank; ++d) {
          inCount *= c.dims[d];
          (c.mask[d] ? reduced : outCount) *= c.dims[d];
        }
        // Integer mean, log_sum and log_sum_exp over nothing are refused.
        if (!isFloat && reduced == 0 && (kind == 0 || kind == 7 || kind == 9))
          continue;
        double low = -5, high = 5;
        if (kind == 4)
          low = isFloat ? 0.9 : -2, high = isFloat ? 1.1 : 2;
        if (kind == 9 || kind == 6)
          low = isFloat ? 0.01 : 1, high = 5;
        if (dtype == WEFT_RT_U8)
          low = 0, high = 255;
        if (dtype == WEFT_RT_I8)
          low = -128, high = 127;
        Bytes x = randomValues(rng, dtype, inCount, low, high);
        size_t size = weft_rt_dtype_size(static_cast<weft_rt_dtype>(dtype));
        Bytes expected(outCount * size);
        std::string what = "reduce kind " + std::to_string(kind) + " dtype " +
                           std::to_string(dtype) + " dims ";
        for (int64_t d : c.dims)
          what += std::to_string(d) + " ";
        ASSERT_EQ(weft_rt_cpu_reduce(cpu.get(), params.data(), x.data(),
                                     expected.data()),
                  WEFT_RT_OK)
            << what << weft_rt_context_error(cpu.get());
        void *out = output(expected.size());
        expectOk(weft_rt_cuda_reduce(ctx.get(), params.data(), device(x), out),
                 ctx.get());
        expectMatches(dtype, expected, fetch(out, expected.size()), what, 1e-5,
                      1e-5);
      }
    }
}

TEST_F(CudaSimpleKernels, ArgReduce) {
  const int64_t shapes[][3] = {{1, 1, 1},    {3, 7, 1},     {5, 1000, 1},
                               {2, 5000, 1}, {4, 33, 3},    {2, 300, 17},
                               {1, 3, 1000}, {1000, 10, 1}, {3, 2, 70}};
  const int64_t dtypes[] = {WEFT_RT_F32, WEFT_RT_F64, WEFT_RT_I32,
                            WEFT_RT_I64, WEFT_RT_I8,  WEFT_RT_U8};
  for (int64_t dtype : dtypes)
    for (const auto &s : shapes)
      for (int64_t kind : {0, 1})
        for (int64_t last : {0, 1}) {
          const int64_t params[] = {dtype, kind, s[0], s[1], s[2], last};
          int64_t count = s[0] * s[1] * s[2];
          // Few distinct values: many ties.
          Bytes x = randomValues(rng, dtype, count, 0, 6);
          if (dtype == WEFT_RT_F32 && s[1] > 10) {
            // A few NaNs, which win wherever they are.
            float nan = std::nanf("");
            for (int64_t i = 0; i < count; i += 97)
              std::memcpy(&x[i * 4], &nan, 4);
          }
          Bytes expected(s[0] * s[2] * 8);
          expectOk(weft_rt_cpu_arg_reduce(cpu.get(), params, x.data(),
                                          expected.data()),
                   cpu.get());
          void *out = output(expected.size());
          expectOk(weft_rt_cuda_arg_reduce(ctx.get(), params, device(x), out),
                   ctx.get());
          expectMatches(WEFT_RT_I64, expected, fetch(out, expected.size()),
                        "arg_reduce " +
                            shapeName({dtype, kind, s[0], s[1], s[2], last}));
        }
}

/// A random shape of `rank` dimensions of 1 to maxDim.
std::vector<int64_t> randomDims(std::mt19937 &rng, int64_t rank,
                                int64_t maxDim) {
  std::vector<int64_t> dims(rank);
  for (int64_t &d : dims)
    d = std::uniform_int_distribution<int64_t>(1, maxDim)(rng);
  return dims;
}

int64_t product(const std::vector<int64_t> &dims) {
  return std::accumulate(dims.begin(), dims.end(), int64_t(1),
                         std::multiplies<int64_t>());
}

const int64_t kElementSizes[] = {1, 2, 4, 8, 16};

TEST_F(CudaSimpleKernels, Transpose) {
  struct Case {
    std::vector<int64_t> dims, perm;
  };
  std::vector<Case> cases = {{{67, 129}, {1, 0}},
                             {{3, 40, 50}, {2, 1, 0}},
                             {{2, 3, 33, 35}, {0, 1, 3, 2}},
                             {{5, 1, 7}, {2, 1, 0}},
                             {{4, 6, 8}, {1, 0, 2}},
                             {{1000, 3}, {1, 0}},
                             {{3, 1000}, {1, 0}},
                             {{2, 3, 4}, {0, 1, 2}},
                             {{7}, {0}},
                             {{}, {}}};
  for (int i = 0; i < 30; ++i) {
    int64_t rank = 1 + i % 6;
    Case c{randomDims(rng, rank, 7), std::vector<int64_t>(rank)};
    std::iota(c.perm.begin(), c.perm.end(), 0);
    std::shuffle(c.perm.begin(), c.perm.end(), rng);
    cases.push_back(c);
  }
  for (int64_t bytes : kElementSizes)
    for (const Case &c : cases) {
      int64_t rank = static_cast<int64_t>(c.dims.size());
      std::vector<int64_t> params = {bytes, rank};
      params.insert(params.end(), c.dims.begin(), c.dims.end());
      params.insert(params.end(), c.perm.begin(), c.perm.end());
      Bytes x = randomBytes(rng, product(c.dims) * bytes);
      Bytes expected(x.size());
      expectOk(weft_rt_cpu_transpose(cpu.get(), params.data(), x.data(),
                                     expected.data()),
               cpu.get());
      void *out = output(x.size());
      expectOk(weft_rt_cuda_transpose(ctx.get(), params.data(), device(x), out),
               ctx.get());
      std::string what = "transpose bytes " + std::to_string(bytes) + " dims";
      for (int64_t d : c.dims)
        what += " " + std::to_string(d);
      what += " perm";
      for (int64_t d : c.perm)
        what += " " + std::to_string(d);
      expectMatches(WEFT_RT_U8, expected, fetch(out, x.size()), what);
    }
}

TEST_F(CudaSimpleKernels, Slice) {
  for (int64_t bytes : kElementSizes)
    for (int i = 0; i < 25; ++i) {
      int64_t rank = i % 5;
      std::vector<int64_t> inDims = randomDims(rng, rank, 9);
      if (i == 24)
        inDims = {3, 2000};
      rank = static_cast<int64_t>(inDims.size());
      std::vector<int64_t> outDims(rank), starts(rank), steps(rank);
      for (int64_t d = 0; d < rank; ++d) {
        int64_t step = std::uniform_int_distribution<int64_t>(1, 3)(rng);
        bool backward = rng() % 2;
        int64_t start =
            std::uniform_int_distribution<int64_t>(0, inDims[d] - 1)(rng);
        int64_t room = backward ? start : inDims[d] - 1 - start;
        outDims[d] = 1 + room / step;
        starts[d] = start;
        steps[d] = backward ? -step : step;
      }
      std::vector<int64_t> params = {bytes, rank};
      for (const auto *list : {&inDims, &outDims, &starts, &steps})
        params.insert(params.end(), list->begin(), list->end());
      Bytes x = randomBytes(rng, product(inDims) * bytes);
      Bytes expected(product(outDims) * bytes);
      expectOk(weft_rt_cpu_slice(cpu.get(), params.data(), x.data(),
                                 expected.data()),
               cpu.get());
      void *out = output(expected.size());
      expectOk(weft_rt_cuda_slice(ctx.get(), params.data(), device(x), out),
               ctx.get());
      expectMatches(WEFT_RT_U8, expected, fetch(out, expected.size()),
                    "slice case " + std::to_string(i) + " bytes " +
                        std::to_string(bytes));
    }
}

TEST_F(CudaSimpleKernels, Pad) {
  for (int64_t bytes : kElementSizes)
    for (int64_t mode = 0; mode < 4; ++mode)
      for (int i = 0; i < 12; ++i) {
        int64_t rank = 1 + i % 4;
        std::vector<int64_t> inDims = randomDims(rng, rank, 6);
        if (i == 11)
          inDims = {3, 1000}, rank = 2;
        std::vector<int64_t> pads(2 * rank);
        for (int64_t d = 0; d < rank; ++d)
          for (int64_t side : {d, rank + d}) {
            // Crops only as far as the dimension stays non-empty.
            int64_t low = -(inDims[d] - 1) / 2;
            pads[side] = std::uniform_int_distribution<int64_t>(low, 7)(rng);
          }
        std::vector<int64_t> params = {bytes, mode, rank};
        params.insert(params.end(), inDims.begin(), inDims.end());
        params.insert(params.end(), pads.begin(), pads.end());
        int64_t outCount = 1;
        for (int64_t d = 0; d < rank; ++d)
          outCount *= inDims[d] + pads[d] + pads[rank + d];
        Bytes x = randomBytes(rng, product(inDims) * bytes);
        Bytes value = randomBytes(rng, bytes);
        bool withValue = i % 2 == 0;
        Bytes expected(outCount * bytes);
        expectOk(weft_rt_cpu_pad(cpu.get(), params.data(), x.data(),
                                 withValue ? value.data() : nullptr,
                                 expected.data()),
                 cpu.get());
        void *out = output(expected.size());
        expectOk(weft_rt_cuda_pad(ctx.get(), params.data(), device(x),
                                  withValue ? device(value) : nullptr, out),
                 ctx.get());
        expectMatches(WEFT_RT_U8, expected, fetch(out, expected.size()),
                      "pad mode " + std::to_string(mode) + " case " +
                          std::to_string(i) + " bytes " +
                          std::to_string(bytes));
      }
}

TEST_F(CudaSimpleKernels, Tile) {
  for (int64_t bytes : kElementSizes)
    for (int i = 0; i < 15; ++i) {
      int64_t rank = i % 5;
      std::vector<int64_t> inDims = randomDims(rng, rank, 7);
      std::vector<int64_t> repeats = randomDims(rng, rank, 4);
      if (i == 14)
        inDims = {2, 700}, repeats = {3, 2}, rank = 2;
      std::vector<int64_t> params = {bytes, rank};
      params.insert(params.end(), inDims.begin(), inDims.end());
      params.insert(params.end(), repeats.begin(), repeats.end());
      Bytes x = randomBytes(rng, product(inDims) * bytes);
      Bytes expected(product(inDims) * product(repeats) * bytes);
      expectOk(
          weft_rt_cpu_tile(cpu.get(), params.data(), x.data(), expected.data()),
          cpu.get());
      void *out = output(expected.size());
      expectOk(weft_rt_cuda_tile(ctx.get(), params.data(), device(x), out),
               ctx.get());
      expectMatches(WEFT_RT_U8, expected, fetch(out, expected.size()),
                    "tile case " + std::to_string(i));
    }
}

TEST_F(CudaSimpleKernels, Trilu) {
  const int64_t shapes[][3] = {{1, 1, 1}, {2, 5, 7}, {3, 9, 4}, {1, 70, 300}};
  const int64_t ks[] = {0, 1, -1, 3, -4, 1000, -1000, INT64_MAX, INT64_MIN};
  for (int64_t bytes : kElementSizes)
    for (const auto &s : shapes)
      for (int64_t k : ks)
        for (int64_t upper : {0, 1}) {
          const int64_t params[] = {bytes, s[0], s[1], s[2], k, upper};
          Bytes x = randomBytes(rng, s[0] * s[1] * s[2] * bytes);
          Bytes expected(x.size());
          expectOk(
              weft_rt_cpu_trilu(cpu.get(), params, x.data(), expected.data()),
              cpu.get());
          void *out = output(x.size());
          expectOk(weft_rt_cuda_trilu(ctx.get(), params, device(x), out),
                   ctx.get());
          expectMatches(WEFT_RT_U8, expected, fetch(out, x.size()),
                        "trilu " +
                            shapeName({bytes, s[0], s[1], s[2], k, upper}));
        }
}

/// `count` indices in [-size, size) of `dtype` (i32 or i64).
Bytes randomIndices(std::mt19937 &rng, int64_t dtype, int64_t count,
                    int64_t size) {
  return randomValues(rng, dtype, count, static_cast<double>(-size),
                      static_cast<double>(size - 1));
}

TEST_F(CudaSimpleKernels, Gather) {
  const int64_t shapes[][4] = {{1, 5, 1, 3},    {3, 7, 4, 10},
                               {2, 100, 33, 5}, {1, 1000, 1, 2000},
                               {4, 3, 1, 0},    {0, 3, 2, 2}};
  for (int64_t bytes : kElementSizes)
    for (int64_t indexDtype : {WEFT_RT_I32, WEFT_RT_I64})
      for (const auto &s : shapes) {
        const int64_t params[] = {bytes, indexDtype, s[0], s[1], s[2], s[3]};
        Bytes x = randomBytes(rng, s[0] * s[1] * s[2] * bytes);
        Bytes indices = randomIndices(rng, indexDtype, s[3], s[1]);
        Bytes expected(s[0] * s[3] * s[2] * bytes);
        expectOk(weft_rt_cpu_gather(cpu.get(), params, x.data(), indices.data(),
                                    expected.data()),
                 cpu.get());
        void *out = output(expected.size());
        expectOk(weft_rt_cuda_gather(ctx.get(), params, device(x),
                                     device(indices), out),
                 ctx.get());
        expectMatches(
            WEFT_RT_U8, expected, fetch(out, expected.size()),
            "gather " + shapeName({bytes, indexDtype, s[0], s[1], s[2], s[3]}));
      }
}

// Tests the documented GPU behaviour for indices out of range: the CPU
// kernel fails, the CUDA one writes zero elements there and the rest as
// usual.
TEST_F(CudaSimpleKernels, GatherOutOfRange) {
  const int64_t params[] = {4, WEFT_RT_I64, 2, 3, 2, 4};
  std::vector<int32_t> x = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  std::vector<int64_t> indices = {1, 3, -4, -1};
  Bytes xBytes(48), indexBytes(32);
  std::memcpy(xBytes.data(), x.data(), 48);
  std::memcpy(indexBytes.data(), indices.data(), 32);
  void *out = output(2 * 4 * 2 * 4);
  expectOk(weft_rt_cuda_gather(ctx.get(), params, device(xBytes),
                               device(indexBytes), out),
           ctx.get());
  Bytes got = fetch(out, 64);
  std::vector<int32_t> values(16);
  std::memcpy(values.data(), got.data(), 64);
  const std::vector<int32_t> expected = {2, 3, 0, 0, 0, 0, 4,  5,
                                         8, 9, 0, 0, 0, 0, 10, 11};
  EXPECT_EQ(values, expected);
}

TEST_F(CudaSimpleKernels, GatherElements) {
  for (int64_t bytes : kElementSizes)
    for (int64_t indexDtype : {WEFT_RT_I32, WEFT_RT_I64})
      for (int i = 0; i < 12; ++i) {
        int64_t rank = 1 + i % 4;
        std::vector<int64_t> inDims = randomDims(rng, rank, 6);
        if (i == 11)
          inDims = {3, 1000}, rank = 2;
        int64_t axis = std::uniform_int_distribution<int64_t>(0, rank - 1)(rng);
        std::vector<int64_t> indexDims(rank);
        for (int64_t d = 0; d < rank; ++d)
          indexDims[d] =
              d == axis
                  ? std::uniform_int_distribution<int64_t>(1, 8)(rng)
                  : std::uniform_int_distribution<int64_t>(1, inDims[d])(rng);
        std::vector<int64_t> params = {bytes, indexDtype, rank, axis};
        params.insert(params.end(), inDims.begin(), inDims.end());
        params.insert(params.end(), indexDims.begin(), indexDims.end());
        Bytes x = randomBytes(rng, product(inDims) * bytes);
        Bytes indices =
            randomIndices(rng, indexDtype, product(indexDims), inDims[axis]);
        Bytes expected(product(indexDims) * bytes);
        expectOk(weft_rt_cpu_gather_elements(cpu.get(), params.data(), x.data(),
                                             indices.data(), expected.data()),
                 cpu.get());
        void *out = output(expected.size());
        expectOk(weft_rt_cuda_gather_elements(ctx.get(), params.data(),
                                              device(x), device(indices), out),
                 ctx.get());
        expectMatches(WEFT_RT_U8, expected, fetch(out, expected.size()),
                      "gather_elements case " + std::to_string(i) + " axis " +
                          std::to_string(axis));
      }
}

TEST_F(CudaSimpleKernels, Copy2d) {
  struct Case {
    int64_t rows, rowBytes, srcOffset, srcStride, dstOffset, dstStride;
  };
  const Case cases[] = {{1, 13, 3, 0, 5, 0},          {4, 16, 0, 16, 0, 16},
                        {7, 12, 4, 20, 8, 36},        {100, 3, 1, 7, 2, 5},
                        {3, 1000, 0, 1003, 17, 2001}, {2, 8, 0, 8, 0, 8}};
  for (const Case &c : cases) {
    const int64_t params[] = {c.rows,      c.rowBytes,  c.srcOffset,
                              c.srcStride, c.dstOffset, c.dstStride};
    size_t srcSize = c.srcOffset + (c.rows - 1) * c.srcStride + c.rowBytes;
    size_t dstSize = c.dstOffset + (c.rows - 1) * c.dstStride + c.rowBytes;
    Bytes src = randomBytes(rng, srcSize);
    Bytes expected(dstSize, 0xCD);
    expectOk(weft_rt_cpu_copy2d(cpu.get(), params, src.data(), expected.data()),
             cpu.get());
    void *dst = output(dstSize);
    expectOk(weft_rt_cuda_copy2d(ctx.get(), params, device(src), dst),
             ctx.get());
    expectMatches(
        WEFT_RT_U8, expected, fetch(dst, dstSize),
        "copy2d " + shapeName({c.rows, c.rowBytes, c.srcStride, c.dstStride}));
  }
}

} // namespace
