//===- NcclComm.cpp - weft_rt_cuda_collective on NCCL ---------------------===//
//
// NcclMesh splits an NCCL world communicator once into this process's mesh
// (a pipeline's stage) and that into one per subset of mesh axes, with the
// ranks agreeing over MPI after every step so that one failing rank cannot
// leave the others waiting, and the world into the broadcast groups' (every
// rank splits every group). SEND and RECV are ncclSend and ncclRecv on the
// world's communicator, on the transfer stream (NcclTransfer.h), BROADCAST
// NcclBroadcast.cpp's. weft_rt_cuda_collective checks the parameter block
// exactly as weft_rt_collective does (the shared comm/CollectiveParams.h),
// then runs the collectives on the program's compute stream: NCCL's own
// collective where the blocks are even and in order, else grouped
// broadcasts, reduces or sends and receives through the state's workspace,
// packed and unpacked with cudaMemcpy2DAsync. Nothing here synchronizes;
// only a SEND op's first call allocates device memory (its staging).
//
//===----------------------------------------------------------------------===//

#include "cuda/NcclComm.h"
#include "comm/CollectiveParams.h"
#include "comm/Comm.h"
#include "cuda/CudaStatus.h"
#include "cuda/DeviceState.h"
#include "cuda/NcclId.h"
#include "cuda/NcclTransfer.h"
#include "weft_rt_cuda.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

using namespace weft::rt;
using namespace weft::rt::cuda;

//===----------------------------------------------------------------------===//
// NcclMesh
//===----------------------------------------------------------------------===//

/// Every rank's outcome of one set-up step, gathered over `world`: this
/// rank's own failure first, else the first other rank's as
/// WEFT_RT_COMM_ERROR naming it and the step.
static weft_rt_status agree(weft_rt_context *ctx, MPI_Comm world,
                            weft_rt_status mine, const char *step) {
  int size = 0;
  WEFT_MPI_CHECK(ctx, MPI_Comm_size(world, &size));
  std::vector<int32_t> all(static_cast<size_t>(size));
  int32_t status = mine;
  WEFT_MPI_CHECK(ctx, MPI_Allgather(&status, 1, MPI_INT32_T, all.data(), 1,
                                    MPI_INT32_T, world));
  if (mine != WEFT_RT_OK)
    return mine;
  for (int r = 0; r < size; ++r)
    if (all[r] != WEFT_RT_OK)
      return weft_rt_fail(ctx, WEFT_RT_COMM_ERROR,
                          "NCCL set-up failed on rank %d while %s (status "
                          "%d); that rank's own error says why",
                          r, step, all[r]);
  return WEFT_RT_OK;
}

weft_rt_status NcclMesh::create(weft_rt_context *ctx, weft_rt_comm *mpiComm,
                                cudaStream_t stream,
                                cudaStream_t transferStream,
                                std::unique_ptr<NcclMesh> *out) {
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  if (!out)
    return weft_rt_fail(ctx, WEFT_RT_INTERNAL, "NcclMesh::create: out is null");
  out->reset();
  if (!mpiComm || mpiComm->world == MPI_COMM_NULL ||
      mpiComm->mesh == MPI_COMM_NULL)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "NCCL communicators need the mesh's MPI communicator "
                        "(weft_rt_comm_create_mpi or "
                        "weft_rt_comm_create_mpi_pipeline)");
  std::unique_ptr<NcclMesh> mesh(new NcclMesh());
  mesh->meshDims = mpiComm->dims;
  mesh->meshCoords = mpiComm->coords;
  mesh->worldRank = mpiComm->rank;
  mesh->worldSize = mpiComm->size;
  mesh->collectiveStream = stream;
  // Before NCCL's first call: NCCL reads NCCL_LAUNCH_ORDER_IMPLICIT once, at
  // its first kernel launch. Where it is unset, this is the process's first
  // mesh and NCCL has no threads of its own yet that could read the
  // environment while it changes (Weft is taken to be the process's only
  // user of NCCL). Every mesh sets it, also one without transfers: a mesh
  // made later in the process may have them, and NCCL would not read it
  // again; with one stream it changes nothing but adds a wait per launch.
  // Every rank decides alone: ranks that decide differently still start
  // their kernels in their hosts' launch order, which is the one global
  // order, so nothing is exchanged.
  int ncclVersion = 0;
  if (ncclGetVersion(&ncclVersion) != ncclSuccess)
    ncclVersion = 0;
  TransferStreamChoice choice = chooseTransferStream(
      ncclVersion, std::getenv("NCCL_LAUNCH_ORDER_IMPLICIT"));
  if (choice.setLaunchOrder)
    setenv("NCCL_LAUNCH_ORDER_IMPLICIT", "1", /*overwrite=*/0);
  if (choice.ownStream && !transferStream)
    choice = {false, false, "the device state has no transfer stream"};
  mesh->transfers = choice.ownStream ? transferStream : stream;
  mesh->transfersReason = choice.reason;
  size_t numAxes = mesh->meshDims.size();
  mesh->groups.assign(size_t(1) << numAxes, nullptr);
  MPI_Comm world = mpiComm->world;
  MPI_Comm mpiMesh = mpiComm->mesh;
  // From here on a failure leaves communicators whose peers may have given
  // up: the destructor aborts them.
  mesh->broken = true;

  // A rank without a usable device would never reach ncclCommInitRank and
  // leave the others in it: check first, together.
  weft_rt_status local = WEFT_RT_OK;
  int device = -1;
  cudaError_t error = cudaGetDevice(&device);
  if (error == cudaSuccess)
    error = cudaFree(nullptr); // Creates the device's context if need be.
  if (error != cudaSuccess)
    local = cudaFail(ctx, error, WEFT_RT_DEVICE_UNAVAILABLE,
                     "cudaGetDevice/cudaFree(nullptr)", __FILE__, __LINE__);
  if (weft_rt_status status =
          agree(ctx, world, local, "opening its CUDA device for NCCL"))
    return status;

  // exchangeNcclId fails on every rank alike by itself.
  ncclUniqueId id;
  if (weft_rt_status status =
          exchangeNcclId(ctx, world, 0, getNcclUniqueId, &id))
    return status;

  ncclResult_t result =
      ncclCommInitRank(&mesh->world, mesh->worldSize, id, mesh->worldRank);
  local = WEFT_RT_OK;
  if (result != ncclSuccess) {
    // A failed init leaves nothing to free.
    mesh->world = nullptr;
    local = ncclFail(ctx, result, "ncclCommInitRank", __FILE__, __LINE__);
  }
  if (weft_rt_status status =
          agree(ctx, world, local, "creating the NCCL world communicator"))
    return status;

  // The mesh's own communicator, unless the mesh is the whole world. Every
  // rank of the world takes part in the split (each in its own mesh's
  // color), so every rank decides alike whether to split.
  if (mpiComm->meshSize == mesh->worldSize) {
    mesh->meshComm = mesh->world;
  } else {
    int color = *std::min_element(mpiComm->meshWorldRanks.begin(),
                                  mpiComm->meshWorldRanks.end());
    result = ncclCommSplit(mesh->world, color, mpiComm->meshPosition,
                           &mesh->meshComm, nullptr);
    local = WEFT_RT_OK;
    if (result != ncclSuccess) {
      mesh->meshComm = nullptr;
      local = ncclFail(ctx, result, "ncclCommSplit", __FILE__, __LINE__);
    } else {
      mesh->ownsMeshComm = true;
    }
    if (weft_rt_status status =
            agree(ctx, world, local,
                  "splitting the NCCL communicators of the meshes"))
      return status;
  }

  // The groups of mesh axes: collective over the mesh alone (other meshes
  // may have other numbers of axes), agreed on inside the mesh after each
  // split and over the world at the end, so that a failing mesh stops every
  // mesh.
  weft_rt_status groupStatus = WEFT_RT_OK;
  for (size_t mask = 1; mask < mesh->groups.size(); ++mask) {
    // As weft_rt_comm_create_mpi: the color is the coordinates off the
    // group's axes, the key orders the group by its coordinates on them.
    int64_t color = 0, key = 0;
    for (size_t a = 0; a < numAxes; ++a) {
      if (mask & (size_t(1) << a))
        key = key * mesh->meshDims[a] + mesh->meshCoords[a];
      else
        color = color * mesh->meshDims[a] + mesh->meshCoords[a];
    }
    result = ncclCommSplit(mesh->meshComm, static_cast<int>(color),
                           static_cast<int>(key), &mesh->groups[mask], nullptr);
    local = WEFT_RT_OK;
    if (result != ncclSuccess) {
      mesh->groups[mask] = nullptr;
      local = ncclFail(ctx, result, "ncclCommSplit", __FILE__, __LINE__);
    }
    groupStatus =
        agree(ctx, mpiMesh, local, "splitting the NCCL communicators");
    if (groupStatus != WEFT_RT_OK)
      break;
  }
  if (weft_rt_status status =
          agree(ctx, world, groupStatus, "splitting the NCCL communicators"))
    return status;
  if (weft_rt_status status = mesh->splitBroadcastGroups(ctx, *mpiComm))
    return status;
  mesh->broken = false;
  // The failure detector's thread polls NCCL's asynchronous errors (a peer
  // that died leaves this rank in a kernel that never ends).
  std::vector<NcclWatchdog::Watched> watched = {{mesh->world, "the world"}};
  if (mesh->ownsMeshComm)
    watched.push_back({mesh->meshComm, "the mesh"});
  for (size_t mask = 1; mask < mesh->groups.size(); ++mask) {
    std::string axes;
    for (size_t a = 0; a < numAxes; ++a)
      if (mask & (size_t(1) << a))
        axes += (axes.empty() ? "" : ",") + std::to_string(a);
    watched.push_back({mesh->groups[mask], "mesh axes [" + axes + "]"});
  }
  for (size_t g = 0; g < mesh->broadcastComms.size(); ++g)
    if (mesh->broadcastComms[g])
      watched.push_back(
          {mesh->broadcastComms[g], "broadcast group " + std::to_string(g)});
  mesh->watchdog = std::make_unique<NcclWatchdog>(std::move(watched));
  if (weft_rt_status status = weft_rt_context_add_health_check(
          ctx, NcclWatchdog::check, NcclWatchdog::abort,
          mesh->watchdog.get()))
    return status;
  mesh->healthContext = ctx;
  *out = std::move(mesh);
  return WEFT_RT_OK;
}

weft_rt_status NcclMesh::splitBroadcastGroups(weft_rt_context *ctx,
                                              const weft_rt_comm &mpiComm) {
  // Every rank of the world splits every group, in order (non-members with
  // NCCL_SPLIT_NOCOLOR), and the ranks agree after each.
  broadcastSets = mpiComm.broadcastGroups;
  broadcastComms.assign(broadcastSets.size(), nullptr);
  for (size_t g = 0; g < broadcastSets.size(); ++g) {
    const std::vector<int32_t> &members = broadcastSets[g];
    auto at = std::find(members.begin(), members.end(), worldRank);
    bool member = at != members.end();
    ncclResult_t result =
        ncclCommSplit(world, member ? static_cast<int>(g) : NCCL_SPLIT_NOCOLOR,
                      member ? static_cast<int>(at - members.begin()) : 0,
                      &broadcastComms[g], nullptr);
    weft_rt_status local = WEFT_RT_OK;
    if (result != ncclSuccess) {
      broadcastComms[g] = nullptr;
      local = ncclFail(ctx, result, "ncclCommSplit", __FILE__, __LINE__);
    }
    if (weft_rt_status status =
            agree(ctx, mpiComm.world, local,
                  "splitting the NCCL communicators of the broadcast groups"))
      return status;
  }
  return WEFT_RT_OK;
}

NcclMesh::~NcclMesh() {
  // No check may run on communicators that are going away.
  if (healthContext)
    weft_rt_context_remove_health_checks(healthContext, watchdog.get());
  // Aborted by the watchdog: nothing is left to free.
  if (watchdog && watchdog->aborted())
    return;
  // Destructors cannot report; children go before their parent.
  for (ncclComm_t &comm : broadcastComms) {
    if (!comm)
      continue;
    if (broken)
      ncclCommAbort(comm);
    else
      ncclCommDestroy(comm);
  }
  for (ncclComm_t &comm : groups) {
    if (!comm)
      continue;
    if (broken)
      ncclCommAbort(comm);
    else
      ncclCommDestroy(comm);
  }
  if (ownsMeshComm && meshComm) {
    if (broken)
      ncclCommAbort(meshComm);
    else
      ncclCommDestroy(meshComm);
  }
  if (!world)
    return;
  if (broken)
    ncclCommAbort(world);
  else
    ncclCommDestroy(world);
}

//===----------------------------------------------------------------------===//
// Copies on the stream
//===----------------------------------------------------------------------===//

/// Queues a copy of `rows` rows of `rowElems` elements from device memory
/// src (rows srcStride elements apart) to dst (dstStride apart).
static weft_rt_status copyRows(weft_rt_context *ctx, cudaStream_t stream,
                               uint8_t *dst, int64_t dstStride,
                               const uint8_t *src, int64_t srcStride,
                               int64_t rows, int64_t rowElems,
                               size_t elemBytes) {
  size_t rowBytes = static_cast<size_t>(rowElems) * elemBytes;
  if (rowBytes == 0 || rows <= 0)
    return WEFT_RT_OK;
  if (rows == 1 || (dstStride == rowElems && srcStride == rowElems)) {
    WEFT_CUDA_CHECK(ctx, WEFT_RT_INTERNAL,
                    cudaMemcpyAsync(dst, src, rowBytes * rows,
                                    cudaMemcpyDeviceToDevice, stream));
    return WEFT_RT_OK;
  }
  WEFT_CUDA_CHECK(ctx, WEFT_RT_INTERNAL,
                  cudaMemcpy2DAsync(dst, dstStride * elemBytes, src,
                                    srcStride * elemBytes, rowBytes,
                                    static_cast<size_t>(rows),
                                    cudaMemcpyDeviceToDevice, stream));
  return WEFT_RT_OK;
}

static const CollectiveNames kNames = {
    "weft_rt_cuda_collective",
    " (no NCCL communicator is attached: only groups of one device work; "
    "the CUDA model attaches one to a program of a mesh)",
    "no NCCL communicator is attached (the CUDA model attaches one to a "
    "program of a mesh or a pipeline), and a transfer to or from another "
    "rank needs one"};

/// A group of one device, and every LOCAL_SLICE: copies only, as
/// weft_rt_collective's.
static weft_rt_status runLocally(weft_rt_context *ctx, cudaStream_t stream,
                                 const Collective &c, const void *in,
                                 void *out) {
  if (c.outElements == 0)
    return WEFT_RT_OK;
  auto *dst = static_cast<uint8_t *>(out);
  const auto *src = static_cast<const uint8_t *>(in);
  if (c.kind == WEFT_RT_LOCAL_SLICE) {
    int64_t size = c.sizes[c.groupRank];
    int64_t offset = collectiveBlockOffset(c.sizes, c.groupRank);
    return copyRows(ctx, stream, dst, size * c.inner,
                    src + offset * c.inner * c.elemBytes, c.sizesSum * c.inner,
                    c.outer, size * c.inner, c.elemBytes);
  }
  // One member: the output is the input (only an all-reduce may be in
  // place, and then there is nothing to do).
  if (dst == src)
    return WEFT_RT_OK;
  return copyRows(ctx, stream, dst, c.outElements, src, c.outElements, 1,
                  c.outElements, c.elemBytes);
}

//===----------------------------------------------------------------------===//
// Collectives on NCCL
//===----------------------------------------------------------------------===//

/// The NCCL type that sums `dtype`, and the operation: bools (0 or 1) are
/// or-ed as the maximum of bytes.
static ncclDataType_t reduceType(weft_rt_dtype dtype, ncclRedOp_t *op) {
  *op = ncclSum;
  switch (dtype) {
  case WEFT_RT_F32:
    return ncclFloat32;
  case WEFT_RT_F16:
    return ncclFloat16;
  case WEFT_RT_BF16:
    return ncclBfloat16;
  case WEFT_RT_F64:
    return ncclFloat64;
  case WEFT_RT_I32:
    return ncclInt32;
  case WEFT_RT_I64:
    return ncclInt64;
  case WEFT_RT_I8:
    return ncclInt8;
  case WEFT_RT_BOOL:
    *op = ncclMax;
    return ncclUint8;
  default: // u8
    return ncclUint8;
  }
}

/// Returns from runOnNccl when an NCCL call fails; the mesh is then marked
/// broken (peers may be left inside the operation).
#define WEFT_NCCL_RUN(call)                                                    \
  do {                                                                         \
    ncclResult_t weftNcclResult = (call);                                      \
    if (weftNcclResult != ncclSuccess) {                                       \
      nccl.markBroken();                                                       \
      return ncclFail(ctx, weftNcclResult, #call, __FILE__, __LINE__);         \
    }                                                                          \
  } while (0)

/// The same between ncclGroupStart and ncclGroupEnd: ends the group first.
#define WEFT_NCCL_IN_GROUP(call)                                               \
  do {                                                                         \
    ncclResult_t weftNcclResult = (call);                                      \
    if (weftNcclResult != ncclSuccess) {                                       \
      ncclGroupEnd();                                                          \
      nccl.markBroken();                                                       \
      return ncclFail(ctx, weftNcclResult, #call, __FILE__, __LINE__);         \
    }                                                                          \
  } while (0)

/// Staging memory of `bytes` from the state's workspace. Every member of a
/// group asks for the same amount (the most any member needs), so that all
/// fail alike rather than leave the others waiting.
static weft_rt_status staging(weft_rt_context *ctx, const DeviceState &state,
                              const char *name, bool fits, size_t bytes,
                              uint8_t **out) {
  if (!fits || bytes > state.workspaceBytes || !state.workspace)
    return weft_rt_fail(ctx, WEFT_RT_OUT_OF_MEMORY,
                        "%s %s: needs %s%zu bytes of CUDA scratch memory to "
                        "stage its blocks, but the device's workspace has %zu",
                        kNames.function, name, fits ? "" : "more than ",
                        fits ? bytes : SIZE_MAX, state.workspaceBytes);
  *out = static_cast<uint8_t *>(state.workspace);
  return WEFT_RT_OK;
}

static bool allEqual(const int64_t *sizes, int64_t p) {
  for (int64_t h = 1; h < p; ++h)
    if (sizes[h] != sizes[0])
      return false;
  return true;
}

static size_t roundUp(size_t bytes, size_t to) {
  return (bytes + to - 1) / to * to;
}

/// Runs a parsed collective of a group of more than one device.
static weft_rt_status runOnNccl(weft_rt_context *ctx, DeviceState &state,
                                NcclMesh &nccl, const Collective &c,
                                const void *in, void *out) {
  const char *name = collectiveKindName(c.kind);
  cudaStream_t stream = state.stream.get();
  if (nccl.stream() != stream)
    return weft_rt_fail(ctx, WEFT_RT_INTERNAL,
                        "%s %s: the NCCL communicators were created for "
                        "another stream than the device state's",
                        kNames.function, name);
  ncclComm_t comm = nccl.group(c.mask);
  int p = static_cast<int>(c.groupSize);
  int commSize = 0;
  if (!comm || ncclCommCount(comm, &commSize) != ncclSuccess || commSize != p)
    return weft_rt_fail(ctx, WEFT_RT_INTERNAL,
                        "%s %s: the NCCL communicator of the group has %d "
                        "members, not %d",
                        kNames.function, name, commSize, p);
  size_t eb = c.elemBytes;
  auto *dst = static_cast<uint8_t *>(out);
  const auto *src = static_cast<const uint8_t *>(in);
  ncclRedOp_t op = ncclSum;
  ncclDataType_t type = reduceType(c.dtype, &op);

  if (c.kind == WEFT_RT_ALL_REDUCE_SUM) {
    if (c.count == 0)
      return WEFT_RT_OK;
    WEFT_NCCL_RUN(ncclAllReduce(in, out, static_cast<size_t>(c.count), type, op,
                                comm, stream));
    return WEFT_RT_OK;
  }

  // NCCL ranks the group's members as the MPI communicator does: by their
  // coordinates in ascending axis order; the caller's g follows `axes`.
  nccl.groupRankOf.resize(p);
  nccl.commRankOf.resize(p);
  nccl.blockOffsets.resize(p + 1);
  bool inOrder = collectiveGroupRanks(nccl.dims().data(), nccl.dims().size(), c,
                                      nccl.groupRankOf.data());
  for (int r = 0; r < p; ++r)
    nccl.commRankOf[nccl.groupRankOf[r]] = r;
  nccl.blockOffsets[0] = 0;
  for (int64_t h = 0; h < p; ++h)
    nccl.blockOffsets[h + 1] = nccl.blockOffsets[h] + c.sizes[h];
  const int64_t *offsets = nccl.blockOffsets.data();
  const int64_t *commRankOf = nccl.commRankOf.data();
  int64_t g = c.groupRank;
  int64_t rowElems = c.sizesSum * c.inner;
  // Blocks in order and of one size: NCCL's own collective, in place.
  bool even = c.outer == 1 && inOrder && allEqual(c.sizes, p);

  if (c.kind == WEFT_RT_ALL_GATHER) {
    if (c.outElements == 0)
      return WEFT_RT_OK;
    if (even) {
      WEFT_NCCL_RUN(ncclAllGather(in, out, c.sizes[0] * c.inner * eb, ncclUint8,
                                  comm, stream));
      return WEFT_RT_OK;
    }
    // One broadcast per member: with one row its block lands in place, else
    // the blocks are staged one after the other and spread over the rows.
    bool direct = c.outer == 1;
    uint8_t *recv = dst;
    if (!direct)
      if (weft_rt_status status =
              staging(ctx, state, name, true, c.outElements * eb, &recv))
        return status;
    WEFT_NCCL_RUN(ncclGroupStart());
    int64_t at = 0;
    for (int64_t h = 0; h < p; ++h) {
      int64_t block = c.outer * c.sizes[h] * c.inner;
      if (block == 0)
        continue;
      uint8_t *slot = direct ? dst + offsets[h] * c.inner * eb : recv + at * eb;
      WEFT_NCCL_IN_GROUP(ncclBroadcast(in, slot, block * eb, ncclUint8,
                                       static_cast<int>(commRankOf[h]), comm,
                                       stream));
      at += block;
    }
    WEFT_NCCL_RUN(ncclGroupEnd());
    if (direct)
      return WEFT_RT_OK;
    at = 0;
    for (int64_t h = 0; h < p; ++h) {
      int64_t blockRow = c.sizes[h] * c.inner;
      if (weft_rt_status status =
              copyRows(ctx, stream, dst + offsets[h] * c.inner * eb, rowElems,
                       recv + at * eb, blockRow, c.outer, blockRow, eb))
        return status;
      at += c.outer * blockRow;
    }
    return WEFT_RT_OK;
  }

  if (c.kind == WEFT_RT_REDUCE_SCATTER_SUM) {
    if (c.inElements == 0)
      return WEFT_RT_OK;
    if (even) {
      WEFT_NCCL_RUN(ncclReduceScatter(in, out, c.sizes[0] * c.inner, type, op,
                                      comm, stream));
      return WEFT_RT_OK;
    }
    // One reduce per member to its owner. With one row the blocks are
    // contiguous in `in`; else they are packed first, member after member.
    bool pack = c.outer != 1;
    uint8_t *packed = nullptr;
    if (pack) {
      if (weft_rt_status status =
              staging(ctx, state, name, true, c.inElements * eb, &packed))
        return status;
      int64_t at = 0;
      for (int64_t h = 0; h < p; ++h) {
        int64_t blockRow = c.sizes[h] * c.inner;
        if (weft_rt_status status =
                copyRows(ctx, stream, packed + at * eb, blockRow,
                         src + offsets[h] * c.inner * eb, rowElems, c.outer,
                         blockRow, eb))
          return status;
        at += c.outer * blockRow;
      }
    }
    WEFT_NCCL_RUN(ncclGroupStart());
    int64_t at = 0;
    for (int64_t h = 0; h < p; ++h) {
      int64_t block = c.outer * c.sizes[h] * c.inner;
      if (block == 0)
        continue;
      const uint8_t *send =
          pack ? packed + at * eb : src + offsets[h] * c.inner * eb;
      // Only the root's receive buffer is used; the others pass their send
      // block, a valid buffer of the right size.
      void *recv = h == g ? static_cast<void *>(dst)
                          : static_cast<void *>(const_cast<uint8_t *>(send));
      WEFT_NCCL_IN_GROUP(ncclReduce(send, recv, static_cast<size_t>(block),
                                    type, op, static_cast<int>(commRankOf[h]),
                                    comm, stream));
      at += block;
    }
    WEFT_NCCL_RUN(ncclGroupEnd());
    return WEFT_RT_OK;
  }

  // ALL_TO_ALL, as weft_rt_collective: member g sends member h the h-th
  // block of its split dim and receives h's g-th block, which lands at h's
  // place in the gathered dim. Skipped only when every member's blocks are
  // empty.
  if (c.outer == 0 || c.mid == 0 || c.inner == 0 || c.sizesSum == 0 ||
      c.gatherSum == 0)
    return WEFT_RT_OK;
  const int64_t *split = c.sizes, *gather = c.gatherSizes;
  // The most staging any member needs: its send blocks, then (256-byte
  // aligned) its receive blocks.
  bool fits = true;
  size_t most = 0;
  for (int64_t h = 0; h < p; ++h) {
    int64_t inH = 0, outH = 0, inBytes = 0, outBytes = 0;
    fits &=
        !__builtin_mul_overflow(c.outer * c.mid * c.inner, c.sizesSum, &inH) &&
        !__builtin_mul_overflow(inH, gather[h], &inH) &&
        !__builtin_mul_overflow(c.outer * c.mid * c.inner, c.gatherSum,
                                &outH) &&
        !__builtin_mul_overflow(outH, split[h], &outH) &&
        !__builtin_mul_overflow(inH, static_cast<int64_t>(eb), &inBytes) &&
        !__builtin_mul_overflow(outH, static_cast<int64_t>(eb), &outBytes);
    if (fits)
      most = std::max(most, roundUp(inBytes, 256) + outBytes);
  }
  uint8_t *sendBuf = nullptr;
  if (weft_rt_status status = staging(ctx, state, name, fits, most, &sendBuf))
    return status;
  uint8_t *recvBuf = sendBuf + roundUp(c.inElements * eb, 256);

  // Pack the send blocks in group order.
  int64_t sendAt = 0;
  for (int64_t h = 0; h < p; ++h) {
    int64_t splitOffset = offsets[h];
    weft_rt_status status;
    if (c.gatherFirst == 0)
      status = copyRows(ctx, stream, sendBuf + sendAt * eb,
                        split[h] * c.mid * gather[g] * c.inner,
                        src + splitOffset * c.mid * gather[g] * c.inner * eb,
                        c.sizesSum * c.mid * gather[g] * c.inner, c.outer,
                        split[h] * c.mid * gather[g] * c.inner, eb);
    else
      status = copyRows(ctx, stream, sendBuf + sendAt * eb, split[h] * c.inner,
                        src + splitOffset * c.inner * eb, c.sizesSum * c.inner,
                        c.outer * gather[g] * c.mid, split[h] * c.inner, eb);
    if (status)
      return status;
    sendAt += c.outer * split[h] * c.mid * gather[g] * c.inner;
  }
  // Exchange: the own block by a copy, the others by NCCL. Both sides of a
  // pair compute the same count, so both skip an empty one.
  WEFT_NCCL_RUN(ncclGroupStart());
  sendAt = 0;
  int64_t recvAt = 0;
  for (int64_t h = 0; h < p; ++h) {
    int64_t toH = c.outer * split[h] * c.mid * gather[g] * c.inner;
    int64_t fromH = c.outer * split[g] * c.mid * gather[h] * c.inner;
    int peer = static_cast<int>(commRankOf[h]);
    if (h != g && toH)
      WEFT_NCCL_IN_GROUP(ncclSend(sendBuf + sendAt * eb, toH * eb, ncclUint8,
                                  peer, comm, stream));
    if (h != g && fromH)
      WEFT_NCCL_IN_GROUP(ncclRecv(recvBuf + recvAt * eb, fromH * eb, ncclUint8,
                                  peer, comm, stream));
    sendAt += toH;
    recvAt += fromH;
  }
  WEFT_NCCL_RUN(ncclGroupEnd());
  {
    int64_t ownSend = 0, ownRecv = 0;
    for (int64_t h = 0; h < g; ++h) {
      ownSend += c.outer * split[h] * c.mid * gather[g] * c.inner;
      ownRecv += c.outer * split[g] * c.mid * gather[h] * c.inner;
    }
    int64_t own = c.outer * split[g] * c.mid * gather[g] * c.inner;
    if (weft_rt_status status =
            copyRows(ctx, stream, recvBuf + ownRecv * eb, own,
                     sendBuf + ownSend * eb, own, 1, own, eb))
      return status;
  }
  // Unpack: member h's block goes to its place in the gathered dim.
  recvAt = 0;
  int64_t gatherOffset = 0;
  for (int64_t h = 0; h < p; ++h) {
    const uint8_t *block = recvBuf + recvAt * eb;
    weft_rt_status status;
    if (c.gatherFirst == 0)
      status = copyRows(ctx, stream, dst + gatherOffset * c.inner * eb,
                        c.gatherSum * c.inner, block, gather[h] * c.inner,
                        c.outer * split[g] * c.mid, gather[h] * c.inner, eb);
    else
      status = copyRows(ctx, stream,
                        dst + gatherOffset * c.mid * split[g] * c.inner * eb,
                        c.gatherSum * c.mid * split[g] * c.inner, block,
                        gather[h] * c.mid * split[g] * c.inner, c.outer,
                        gather[h] * c.mid * split[g] * c.inner, eb);
    if (status)
      return status;
    recvAt += c.outer * split[g] * c.mid * gather[h] * c.inner;
    gatherOffset += gather[h];
  }
  return WEFT_RT_OK;
}

/// Runs a parsed SEND or RECV of the op named by `params` on the world's
/// communicator. On the transfer stream (NcclTransfer.h) where NCCL orders
/// the kernels of its communicators by their launch; else on the compute
/// stream, in program order, where a send reads `in` before later kernels
/// overwrite it and later kernels read what a receive wrote. NCCL has no
/// tags: the transfers of one pair match in the order both sides issue
/// them (the tag is checked, not used), and a receive cannot see the
/// sender's count, so counts that differ are the caller's bug (MPI's
/// backend reports them).
static weft_rt_status runTransferOnNccl(weft_rt_context *ctx,
                                        DeviceState &state, NcclMesh &nccl,
                                        const int64_t *params,
                                        const Collective &c, const void *in,
                                        void *out) {
  const char *name = collectiveKindName(c.kind);
  cudaStream_t stream = state.stream.get();
  if (nccl.stream() != stream)
    return weft_rt_fail(ctx, WEFT_RT_INTERNAL,
                        "%s %s: the NCCL communicators were created for "
                        "another stream than the device state's",
                        kNames.function, name);
  // Both sides know the count: both skip an empty transfer.
  if (c.count == 0)
    return WEFT_RT_OK;
  size_t bytes = static_cast<size_t>(c.count) * c.elemBytes;
  int peer = static_cast<int>(c.peer);
  if (nccl.transferStream() == stream) {
    WEFT_NCCL_RUN(ncclGroupStart());
    if (c.kind == WEFT_RT_SEND)
      WEFT_NCCL_IN_GROUP(
          ncclSend(in, bytes, ncclUint8, peer, nccl.worldComm(), stream));
    else
      WEFT_NCCL_IN_GROUP(
          ncclRecv(out, bytes, ncclUint8, peer, nccl.worldComm(), stream));
    WEFT_NCCL_RUN(ncclGroupEnd());
    return WEFT_RT_OK;
  }
  if (nccl.transferStream() != state.transferStream.get() ||
      !state.handoff.get() || !state.arrived.get())
    return weft_rt_fail(ctx, WEFT_RT_INTERNAL,
                        "%s %s: the NCCL communicators were created for "
                        "another transfer stream than the device state's",
                        kNames.function, name);
  TransferLane lane;
  lane.compute = stream;
  lane.transfer = state.transferStream.get();
  lane.handoff = state.handoff.get();
  lane.arrived = state.arrived.get();
  lane.comm = nccl.worldComm();
  static const TransferApi api = realTransferApi();
  bool ncclFailed = false;
  weft_rt_status status;
  if (c.kind == WEFT_RT_SEND) {
    SendSlot *slot = nullptr;
    if (weft_rt_status staged =
            state.sendStaging.slotFor(ctx, params, bytes, &slot))
      return staged;
    status = stagedSend(ctx, api, lane, *slot, in, bytes, peer, &ncclFailed);
  } else {
    status = orderedRecv(ctx, api, lane, out, bytes, peer, &ncclFailed);
  }
  if (ncclFailed)
    nccl.markBroken();
  return status;
}

weft_rt_status weft_rt_cuda_collective(weft_rt_context *ctx,
                                       const int64_t *params, const void *in,
                                       void *out) {
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  if (!params)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "weft_rt_cuda_collective: params is NULL");
  DeviceState *state = deviceStateOf(ctx, "collective");
  if (!state)
    return WEFT_RT_INTERNAL;
  NcclMesh *nccl = state->nccl;
  CollectiveMesh mesh;
  if (nccl) {
    mesh.dims = nccl->dims().data();
    mesh.coords = nccl->coords().data();
    mesh.numAxes = nccl->dims().size();
    mesh.worldRank = nccl->rank();
    mesh.worldSize = nccl->size();
  }
  Collective c;
  if (weft_rt_status status = parseCollective(ctx, params, mesh, kNames, c))
    return status;
  if (weft_rt_status status = checkCollectiveBuffers(ctx, kNames, c, in, out))
    return status;
  if (isTransfer(c.kind))
    return runTransferOnNccl(ctx, *state, *nccl, params, c, in, out);
  if (c.kind == WEFT_RT_BROADCAST)
    return runBroadcastOnNccl(ctx, *state, *nccl, c, in, out);
  if (c.groupSize == 1 || c.kind == WEFT_RT_LOCAL_SLICE)
    return runLocally(ctx, state->stream.get(), c, in, out);
  return runOnNccl(ctx, *state, *nccl, c, in, out);
}
