//===- NcclComm.h - NCCL communicators of a device mesh ---------*- C++ -*-===//
//
// A CUDA program that is one device of a mesh (or a stage of a pipeline)
// runs its collectives and transfers on NCCL: one communicator for the
// world (SEND and RECV, ranked by world rank), one for this process's mesh
// (the world itself when the mesh spans it), one per non-empty subset of
// mesh axes, ranked as the MPI mesh communicator's groups are, and one per
// broadcast group, all split once at start-up. weft_rt_cuda_collective
// (weft_rt_cuda.h) uses them.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_CUDA_NCCLCOMM_H
#define WEFT_RUNTIME_CUDA_NCCLCOMM_H

#include "cuda/NcclWatchdog.h"
#include "weft_rt.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace weft::rt {
struct Collective;
} // namespace weft::rt

namespace weft::rt::cuda {

struct DeviceState;

/// The NCCL communicators of this process's device in a mesh. Created once
/// (every rank of the mesh together) and attached to the program's
/// DeviceState (DeviceState::nccl); not copyable.
class NcclMesh {
public:
  /// Creates the communicators of the mesh of `mpiComm` (from
  /// weft_rt_comm_create_mpi or _pipeline) on the current CUDA device: the
  /// world's from an ncclUniqueId that world rank 0 makes and MPI
  /// broadcasts; the mesh's split from it when the world holds several
  /// meshes (color: the mesh's lowest world rank, key: the mesh position);
  /// then one per non-empty subset of mesh axes split from the mesh's
  /// (color: the coordinates off the subset; key: the group rank, the
  /// mixed-radix number of the coordinates on the subset in ascending axis
  /// order, as the MPI groups). Collective over the world: every rank calls
  /// it. The ranks agree over MPI before and after each NCCL step (over the
  /// mesh inside a mesh, then over the world), so that a rank that fails
  /// makes every rank fail (the others with WEFT_RT_COMM_ERROR naming it)
  /// rather than wait. `stream` is the stream the collectives will run
  /// on (the program's DeviceState::stream); weft_rt_cuda_collective checks
  /// that it is the state's. `transferStream` (DeviceState::transferStream;
  /// may be null) is where SEND and RECV run if NCCL can order its kernels
  /// against the collectives' (chooseTransferStream in NcclTransfer.h):
  /// decided before any NCCL call, where NCCL_LAUNCH_ORDER_IMPLICIT is also
  /// set to 1 if unset. The caller owns *out.
  static weft_rt_status create(weft_rt_context *ctx, weft_rt_comm *mpiComm,
                               cudaStream_t stream, cudaStream_t transferStream,
                               std::unique_ptr<NcclMesh> *out);

  NcclMesh(const NcclMesh &) = delete;
  NcclMesh &operator=(const NcclMesh &) = delete;
  /// Destroys the communicators (ncclCommAbort after a failed collective,
  /// which may have left peers' operations behind, else ncclCommDestroy).
  ~NcclMesh();

  /// The mesh shape and this device's coordinates in it.
  const std::vector<int64_t> &dims() const { return meshDims; }
  const std::vector<int64_t> &coords() const { return meshCoords; }
  /// This process's world rank and the world's size.
  int rank() const { return worldRank; }
  int size() const { return worldSize; }
  /// The world's communicator, ranked by world rank: SEND and RECV.
  ncclComm_t worldComm() const { return world; }
  cudaStream_t stream() const { return collectiveStream; }
  /// Where SEND and RECV run: the transfer stream given to create, or the
  /// collectives' stream where NCCL cannot order two streams' kernels
  /// (then transferStreamReason() says why).
  cudaStream_t transferStream() const { return transfers; }
  const std::string &transferStreamReason() const { return transfersReason; }
  /// The communicator of the group of axes bitmask `mask` (1 to
  /// 2^axes - 1), ranked like weft_rt_comm::groups[mask].
  ncclComm_t group(size_t mask) const { return groups[mask]; }
  /// The broadcast groups' world ranks (as the MPI communicator's, from
  /// weft_rt_comm_create_broadcast_groups) and, for those this rank belongs
  /// to, their communicators ranked in that order (null elsewhere).
  const std::vector<std::vector<int32_t>> &broadcastGroups() const {
    return broadcastSets;
  }
  ncclComm_t broadcastComm(size_t group) const { return broadcastComms[group]; }
  /// Marks the communicators as broken after an NCCL failure: the
  /// destructor then aborts them instead of waiting for peers.
  void markBroken() { broken = true; }

  /// Host scratch of weft_rt_cuda_collective, reused so that a shape seen
  /// before allocates nothing: group ranks by communicator rank and back,
  /// and block offsets.
  std::vector<int64_t> groupRankOf, commRankOf, blockOffsets;

private:
  NcclMesh() = default;
  /// Splits one communicator per broadcast group of `mpiComm` from the
  /// world's, in order; collective over the world.
  weft_rt_status splitBroadcastGroups(weft_rt_context *ctx,
                                      const weft_rt_comm &mpiComm);

  std::vector<int64_t> meshDims, meshCoords;
  int worldRank = 0;
  int worldSize = 1;
  cudaStream_t collectiveStream = nullptr;
  cudaStream_t transfers = nullptr;
  std::string transfersReason;
  ncclComm_t world = nullptr;
  /// This process's mesh, ranked by mesh position: `world` itself when the
  /// mesh spans the world (then not owned apart from it).
  ncclComm_t meshComm = nullptr;
  bool ownsMeshComm = false;
  /// groups[0] is unused (null).
  std::vector<ncclComm_t> groups;
  std::vector<std::vector<int32_t>> broadcastSets;
  std::vector<ncclComm_t> broadcastComms;
  bool broken = false;
  /// Polled by the context's failure detector while the mesh lives.
  weft_rt_context *healthContext = nullptr;
  std::unique_ptr<NcclWatchdog> watchdog;
};

/// Runs a parsed BROADCAST on `nccl`, on the state's compute stream
/// (NcclBroadcast.cpp).
weft_rt_status runBroadcastOnNccl(weft_rt_context *ctx, DeviceState &state,
                                  NcclMesh &nccl, const Collective &c,
                                  const void *in, void *out);

} // namespace weft::rt::cuda

#endif // WEFT_RUNTIME_CUDA_NCCLCOMM_H
