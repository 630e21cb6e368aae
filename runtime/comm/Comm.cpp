//===- Comm.cpp - MPI communicators of a device mesh ----------------------===//
//
// weft_rt_comm_create_mpi duplicates MPI_COMM_WORLD for the mesh; the
// communicator of a subset of mesh axes is split from it when a collective
// first needs it (groupComm). It initializes MPI when the process has not (the driver's case) and then
// finalizes it with the last communicator.
//
//===----------------------------------------------------------------------===//

#include "comm/Comm.h"
#include "comm/Wait.h"
#include "core/Context.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <new>

using namespace weft::rt;

/// Communicators alive, and whether weft_rt_comm_create_mpi initialized MPI
/// (then the last weft_rt_comm_destroy finalizes it). Communicators are
/// created and destroyed from one thread (weft_rt.h says so).
static int liveComms = 0;
static bool initializedMpi = false;

uint8_t *ScratchBuffer::reserve(size_t bytes) {
  // Never null on success, even for nothing.
  if (bytes == 0)
    bytes = 1;
  if (bytes <= capacity)
    return data.get();
  std::unique_ptr<uint8_t[]> fresh(new (std::nothrow) uint8_t[bytes]);
  if (!fresh)
    return nullptr;
  data = std::move(fresh);
  capacity = bytes;
  return data.get();
}

weft_rt_status weft::rt::mpiFail(weft_rt_context *ctx, int code,
                                 const char *call, const char *file, int line) {
  char text[MPI_MAX_ERROR_STRING + 1] = {0};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    std::snprintf(text, sizeof(text), "MPI error code %d", code);
  const char *base = std::strrchr(file, '/');
  return weft_rt_fail(ctx, WEFT_RT_COMM_ERROR,
                      "MPI call failed: %s: %s (%s:%d)", call, text,
                      base ? base + 1 : file, line);
}

/// Frees whatever MPI objects `comm` holds; nothing once MPI is finalized
/// (an embedding application may have finalized it before destroying us).
static void freeMpiObjects(weft_rt_comm &comm) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized)
    return;
  for (MPI_Comm &group : comm.groups)
    if (group != MPI_COMM_NULL)
      MPI_Comm_free(&group);
  if (comm.world != MPI_COMM_NULL)
    MPI_Comm_free(&comm.world);
  if (comm.halfSum != MPI_OP_NULL)
    MPI_Op_free(&comm.halfSum);
  if (comm.bfloat16Sum != MPI_OP_NULL)
    MPI_Op_free(&comm.bfloat16Sum);
}

/// The mesh part of weft_rt_comm_create_mpi, with MPI initialized.
static weft_rt_status setUp(weft_rt_context *ctx, weft_rt_comm &comm) {
  const std::vector<int64_t> &dims = comm.dims;
  int64_t devices = 1;
  for (int64_t d : dims)
    devices *= d;
  WEFT_MPI_CHECK(ctx, MPI_Comm_size(MPI_COMM_WORLD, &comm.size));
  WEFT_MPI_CHECK(ctx, MPI_Comm_rank(MPI_COMM_WORLD, &comm.rank));
  if (comm.size != devices)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "MPI_COMM_WORLD has %d processes, but the mesh %s has "
                        "%lld devices: launch one process per device "
                        "(weft-run PKG, or mpirun -np %lld)",
                        comm.size, formatMesh(dims).c_str(),
                        static_cast<long long>(devices),
                        static_cast<long long>(devices));
  WEFT_MPI_CHECK(ctx, MPI_Comm_dup(MPI_COMM_WORLD, &comm.world));
  WEFT_MPI_CHECK(ctx, MPI_Comm_set_errhandler(comm.world, MPI_ERRORS_RETURN));

  // Every rank must split by the same shape, or the splits below would pair
  // up the wrong communicators or wait forever: compare all shapes first.
  constexpr int kRecord = 1 + kMaxMeshAxes;
  int64_t mine[kRecord] = {static_cast<int64_t>(dims.size())};
  for (size_t a = 0; a < dims.size(); ++a)
    mine[1 + a] = dims[a];
  std::vector<int64_t> all(static_cast<size_t>(comm.size) * kRecord);
  WEFT_MPI_CHECK(ctx, MPI_Allgather(mine, kRecord, MPI_INT64_T, all.data(),
                                    kRecord, MPI_INT64_T, comm.world));
  for (int r = 0; r < comm.size; ++r) {
    const int64_t *theirs = &all[static_cast<size_t>(r) * kRecord];
    if (std::memcmp(theirs, mine, sizeof(mine)) == 0)
      continue;
    std::vector<int64_t> other(
        theirs + 1,
        theirs + 1 +
            std::min<int64_t>(std::max<int64_t>(theirs[0], 0), kMaxMeshAxes));
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "rank %d has the mesh %s but rank %d has %s: every "
                        "rank must run a program of the same mesh",
                        comm.rank, formatMesh(dims).c_str(), r,
                        formatMesh(other).c_str());
  }

  // Row-major: the last axis varies fastest.
  size_t numAxes = dims.size();
  comm.coords.assign(numAxes, 0);
  int64_t rest = comm.rank;
  for (size_t a = numAxes; a-- > 0;) {
    comm.coords[a] = rest % dims[a];
    rest /= dims[a];
  }
  // Sub-communicators are split when a collective first needs them
  // (groupComm): a mesh of 8 axes has 255 subsets, and a program uses few.
  comm.groups.assign(size_t(1) << numAxes, MPI_COMM_NULL);
  WEFT_MPI_CHECK(ctx, MPI_Op_create(sumHalves, /*commute=*/1, &comm.halfSum));
  WEFT_MPI_CHECK(ctx,
                 MPI_Op_create(sumBfloat16s, /*commute=*/1, &comm.bfloat16Sum));
  return WEFT_RT_OK;
}

weft_rt_status weft::rt::groupComm(weft_rt_context *ctx, weft_rt_comm &comm,
                                   size_t mask, MPI_Comm &out) {
  if (mask == 0 || mask >= comm.groups.size())
    return weft_rt_fail(ctx, WEFT_RT_INTERNAL,
                        "no mesh axis group %zu in a mesh of %zu axes", mask,
                        comm.dims.size());
  MPI_Comm &group = comm.groups[mask];
  if (group == MPI_COMM_NULL) {
    // Every rank runs the same program, so every rank reaches its first
    // collective over these axes together and the split (a collective over
    // the world) pairs up. Same color: same coordinates off the group's
    // axes. The key orders a group by its coordinates on its axes,
    // ascending axis most significant.
    int64_t color = 0, key = 0;
    for (size_t a = 0; a < comm.dims.size(); ++a) {
      if (mask & (size_t(1) << a))
        key = key * comm.dims[a] + comm.coords[a];
      else
        color = color * comm.dims[a] + comm.coords[a];
    }
    // MPI_Comm_split blocks and spins; wait for every rank first without
    // holding the core (a peer may still be busy before its first
    // collective), so that the split itself is quick.
    MPI_Request arrived;
    WEFT_MPI_CHECK(ctx, MPI_Ibarrier(comm.world, &arrived));
    WEFT_MPI_CHECK(ctx, waitFor(&arrived));
    WEFT_MPI_CHECK(ctx, MPI_Comm_split(comm.world, static_cast<int>(color),
                                       static_cast<int>(key), &group));
    WEFT_MPI_CHECK(ctx, MPI_Comm_set_errhandler(group, MPI_ERRORS_RETURN));
  }
  out = group;
  return WEFT_RT_OK;
}

weft_rt_status weft_rt_comm_create_mpi(weft_rt_context *ctx, int32_t mesh_rank,
                                       const int64_t *mesh_dims,
                                       weft_rt_comm **out_comm) {
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  if (!out_comm)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "weft_rt_comm_create_mpi: out_comm is NULL");
  *out_comm = nullptr;
  if (mesh_rank < 1 || mesh_rank > kMaxMeshAxes)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "weft_rt_comm_create_mpi: a mesh has 1 to %d axes, "
                        "not %d",
                        kMaxMeshAxes, mesh_rank);
  if (!mesh_dims)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "weft_rt_comm_create_mpi: mesh_dims is NULL");
  std::vector<int64_t> dims(mesh_dims, mesh_dims + mesh_rank);
  int64_t devices = 1;
  for (int64_t d : dims) {
    if (d < 1 || d > INT_MAX || devices > INT_MAX / d)
      return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                          "weft_rt_comm_create_mpi: mesh %s: dims must be "
                          ">= 1 and the mesh at most %d devices",
                          formatMesh(dims).c_str(), INT_MAX);
    devices *= d;
  }

  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "weft_rt_comm_create_mpi: MPI was already finalized in "
                        "this process (it cannot be initialized again)");
  bool initializedHere = false;
  if (!initialized) {
    int provided = 0;
    int status =
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    if (status != MPI_SUCCESS)
      return mpiFail(ctx, status, "MPI_Init_thread", __FILE__, __LINE__);
    initializedHere = true;
    initializedMpi = true;
    // The process is ours: report errors as statuses instead of aborting.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  }

  auto *comm = new (std::nothrow) weft_rt_comm();
  weft_rt_status status = WEFT_RT_OUT_OF_MEMORY;
  if (comm) {
    comm->dims = std::move(dims);
    status = setUp(ctx, *comm);
  } else {
    weft_rt_fail(ctx, WEFT_RT_OUT_OF_MEMORY, "out of memory");
  }
  if (status != WEFT_RT_OK) {
    if (comm)
      freeMpiObjects(*comm);
    delete comm;
    // Every check above fails on every rank alike, so finalizing (a
    // collective) cannot hang.
    if (initializedHere)
      MPI_Finalize();
    return status;
  }
  ++liveComms;
  *out_comm = comm;
  return WEFT_RT_OK;
}

void weft_rt_comm_destroy(weft_rt_comm *comm) {
  if (!comm)
    return;
  freeMpiObjects(*comm);
  delete comm;
  if (--liveComms > 0 || !initializedMpi)
    return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized)
    MPI_Finalize();
}
