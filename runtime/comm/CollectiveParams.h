//===- CollectiveParams.h - A collective's parameter block ------*- C++ -*-===//
//
// The checks and the arithmetic of a collective's parameter block, shared by
// the MPI backend (Collectives.cpp) and the NCCL one (cuda/NcclComm.cpp), so
// that both accept and refuse the same blocks with the same messages.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_COMM_COLLECTIVEPARAMS_H
#define WEFT_RUNTIME_COMM_COLLECTIVEPARAMS_H

#include "comm/Comm.h"

#include <cstdint>
#include <utility>

namespace weft::rt {

/// A checked parameter block and what follows from it on this device.
struct Collective {
  int64_t kind = 0;
  weft_rt_dtype dtype = 0;
  size_t elemBytes = 0;
  int64_t numAxes = 0;
  int64_t axes[kMaxMeshAxes] = {};
  /// The group: its size, this device's rank g in it, and its axes as a
  /// bitmask (an index into weft_rt_comm::groups).
  int64_t groupSize = 1;
  int64_t groupRank = 0;
  size_t mask = 0;
  /// ALL_REDUCE_SUM, SEND and RECV.
  int64_t count = 0;
  /// SEND and RECV: the other rank (a world rank) and the tag.
  int64_t peer = -1, tag = 0;
  /// The others: sizes (split sizes of ALL_TO_ALL) and gatherSizes, P each,
  /// pointing into the parameter block, and their sums.
  int64_t outer = 0, mid = 1, inner = 0, gatherFirst = 0;
  const int64_t *sizes = nullptr;
  const int64_t *gatherSizes = nullptr;
  int64_t sizesSum = 0, gatherSum = 0;
  /// Elements of in and out.
  int64_t inElements = 0, outElements = 0;
  /// BROADCAST: the group (-1: the world), the buffer as rows of
  /// rowElements, the chunks, the chain of world ranks (chainLength of them,
  /// pointing into the parameter block, the root first) and this rank's
  /// place in it. `tag` and `count` (rows x rowElements) as for SEND.
  int64_t group = -1;
  int64_t rows = 0, rowElements = 0, chunks = 1;
  int64_t chainLength = 0;
  const int64_t *chain = nullptr;
  int64_t chainPosition = -1;
};

/// The mesh a collective runs on: its shape and this device's coordinates
/// (numAxes each). A null `dims` means no communicator is attached: then
/// every axis (up to kMaxMeshAxes) counts as size 1.
struct CollectiveMesh {
  const int64_t *dims = nullptr;
  const int64_t *coords = nullptr;
  size_t numAxes = 0;
  /// The world around the mesh, which SEND and RECV peers are ranks of:
  /// this device's world rank and the world's size (0 without a
  /// communicator).
  int worldRank = 0;
  int worldSize = 0;
};

/// How messages name the caller: `function` starts every message
/// ("weft_rt_collective"); `noCommHint` ends the message of a group of more
/// than one device without a communicator (" (no communicator ...)");
/// `noCommTransfer` is the message of a SEND or RECV without one (after the
/// function and the kind).
struct CollectiveNames {
  const char *function;
  const char *noCommHint;
  const char *noCommTransfer;
};

/// Whether `kind` is a point-to-point transfer (SEND, RECV).
inline bool isTransfer(int64_t kind) {
  return kind == WEFT_RT_SEND || kind == WEFT_RT_RECV;
}

/// Chunk `i` of a parsed BROADCAST: {first element, elements}. Chunks are
/// whole rows, the first rows % chunks of them one row longer.
std::pair<int64_t, int64_t> broadcastChunk(const Collective &c, int64_t i);

/// Tags of SEND and RECV are below this bound (2^20).
inline constexpr int64_t kTransferTagLimit = int64_t(1) << 20;

/// "all_reduce_sum", ...; "?" for an unknown kind.
const char *collectiveKindName(int64_t kind);

/// Parses and checks `params` against `mesh`. Fails ctx with
/// WEFT_RT_INVALID_ARGUMENT and a message that names the collective and the
/// offending value. Reads only host memory.
weft_rt_status parseCollective(weft_rt_context *ctx, const int64_t *params,
                               const CollectiveMesh &mesh,
                               const CollectiveNames &names, Collective &c);

/// The rest of a BROADCAST block (kind and dtype are read into `c`), for
/// parseCollective: everything the block can say wrong on its own (the
/// group's members are checked where it runs, against the communicator).
weft_rt_status parseBroadcast(weft_rt_context *ctx, const int64_t *params,
                              const CollectiveMesh &mesh,
                              const CollectiveNames &names, Collective &c);

/// Checks the buffers of a parsed collective: present when not empty, and
/// apart (only an all-reduce may work in place). Compares addresses only.
weft_rt_status checkCollectiveBuffers(weft_rt_context *ctx,
                                      const CollectiveNames &names,
                                      const Collective &c, const void *in,
                                      void *out);

/// The offset of member h's block: sum(sizes[0..h)).
int64_t collectiveBlockOffset(const int64_t *sizes, int64_t h);

/// The group rank g (the caller's order, following `c.axes`) of the member
/// that has rank r in the group's communicator (ranked by coordinates in
/// ascending axis order), for every r < c.groupSize, into groupRankOf[r].
/// Returns whether the two orders agree (groupRankOf[r] == r for all r).
bool collectiveGroupRanks(const int64_t *dims, size_t numAxes,
                          const Collective &c, int64_t *groupRankOf);

} // namespace weft::rt

#endif // WEFT_RUNTIME_COMM_COLLECTIVEPARAMS_H
