//===- NcclCollectiveTest.cpp - weft_rt_cuda_collective on one process ----===//
//
// Without a GPU: bad parameter blocks fail with WEFT_RT_INVALID_ARGUMENT
// before any device or NCCL call (the attached state has no stream), a
// missing state fails with WEFT_RT_INTERNAL, and NcclMesh::create refuses a
// missing MPI communicator. With a GPU: every kind on a group of one device
// matches weft_rt_collective on host copies. (Groups of several devices are
// NcclMeshTest's, under mpirun.)
//
//===----------------------------------------------------------------------===//

#include "cuda/DeviceState.h"
#include "cuda/NcclComm.h"
#include "weft_rt_cuda.h"

#include "CudaTestSupport.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

using namespace weft::rt::cuda;
using namespace weft::rt::cuda::test;

namespace {

bool mentions(weft_rt_context *ctx, const char *text) {
  return std::strstr(weft_rt_context_error(ctx), text) != nullptr;
}

TEST(NcclCollective, MissingStateIsInternal) {
  ContextPtr ctx = makeContext();
  ASSERT_TRUE(ctx);
  int64_t params[] = {WEFT_RT_ALL_REDUCE_SUM, WEFT_RT_F32, 0, 4};
  float in[4] = {}, out[4] = {};
  EXPECT_EQ(weft_rt_cuda_collective(ctx.get(), params, in, out),
            WEFT_RT_INTERNAL);
  EXPECT_TRUE(mentions(ctx.get(), "collective"))
      << weft_rt_context_error(ctx.get());
}

TEST(NcclCollective, BadParamsFailBeforeTheDevice) {
  ContextPtr ctx = makeContext();
  ASSERT_TRUE(ctx);
  // No stream, no GPU: a call that reached the device would fail otherwise.
  DeviceState state;
  attachDeviceState(ctx.get(), &state);
  float in[64] = {}, out[64] = {};
  struct Case {
    std::vector<int64_t> params;
    const char *message;
  };
  std::vector<Case> cases = {
      {{9, WEFT_RT_F32, 0, 4}, "unknown kind 9"},
      {{WEFT_RT_ALL_REDUCE_SUM, 5, 0, 4}, "unknown dtype 5"},
      {{WEFT_RT_ALL_REDUCE_SUM, WEFT_RT_F32, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4},
       "9 axes, but the mesh has 8"},
      {{WEFT_RT_ALL_REDUCE_SUM, WEFT_RT_F32, 1, 8, 4}, "is not a mesh axis"},
      {{WEFT_RT_ALL_REDUCE_SUM, WEFT_RT_F32, 1, -1, 4}, "is not a mesh axis"},
      {{WEFT_RT_ALL_REDUCE_SUM, WEFT_RT_F32, 2, 1, 1, 4}, "is given twice"},
      {{WEFT_RT_ALL_REDUCE_SUM, WEFT_RT_F32, 0, -3}, "count -3 is negative"},
      {{WEFT_RT_ALL_GATHER, WEFT_RT_F32, 1, 0, 1, 1, 2, 1, 1},
       "no NCCL communicator is attached"},
      {{WEFT_RT_REDUCE_SCATTER_SUM, WEFT_RT_F32, 0, 1, 1, 1, -2},
       "sizes must be >= 0"},
      {{WEFT_RT_LOCAL_SLICE, WEFT_RT_F32, 0, -1, 1, 1, 2}, "must be >= 0"},
      {{WEFT_RT_ALL_TO_ALL, WEFT_RT_F32, 0, 1, 1, 1, 2, 1, 1, 1},
       "gather_first is 2"},
      {{WEFT_RT_ALL_TO_ALL, WEFT_RT_F32, 0, 1, 1, 1, 0, 1, 1, -1},
       "gather sizes must be >= 0"},
      {{WEFT_RT_ALL_GATHER, WEFT_RT_F32, 0, INT64_MAX / 2, 4, 1, 2},
       "more bytes than fit in 64 bits"},
      // Point-to-point transfers between pipeline stages (ncclSend and
      // ncclRecv on a GPU): the block is checked before NCCL is reached.
      {{WEFT_RT_SEND, WEFT_RT_F32, 1, 0, 1, 0, 4},
       "send: A is 1, but a transfer takes no mesh axes"},
      {{WEFT_RT_RECV, WEFT_RT_F32, 0, 1, 0, -4}, "recv: count -4 is negative"},
      {{WEFT_RT_SEND, WEFT_RT_F32, 0, 1, int64_t(1) << 20, 4},
       "send: tag 1048576 is not from 0 to 1048575"},
      {{WEFT_RT_RECV, WEFT_RT_F32, 0, 1, 0, INT64_MAX / 2},
       "recv: the buffer has more bytes than fit in 64 bits"},
      {{WEFT_RT_SEND, WEFT_RT_F32, 0, 1, 7, 4},
       "send: no NCCL communicator is attached"},
      {{WEFT_RT_RECV, WEFT_RT_F32, 0, 1, 7, 4},
       "recv: no NCCL communicator is attached"},
      // Broadcasts (ncclBroadcast over a group, or grouped sends and
      // receives over the world): the same checks as weft_rt_collective's.
      {{WEFT_RT_BROADCAST, WEFT_RT_F32, 1, 0, 3, 4, 1, 1, 2, 0, 1},
       "broadcast: A is 1, but a broadcast takes no mesh axes"},
      {{WEFT_RT_BROADCAST, WEFT_RT_F32, 0, -2, 3, 4, 1, 1, 2, 0, 1},
       "broadcast: group -2 is neither"},
      {{WEFT_RT_BROADCAST, WEFT_RT_F32, 0, 0, 3, 4, 1, 5, 2, 0, 1},
       "broadcast: 5 chunks of 4 rows"},
      {{WEFT_RT_BROADCAST, WEFT_RT_F32, 0, 0, 3, -4, 1, 1, 2, 0, 1},
       "broadcast: rows -4 and row_elements 1 must be >= 0"},
      {{WEFT_RT_BROADCAST, WEFT_RT_F32, 0, 0, 3, 4, 1, 1, 2, 0, 1},
       "broadcast: no NCCL communicator is attached"},
  };
  for (const Case &c : cases) {
    EXPECT_EQ(weft_rt_cuda_collective(ctx.get(), c.params.data(), in, out),
              WEFT_RT_INVALID_ARGUMENT)
        << c.message;
    EXPECT_TRUE(mentions(ctx.get(), c.message))
        << weft_rt_context_error(ctx.get()) << " (expected " << c.message
        << ")";
    EXPECT_TRUE(mentions(ctx.get(), "weft_rt_cuda_collective"))
        << weft_rt_context_error(ctx.get());
  }
  int64_t gather[] = {WEFT_RT_ALL_GATHER, WEFT_RT_F32, 0, 1, 4, 1, 2};
  EXPECT_EQ(weft_rt_cuda_collective(ctx.get(), gather, in, in + 2),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(ctx.get(), "overlap"));
  EXPECT_EQ(weft_rt_cuda_collective(ctx.get(), gather, nullptr, out),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(ctx.get(), "in is NULL"));
  EXPECT_EQ(weft_rt_cuda_collective(ctx.get(), nullptr, in, out),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(ctx.get(), "params is NULL"));
  // Empty collectives need neither buffers nor the device.
  int64_t empty[] = {WEFT_RT_ALL_REDUCE_SUM, WEFT_RT_F32, 0, 0};
  EXPECT_EQ(weft_rt_cuda_collective(ctx.get(), empty, nullptr, nullptr),
            WEFT_RT_OK)
      << weft_rt_context_error(ctx.get());
  int64_t emptyGather[] = {WEFT_RT_ALL_GATHER, WEFT_RT_F32, 1, 3, 0, 4, 1, 2};
  EXPECT_EQ(weft_rt_cuda_collective(ctx.get(), emptyGather, nullptr, nullptr),
            WEFT_RT_OK)
      << weft_rt_context_error(ctx.get());
  attachDeviceState(ctx.get(), nullptr);
}

TEST(NcclCollective, CreateNeedsAnMpiCommunicator) {
  ContextPtr ctx = makeContext();
  ASSERT_TRUE(ctx);
  std::unique_ptr<NcclMesh> mesh;
  EXPECT_EQ(NcclMesh::create(ctx.get(), nullptr, nullptr, nullptr, &mesh),
            WEFT_RT_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(ctx.get(), "weft_rt_comm_create_mpi"));
  EXPECT_FALSE(mesh);
  EXPECT_EQ(NcclMesh::create(ctx.get(), nullptr, nullptr, nullptr, nullptr),
            WEFT_RT_INTERNAL);
}

/// Small integers, exact in every dtype (bools 0 or 1), as bytes.
std::vector<uint8_t> pattern(size_t elements, weft_rt_dtype dtype, int seed) {
  size_t eb = weft_rt_dtype_size(dtype);
  std::vector<uint8_t> bytes(elements * eb);
  for (size_t i = 0; i < elements; ++i) {
    int v = static_cast<int>((i * 7 + seed * 3) % 9) - 4;
    uint8_t *at = bytes.data() + i * eb;
    switch (dtype) {
    case WEFT_RT_F32: {
      float f = static_cast<float>(v);
      std::memcpy(at, &f, 4);
      break;
    }
    case WEFT_RT_I64: {
      int64_t x = v;
      std::memcpy(at, &x, 8);
      break;
    }
    case WEFT_RT_F16: {
      _Float16 h = static_cast<_Float16>(v);
      std::memcpy(at, &h, 2);
      break;
    }
    default:
      *at = static_cast<uint8_t>(v & 1);
      break;
    }
  }
  return bytes;
}

/// Runs `params` with weft_rt_collective on host buffers and with
/// weft_rt_cuda_collective on device copies; the outputs must be equal.
void compareOnOneDevice(weft_rt_context *ctx, DeviceState &state,
                        const std::vector<int64_t> &params, size_t inElements,
                        size_t outElements, const std::string &what) {
  weft_rt_dtype dtype = static_cast<weft_rt_dtype>(params[1]);
  size_t eb = weft_rt_dtype_size(dtype);
  std::vector<uint8_t> in = pattern(inElements, dtype, 1);
  std::vector<uint8_t> want(outElements * eb + 1, 0xAB);
  ASSERT_EQ(weft_rt_collective(ctx, params.data(), in.data(), want.data()),
            WEFT_RT_OK)
      << what << ": " << weft_rt_context_error(ctx);
  void *dIn = nullptr, *dOut = nullptr;
  ASSERT_EQ(cudaMalloc(&dIn, in.size() + 1), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dOut, want.size()), cudaSuccess);
  cudaMemcpy(dIn, in.data(), in.size(), cudaMemcpyHostToDevice);
  cudaMemset(dOut, 0xAB, want.size());
  weft_rt_status status =
      weft_rt_cuda_collective(ctx, params.data(), dIn, dOut);
  EXPECT_EQ(status, WEFT_RT_OK) << what << ": " << weft_rt_context_error(ctx);
  EXPECT_EQ(state.stream.synchronize(ctx), WEFT_RT_OK)
      << weft_rt_context_error(ctx);
  std::vector<uint8_t> got(want.size());
  cudaMemcpy(got.data(), dOut, got.size(), cudaMemcpyDeviceToHost);
  cudaFree(dIn);
  cudaFree(dOut);
  EXPECT_EQ(got, want) << what;
}

TEST(NcclCollective, GroupsOfOneMatchTheHost) {
  if (!gpuPresent())
    GTEST_SKIP() << "no GPU";
  ContextPtr ctx = makeContext();
  ASSERT_TRUE(ctx);
  std::unique_ptr<DeviceState> state;
  ASSERT_EQ(
      createDeviceState(ctx.get(), 0, {80, 90}, kDefaultWorkspaceBytes, &state),
      WEFT_RT_OK)
      << weft_rt_context_error(ctx.get());
  attachDeviceState(ctx.get(), state.get());
  for (weft_rt_dtype dtype :
       {WEFT_RT_F32, WEFT_RT_F16, WEFT_RT_I64, WEFT_RT_BOOL}) {
    std::string name = weft_rt_dtype_name(dtype);
    for (int64_t count : {1, 19, 1027})
      compareOnOneDevice(ctx.get(), *state,
                         {WEFT_RT_ALL_REDUCE_SUM, dtype, 1, 2, count}, count,
                         count, "all_reduce " + name);
    // [outer, size, inner] with axes of size 1 (no communicator).
    for (int64_t outer : {1, 3})
      for (int64_t size : {0, 5, 130}) {
        int64_t inner = 7, n = outer * size * inner;
        for (int64_t kind : {WEFT_RT_ALL_GATHER, WEFT_RT_REDUCE_SCATTER_SUM,
                             WEFT_RT_LOCAL_SLICE})
          compareOnOneDevice(ctx.get(), *state,
                             {kind, dtype, 1, 0, outer, inner, 1, size}, n, n,
                             "kind " + std::to_string(kind) + " " + name +
                                 " outer " + std::to_string(outer) + " size " +
                                 std::to_string(size));
      }
    for (int64_t first : {0, 1})
      compareOnOneDevice(
          ctx.get(), *state,
          {WEFT_RT_ALL_TO_ALL, dtype, 0, 2, 3, 5, first, 1, 4, 6},
          2 * 3 * 5 * 4 * 6, 2 * 3 * 5 * 4 * 6, "all_to_all " + name);
  }
  attachDeviceState(ctx.get(), nullptr);
}

} // namespace
