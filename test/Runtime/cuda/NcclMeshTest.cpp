//===- NcclMeshTest.cpp - NcclMesh and NCCL collectives under mpirun ------===//
//
// Run by ctest under `mpirun -np 1` and `-np 2`. Without a GPU,
// NcclMesh::create fails on every rank and none waits for another. With
// GPUs, every rank opens GPU rank % count, creates the NCCL communicators
// of every mesh of the world's size and runs every collective kind over
// every ordered subset of axes on device buffers, comparing each output with
// weft_rt_collective's (MPI) on host copies of the same inputs, and sends
// and receives between ranks 0 and 1 on the transfer stream. Where NCCL
// refuses several ranks on one GPU, every rank must have failed alike and
// the comparisons are skipped. Failures are counted over all ranks.
//
//===----------------------------------------------------------------------===//

#include "cuda/DeviceState.h"
#include "cuda/NcclComm.h"
#include "weft_rt_cuda.h"

#include "MpiChecks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace weft::rt::cuda;
using namespace weft::test;

namespace {

/// Every ordered subset of `numAxes` axes, the empty one included.
std::vector<std::vector<int64_t>> axisLists(size_t numAxes) {
  std::vector<std::vector<int64_t>> lists = {{}};
  for (size_t mask = 1; mask < (size_t(1) << numAxes); ++mask) {
    std::vector<int64_t> axes;
    for (size_t a = 0; a < numAxes; ++a)
      if (mask & (size_t(1) << a))
        axes.push_back(static_cast<int64_t>(a));
    do
      lists.push_back(axes);
    while (std::next_permutation(axes.begin(), axes.end()));
  }
  return lists;
}

/// Small integers (0 or 1 for bools), exact in every dtype and in sums of a
/// few; different on every rank.
std::vector<uint8_t> inputOf(int64_t elements, weft_rt_dtype dtype, int salt) {
  size_t eb = weft_rt_dtype_size(dtype);
  std::vector<uint8_t> bytes(static_cast<size_t>(elements) * eb + 1);
  for (int64_t i = 0; i < elements; ++i) {
    int64_t v = (worldRank * 7 + i * 3 + salt * 5) % 11 - 5;
    uint8_t *at = bytes.data() + i * eb;
    switch (dtype) {
    case WEFT_RT_F32: {
      float f = static_cast<float>(v);
      std::memcpy(at, &f, 4);
      break;
    }
    case WEFT_RT_F64: {
      double d = static_cast<double>(v);
      std::memcpy(at, &d, 8);
      break;
    }
    case WEFT_RT_F16: {
      _Float16 h = static_cast<_Float16>(v);
      std::memcpy(at, &h, 2);
      break;
    }
    case WEFT_RT_BF16: {
      float f = static_cast<float>(v);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      uint16_t high = static_cast<uint16_t>(bits >> 16);
      std::memcpy(at, &high, 2);
      break;
    }
    case WEFT_RT_I32: {
      int32_t x = static_cast<int32_t>(v);
      std::memcpy(at, &x, 4);
      break;
    }
    case WEFT_RT_I64:
      std::memcpy(at, &v, 8);
      break;
    case WEFT_RT_BOOL:
      *at = static_cast<uint8_t>(v & 1);
      break;
    default: // u8, i8
      *at = static_cast<uint8_t>(v + 5);
      break;
    }
  }
  return bytes;
}

struct Runner {
  weft_rt_context *ctx;
  DeviceState *state;
  std::string mesh;

  /// Runs `params` on host copies (MPI) and on the device (NCCL); the
  /// outputs must match byte for byte. `inPlace`: an all-reduce with
  /// in == out.
  void compare(const std::vector<int64_t> &params, int64_t inElements,
               int64_t outElements, const std::vector<uint8_t> &in,
               const std::string &what, bool inPlace = false) {
    std::string where = mesh + " " + what;
    size_t eb = weft_rt_dtype_size(static_cast<weft_rt_dtype>(params[1]));
    size_t inBytes = static_cast<size_t>(inElements) * eb;
    size_t outBytes = static_cast<size_t>(outElements) * eb;
    std::vector<uint8_t> want(outBytes + 1, 0xAB);
    std::vector<uint8_t> hostIn = in;
    weft_rt_status status =
        inPlace
            ? weft_rt_collective(ctx, params.data(), hostIn.data(),
                                 hostIn.data())
            : weft_rt_collective(ctx, params.data(), in.data(), want.data());
    EXPECT(status == WEFT_RT_OK, "%s: MPI: %s", where.c_str(),
           weft_rt_context_error(ctx));
    if (inPlace)
      std::memcpy(want.data(), hostIn.data(), outBytes);
    void *dIn = nullptr, *dOut = nullptr;
    if (cudaMalloc(&dIn, inBytes + 1) != cudaSuccess ||
        cudaMalloc(&dOut, outBytes + 1) != cudaSuccess) {
      EXPECT(false, "%s: cudaMalloc failed", where.c_str());
      return;
    }
    cudaMemcpy(dIn, in.data(), inBytes, cudaMemcpyHostToDevice);
    cudaMemset(dOut, 0xAB, outBytes + 1);
    status =
        weft_rt_cuda_collective(ctx, params.data(), dIn, inPlace ? dIn : dOut);
    EXPECT(status == WEFT_RT_OK, "%s: NCCL: %s", where.c_str(),
           weft_rt_context_error(ctx));
    weft_rt_status synced = state->stream.synchronize(ctx);
    EXPECT(synced == WEFT_RT_OK, "%s: synchronize: %s", where.c_str(),
           weft_rt_context_error(ctx));
    std::vector<uint8_t> got(outBytes + 1);
    cudaMemcpy(got.data(), inPlace ? dIn : dOut, outBytes + 1,
               cudaMemcpyDeviceToHost);
    cudaFree(dIn);
    cudaFree(dOut);
    if (inPlace)
      got[outBytes] = 0xAB; // in's spare byte is not 0xAB.
    size_t bad = 0;
    while (bad < got.size() && got[bad] == want[bad])
      ++bad;
    EXPECT(bad == got.size(),
           "%s: byte %zu of %zu is %d, MPI's is %d (the last is a guard)",
           where.c_str(), bad, got.size(), bad < got.size() ? got[bad] : 0,
           bad < got.size() ? want[bad] : 0);
  }
};

std::vector<int64_t> header(int64_t kind, weft_rt_dtype dtype,
                            const std::vector<int64_t> &axes) {
  std::vector<int64_t> params = {kind, dtype, int64_t(axes.size())};
  params.insert(params.end(), axes.begin(), axes.end());
  return params;
}

std::string axesText(const std::vector<int64_t> &axes) {
  std::string text = "axes [";
  for (size_t i = 0; i < axes.size(); ++i)
    text += (i ? "," : "") + std::to_string(axes[i]);
  return text + "]";
}

/// Sizes of P members: uneven with zeros, odd, even.
std::vector<int64_t> sizesOf(int64_t p, int variant) {
  std::vector<int64_t> sizes(p);
  for (int64_t h = 0; h < p; ++h)
    sizes[h] = variant == 0   ? (h % 3 == 1 ? 0 : h + 1)
               : variant == 1 ? (h + 2) % 3 + 3
                              : 4;
  return sizes;
}

void runCases(Runner &run, const std::vector<int64_t> &dims) {
  std::vector<int64_t> coords(dims.size());
  for (size_t a = dims.size(), rest = worldRank; a-- > 0;) {
    coords[a] = static_cast<int64_t>(rest) % dims[a];
    rest /= dims[a];
  }
  for (const std::vector<int64_t> &axes : axisLists(dims.size())) {
    int64_t p = 1, g = 0;
    for (int64_t a : axes) {
      p *= dims[a];
      g = g * dims[a] + coords[a];
    }
    std::string at = axesText(axes) + " ";
    for (weft_rt_dtype dtype :
         {WEFT_RT_F32, WEFT_RT_F16, WEFT_RT_BF16, WEFT_RT_F64, WEFT_RT_I32,
          WEFT_RT_I64, WEFT_RT_I8, WEFT_RT_U8, WEFT_RT_BOOL}) {
      std::string name = at + weft_rt_dtype_name(dtype);
      for (int64_t count : {19, 4099}) {
        std::vector<int64_t> params =
            header(WEFT_RT_ALL_REDUCE_SUM, dtype, axes);
        params.push_back(count);
        std::vector<uint8_t> in = inputOf(count, dtype, 0);
        run.compare(params, count, count, in, "all_reduce " + name);
        run.compare(params, count, count, in, "all_reduce in place " + name,
                    true);
      }
    }
    // Ties of f16 and bf16 sums round to nearest even, as MPI's.
    for (weft_rt_dtype dtype : {WEFT_RT_F16, WEFT_RT_BF16}) {
      if (p != 2)
        break;
      double ulp =
          dtype == WEFT_RT_F16 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7);
      std::vector<uint8_t> in(2 * 19 + 1);
      for (int i = 0; i < 19; ++i) {
        float v = static_cast<float>(g == 0 ? 1.0 + ulp : ulp / 2);
        uint16_t bits;
        if (dtype == WEFT_RT_F16) {
          _Float16 h = static_cast<_Float16>(v);
          std::memcpy(&bits, &h, 2);
        } else {
          uint32_t wide;
          std::memcpy(&wide, &v, 4);
          bits = static_cast<uint16_t>(wide >> 16); // Exact.
        }
        std::memcpy(in.data() + 2 * i, &bits, 2);
      }
      std::vector<int64_t> params = header(WEFT_RT_ALL_REDUCE_SUM, dtype, axes);
      params.push_back(19);
      run.compare(params, 19, 19, in,
                  at + "rounding " + weft_rt_dtype_name(dtype));
    }
    for (weft_rt_dtype dtype :
         {WEFT_RT_F32, WEFT_RT_F16, WEFT_RT_I64, WEFT_RT_BOOL}) {
      std::string name = at + weft_rt_dtype_name(dtype);
      for (int variant = 0; variant < 3; ++variant)
        for (int64_t outer : {1, 3})
          for (int64_t inner : {1, 5}) {
            std::vector<int64_t> sizes = sizesOf(p, variant);
            int64_t total = 0;
            for (int64_t s : sizes)
              total += s;
            std::string shape = " outer " + std::to_string(outer) + " inner " +
                                std::to_string(inner) + " sizes variant " +
                                std::to_string(variant);
            for (int64_t kind : {WEFT_RT_ALL_GATHER, WEFT_RT_REDUCE_SCATTER_SUM,
                                 WEFT_RT_LOCAL_SLICE}) {
              std::vector<int64_t> params = header(kind, dtype, axes);
              params.insert(params.end(), {outer, inner, p});
              params.insert(params.end(), sizes.begin(), sizes.end());
              int64_t mine = outer * sizes[g] * inner;
              int64_t all = outer * total * inner;
              int64_t inElements = kind == WEFT_RT_ALL_GATHER ? mine : all;
              int64_t outElements = kind == WEFT_RT_ALL_GATHER ? all : mine;
              run.compare(params, inElements, outElements,
                          inputOf(inElements, dtype, variant),
                          "kind " + std::to_string(kind) + " " + name + shape);
            }
          }
      for (int64_t first : {0, 1})
        for (int variant = 0; variant < 2; ++variant) {
          const int64_t outer = 2, mid = 3, inner = 2;
          std::vector<int64_t> split = sizesOf(p, variant);
          std::vector<int64_t> gather = sizesOf(p, 1 - variant);
          int64_t s = 0, gs = 0;
          for (int64_t h = 0; h < p; ++h) {
            s += split[h];
            gs += gather[h];
          }
          std::vector<int64_t> params = header(WEFT_RT_ALL_TO_ALL, dtype, axes);
          params.insert(params.end(), {outer, mid, inner, first, p});
          params.insert(params.end(), split.begin(), split.end());
          params.insert(params.end(), gather.begin(), gather.end());
          int64_t inElements = outer * s * mid * gather[g] * inner;
          int64_t outElements = outer * split[g] * mid * gs * inner;
          run.compare(params, inElements, outElements,
                      inputOf(inElements, dtype, variant),
                      "all_to_all " + name + (first ? " gather_first" : "") +
                          " variant " + std::to_string(variant));
        }
    }
  }
}

/// A workspace too small to stage blocks fails on every member alike.
void testSmallWorkspace(Runner &run, const std::vector<int64_t> &dims) {
  int64_t p = dims[0];
  if (p < 2)
    return;
  std::vector<int64_t> params = {
      WEFT_RT_ALL_GATHER, WEFT_RT_F32, 1, 0, 2, 64, p};
  for (int64_t h = 0; h < p; ++h)
    params.push_back(h + 1);
  size_t saved = run.state->workspaceBytes;
  run.state->workspaceBytes = 16;
  void *buffers = nullptr;
  cudaMalloc(&buffers, 1 << 20);
  weft_rt_status status = weft_rt_cuda_collective(
      run.ctx, params.data(), buffers, static_cast<char *>(buffers) + 65536);
  run.state->workspaceBytes = saved;
  cudaFree(buffers);
  EXPECT(status == WEFT_RT_OUT_OF_MEMORY &&
             std::strstr(weft_rt_context_error(run.ctx), "workspace"),
         "small workspace: status %d: %s", status,
         weft_rt_context_error(run.ctx));
}

/// SEND and RECV between world ranks 0 and 1 on the transfer stream, run
/// twice as two runs of a program would (the second reuses the staging):
/// rank 0 sends three messages from one buffer that the compute stream
/// overwrites right after each call; rank 1 receives them and sends the
/// last back from where it landed. What arrives must be what was sent.
void testTransfers(Runner &run, NcclMesh &nccl) {
  if (worldSize < 2)
    return;
  EXPECT(nccl.transferStream() == run.state->transferStream.get() ||
             !nccl.transferStreamReason().empty(),
         "transfers on another stream than the state's, for no reason");
  if (worldRank == 0)
    std::printf("transfers on %s\n", nccl.transferStreamReason().empty()
                                         ? "their own stream"
                                         : nccl.transferStreamReason().c_str());
  if (worldRank > 1)
    return;
  constexpr int64_t kCount = 1 << 16;
  constexpr size_t kBytes = kCount * sizeof(float);
  // One parameter block per op, as generated code has.
  int64_t peer = 1 - worldRank;
  std::vector<std::vector<int64_t>> ops;
  for (int64_t m = 0; m < 3; ++m)
    ops.push_back({worldRank == 0 ? WEFT_RT_SEND : WEFT_RT_RECV, WEFT_RT_F32, 0,
                   peer, m, kCount});
  std::vector<int64_t> back = {worldRank == 0 ? WEFT_RT_RECV : WEFT_RT_SEND,
                               WEFT_RT_F32,
                               0,
                               peer,
                               3,
                               kCount};
  void *device = nullptr;
  if (cudaMalloc(&device, 4 * kBytes) != cudaSuccess) {
    EXPECT(false, "transfers: cudaMalloc failed");
    return;
  }
  auto *buffers = static_cast<char *>(device);
  cudaStream_t compute = run.state->stream.get();
  std::vector<std::vector<float>> messages(3, std::vector<float>(kCount));
  for (int runs = 0; runs < 2; ++runs) {
    for (int m = 0; m < 3; ++m)
      for (int64_t i = 0; i < kCount; ++i)
        messages[m][i] = static_cast<float>(runs * 1000 + m * 100 + i % 97);
    cudaMemset(device, 0, 4 * kBytes);
    weft_rt_status status = WEFT_RT_OK;
    for (int m = 0; m < 3 && status == WEFT_RT_OK; ++m) {
      if (worldRank == 0) {
        cudaMemcpyAsync(buffers, messages[m].data(), kBytes,
                        cudaMemcpyHostToDevice, compute);
        status =
            weft_rt_cuda_collective(run.ctx, ops[m].data(), buffers, nullptr);
        // The next kernel overwrites what was sent at once.
        cudaMemsetAsync(buffers, 0xEE, kBytes, compute);
      } else {
        status = weft_rt_cuda_collective(run.ctx, ops[m].data(), nullptr,
                                         buffers + m * kBytes);
      }
    }
    if (status == WEFT_RT_OK)
      status = worldRank == 0
                   ? weft_rt_cuda_collective(run.ctx, back.data(), nullptr,
                                             buffers + 3 * kBytes)
                   : weft_rt_cuda_collective(run.ctx, back.data(),
                                             buffers + 2 * kBytes, nullptr);
    EXPECT(status == WEFT_RT_OK, "transfers: %s",
           weft_rt_context_error(run.ctx));
    weft_rt_status synced = synchronizeDeviceState(run.ctx, *run.state);
    EXPECT(synced == WEFT_RT_OK, "transfers: synchronize: %s",
           weft_rt_context_error(run.ctx));
    std::vector<float> got(kCount);
    for (int m = 0; m < 4; ++m) {
      if ((worldRank == 0) != (m == 3))
        continue;
      cudaMemcpy(got.data(), buffers + m * kBytes, kBytes,
                 cudaMemcpyDeviceToHost);
      EXPECT(got == messages[m == 3 ? 2 : m],
             "transfers: run %d: message %d arrived changed", runs, m);
    }
  }
  // One staging buffer per SEND op, kept for the second run.
  bool own = nccl.transferStream() == run.state->transferStream.get();
  size_t staged = own ? (worldRank == 0 ? 3u : 1u) : 0u;
  EXPECT(run.state->sendStaging.size() == staged,
         "transfers: %zu staging buffers, not %zu",
         run.state->sendStaging.size(), staged);
  cudaFree(device);
}

/// All ranks' statuses, to check that a failure was everybody's.
std::vector<int> gatherStatuses(weft_rt_status status) {
  std::vector<int> all(worldSize);
  int mine = status;
  MPI_Allgather(&mine, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD);
  return all;
}

void testWithoutGpu(weft_rt_context *ctx) {
  std::vector<int64_t> dims = {worldSize};
  weft_rt_comm *comm = nullptr;
  weft_rt_status status = weft_rt_comm_create_mpi(ctx, 1, dims.data(), &comm);
  EXPECT(status == WEFT_RT_OK, "comm: %s", weft_rt_context_error(ctx));
  if (status != WEFT_RT_OK)
    return;
  std::unique_ptr<NcclMesh> mesh;
  status = NcclMesh::create(ctx, comm, nullptr, nullptr, &mesh);
  EXPECT(status == WEFT_RT_DEVICE_UNAVAILABLE || status == WEFT_RT_COMM_ERROR,
         "NcclMesh::create without a GPU: status %d: %s", status,
         weft_rt_context_error(ctx));
  EXPECT(!mesh, "a mesh came back");
  EXPECT(*weft_rt_context_error(ctx), "no message");
  for (int s : gatherStatuses(status))
    EXPECT(s != WEFT_RT_OK, "a rank succeeded without a GPU");
  if (worldRank == 0)
    std::printf("no GPU: NcclMesh::create failed on every rank: %s\n",
                weft_rt_context_error(ctx));
  weft_rt_comm_destroy(comm);
}

void testWithGpus(weft_rt_context *ctx, int gpus) {
  std::unique_ptr<DeviceState> state;
  weft_rt_status status = createDeviceState(ctx, worldRank % gpus, {80, 90},
                                            kDefaultWorkspaceBytes, &state);
  EXPECT(status == WEFT_RT_OK, "device state: %s", weft_rt_context_error(ctx));
  for (int s : gatherStatuses(status))
    if (s != WEFT_RT_OK)
      return;
  std::vector<std::vector<int64_t>> meshes = {
      {worldSize}, {1, worldSize}, {worldSize, 1}};
  if (worldSize == 4)
    meshes.push_back({2, 2});
  for (const std::vector<int64_t> &dims : meshes) {
    std::string name = "mesh [";
    for (size_t i = 0; i < dims.size(); ++i)
      name += (i ? "," : "") + std::to_string(dims[i]);
    name += "]";
    weft_rt_comm *comm = nullptr;
    status = weft_rt_comm_create_mpi(ctx, static_cast<int32_t>(dims.size()),
                                     dims.data(), &comm);
    EXPECT(status == WEFT_RT_OK, "%s: comm: %s", name.c_str(),
           weft_rt_context_error(ctx));
    if (status != WEFT_RT_OK)
      return;
    std::unique_ptr<NcclMesh> nccl;
    status = NcclMesh::create(ctx, comm, state->stream.get(),
                              state->transferStream.get(), &nccl);
    std::vector<int> all = gatherStatuses(status);
    if (status != WEFT_RT_OK && gpus < worldSize) {
      // NCCL refuses two ranks on one GPU: everybody must know.
      for (int s : all)
        EXPECT(s != WEFT_RT_OK, "%s: some ranks created the mesh",
               name.c_str());
      if (worldRank == 0)
        std::printf("skipped %s: %d ranks on %d GPU(s): %s\n", name.c_str(),
                    worldSize, gpus, weft_rt_context_error(ctx));
      weft_rt_comm_destroy(comm);
      continue;
    }
    EXPECT(status == WEFT_RT_OK, "%s: NcclMesh::create: %s", name.c_str(),
           weft_rt_context_error(ctx));
    if (status != WEFT_RT_OK) {
      weft_rt_comm_destroy(comm);
      return;
    }
    EXPECT(nccl->rank() == worldRank && nccl->size() == worldSize,
           "%s: rank %d of %d", name.c_str(), nccl->rank(), nccl->size());
    weft_rt_context_set_comm(ctx, comm);
    state->nccl = nccl.get();
    attachDeviceState(ctx, state.get());
    Runner run{ctx, state.get(), name};
    int before = checks;
    runCases(run, dims);
    testSmallWorkspace(run, dims);
    if (dims.size() == 1)
      testTransfers(run, *nccl);
    if (worldRank == 0)
      std::printf("%s: %d comparisons on rank 0\n", name.c_str(),
                  checks - before);
    attachDeviceState(ctx, nullptr);
    state->nccl = nullptr;
    weft_rt_context_set_comm(ctx, nullptr);
    nccl.reset();
    weft_rt_comm_destroy(comm);
  }
}

} // namespace

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  weft_rt_context *ctx = nullptr;
  if (weft_rt_context_create(&ctx) != WEFT_RT_OK) {
    std::fprintf(stderr, "cannot create a context\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess)
    gpus = 0;
  // Every rank must take the same path.
  int fewest = 0;
  MPI_Allreduce(&gpus, &fewest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (fewest == 0)
    testWithoutGpu(ctx);
  else
    testWithGpus(ctx, fewest);

  int code = finishMpiChecks(MPI_COMM_WORLD);
  weft_rt_context_destroy(ctx);
  MPI_Finalize();
  return code;
}
