//===- DenseKernelsTest.cpp - The dense CUDA kernels against the CPU ones -===//
//
// Without a GPU: bad parameter blocks fail with INVALID_ARGUMENT (or
// UNSUPPORTED) before the device is touched, a missing device state fails
// with INTERNAL, and the matmul batch planner. With a GPU: every kernel on
// random inputs against weft_rt_cpu_<kernel> on the same block.
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"
#include "cuda/DeviceState.h"
#include "cuda/kernels/DenseParams.h"
#include "weft_rt_cuda.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
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

std::string errorOf(weft_rt_context *ctx) { return weft_rt_context_error(ctx); }

//===----------------------------------------------------------------------===//
// Parameter blocks
//===----------------------------------------------------------------------===//

struct MatmulCase {
  int64_t dtype = WEFT_RT_F32;
  int64_t m = 1, n = 1, k = 1;
  bool transA = false, transB = false;
  double alpha = 1.0, beta = 1.0;
  int64_t biasRow = 0, biasCol = 1;
  std::vector<int64_t> dims, aStrides, bStrides;

  std::vector<int64_t> block() const {
    std::vector<int64_t> p = {dtype,
                              m,
                              n,
                              k,
                              transA,
                              transB,
                              bitsOf(alpha),
                              bitsOf(beta),
                              biasRow,
                              biasCol,
                              static_cast<int64_t>(dims.size())};
    p.insert(p.end(), dims.begin(), dims.end());
    p.insert(p.end(), aStrides.begin(), aStrides.end());
    p.insert(p.end(), bStrides.begin(), bStrides.end());
    return p;
  }
  int64_t batch() const {
    int64_t b = 1;
    for (int64_t d : dims)
      b *= d;
    return b;
  }
  /// Elements A and B span (the largest offset plus one matrix).
  int64_t span(const std::vector<int64_t> &strides, int64_t matrix) const {
    int64_t last = 0;
    for (size_t d = 0; d < dims.size(); ++d)
      last += (dims[d] - 1) * strides[d];
    return last + matrix;
  }
  int64_t aCount() const { return span(aStrides, m * k); }
  int64_t bCount() const { return span(bStrides, k * n); }
  int64_t biasCount() const {
    return (m - 1) * biasRow + (n - 1) * biasCol + 1;
  }
};

/// A conv block of S spatial dims, without a fused clamp (activation 0), in
/// the plain layout (layout 0).
std::vector<int64_t>
convBlock(int64_t dtype, int64_t n, int64_t c, int64_t oc, int64_t group,
          std::vector<int64_t> in, std::vector<int64_t> kernel,
          std::vector<int64_t> strides, std::vector<int64_t> dilations,
          std::vector<int64_t> padsBegin, std::vector<int64_t> padsEnd) {
  int64_t s = static_cast<int64_t>(in.size());
  std::vector<int64_t> out(s);
  for (int64_t d = 0; d < s; ++d)
    out[d] = (in[d] + padsBegin[d] + padsEnd[d] -
              (kernel[d] - 1) * dilations[d] - 1) /
                 strides[d] +
             1;
  std::vector<int64_t> p = {dtype, s, n, c, oc, group};
  for (const auto *v :
       {&in, &kernel, &strides, &dilations, &padsBegin, &padsEnd, &out})
    p.insert(p.end(), v->begin(), v->end());
  // activation, low, high, layout
  p.insert(p.end(), {0, 0, 0, 0});
  return p;
}

/// A pool block; ceil picks ceil mode's output size.
std::vector<int64_t> poolBlock(int64_t dtype, bool isMax, bool includePad,
                               int64_t n, int64_t c, std::vector<int64_t> in,
                               std::vector<int64_t> kernel,
                               std::vector<int64_t> strides,
                               std::vector<int64_t> dilations,
                               std::vector<int64_t> padsBegin,
                               std::vector<int64_t> padsEnd, bool ceil) {
  int64_t s = static_cast<int64_t>(in.size());
  std::vector<int64_t> out(s);
  for (int64_t d = 0; d < s; ++d) {
    int64_t room =
        in[d] + padsBegin[d] + padsEnd[d] - (kernel[d] - 1) * dilations[d] - 1;
    out[d] =
        (ceil ? (room + strides[d] - 1) / strides[d] : room / strides[d]) + 1;
  }
  std::vector<int64_t> p = {dtype, isMax ? 0 : 1, includePad, s, n, c};
  for (const auto *v :
       {&in, &kernel, &strides, &dilations, &padsBegin, &padsEnd, &out})
    p.insert(p.end(), v->begin(), v->end());
  p.push_back(0); // layout: NC[D]HW
  return p;
}

std::vector<int64_t> batchNormBlock(int64_t dtype, int64_t n, int64_t c,
                                    int64_t inner, double epsilon) {
  return {dtype, n, c, inner, bitsOf(epsilon)};
}

/// An einsum block from letters: "ij,jk->ik" with the sizes of each letter.
std::vector<int64_t> einsumBlock(int64_t dtype, const std::string &equation,
                                 const std::string &letters,
                                 const std::vector<int64_t> &sizes) {
  auto index = [&](char c) { return static_cast<int64_t>(letters.find(c)); };
  size_t arrow = equation.find("->");
  std::string lhs = equation.substr(0, arrow), rhs = equation.substr(arrow + 2);
  std::vector<std::string> inputs;
  size_t comma = lhs.find(',');
  inputs.push_back(lhs.substr(0, comma));
  if (comma != std::string::npos)
    inputs.push_back(lhs.substr(comma + 1));
  std::vector<int64_t> p = {dtype, static_cast<int64_t>(letters.size())};
  p.insert(p.end(), sizes.begin(), sizes.end());
  p.push_back(static_cast<int64_t>(rhs.size()));
  for (char c : rhs)
    p.push_back(index(c));
  p.push_back(static_cast<int64_t>(inputs.size()));
  for (const std::string &input : inputs) {
    p.push_back(static_cast<int64_t>(input.size()));
    for (char c : input)
      p.push_back(index(c));
  }
  return p;
}

//===----------------------------------------------------------------------===//
// Without a GPU
//===----------------------------------------------------------------------===//

/// A context with a default-constructed state attached: no stream, no
/// handles, which a kernel must never reach with a bad block.
class DenseParamsTest : public ::testing::Test {
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
  ContextPtr ctx;
  DeviceState state;
  // Never dereferenced: the blocks below fail before any device access.
  char dummy[64] = {};
  void *p = dummy;
};

// Tests that every kernel called without a CUDA device state fails with
// INTERNAL and names itself.
TEST(DenseKernels, MissingStateIsInternal) {
  auto ctx = makeContext();
  char dummy[64] = {};
  void *p = dummy;
  MatmulCase mm;
  auto mmBlock = mm.block();
  EXPECT_EQ(weft_rt_cuda_matmul(ctx.get(), mmBlock.data(), p, p, nullptr, p),
            WEFT_RT_INTERNAL);
  EXPECT_NE(errorOf(ctx.get()).find("matmul"), std::string::npos);
  auto conv = convBlock(WEFT_RT_F32, 1, 1, 1, 1, {4, 4}, {3, 3}, {1, 1}, {1, 1},
                        {0, 0}, {0, 0});
  EXPECT_EQ(weft_rt_cuda_conv(ctx.get(), conv.data(), p, p, nullptr, p),
            WEFT_RT_INTERNAL);
  EXPECT_NE(errorOf(ctx.get()).find("conv"), std::string::npos);
  auto pool = poolBlock(WEFT_RT_F32, true, false, 1, 1, {4}, {2}, {2}, {1}, {0},
                        {0}, false);
  EXPECT_EQ(weft_rt_cuda_pool(ctx.get(), pool.data(), p, p), WEFT_RT_INTERNAL);
  EXPECT_NE(errorOf(ctx.get()).find("pool"), std::string::npos);
  auto bn = batchNormBlock(WEFT_RT_F32, 1, 2, 3, 1e-5);
  EXPECT_EQ(weft_rt_cuda_batch_norm(ctx.get(), bn.data(), p, p, p, p, p, p),
            WEFT_RT_INTERNAL);
  EXPECT_NE(errorOf(ctx.get()).find("batch_norm"), std::string::npos);
  auto es = einsumBlock(WEFT_RT_F32, "ij,jk->ik", "ijk", {2, 3, 4});
  EXPECT_EQ(weft_rt_cuda_einsum(ctx.get(), es.data(), p, p, p),
            WEFT_RT_INTERNAL);
  EXPECT_NE(errorOf(ctx.get()).find("einsum"), std::string::npos);
}

// Tests matmul blocks that are wrong, by what the message names.
TEST_F(DenseParamsTest, MatmulRejectsBadBlocks) {
  weft_rt_context *c = ctx.get();
  EXPECT_EQ(weft_rt_cuda_matmul(c, nullptr, p, p, nullptr, p),
            WEFT_RT_INVALID_ARGUMENT);
  MatmulCase mm;
  mm.m = -1;
  auto block = mm.block();
  EXPECT_EQ(weft_rt_cuda_matmul(c, block.data(), p, p, nullptr, p),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(errorOf(c).find("negative size"), std::string::npos) << errorOf(c);
  mm = MatmulCase();
  mm.transB = true;
  block = mm.block();
  block[5] = 2;
  EXPECT_EQ(weft_rt_cuda_matmul(c, block.data(), p, p, nullptr, p),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(errorOf(c).find("trans_b=2"), std::string::npos) << errorOf(c);
  mm = MatmulCase();
  mm.dims = {2};
  mm.aStrides = {-1};
  mm.bStrides = {0};
  block = mm.block();
  EXPECT_EQ(weft_rt_cuda_matmul(c, block.data(), p, p, nullptr, p),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(errorOf(c).find("negative batch stride"), std::string::npos);
  block = MatmulCase().block();
  block[10] = 17; // batch rank
  EXPECT_EQ(weft_rt_cuda_matmul(c, block.data(), p, p, nullptr, p),
            WEFT_RT_INVALID_ARGUMENT);
  block = MatmulCase().block();
  EXPECT_EQ(weft_rt_cuda_matmul(c, block.data(), nullptr, p, nullptr, p),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(errorOf(c).find("a is NULL"), std::string::npos) << errorOf(c);
  block[0] = WEFT_RT_BOOL;
  EXPECT_EQ(weft_rt_cuda_matmul(c, block.data(), p, p, nullptr, p),
            WEFT_RT_UNSUPPORTED);
  EXPECT_NE(errorOf(c).find("bool"), std::string::npos) << errorOf(c);
  block[0] = 99;
  EXPECT_EQ(weft_rt_cuda_matmul(c, block.data(), p, p, nullptr, p),
            WEFT_RT_INVALID_ARGUMENT);
}

// Tests conv blocks that are wrong, including dtypes the GPU lacks.
TEST_F(DenseParamsTest, ConvRejectsBadBlocks) {
  weft_rt_context *c = ctx.get();
  EXPECT_EQ(weft_rt_cuda_conv(c, nullptr, p, p, nullptr, p),
            WEFT_RT_INVALID_ARGUMENT);
  auto block = convBlock(WEFT_RT_F32, 1, 3, 4, 2, {5, 5}, {3, 3}, {1, 1},
                         {1, 1}, {0, 0}, {0, 0});
  EXPECT_EQ(weft_rt_cuda_conv(c, block.data(), p, p, nullptr, p),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(errorOf(c).find("group 2"), std::string::npos) << errorOf(c);
  block = convBlock(WEFT_RT_F32, 1, 2, 4, 2, {5, 5}, {3, 3}, {1, 1}, {1, 1},
                    {0, 0}, {0, 0});
  // The output width, before the activation and layout words.
  block[block.size() - 5] = 4;
  EXPECT_EQ(weft_rt_cuda_conv(c, block.data(), p, p, nullptr, p),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(errorOf(c).find("output size 4"), std::string::npos) << errorOf(c);
  block[1] = 4; // spatial rank
  EXPECT_EQ(weft_rt_cuda_conv(c, block.data(), p, p, nullptr, p),
            WEFT_RT_INVALID_ARGUMENT);
  block = convBlock(WEFT_RT_I32, 1, 2, 4, 2, {5, 5}, {3, 3}, {1, 1}, {1, 1},
                    {0, 0}, {0, 0});
  EXPECT_EQ(weft_rt_cuda_conv(c, block.data(), p, p, nullptr, p),
            WEFT_RT_UNSUPPORTED);
  block[0] = WEFT_RT_F32;
  EXPECT_EQ(weft_rt_cuda_conv(c, block.data(), p, nullptr, nullptr, p),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(errorOf(c).find("weight is NULL"), std::string::npos);
  // A fused clamp (activation 1, here a Relu) is the CPU's only.
  block = convBlock(WEFT_RT_F32, 1, 2, 4, 2, {5, 5}, {3, 3}, {1, 1}, {1, 1},
                    {0, 0}, {0, 0});
  const double relu[] = {0.0, std::numeric_limits<double>::infinity()};
  block[block.size() - 4] = 1;
  std::memcpy(&block[block.size() - 3], &relu[0], sizeof(double));
  std::memcpy(&block[block.size() - 2], &relu[1], sizeof(double));
  EXPECT_EQ(weft_rt_cuda_conv(c, block.data(), p, p, nullptr, p),
            WEFT_RT_UNSUPPORTED);
  EXPECT_NE(errorOf(c).find("conv: a fused clamp is not supported by the "
                            "CUDA backend"),
            std::string::npos)
      << errorOf(c);
  block[block.size() - 4] = 2;
  EXPECT_EQ(weft_rt_cuda_conv(c, block.data(), p, p, nullptr, p),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(errorOf(c).find("unknown activation 2"), std::string::npos)
      << errorOf(c);
  // Channels-last layouts are the CPU's only; unknown layout bits are
  // refused as on the CPU.
  block = convBlock(WEFT_RT_F32, 1, 2, 2, 2, {5, 5}, {3, 3}, {1, 1}, {1, 1},
                    {1, 1}, {1, 1});
  for (int64_t layout : {1, 2, 4, 7}) {
    block.back() = layout;
    EXPECT_EQ(weft_rt_cuda_conv(c, block.data(), p, p, nullptr, p),
              WEFT_RT_UNSUPPORTED);
    EXPECT_NE(errorOf(c).find("layout " + std::to_string(layout) +
                              " is not supported by the CUDA backend"),
              std::string::npos)
        << errorOf(c);
  }
  block.back() = 128;
  EXPECT_EQ(weft_rt_cuda_conv(c, block.data(), p, p, nullptr, p),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(errorOf(c).find("unknown bits in the layout word 128"),
            std::string::npos)
      << errorOf(c);
  // So are the channel-blocked ones (16 channels, group 1).
  block = convBlock(WEFT_RT_F32, 1, 16, 16, 1, {5, 5}, {3, 3}, {1, 1}, {1, 1},
                    {1, 1}, {1, 1});
  for (int64_t layout : {8, 16, 24, 56}) {
    block.back() = layout;
    EXPECT_EQ(weft_rt_cuda_conv(c, block.data(), p, p, nullptr, p),
              WEFT_RT_UNSUPPORTED);
    EXPECT_NE(errorOf(c).find("layout " + std::to_string(layout) +
                              " is not supported by the CUDA backend"),
              std::string::npos)
        << errorOf(c);
  }
}

// Tests pool blocks that are wrong.
TEST_F(DenseParamsTest, PoolRejectsBadBlocks) {
  weft_rt_context *c = ctx.get();
  auto block = poolBlock(WEFT_RT_F32, true, false, 1, 2, {7, 7}, {3, 3}, {2, 2},
                         {1, 1}, {1, 1}, {1, 1}, false);
  auto bad = block;
  bad[1] = 2; // kind
  EXPECT_EQ(weft_rt_cuda_pool(c, bad.data(), p, p), WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(errorOf(c).find("kind 2"), std::string::npos) << errorOf(c);
  bad = block;
  bad[bad.size() - 2] = 9; // the last output size
  EXPECT_EQ(weft_rt_cuda_pool(c, bad.data(), p, p), WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(errorOf(c).find("output size 9"), std::string::npos) << errorOf(c);
  bad = block;
  bad[2] = 3; // count_include_pad
  EXPECT_EQ(weft_rt_cuda_pool(c, bad.data(), p, p), WEFT_RT_INVALID_ARGUMENT);
  // A window larger than the padded input.
  bad = poolBlock(WEFT_RT_F32, true, false, 1, 2, {2}, {4}, {1}, {1}, {0}, {0},
                  false);
  bad[bad.size() - 2] = 1;
  EXPECT_EQ(weft_rt_cuda_pool(c, bad.data(), p, p), WEFT_RT_INVALID_ARGUMENT);
  bad = poolBlock(WEFT_RT_I8, false, false, 1, 2, {4}, {2}, {2}, {1}, {0}, {0},
                  false);
  EXPECT_EQ(weft_rt_cuda_pool(c, bad.data(), p, p), WEFT_RT_UNSUPPORTED);
  EXPECT_NE(errorOf(c).find("average pool"), std::string::npos) << errorOf(c);
  EXPECT_EQ(weft_rt_cuda_pool(c, block.data(), nullptr, p),
            WEFT_RT_INVALID_ARGUMENT);
  // The layout word: 1 (channel-blocked) is the CPU's alone, 2 nobody's.
  bad = poolBlock(WEFT_RT_F32, true, false, 1, 16, {7, 7}, {3, 3}, {2, 2},
                  {1, 1}, {1, 1}, {1, 1}, false);
  bad.back() = 1;
  EXPECT_EQ(weft_rt_cuda_pool(c, bad.data(), p, p), WEFT_RT_UNSUPPORTED);
  EXPECT_NE(errorOf(c).find("channel-blocked"), std::string::npos)
      << errorOf(c);
  bad.back() = 2;
  EXPECT_EQ(weft_rt_cuda_pool(c, bad.data(), p, p), WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(errorOf(c).find("layout 2"), std::string::npos) << errorOf(c);
}

// Tests batch_norm and einsum blocks that are wrong.
TEST_F(DenseParamsTest, BatchNormAndEinsumRejectBadBlocks) {
  weft_rt_context *c = ctx.get();
  auto bn = batchNormBlock(WEFT_RT_F32, 2, 3, 4, -1.0);
  EXPECT_EQ(weft_rt_cuda_batch_norm(c, bn.data(), p, p, p, p, p, p),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(errorOf(c).find("epsilon"), std::string::npos);
  bn = batchNormBlock(WEFT_RT_F32, 2, -3, 4, 1e-5);
  EXPECT_EQ(weft_rt_cuda_batch_norm(c, bn.data(), p, p, p, p, p, p),
            WEFT_RT_INVALID_ARGUMENT);
  bn = batchNormBlock(WEFT_RT_I32, 2, 3, 4, 1e-5);
  EXPECT_EQ(weft_rt_cuda_batch_norm(c, bn.data(), p, p, p, p, p, p),
            WEFT_RT_UNSUPPORTED);
  bn = batchNormBlock(WEFT_RT_F32, 2, 3, 4, 1e-5);
  EXPECT_EQ(weft_rt_cuda_batch_norm(c, bn.data(), p, p, p, nullptr, p, p),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(errorOf(c).find("mean is NULL"), std::string::npos);

  auto es = einsumBlock(WEFT_RT_F32, "ij,jk->ik", "ijk", {2, 3, 4});
  auto bad = es;
  bad[6] = 7; // output index out of range
  EXPECT_EQ(weft_rt_cuda_einsum(c, bad.data(), p, p, p),
            WEFT_RT_INVALID_ARGUMENT);
  bad = es;
  bad[7] = 3; // three inputs
  EXPECT_EQ(weft_rt_cuda_einsum(c, bad.data(), p, p, p),
            WEFT_RT_INVALID_ARGUMENT);
  bad = einsumBlock(WEFT_RT_F32, "ij->ik", "ijk", {2, 3, 4});
  EXPECT_EQ(weft_rt_cuda_einsum(c, bad.data(), p, p, p),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_NE(errorOf(c).find("appears in no input"), std::string::npos);
  bad = einsumBlock(WEFT_RT_U8, "ij,jk->ik", "ijk", {2, 3, 4});
  EXPECT_EQ(weft_rt_cuda_einsum(c, bad.data(), p, p, p), WEFT_RT_UNSUPPORTED);
  EXPECT_EQ(weft_rt_cuda_einsum(c, es.data(), p, nullptr, p),
            WEFT_RT_INVALID_ARGUMENT);
}

// Tests that empty outputs succeed without touching the (missing) device.
TEST_F(DenseParamsTest, EmptyOutputsDoNothing) {
  weft_rt_context *c = ctx.get();
  MatmulCase mm;
  mm.m = 0;
  auto block = mm.block();
  EXPECT_EQ(
      weft_rt_cuda_matmul(c, block.data(), nullptr, nullptr, nullptr, nullptr),
      WEFT_RT_OK);
  auto es = einsumBlock(WEFT_RT_F32, "ij,jk->ik", "ijk", {0, 3, 4});
  EXPECT_EQ(weft_rt_cuda_einsum(c, es.data(), nullptr, nullptr, nullptr),
            WEFT_RT_OK);
}

// Tests that a valid call on a state without a GPU fails cleanly.
TEST_F(DenseParamsTest, ValidCallWithoutDeviceFails) {
  if (gpuPresent())
    GTEST_SKIP() << "a GPU is present: the no-device path cannot be tested";
  MatmulCase mm;
  auto block = mm.block();
  EXPECT_NE(weft_rt_cuda_matmul(ctx.get(), block.data(), p, p, nullptr, p),
            WEFT_RT_OK);
  auto pool = poolBlock(WEFT_RT_F32, true, false, 1, 1, {4}, {2}, {2}, {1}, {0},
                        {0}, false);
  EXPECT_NE(weft_rt_cuda_pool(ctx.get(), pool.data(), p, p), WEFT_RT_OK);
  auto conv = convBlock(WEFT_RT_F32, 1, 1, 1, 1, {4, 4}, {3, 3}, {1, 1}, {1, 1},
                        {0, 0}, {0, 0});
  EXPECT_NE(weft_rt_cuda_conv(ctx.get(), conv.data(), p, p, nullptr, p),
            WEFT_RT_OK);
}

//===----------------------------------------------------------------------===//
// The matmul batch planner
//===----------------------------------------------------------------------===//

MatmulBatchPlan planOf(const MatmulCase &mm) {
  auto ctx = makeContext();
  MatmulParams params;
  auto block = mm.block();
  EXPECT_EQ(parseMatmulParams(ctx.get(), block.data(), params), WEFT_RT_OK)
      << errorOf(ctx.get());
  return planMatmulBatches(params);
}

// Tests one batch dimension and a broadcast weight (stride 0).
TEST(MatmulBatchPlan, OneDimensionIsOneStridedCall) {
  MatmulCase mm;
  mm.m = 4, mm.n = 5, mm.k = 6;
  mm.dims = {3};
  mm.aStrides = {24};
  mm.bStrides = {30};
  MatmulBatchPlan plan = planOf(mm);
  EXPECT_FALSE(plan.foldRows);
  EXPECT_EQ(plan.innerCount, 3);
  EXPECT_EQ(plan.innerStrideA, 24);
  EXPECT_EQ(plan.innerStrideB, 30);
  EXPECT_EQ(plan.outerCount, 1);
  // A broadcast A (stride 0) with B batched.
  mm.aStrides = {0};
  plan = planOf(mm);
  EXPECT_FALSE(plan.foldRows);
  EXPECT_EQ(plan.innerStrideA, 0);
  EXPECT_EQ(plan.innerCount, 3);
}

// Tests that a shared B over contiguous batches of A folds into rows, but
// not when A is transposed.
TEST(MatmulBatchPlan, SharedWeightFoldsIntoRows) {
  MatmulCase mm;
  mm.m = 4, mm.n = 5, mm.k = 6;
  mm.dims = {2, 3};
  mm.aStrides = {72, 24};
  mm.bStrides = {0, 0};
  EXPECT_TRUE(planOf(mm).foldRows);
  mm.transA = true;
  MatmulBatchPlan plan = planOf(mm);
  EXPECT_FALSE(plan.foldRows);
  EXPECT_EQ(plan.innerCount, 6); // the two dimensions nest
  EXPECT_EQ(plan.innerStrideA, 24);
  EXPECT_EQ(plan.innerStrideB, 0);
  EXPECT_EQ(plan.outerCount, 1);
}

// Tests dimensions that do not nest: the outer one is looped over, size-1
// dimensions are ignored.
TEST(MatmulBatchPlan, MixedBroadcastLoopsOverOuterDims) {
  MatmulCase mm;
  mm.m = 2, mm.n = 3, mm.k = 4;
  mm.dims = {2, 1, 3};
  mm.aStrides = {0, 0, 8};  // A broadcast along the first dimension
  mm.bStrides = {12, 0, 0}; // B broadcast along the last
  MatmulBatchPlan plan = planOf(mm);
  EXPECT_FALSE(plan.foldRows);
  EXPECT_EQ(plan.innerCount, 3);
  EXPECT_EQ(plan.innerStrideA, 8);
  EXPECT_EQ(plan.innerStrideB, 0);
  ASSERT_EQ(plan.outerRank, 1);
  EXPECT_EQ(plan.outerCount, 2);
  int64_t aOffset, bOffset;
  outerOffsets(plan, 1, aOffset, bOffset);
  EXPECT_EQ(aOffset, 0);
  EXPECT_EQ(bOffset, 12);
  // No batch at all.
  mm.dims = {1};
  mm.aStrides = {5};
  mm.bStrides = {7};
  plan = planOf(mm);
  EXPECT_EQ(plan.innerCount, 1);
  EXPECT_EQ(plan.outerCount, 1);
}

//===----------------------------------------------------------------------===//
// With a GPU: against the CPU kernels
//===----------------------------------------------------------------------===//

bool cudaDevicePresent() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

/// Device memory freed on scope exit.
class DeviceBuffer {
public:
  explicit DeviceBuffer(size_t bytes) {
    if (cudaMalloc(&data, bytes ? bytes : 1) != cudaSuccess)
      data = nullptr;
  }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  ~DeviceBuffer() {
    if (data)
      cudaFree(data);
  }
  void *get() const { return data; }

private:
  void *data = nullptr;
};

/// Public members, so that the typed helpers below can use them.
class DenseGpuTest : public ::testing::Test {
public:
  void SetUp() override {
    if (!cudaDevicePresent())
      GTEST_SKIP() << "no CUDA device";
    ctx = makeContext();
    cpu = makeContext();
    ASSERT_EQ(createDeviceState(ctx.get(), 0, {80, 90}, kDefaultWorkspaceBytes,
                                &state),
              WEFT_RT_OK)
        << errorOf(ctx.get());
    attachDeviceState(ctx.get(), state.get());
  }
  void TearDown() override {
    if (ctx)
      attachDeviceState(ctx.get(), nullptr);
  }

  /// Copies host values to a new device buffer.
  template <typename T>
  std::unique_ptr<DeviceBuffer> upload(const std::vector<T> &values) {
    auto buffer = std::make_unique<DeviceBuffer>(values.size() * sizeof(T));
    EXPECT_NE(buffer->get(), nullptr);
    EXPECT_EQ(cudaMemcpy(buffer->get(), values.data(),
                         values.size() * sizeof(T), cudaMemcpyHostToDevice),
              cudaSuccess);
    return buffer;
  }
  /// Waits for the stream, then copies `count` elements back.
  template <typename T>
  std::vector<T> download(const DeviceBuffer &buffer, size_t count) {
    EXPECT_EQ(state->stream.synchronize(ctx.get()), WEFT_RT_OK)
        << errorOf(ctx.get());
    std::vector<T> values(count);
    EXPECT_EQ(cudaMemcpy(values.data(), buffer.get(), count * sizeof(T),
                         cudaMemcpyDeviceToHost),
              cudaSuccess);
    return values;
  }

  ContextPtr ctx, cpu;
  std::unique_ptr<DeviceState> state;
  std::mt19937 rng{1234};
};

template <typename T>
std::vector<T> randomValues(std::mt19937 &rng, int64_t count) {
  std::vector<T> values(static_cast<size_t>(count));
  if constexpr (std::is_integral_v<T>) {
    std::uniform_int_distribution<int> dist(-9, 9);
    for (T &v : values)
      v = static_cast<T>(dist(rng));
  } else {
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    for (T &v : values)
      v = static_cast<T>(dist(rng));
  }
  return values;
}

template <typename T>
void expectClose(const std::vector<T> &actual, const std::vector<T> &expected,
                 double rtol, double atol, const std::string &what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  int failures = 0;
  for (size_t i = 0; i < actual.size() && failures < 5; ++i) {
    double a = static_cast<double>(actual[i]);
    double e = static_cast<double>(expected[i]);
    if (std::isnan(e) ? std::isnan(a)
                      : std::fabs(a - e) <= atol + rtol * std::fabs(e))
      continue;
    ++failures;
    ADD_FAILURE() << what << ": element " << i << " is " << a << ", expected "
                  << e;
  }
}

template <typename T> double rtolOf() {
  return std::is_same_v<T, double> ? 1e-10 : (std::is_integral_v<T> ? 0 : 1e-4);
}
template <typename T> double atolOf() {
  return std::is_same_v<T, double> ? 1e-10 : (std::is_integral_v<T> ? 0 : 1e-4);
}

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

std::vector<MatmulCase> matmulCases(int64_t dtype) {
  std::vector<MatmulCase> cases;
  auto add = [&](int64_t m, int64_t n, int64_t k, bool ta, bool tb) {
    MatmulCase c;
    c.dtype = dtype, c.m = m, c.n = n, c.k = k, c.transA = ta, c.transB = tb;
    cases.push_back(c);
    return &cases.back();
  };
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      add(1, 1, 1, ta, tb);
      add(7, 13, 5, ta, tb);
      add(33, 65, 129, ta, tb)->beta = 0.0;
    }
  // Gemm's alpha and beta with a row-vector, a full and a scalar bias.
  MatmulCase *c = add(17, 9, 11, false, true);
  c->alpha = 0.5, c->beta = 2.0, c->biasRow = 0, c->biasCol = 1;
  c = add(17, 9, 11, true, false);
  c->alpha = -1.5, c->beta = 0.25, c->biasRow = 9, c->biasCol = 1;
  c = add(5, 300, 3, false, false);
  c->biasRow = 0, c->biasCol = 0;
  c = add(8, 8, 0, false, false); // K = 0: beta * bias
  c->beta = 3.0;
  c = add(6, 4, 3, false, false); // alpha = 0
  c->alpha = 0.0;
  // Batches: one dimension, a broadcast weight (folds into rows), a
  // broadcast A, and dimensions that do not nest.
  c = add(9, 10, 11, false, false);
  c->dims = {3}, c->aStrides = {99}, c->bStrides = {110}, c->beta = 0;
  c = add(9, 10, 11, false, true);
  c->dims = {2, 3}, c->aStrides = {297, 99}, c->bStrides = {0, 0};
  c = add(9, 10, 11, true, false);
  c->dims = {4}, c->aStrides = {0}, c->bStrides = {110};
  c = add(5, 6, 7, false, false);
  c->dims = {2, 1, 3}, c->aStrides = {0, 0, 35}, c->bStrides = {42, 0, 0};
  c = add(3, 4, 70, true, true); // attention-like [2, 4] heads
  c->dims = {2, 4}, c->aStrides = {4 * 210, 210}, c->bStrides = {4 * 280, 280};
  return cases;
}

#define WEFT_MATMUL_GPU_TEST(NAME, TYPE, DTYPE)                                \
  TEST_F(DenseGpuTest, NAME) {                                                 \
    for (const MatmulCase &mc : matmulCases(DTYPE)) {                          \
      auto block = mc.block();                                                 \
      auto a = randomValues<TYPE>(rng, mc.aCount());                           \
      auto b = randomValues<TYPE>(rng, mc.bCount());                           \
      auto bias = randomValues<TYPE>(rng, mc.biasCount());                     \
      int64_t outCount = mc.batch() * mc.m * mc.n;                             \
      std::vector<TYPE> expected(outCount);                                    \
      ASSERT_EQ(weft_rt_cpu_matmul(cpu.get(), block.data(), a.data(),          \
                                   b.data(), bias.data(), expected.data()),    \
                WEFT_RT_OK)                                                    \
          << errorOf(cpu.get());                                               \
      auto da = upload(a), db = upload(b), dbias = upload(bias);               \
      DeviceBuffer dout(outCount * sizeof(TYPE));                              \
      ASSERT_EQ(weft_rt_cuda_matmul(ctx.get(), block.data(), da->get(),        \
                                    db->get(), dbias->get(), dout.get()),      \
                WEFT_RT_OK)                                                    \
          << errorOf(ctx.get());                                               \
      std::string what = "matmul M=" + std::to_string(mc.m) +                  \
                         " N=" + std::to_string(mc.n) +                        \
                         " K=" + std::to_string(mc.k) +                        \
                         " transA=" + std::to_string(mc.transA) +              \
                         " transB=" + std::to_string(mc.transB) +              \
                         " batch=" + std::to_string(mc.batch());               \
      expectClose(download<TYPE>(dout, outCount), expected, rtolOf<TYPE>(),    \
                  atolOf<TYPE>(), what);                                       \
    }                                                                          \
  }

// Tests f32, f64, i32 and i64 products against weft_rt_cpu_matmul.
WEFT_MATMUL_GPU_TEST(MatmulF32MatchesCpu, float, WEFT_RT_F32)
WEFT_MATMUL_GPU_TEST(MatmulF64MatchesCpu, double, WEFT_RT_F64)
WEFT_MATMUL_GPU_TEST(MatmulI32MatchesCpu, int32_t, WEFT_RT_I32)
WEFT_MATMUL_GPU_TEST(MatmulI64MatchesCpu, int64_t, WEFT_RT_I64)

// Tests that f32 products do not use TF32: products of values with more
// than TF32's 10 mantissa bits must come out as in f32.
TEST_F(DenseGpuTest, MatmulF32IsNotTf32) {
  MatmulCase mc;
  mc.m = 64, mc.n = 64, mc.k = 64, mc.beta = 0.0;
  auto block = mc.block();
  std::vector<float> a(64 * 64, 1.0f + 1.0f / 4096.0f),
      b(64 * 64, 1.0f + 1.0f / 2048.0f);
  auto da = upload(a), db = upload(b);
  DeviceBuffer dout(64 * 64 * sizeof(float));
  ASSERT_EQ(weft_rt_cuda_matmul(ctx.get(), block.data(), da->get(), db->get(),
                                nullptr, dout.get()),
            WEFT_RT_OK)
      << errorOf(ctx.get());
  auto out = download<float>(dout, 64 * 64);
  double exact = 64.0 * (1.0 + 1.0 / 4096.0) * (1.0 + 1.0 / 2048.0);
  // TF32 rounds both factors to 1.0: 64.
  EXPECT_NEAR(out[0], exact, 1e-4);
}

/// Half-type matmuls against the CPU's f32 product of the same (exactly
/// representable) values.
template <typename H>
void halfMatmul(DenseGpuTest &t, int64_t dtype, H (*toHalf)(float),
                float (*fromHalf)(H), std::mt19937 &rng) {
  for (MatmulCase mc : matmulCases(WEFT_RT_F32)) {
    auto block = mc.block();
    std::uniform_int_distribution<int> dist(-16, 16);
    auto make = [&](int64_t count) {
      std::vector<float> v(count);
      for (float &x : v)
        x = dist(rng) / 8.0f;
      return v;
    };
    auto a = make(mc.aCount()), b = make(mc.bCount()),
         bias = make(mc.biasCount());
    int64_t outCount = mc.batch() * mc.m * mc.n;
    std::vector<float> expected(outCount);
    ASSERT_EQ(weft_rt_cpu_matmul(t.cpu.get(), block.data(), a.data(), b.data(),
                                 bias.data(), expected.data()),
              WEFT_RT_OK);
    auto convert = [&](const std::vector<float> &v) {
      std::vector<H> h(v.size());
      for (size_t i = 0; i < v.size(); ++i)
        h[i] = toHalf(v[i]);
      return h;
    };
    auto da = t.upload(convert(a)), db = t.upload(convert(b)),
         dbias = t.upload(convert(bias));
    DeviceBuffer dout(outCount * sizeof(H));
    block[0] = dtype;
    ASSERT_EQ(weft_rt_cuda_matmul(t.ctx.get(), block.data(), da->get(),
                                  db->get(), dbias->get(), dout.get()),
              WEFT_RT_OK)
        << errorOf(t.ctx.get());
    auto out = t.template download<H>(dout, outCount);
    std::vector<float> actual(outCount);
    for (int64_t i = 0; i < outCount; ++i)
      actual[i] = fromHalf(out[i]);
    expectClose(actual, expected, 1e-2, 1e-3,
                "half matmul M=" + std::to_string(mc.m) +
                    " K=" + std::to_string(mc.k));
  }
}

__half floatToHalf(float v) { return __float2half(v); }
float halfToFloat(__half v) { return __half2float(v); }
__nv_bfloat16 floatToBf16(float v) { return __float2bfloat16(v); }
float bf16ToFloat(__nv_bfloat16 v) { return __bfloat162float(v); }

// Tests f16 and bf16 products (f32 accumulation).
TEST_F(DenseGpuTest, MatmulHalfTypesMatchCpu) {
  halfMatmul<__half>(*this, WEFT_RT_F16, floatToHalf, halfToFloat, rng);
  halfMatmul<__nv_bfloat16>(*this, WEFT_RT_BF16, floatToBf16, bf16ToFloat, rng);
}

//===----------------------------------------------------------------------===//
// Conv
//===----------------------------------------------------------------------===//

struct ConvCase {
  std::vector<int64_t> block;
  bool bias;
};

std::vector<ConvCase> convCases() {
  using V = std::vector<int64_t>;
  return {
      // 3x3 same padding, odd sizes.
      {convBlock(WEFT_RT_F32, 2, 3, 5, 1, {9, 11}, {3, 3}, {1, 1}, {1, 1},
                 {1, 1}, {1, 1}),
       true},
      // Stride 2 with asymmetric pads (SAME_UPPER): an explicitly padded
      // input.
      {convBlock(WEFT_RT_F32, 1, 4, 6, 1, {8, 8}, {3, 3}, {2, 2}, {1, 1},
                 {0, 0}, {1, 1}),
       true},
      // pads_end below pads_begin (the 3-D case below keeps the symmetric
      // output count and runs without the padded copy).
      {convBlock(WEFT_RT_F32, 1, 4, 6, 1, {7, 7}, {3, 3}, {2, 2}, {1, 1},
                 {1, 1}, {0, 0}),
       false},
      // Depthwise and grouped.
      {convBlock(WEFT_RT_F32, 2, 8, 8, 8, {10, 7}, {3, 3}, {1, 1}, {1, 1},
                 {1, 1}, {1, 1}),
       true},
      {convBlock(WEFT_RT_F32, 1, 6, 9, 3, {6, 6}, {2, 2}, {1, 1}, {1, 1},
                 {0, 0}, {0, 0}),
       true},
      // Dilation, 1x1, 1-D and 3-D.
      {convBlock(WEFT_RT_F32, 1, 3, 4, 1, {13, 13}, {3, 3}, {1, 1}, {2, 2},
                 {2, 2}, {2, 2}),
       false},
      {convBlock(WEFT_RT_F32, 3, 16, 33, 1, {5, 5}, {1, 1}, {1, 1}, {1, 1},
                 {0, 0}, {0, 0}),
       true},
      {convBlock(WEFT_RT_F32, 2, 3, 4, 1, V{17}, V{5}, V{2}, V{1}, V{2}, V{2}),
       true},
      {convBlock(WEFT_RT_F32, 1, 2, 3, 1, {5, 6, 7}, {3, 3, 3}, {1, 2, 1},
                 {1, 1, 1}, {1, 1, 1}, {1, 0, 1}),
       true},
      // No input channels: the bias alone.
      {convBlock(WEFT_RT_F32, 1, 0, 3, 1, {4, 4}, {3, 3}, {1, 1}, {1, 1},
                 {1, 1}, {1, 1}),
       true},
  };
}

int64_t convCount(const std::vector<int64_t> &p, int which) {
  int64_t s = p[1], n = p[2], c = p[3], oc = p[4], group = p[5];
  const int64_t *in = &p[6], *kernel = in + s, *out = in + 6 * s;
  int64_t count = which == 0 ? n * c : which == 1 ? oc * (c / group) : n * oc;
  const int64_t *dims = which == 0 ? in : which == 1 ? kernel : out;
  for (int64_t d = 0; d < s; ++d)
    count *= dims[d];
  return count;
}

// Tests convolutions against weft_rt_cpu_conv, twice each (the second call
// uses the cached algorithm).
TEST_F(DenseGpuTest, ConvF32MatchesCpu) {
  for (const ConvCase &cc : convCases()) {
    const auto &block = cc.block;
    auto x = randomValues<float>(rng, convCount(block, 0));
    auto w = randomValues<float>(rng, convCount(block, 1));
    auto bias = randomValues<float>(rng, block[4]);
    int64_t outCount = convCount(block, 2);
    std::vector<float> expected(outCount);
    ASSERT_EQ(weft_rt_cpu_conv(cpu.get(), block.data(), x.data(), w.data(),
                               cc.bias ? bias.data() : nullptr,
                               expected.data()),
              WEFT_RT_OK)
        << errorOf(cpu.get());
    auto dx = upload(x), dw = upload(w), dbias = upload(bias);
    DeviceBuffer dout(outCount * sizeof(float));
    for (int round = 0; round < 2; ++round) {
      ASSERT_EQ(weft_rt_cuda_conv(ctx.get(), block.data(), dx->get(), dw->get(),
                                  cc.bias ? dbias->get() : nullptr, dout.get()),
                WEFT_RT_OK)
          << errorOf(ctx.get());
      std::string what = "conv S=" + std::to_string(block[1]) +
                         " C=" + std::to_string(block[3]) +
                         " group=" + std::to_string(block[5]) + " round " +
                         std::to_string(round);
      expectClose(download<float>(dout, outCount), expected, 1e-4, 1e-4, what);
    }
  }
}

// Tests an f64 convolution (computed in f64).
TEST_F(DenseGpuTest, ConvF64MatchesF32Cpu) {
  auto block = convBlock(WEFT_RT_F32, 2, 3, 4, 1, {9, 8}, {3, 3}, {1, 1},
                         {1, 1}, {1, 1}, {1, 1});
  auto x = randomValues<float>(rng, convCount(block, 0));
  auto w = randomValues<float>(rng, convCount(block, 1));
  auto bias = randomValues<float>(rng, 4);
  int64_t outCount = convCount(block, 2);
  std::vector<float> expected(outCount);
  ASSERT_EQ(weft_rt_cpu_conv(cpu.get(), block.data(), x.data(), w.data(),
                             bias.data(), expected.data()),
            WEFT_RT_OK);
  auto toDouble = [](const std::vector<float> &v) {
    return std::vector<double>(v.begin(), v.end());
  };
  auto dx = upload(toDouble(x)), dw = upload(toDouble(w)),
       dbias = upload(toDouble(bias));
  DeviceBuffer dout(outCount * sizeof(double));
  block[0] = WEFT_RT_F64;
  ASSERT_EQ(weft_rt_cuda_conv(ctx.get(), block.data(), dx->get(), dw->get(),
                              dbias->get(), dout.get()),
            WEFT_RT_OK)
      << errorOf(ctx.get());
  auto out = download<double>(dout, outCount);
  expectClose(std::vector<float>(out.begin(), out.end()), expected, 1e-5, 1e-5,
              "f64 conv");
}

//===----------------------------------------------------------------------===//
// Pool
//===----------------------------------------------------------------------===//

std::vector<std::vector<int64_t>> poolCases(int64_t dtype, bool isMax) {
  using V = std::vector<int64_t>;
  std::vector<std::vector<int64_t>> cases;
  for (bool includePad : {false, true}) {
    if (isMax && includePad)
      continue;
    cases.push_back(poolBlock(dtype, isMax, includePad, 2, 3, {9, 11}, {3, 3},
                              {2, 2}, {1, 1}, {1, 1}, {1, 1}, false));
    // Ceil mode: the last windows run past the padded input.
    cases.push_back(poolBlock(dtype, isMax, includePad, 1, 5, {10, 7}, {3, 2},
                              {2, 3}, {1, 1}, {0, 1}, {1, 0}, true));
    // Dilations.
    cases.push_back(poolBlock(dtype, isMax, includePad, 1, 2, {12, 13}, {3, 3},
                              {1, 2}, {2, 3}, {2, 1}, {2, 3}, true));
    cases.push_back(poolBlock(dtype, isMax, includePad, 3, 4, V{50}, V{4}, V{3},
                              V{1}, V{2}, V{1}, true));
    cases.push_back(poolBlock(dtype, isMax, includePad, 1, 2, {5, 6, 7},
                              {2, 3, 2}, {2, 1, 2}, {1, 1, 2}, {1, 1, 0},
                              {0, 1, 1}, false));
    // Strided, wider than the block.
    cases.push_back(poolBlock(dtype, isMax, includePad, 1, 3, {3, 700}, {2, 5},
                              {1, 1}, {1, 1}, {0, 2}, {0, 2}, false));
  }
  // Global pooling.
  cases.push_back(poolBlock(dtype, isMax, false, 2, 70, {7, 9}, {7, 9}, {1, 1},
                            {1, 1}, {0, 0}, {0, 0}, false));
  return cases;
}

int64_t poolCount(const std::vector<int64_t> &p, bool out) {
  int64_t s = p[3];
  int64_t count = p[4] * p[5];
  const int64_t *dims = &p[6] + (out ? 6 * s : 0);
  for (int64_t d = 0; d < s; ++d)
    count *= dims[d];
  return count;
}

template <typename T>
void poolMatchesCpu(DenseGpuTest &t, int64_t dtype, bool isMax,
                    std::mt19937 &rng) {
  for (const auto &block : poolCases(dtype, isMax)) {
    auto x = randomValues<T>(rng, poolCount(block, false));
    int64_t outCount = poolCount(block, true);
    std::vector<T> expected(outCount);
    ASSERT_EQ(
        weft_rt_cpu_pool(t.cpu.get(), block.data(), x.data(), expected.data()),
        WEFT_RT_OK)
        << errorOf(t.cpu.get());
    auto dx = t.upload(x);
    DeviceBuffer dout(outCount * sizeof(T));
    ASSERT_EQ(
        weft_rt_cuda_pool(t.ctx.get(), block.data(), dx->get(), dout.get()),
        WEFT_RT_OK)
        << errorOf(t.ctx.get());
    std::string what = std::string(isMax ? "max" : "average") +
                       " pool S=" + std::to_string(block[3]) +
                       " include_pad=" + std::to_string(block[2]);
    expectClose(t.template download<T>(dout, outCount), expected,
                rtolOf<T>() * 0.1, atolOf<T>() * 0.1, what);
  }
}

// Tests max and average pooling in every dtype the CPU kernel has.
TEST_F(DenseGpuTest, PoolMatchesCpu) {
  poolMatchesCpu<float>(*this, WEFT_RT_F32, true, rng);
  poolMatchesCpu<float>(*this, WEFT_RT_F32, false, rng);
  poolMatchesCpu<double>(*this, WEFT_RT_F64, true, rng);
  poolMatchesCpu<double>(*this, WEFT_RT_F64, false, rng);
  poolMatchesCpu<int8_t>(*this, WEFT_RT_I8, true, rng);
  poolMatchesCpu<uint8_t>(*this, WEFT_RT_U8, true, rng);
}

//===----------------------------------------------------------------------===//
// Batch normalization
//===----------------------------------------------------------------------===//

template <typename T>
void batchNormMatchesCpu(DenseGpuTest &t, int64_t dtype, std::mt19937 &rng) {
  const int64_t shapes[][3] = {{1, 1, 1},  {2, 3, 7},     {3, 5, 1000},
                               {1, 64, 3}, {2, 70000, 1}, {1, 2, 70001}};
  for (const auto &shape : shapes) {
    auto block = batchNormBlock(dtype, shape[0], shape[1], shape[2], 1e-5);
    int64_t count = shape[0] * shape[1] * shape[2], c = shape[1];
    auto x = randomValues<T>(rng, count);
    auto scale = randomValues<T>(rng, c), bias = randomValues<T>(rng, c),
         mean = randomValues<T>(rng, c), var = randomValues<T>(rng, c);
    for (T &v : var)
      v = std::fabs(v) + T(0.1);
    std::vector<T> expected(count);
    ASSERT_EQ(weft_rt_cpu_batch_norm(t.cpu.get(), block.data(), x.data(),
                                     scale.data(), bias.data(), mean.data(),
                                     var.data(), expected.data()),
              WEFT_RT_OK);
    auto dx = t.upload(x), ds = t.upload(scale), db = t.upload(bias),
         dm = t.upload(mean), dv = t.upload(var);
    DeviceBuffer dout(count * sizeof(T));
    ASSERT_EQ(weft_rt_cuda_batch_norm(t.ctx.get(), block.data(), dx->get(),
                                      ds->get(), db->get(), dm->get(),
                                      dv->get(), dout.get()),
              WEFT_RT_OK)
        << errorOf(t.ctx.get());
    expectClose(t.template download<T>(dout, count), expected, rtolOf<T>(),
                atolOf<T>(),
                "batch_norm " + std::to_string(shape[0]) + "x" +
                    std::to_string(shape[1]) + "x" + std::to_string(shape[2]));
  }
}

// Tests batch normalization in f32 and f64, narrow and wide planes.
TEST_F(DenseGpuTest, BatchNormMatchesCpu) {
  batchNormMatchesCpu<float>(*this, WEFT_RT_F32, rng);
  batchNormMatchesCpu<double>(*this, WEFT_RT_F64, rng);
}

//===----------------------------------------------------------------------===//
// Einsum
//===----------------------------------------------------------------------===//

struct EinsumCase {
  std::string equation, letters;
  std::vector<int64_t> sizes;
};

std::vector<EinsumCase> einsumCases() {
  return {
      {"ij,jk->ik", "ijk", {7, 13, 5}},
      {"bij,bjk->bik", "bijk", {3, 17, 9, 33}},
      {"bhqd,bhkd->bhqk", "bhqkd", {2, 3, 5, 7, 16}},
      {"ii->i", "i", {9}},
      {"ij->", "ij", {31, 37}},
      {"ij->ji", "ij", {300, 7}},
      {"i,j->ij", "ij", {5, 300}},
      {"ijk,ik->j", "ijk", {4, 5, 6}},
      {"iij,jk->ik", "ijk", {3, 4, 5}},
      {"ab,cd->", "abcd", {2, 3, 4, 5}},
  };
}

int64_t operandCount(const std::string &subscripts, const EinsumCase &ec) {
  int64_t count = 1;
  for (char c : subscripts)
    count *= ec.sizes[ec.letters.find(c)];
  return count;
}

template <typename T>
void einsumMatchesCpu(DenseGpuTest &t, int64_t dtype, std::mt19937 &rng) {
  for (const EinsumCase &ec : einsumCases()) {
    auto block = einsumBlock(dtype, ec.equation, ec.letters, ec.sizes);
    size_t arrow = ec.equation.find("->");
    std::string lhs = ec.equation.substr(0, arrow);
    size_t comma = lhs.find(',');
    auto x = randomValues<T>(rng, operandCount(lhs.substr(0, comma), ec));
    std::vector<T> y = {T(0)};
    if (comma != std::string::npos)
      y = randomValues<T>(rng, operandCount(lhs.substr(comma + 1), ec));
    int64_t outCount = operandCount(ec.equation.substr(arrow + 2), ec);
    std::vector<T> expected(outCount);
    ASSERT_EQ(weft_rt_cpu_einsum(t.cpu.get(), block.data(), x.data(), y.data(),
                                 expected.data()),
              WEFT_RT_OK)
        << errorOf(t.cpu.get());
    auto dx = t.upload(x), dy = t.upload(y);
    DeviceBuffer dout(outCount * sizeof(T));
    ASSERT_EQ(weft_rt_cuda_einsum(t.ctx.get(), block.data(), dx->get(),
                                  dy->get(), dout.get()),
              WEFT_RT_OK)
        << errorOf(t.ctx.get());
    expectClose(t.template download<T>(dout, outCount), expected, rtolOf<T>(),
                atolOf<T>(), "einsum " + ec.equation);
  }
}

// Tests einsum in f32, f64, i32 and i64.
TEST_F(DenseGpuTest, EinsumMatchesCpu) {
  einsumMatchesCpu<float>(*this, WEFT_RT_F32, rng);
  einsumMatchesCpu<double>(*this, WEFT_RT_F64, rng);
  einsumMatchesCpu<int32_t>(*this, WEFT_RT_I32, rng);
  einsumMatchesCpu<int64_t>(*this, WEFT_RT_I64, rng);
}

} // namespace

namespace {

// Tests, without a GPU, that every block the GPU tests use is one the CPU
// kernels accept, so that a GPU run compares real work.
TEST(DenseKernels, GpuCasesAreValidOnCpu) {
  auto cpu = makeContext();
  std::mt19937 rng(7);
  for (int64_t dtype : {WEFT_RT_F32, WEFT_RT_I64})
    for (const MatmulCase &mc : matmulCases(dtype)) {
      auto block = mc.block();
      std::vector<int64_t> a(mc.aCount()), b(mc.bCount()), bias(mc.biasCount()),
          out(mc.batch() * mc.m * mc.n);
      EXPECT_EQ(weft_rt_cpu_matmul(cpu.get(), block.data(), a.data(), b.data(),
                                   bias.data(), out.data()),
                WEFT_RT_OK)
          << errorOf(cpu.get());
    }
  for (const ConvCase &cc : convCases()) {
    std::vector<float> x(convCount(cc.block, 0)), w(convCount(cc.block, 1)),
        bias(cc.block[4]), out(convCount(cc.block, 2));
    EXPECT_EQ(weft_rt_cpu_conv(cpu.get(), cc.block.data(), x.data(), w.data(),
                               bias.data(), out.data()),
              WEFT_RT_OK)
        << errorOf(cpu.get());
  }
  for (bool isMax : {true, false})
    for (const auto &block : poolCases(WEFT_RT_F32, isMax)) {
      std::vector<float> x(poolCount(block, false)),
          out(poolCount(block, true));
      EXPECT_EQ(weft_rt_cpu_pool(cpu.get(), block.data(), x.data(), out.data()),
                WEFT_RT_OK)
          << errorOf(cpu.get());
    }
  for (const EinsumCase &ec : einsumCases()) {
    auto block = einsumBlock(WEFT_RT_F32, ec.equation, ec.letters, ec.sizes);
    size_t arrow = ec.equation.find("->");
    std::string lhs = ec.equation.substr(0, arrow);
    size_t comma = lhs.find(',');
    std::vector<float> x(operandCount(lhs.substr(0, comma), ec)), y(1);
    if (comma != std::string::npos)
      y.resize(operandCount(lhs.substr(comma + 1), ec));
    std::vector<float> out(operandCount(ec.equation.substr(arrow + 2), ec));
    EXPECT_EQ(weft_rt_cpu_einsum(cpu.get(), block.data(), x.data(), y.data(),
                                 out.data()),
              WEFT_RT_OK)
        << ec.equation << ": " << errorOf(cpu.get());
    // And the GPU parser agrees on the shape.
    EinsumParams params;
    ASSERT_EQ(parseEinsumParams(cpu.get(), block.data(), params), WEFT_RT_OK);
    EXPECT_EQ(params.outCount, static_cast<int64_t>(out.size()));
  }
}

} // namespace
