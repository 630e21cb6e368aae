//===- Comm.h - The mesh communicator's insides -----------------*- C++ -*-===//
//
// What weft_rt_comm holds: the world and this process's mesh in it (its
// shape, this rank's coordinates, the world ranks of its devices), the MPI
// communicators of the subsets of mesh axes that collectives used and of
// the broadcast groups, and the scratch buffers that collectives reuse.
// Private to the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_COMM_COMM_H
#define WEFT_RUNTIME_COMM_COMM_H

#include "weft_rt.h"

// OpenMPI and MPICH would otherwise pull in their deprecated C++ bindings.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace weft::rt {

/// Most mesh axes a communicator supports: 2^8 - 1 sub-communicators.
inline constexpr int kMaxMeshAxes = 8;

/// A buffer that grows on demand and keeps its memory, so that collectives
/// of a shape seen before allocate nothing.
class ScratchBuffer {
public:
  /// At least `bytes` bytes, uninitialized; null when out of memory.
  uint8_t *reserve(size_t bytes);

private:
  std::unique_ptr<uint8_t[]> data;
  size_t capacity = 0;
};

/// Records an MPI failure (the call, where, and MPI's text) in ctx.
weft_rt_status mpiFail(weft_rt_context *ctx, int code, const char *call,
                       const char *file, int line);

/// Fails ctx with WEFT_RT_INVALID_ARGUMENT unless its communicator suits a
/// program compiled for `mesh` (empty or of size 1: a single device) in a
/// job of `worldSize` processes whose mesh positions are the world ranks
/// `meshWorldRanks` (empty: the mesh is the whole world, ranks 0..n-1). A
/// program of one process needs no communicator.
weft_rt_status checkMeshComm(weft_rt_context *ctx,
                             const std::vector<int64_t> &mesh,
                             int64_t worldSize,
                             const std::vector<int32_t> &meshWorldRanks);

/// The communicator of the mesh axes in bitmask `mask` (see
/// weft_rt_comm::groups), split from the mesh communicator on first use.
weft_rt_status groupComm(weft_rt_context *ctx, weft_rt_comm &comm,
                         size_t mask, MPI_Comm &out);

/// A RECV's staging buffer (weft_rt.h) and the receive of the pair's next
/// message, posted into it when the RECV before ended, so that the message
/// arrives while the program computes. One piece of at most
/// kTransferPieceBytes per request.
struct StagedReceive {
  uint8_t *staging = nullptr;
  int peer = -1;
  int tag = -1;
  int64_t bytes = 0;
  /// Whether the receive of the next message is posted (until a RECV takes
  /// it).
  bool posted = false;
  /// Per piece: its request (MPI_REQUEST_NULL once complete), the bytes that
  /// arrived, and MPI's code for it (MPI_SUCCESS, or why it failed).
  std::vector<MPI_Request> requests;
  std::vector<int64_t> arrived;
  std::vector<int> codes;
};

/// MPI user operations (MPI_User_function) that sum IEEE halves and
/// bfloat16s: each pair is added in f32 and rounded to nearest even.
void sumHalves(void *in, void *inout, int *length, MPI_Datatype *type);
void sumBfloat16s(void *in, void *inout, int *length, MPI_Datatype *type);

/// "[2,2]", for messages.
std::string formatMesh(const std::vector<int64_t> &mesh);
/// "{0,2,4}", for messages.
std::string formatRankList(const std::vector<int32_t> &ranks);

} // namespace weft::rt

/// Returns from the calling function with WEFT_RT_COMM_ERROR when an MPI
/// call fails, naming the call and this file and line.
#define WEFT_MPI_CHECK(ctx, call)                                              \
  do {                                                                         \
    int weftMpiStatus = (call);                                                \
    if (weftMpiStatus != MPI_SUCCESS)                                          \
      return ::weft::rt::mpiFail((ctx), weftMpiStatus, #call, __FILE__,        \
                                 __LINE__);                                    \
  } while (0)

struct weft_rt_comm {
  /// The mesh shape and this rank's coordinates in it (from its mesh
  /// position, row-major).
  std::vector<int64_t> dims;
  std::vector<int64_t> coords;
  /// This process's world rank and the world's size: what the driver's
  /// agreement, barriers and gathers span, and what SEND/RECV peers name.
  int rank = 0;
  int size = 1;
  /// A duplicate of MPI_COMM_WORLD, so that our traffic and error handler
  /// stay apart from an embedding application's. Point-to-point transfers
  /// between meshes go over it.
  MPI_Comm world = MPI_COMM_NULL;
  /// This process's mesh (a pipeline stage): the devices at its row-major
  /// positions, ranked by position. Collectives and the splits of `groups`
  /// run over it, never over the world: ranks of other meshes do not take
  /// part in them. For weft_rt_comm_create_mpi the mesh is the whole world.
  MPI_Comm mesh = MPI_COMM_NULL;
  int meshPosition = 0;
  int meshSize = 1;
  /// meshWorldRanks[p]: the world rank of mesh position p.
  std::vector<int32_t> meshWorldRanks;
  /// The largest tag the world's point-to-point messages may carry
  /// (MPI_TAG_UB; at least 32767).
  int tagUpperBound = 32767;
  /// groups[mask]: the devices of the mesh that share every coordinate
  /// outside the axes of bitmask `mask`, ranked by the mixed-radix number of
  /// their coordinates on those axes in ascending axis order; MPI_COMM_NULL
  /// until groupComm first needs it. groups[0] is unused.
  std::vector<MPI_Comm> groups;
  /// Sums of f16 and bf16 (MPI has no such types): user operations.
  MPI_Op halfSum = MPI_OP_NULL;
  MPI_Op bfloat16Sum = MPI_OP_NULL;
  /// Reused by collectives: packed send and receive blocks, MPI's per-member
  /// counts and displacements, and group ranks by communicator rank.
  weft::rt::ScratchBuffer sendScratch;
  weft::rt::ScratchBuffer recvScratch;
  std::vector<int> sendCounts, sendDispls, recvCounts, recvDispls;
  std::vector<int64_t> groupRankOf;
  std::vector<int64_t> blockOffsets;
  /// The staging buffers RECVs named, one per receive of the program (a
  /// handful): searched by address.
  std::vector<weft::rt::StagedReceive> stagedReceives;
  /// The broadcast groups (weft_rt_comm_create_broadcast_groups): each
  /// one's world ranks, increasing, and its communicator, ranked in that
  /// order (MPI_COMM_NULL where this rank is not a member).
  std::vector<std::vector<int32_t>> broadcastGroups;
  std::vector<MPI_Comm> broadcastComms;
  bool broadcastGroupsCreated = false;
};

#endif // WEFT_RUNTIME_COMM_COMM_H
