//===- BroadcastParams.cpp - A BROADCAST's parameter block ----------------===//
//
// The checks of a BROADCAST block (weft_rt.h) and the cut of its buffer into
// chunks of whole rows, shared by the MPI backend (Broadcast.cpp) and the
// NCCL one (cuda/NcclBroadcast.cpp), so that both accept, refuse and cut
// alike, and alike with the resharding planner's chunks.
//
//===----------------------------------------------------------------------===//

#include "comm/CollectiveParams.h"

#include <algorithm>
#include <vector>

using namespace weft::rt;

std::pair<int64_t, int64_t> weft::rt::broadcastChunk(const Collective &c,
                                                     int64_t i) {
  int64_t base = c.rows / c.chunks, extra = c.rows % c.chunks;
  int64_t firstRow = i * base + std::min(i, extra);
  int64_t rows = base + (i < extra ? 1 : 0);
  return {firstRow * c.rowElements, rows * c.rowElements};
}

/// The chain's check: ranks of the world, distinct, this one among them.
/// Returns "" when fine, else what is wrong; sets c.chainPosition.
static std::string checkChain(const CollectiveMesh &mesh, Collective &c) {
  std::vector<bool> seen(static_cast<size_t>(mesh.worldSize), false);
  for (int64_t i = 0; i < c.chainLength; ++i) {
    int64_t rank = c.chain[i];
    if (rank < 0 || rank >= mesh.worldSize)
      return "ranks[" + std::to_string(i) + "] is " + std::to_string(rank) +
             ", not a world rank (0 to " + std::to_string(mesh.worldSize - 1) +
             ")";
    if (seen[static_cast<size_t>(rank)])
      return "world rank " + std::to_string(rank) + " is given twice";
    seen[static_cast<size_t>(rank)] = true;
    if (rank == mesh.worldRank)
      c.chainPosition = i;
  }
  if (c.chainPosition < 0)
    return "this process is world rank " + std::to_string(mesh.worldRank) +
           ", which is not in the chain (every rank of it, and only those, "
           "call the broadcast)";
  return "";
}

weft_rt_status weft::rt::parseBroadcast(weft_rt_context *ctx,
                                        const int64_t *params,
                                        const CollectiveMesh &mesh,
                                        const CollectiveNames &names,
                                        Collective &c) {
  const char *fn = names.function;
  const char *name = collectiveKindName(c.kind);
  if (params[2] != 0)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "%s %s: A is %lld, but a broadcast takes no mesh axes "
                        "(A must be 0)",
                        fn, name, static_cast<long long>(params[2]));
  c.group = params[3];
  c.tag = params[4];
  c.rows = params[5];
  c.rowElements = params[6];
  c.chunks = params[7];
  c.chainLength = params[8];
  c.chain = params + 9;
  if (c.group < -1)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "%s %s: group %lld is neither a broadcast group (>= "
                        "0) nor -1 (the world)",
                        fn, name, static_cast<long long>(c.group));
  if (c.tag < 0 || c.tag >= kTransferTagLimit)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "%s %s: tag %lld is not from 0 to %lld", fn, name,
                        static_cast<long long>(c.tag),
                        static_cast<long long>(kTransferTagLimit - 1));
  int64_t bytes = 0;
  if (c.rows < 0 || c.rowElements < 0 ||
      __builtin_mul_overflow(c.rows, c.rowElements, &c.count) ||
      __builtin_mul_overflow(c.count, static_cast<int64_t>(c.elemBytes),
                             &bytes))
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "%s %s: rows %lld and row_elements %lld must be >= 0 "
                        "and the buffer at most 2^63-1 bytes",
                        fn, name, static_cast<long long>(c.rows),
                        static_cast<long long>(c.rowElements));
  if (c.chunks < 1 || c.chunks > std::max<int64_t>(c.rows, 1))
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "%s %s: %lld chunks of %lld rows (1 to max(rows, 1) "
                        "chunks of whole rows)",
                        fn, name, static_cast<long long>(c.chunks),
                        static_cast<long long>(c.rows));
  if (mesh.worldSize <= 0)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT, "%s %s: %s", fn, name,
                        names.noCommTransfer);
  if (c.chainLength < 2 || c.chainLength > mesh.worldSize)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "%s %s: N is %lld, but a chain has 2 to %d (the "
                        "world's size) ranks",
                        fn, name, static_cast<long long>(c.chainLength),
                        mesh.worldSize);
  std::string bad = checkChain(mesh, c);
  if (!bad.empty())
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT, "%s %s: %s", fn, name,
                        bad.c_str());
  // The root reads `in`; the others write `out`.
  if (c.chainPosition == 0)
    c.inElements = c.count;
  else
    c.outElements = c.count;
  return WEFT_RT_OK;
}
