//===- NcclBroadcast.cpp - BROADCAST on NCCL ------------------------------===//
//
// A broadcast over a group's NCCL communicator is ncclBroadcast: NCCL's own
// pipelined ring from the root, in NCCL's chunks and ring order. Over the
// world (a job beyond its cap of groups) it is the chain of the caller's
// order as grouped sends and receives: in step w, rank p of the chain
// receives chunk w - p + 1 from rank p - 1 and sends chunk w - p to rank
// p + 1 in one ncclGroupStart/End, so that a relay receives the next chunk
// while it forwards the last; each rank's steps follow each other on the
// stream, and the two ends of a chunk's hop are in the same step. Neither
// has run on a GPU yet (docs/Runtime.md).
//
// Both run on the compute stream, not on SEND's and RECV's transfer stream
// (NcclTransfer.h): every rank but the root receives into `out`, which the
// next kernels read, and a relay forwards from it, so the compute stream
// would wait for nearly the whole broadcast anyway; only the root's part
// could overlap. And a chain over the world shares the world's
// communicator with SEND and RECV, whose kernels NCCL runs one after
// another in their launch order whatever their streams: such a chain waits
// for the sends launched before it on either stream. It stays in the one
// global order of a pipeline's operations, so this costs overlap, not
// safety.
//
//===----------------------------------------------------------------------===//

#include "comm/CollectiveParams.h"
#include "comm/Comm.h"
#include "cuda/CudaStatus.h"
#include "cuda/DeviceState.h"
#include "cuda/NcclComm.h"

#include <algorithm>
#include <vector>

using namespace weft::rt;
using namespace weft::rt::cuda;

/// "{0,2,5}".
static std::string chainText(const Collective &c) {
  return formatRankList(std::vector<int32_t>(c.chain, c.chain + c.chainLength));
}

/// Ends an open group and marks the communicators broken on a failed call.
#define WEFT_NCCL_STEP(call)                                                   \
  do {                                                                         \
    ncclResult_t weftNcclResult = (call);                                      \
    if (weftNcclResult != ncclSuccess) {                                       \
      ncclGroupEnd();                                                          \
      nccl.markBroken();                                                       \
      return ncclFail(ctx, weftNcclResult, #call, __FILE__, __LINE__);         \
    }                                                                          \
  } while (0)

/// The chain over the world, in steps of grouped sends and receives.
static weft_rt_status chainOverWorld(weft_rt_context *ctx, NcclMesh &nccl,
                                     cudaStream_t stream, const Collective &c,
                                     const void *in, void *out) {
  int64_t p = c.chainPosition, n = c.chainLength;
  auto *buffer = static_cast<uint8_t *>(p == 0 ? const_cast<void *>(in) : out);
  int previous = p > 0 ? static_cast<int>(c.chain[p - 1]) : -1;
  int next = p + 1 < n ? static_cast<int>(c.chain[p + 1]) : -1;
  size_t eb = c.elemBytes;
  for (int64_t step = 0; step < c.chunks + n - 2; ++step) {
    int64_t receive = step - p + 1, send = step - p;
    bool receives = previous >= 0 && receive >= 0 && receive < c.chunks;
    bool sends = next >= 0 && send >= 0 && send < c.chunks;
    if (receives && broadcastChunk(c, receive).second == 0)
      receives = false;
    if (sends && broadcastChunk(c, send).second == 0)
      sends = false;
    if (!receives && !sends)
      continue;
    WEFT_NCCL_STEP(ncclGroupStart());
    if (receives) {
      auto [first, elements] = broadcastChunk(c, receive);
      WEFT_NCCL_STEP(ncclRecv(buffer + first * eb, elements * eb, ncclUint8,
                              previous, nccl.worldComm(), stream));
    }
    if (sends) {
      auto [first, elements] = broadcastChunk(c, send);
      WEFT_NCCL_STEP(ncclSend(buffer + first * eb, elements * eb, ncclUint8,
                              next, nccl.worldComm(), stream));
    }
    WEFT_NCCL_STEP(ncclGroupEnd());
  }
  return WEFT_RT_OK;
}

weft_rt_status weft::rt::cuda::runBroadcastOnNccl(weft_rt_context *ctx,
                                                  DeviceState &state,
                                                  NcclMesh &nccl,
                                                  const Collective &c,
                                                  const void *in, void *out) {
  cudaStream_t stream = state.stream.get();
  if (nccl.stream() != stream)
    return weft_rt_fail(ctx, WEFT_RT_INTERNAL,
                        "weft_rt_cuda_collective broadcast: the NCCL "
                        "communicators were created for another stream than "
                        "the device state's");
  // Every rank of the chain knows the count: all skip an empty one.
  if (c.count == 0)
    return WEFT_RT_OK;
  if (c.group < 0)
    return chainOverWorld(ctx, nccl, stream, c, in, out);
  const std::vector<std::vector<int32_t>> &groups = nccl.broadcastGroups();
  if (c.group >= static_cast<int64_t>(groups.size()))
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "weft_rt_cuda_collective broadcast: group %lld, but "
                        "the communicator has %zu broadcast groups",
                        static_cast<long long>(c.group), groups.size());
  const std::vector<int32_t> &members = groups[c.group];
  std::vector<int32_t> sorted(c.chain, c.chain + c.chainLength);
  std::sort(sorted.begin(), sorted.end());
  if (sorted != members)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "weft_rt_cuda_collective broadcast: group %lld is "
                        "world ranks %s, but the chain is %s: a broadcast over "
                        "a group runs over exactly its ranks",
                        static_cast<long long>(c.group),
                        formatRankList(members).c_str(), chainText(c).c_str());
  int root = static_cast<int>(
      std::lower_bound(members.begin(), members.end(), c.chain[0]) -
      members.begin());
  // The root sends in place; the others receive into out.
  void *buffer = c.chainPosition == 0 ? const_cast<void *>(in) : out;
  ncclResult_t result =
      ncclBroadcast(buffer, buffer, static_cast<size_t>(c.count) * c.elemBytes,
                    ncclUint8, root, nccl.broadcastComm(c.group), stream);
  if (result != ncclSuccess) {
    nccl.markBroken();
    return ncclFail(ctx, result, "ncclBroadcast", __FILE__, __LINE__);
  }
  return WEFT_RT_OK;
}
