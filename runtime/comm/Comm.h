//===- Comm.h - The mesh communicator's insides -----------------*- C++ -*-===//
//
// What weft_rt_comm holds: the mesh shape, this rank's coordinates, the MPI
// communicators of the subsets of mesh axes that collectives used, and the scratch buffers that
// collectives reuse. Private to the runtime.
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
/// program compiled for `mesh` (empty or of size 1: a single device, which
/// needs none).
weft_rt_status checkMeshComm(weft_rt_context *ctx,
                             const std::vector<int64_t> &mesh);

/// The communicator of the mesh axes in bitmask `mask` (see
/// weft_rt_comm::groups), split from the world on first use.
weft_rt_status groupComm(weft_rt_context *ctx, weft_rt_comm &comm,
                         size_t mask, MPI_Comm &out);

/// MPI user operations (MPI_User_function) that sum IEEE halves and
/// bfloat16s: each pair is added in f32 and rounded to nearest even.
void sumHalves(void *in, void *inout, int *length, MPI_Datatype *type);
void sumBfloat16s(void *in, void *inout, int *length, MPI_Datatype *type);

/// "[2,2]", for messages.
std::string formatMesh(const std::vector<int64_t> &mesh);

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
  /// The mesh shape and this rank's coordinates in it.
  std::vector<int64_t> dims;
  std::vector<int64_t> coords;
  int rank = 0;
  int size = 1;
  /// A duplicate of MPI_COMM_WORLD, so that our traffic and error handler
  /// stay apart from an embedding application's.
  MPI_Comm world = MPI_COMM_NULL;
  /// groups[mask]: the devices that share every coordinate outside the axes
  /// of bitmask `mask`, ranked by the mixed-radix number of their
  /// coordinates on those axes in ascending axis order; MPI_COMM_NULL until
  /// groupComm first needs it. groups[0] is unused.
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
};

#endif // WEFT_RUNTIME_COMM_COMM_H
