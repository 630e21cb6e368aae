//===- Comm.cpp - MPI communicators of a device mesh ----------------------===//
//
// weft_rt_comm_create_mpi duplicates MPI_COMM_WORLD for a mesh that spans
// the world; weft_rt_comm_create_mpi_pipeline splits one mesh (a pipeline
// stage) of several off the world, after the ranks have compared what each
// says of the meshes. The communicator of a subset of mesh axes is split
// from the mesh's when a collective first needs it (groupComm). Both
// initialize MPI when the process has not (the driver's case), and the last
// communicator then finalizes it.
//
//===----------------------------------------------------------------------===//

#include "comm/Comm.h"
#include "comm/Transfers.h"
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
  cancelStagedReceives(comm);
  for (MPI_Comm &group : comm.broadcastComms)
    if (group != MPI_COMM_NULL)
      MPI_Comm_free(&group);
  for (MPI_Comm &group : comm.groups)
    if (group != MPI_COMM_NULL)
      MPI_Comm_free(&group);
  if (comm.mesh != MPI_COMM_NULL)
    MPI_Comm_free(&comm.mesh);
  if (comm.world != MPI_COMM_NULL)
    MPI_Comm_free(&comm.world);
  if (comm.halfSum != MPI_OP_NULL)
    MPI_Op_free(&comm.halfSum);
  if (comm.bfloat16Sum != MPI_OP_NULL)
    MPI_Op_free(&comm.bfloat16Sum);
}

/// What both set-ups end with, once comm.dims, the world, the mesh and the
/// mesh position are known: coordinates, room for the groups, f16 and bf16
/// sums, the tag bound.
static weft_rt_status finishSetUp(weft_rt_context *ctx, weft_rt_comm &comm) {
  const std::vector<int64_t> &dims = comm.dims;
  // Row-major: the last axis varies fastest.
  size_t numAxes = dims.size();
  comm.coords.assign(numAxes, 0);
  int64_t rest = comm.meshPosition;
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
  // MPI promises tags up to 32767 only; Open MPI and MPICH allow far more.
  void *tagBound = nullptr;
  int found = 0;
  WEFT_MPI_CHECK(ctx,
                 MPI_Comm_get_attr(comm.world, MPI_TAG_UB, &tagBound, &found));
  if (found && tagBound)
    comm.tagUpperBound = *static_cast<int *>(tagBound);
  return WEFT_RT_OK;
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

  // The mesh is the world: position = world rank.
  WEFT_MPI_CHECK(ctx, MPI_Comm_dup(comm.world, &comm.mesh));
  WEFT_MPI_CHECK(ctx, MPI_Comm_set_errhandler(comm.mesh, MPI_ERRORS_RETURN));
  comm.meshPosition = comm.rank;
  comm.meshSize = comm.size;
  comm.meshWorldRanks.resize(static_cast<size_t>(comm.size));
  for (int r = 0; r < comm.size; ++r)
    comm.meshWorldRanks[static_cast<size_t>(r)] = r;
  return finishSetUp(ctx, comm);
}

weft_rt_status weft::rt::groupComm(weft_rt_context *ctx, weft_rt_comm &comm,
                                   size_t mask, MPI_Comm &out) {
  if (mask == 0 || mask >= comm.groups.size())
    return weft_rt_fail(ctx, WEFT_RT_INTERNAL,
                        "no mesh axis group %zu in a mesh of %zu axes", mask,
                        comm.dims.size());
  MPI_Comm &group = comm.groups[mask];
  if (group == MPI_COMM_NULL) {
    // Every rank of the mesh runs the same program, so every rank of it
    // reaches its first collective over these axes together and the split
    // (a collective over the mesh; other meshes' ranks never call it) pairs
    // up. Same color: same coordinates off the group's
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
    WEFT_MPI_CHECK(ctx, MPI_Ibarrier(comm.mesh, &arrived));
    WEFT_MPI_CHECK(ctx, waitFor(&arrived));
    WEFT_MPI_CHECK(ctx, MPI_Comm_split(comm.mesh, static_cast<int>(color),
                                       static_cast<int>(key), &group));
    WEFT_MPI_CHECK(ctx, MPI_Comm_set_errhandler(group, MPI_ERRORS_RETURN));
  }
  out = group;
  return WEFT_RT_OK;
}

/// Initializes MPI if need be, then runs `setUp` on a fresh communicator;
/// on success *out_comm owns it. On failure frees what setUp made and, if
/// MPI was initialized here, finalizes it again.
template <typename SetUp>
static weft_rt_status createComm(weft_rt_context *ctx, const char *function,
                                 weft_rt_comm **out_comm, SetUp setUp) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "%s: MPI was already finalized in this process (it "
                        "cannot be initialized again)",
                        function);
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
  int worldSize = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  configureWaitPolicy(weft_rt_context_num_threads(ctx), worldSize);

  auto *comm = new (std::nothrow) weft_rt_comm();
  weft_rt_status status = WEFT_RT_OUT_OF_MEMORY;
  if (comm)
    status = setUp(*comm);
  else
    weft_rt_fail(ctx, WEFT_RT_OUT_OF_MEMORY, "out of memory");
  if (status != WEFT_RT_OK) {
    if (comm)
      freeMpiObjects(*comm);
    delete comm;
    // Every check of the set-ups fails on every rank alike, so finalizing
    // (a collective) cannot hang.
    if (initializedHere)
      MPI_Finalize();
    return status;
  }
  ++liveComms;
  *out_comm = comm;
  return WEFT_RT_OK;
}

/// Checks a mesh shape of mesh_rank axes: "" when fine, else why not.
static std::string checkMeshShape(int32_t mesh_rank, const int64_t *mesh_dims,
                                  std::vector<int64_t> &dims) {
  if (mesh_rank < 1 || mesh_rank > kMaxMeshAxes)
    return "a mesh has 1 to " + std::to_string(kMaxMeshAxes) + " axes, not " +
           std::to_string(mesh_rank);
  if (!mesh_dims)
    return "mesh_dims is NULL";
  dims.assign(mesh_dims, mesh_dims + mesh_rank);
  int64_t devices = 1;
  for (int64_t d : dims) {
    if (d < 1 || d > INT_MAX || devices > INT_MAX / d)
      return "mesh " + formatMesh(dims) +
             ": dims must be >= 1 and the mesh at most " +
             std::to_string(INT_MAX) + " devices";
    devices *= d;
  }
  return "";
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
  std::vector<int64_t> dims;
  std::string shapeError = checkMeshShape(mesh_rank, mesh_dims, dims);
  if (!shapeError.empty())
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "weft_rt_comm_create_mpi: %s", shapeError.c_str());
  return createComm(ctx, "weft_rt_comm_create_mpi", out_comm,
                    [&](weft_rt_comm &comm) {
                      comm.dims = std::move(dims);
                      return setUp(ctx, comm);
                    });
}

//===----------------------------------------------------------------------===//
// Pipelines: several meshes in one world
//===----------------------------------------------------------------------===//

namespace {

/// Why a rank cannot join a pipeline on its own account, shared with the
/// others so that each can say which rank failed and how.
enum PipelineVerdict : int64_t {
  kPipelineOk = 0,
  kPipelineBadArguments = 1,
  kPipelineWrongWorldSize = 2,
  kPipelineNotListed = 3,
};

/// What every rank tells the others of its mesh: a fixed header, then (in a
/// second gather) its `numRanks` world ranks.
struct PipelineHeader {
  int64_t verdict = kPipelineOk;
  int64_t worldSize = 0;
  int64_t numAxes = 0;
  int64_t dims[kMaxMeshAxes] = {};
  int64_t numRanks = 0;
};
constexpr int kHeaderWords = sizeof(PipelineHeader) / sizeof(int64_t);

} // namespace

/// "the mesh [2] on world ranks {0,1}".
static std::string describeMesh(const PipelineHeader &header,
                                const int32_t *ranks) {
  std::vector<int64_t> dims(
      header.dims,
      header.dims + std::min<int64_t>(std::max<int64_t>(header.numAxes, 0),
                                      kMaxMeshAxes));
  return "the mesh " + formatMesh(dims) + " on world ranks " +
         formatRankList(std::vector<int32_t>(ranks, ranks + header.numRanks));
}

/// The set-up of weft_rt_comm_create_mpi_pipeline with MPI initialized.
/// `localError` is what this rank found wrong with its arguments before MPI
/// ("" if nothing); the ranks share their verdicts and meshes before anything
/// depends on them, so that every rank fails alike.
static weft_rt_status setUpPipeline(weft_rt_context *ctx, weft_rt_comm &comm,
                                    std::string localError,
                                    const int32_t *mesh_world_ranks,
                                    int32_t world_size) {
  static const char *fn = "weft_rt_comm_create_mpi_pipeline";
  WEFT_MPI_CHECK(ctx, MPI_Comm_size(MPI_COMM_WORLD, &comm.size));
  WEFT_MPI_CHECK(ctx, MPI_Comm_rank(MPI_COMM_WORLD, &comm.rank));
  WEFT_MPI_CHECK(ctx, MPI_Comm_dup(MPI_COMM_WORLD, &comm.world));
  WEFT_MPI_CHECK(ctx, MPI_Comm_set_errhandler(comm.world, MPI_ERRORS_RETURN));

  PipelineHeader mine;
  mine.worldSize = world_size;
  mine.numAxes = static_cast<int64_t>(comm.dims.size());
  for (size_t a = 0; a < comm.dims.size(); ++a)
    mine.dims[a] = comm.dims[a];
  int64_t devices = 1;
  for (int64_t d : comm.dims)
    devices *= d;
  int position = -1;
  if (!localError.empty()) {
    mine.verdict = kPipelineBadArguments;
  } else if (world_size != comm.size) {
    mine.verdict = kPipelineWrongWorldSize;
    localError = "world_size is " + std::to_string(world_size) +
                 ", but MPI_COMM_WORLD has " + std::to_string(comm.size) +
                 " processes: launch one process per world rank of the "
                 "pipeline";
  } else if (devices > comm.size) {
    mine.verdict = kPipelineBadArguments;
    localError = "the mesh " + formatMesh(comm.dims) + " has " +
                 std::to_string(devices) + " devices, more than the world's " +
                 std::to_string(comm.size) + " ranks";
  } else {
    // Ranks in the world and distinct; this process among them.
    std::vector<bool> seen(static_cast<size_t>(comm.size), false);
    for (int64_t p = 0; p < devices && localError.empty(); ++p) {
      int32_t r = mesh_world_ranks[p];
      if (r < 0 || r >= comm.size)
        localError = "mesh_world_ranks[" + std::to_string(p) + "] is " +
                     std::to_string(r) + ", not a world rank (0 to " +
                     std::to_string(comm.size - 1) + ")";
      else if (seen[static_cast<size_t>(r)])
        localError = "world rank " + std::to_string(r) +
                     " is given twice in mesh_world_ranks";
      else
        seen[static_cast<size_t>(r)] = true;
      if (r == comm.rank)
        position = static_cast<int>(p);
    }
    if (!localError.empty()) {
      mine.verdict = kPipelineBadArguments;
    } else if (position < 0) {
      mine.verdict = kPipelineNotListed;
      localError = "this process is world rank " + std::to_string(comm.rank) +
                   ", which is not among the world ranks of its own mesh " +
                   formatMesh(comm.dims) + " " +
                   formatRankList(std::vector<int32_t>(
                       mesh_world_ranks, mesh_world_ranks + devices));
    }
  }
  if (mine.verdict == kPipelineOk)
    mine.numRanks = devices;

  // Every rank's header, then every rank's list of world ranks.
  std::vector<PipelineHeader> headers(static_cast<size_t>(comm.size));
  WEFT_MPI_CHECK(ctx,
                 MPI_Allgather(&mine, kHeaderWords, MPI_INT64_T, headers.data(),
                               kHeaderWords, MPI_INT64_T, comm.world));
  std::vector<int> bad;
  for (int r = 0; r < comm.size; ++r)
    if (headers[static_cast<size_t>(r)].verdict != kPipelineOk)
      bad.push_back(r);
  if (mine.verdict != kPipelineOk)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT, "%s: %s", fn,
                        localError.c_str());
  if (!bad.empty()) {
    const PipelineHeader &first = headers[static_cast<size_t>(bad[0])];
    std::string why =
        first.verdict == kPipelineWrongWorldSize
            ? "passes world_size " + std::to_string(first.worldSize) +
                  ", but MPI_COMM_WORLD has " + std::to_string(comm.size) +
                  " processes"
        : first.verdict == kPipelineNotListed
            ? std::string("is not among the world ranks of its own mesh")
            : std::string("passed invalid arguments");
    std::string others =
        bad.size() > 1 ? " (and " + std::to_string(bad.size() - 1) +
                             " other rank" + (bad.size() > 2 ? "s" : "") + ")"
                       : std::string();
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "%s: world rank %d %s%s; every rank fails (that "
                        "rank's own error says more)",
                        fn, bad[0], why.c_str(), others.c_str());
  }
  std::vector<int> counts(static_cast<size_t>(comm.size));
  std::vector<int> displs(static_cast<size_t>(comm.size));
  int64_t total = 0;
  for (int r = 0; r < comm.size; ++r) {
    counts[static_cast<size_t>(r)] =
        static_cast<int>(headers[static_cast<size_t>(r)].numRanks);
    displs[static_cast<size_t>(r)] = static_cast<int>(total);
    total += headers[static_cast<size_t>(r)].numRanks;
    // Every rank sees the same headers, so every rank stops here alike.
    if (total > INT_MAX)
      return weft_rt_fail(ctx, WEFT_RT_UNSUPPORTED,
                          "%s: the meshes of %d ranks list %lld world ranks "
                          "in all, more than one MPI gather carries "
                          "(2^31-1)",
                          fn, comm.size, static_cast<long long>(total));
  }
  std::vector<int32_t> lists(static_cast<size_t>(std::max<int64_t>(total, 1)));
  WEFT_MPI_CHECK(ctx,
                 MPI_Allgatherv(mesh_world_ranks, static_cast<int>(devices),
                                MPI_INT32_T, lists.data(), counts.data(),
                                displs.data(), MPI_INT32_T, comm.world));

  // Every member of a rank's mesh must describe the very same mesh: else
  // that member belongs to two meshes (and the splits would not pair up).
  // Every rank checks all of them in the same order, so all fail alike.
  auto sameMesh = [&](int a, int b) {
    const PipelineHeader &x = headers[static_cast<size_t>(a)];
    const PipelineHeader &y = headers[static_cast<size_t>(b)];
    return x.numAxes == y.numAxes &&
           std::equal(x.dims, x.dims + x.numAxes, y.dims) &&
           x.numRanks == y.numRanks &&
           std::equal(&lists[displs[a]], &lists[displs[a]] + x.numRanks,
                      &lists[displs[b]]);
  };
  for (int r = 0; r < comm.size; ++r) {
    const PipelineHeader &header = headers[static_cast<size_t>(r)];
    for (int64_t p = 0; p < header.numRanks; ++p) {
      int member = lists[static_cast<size_t>(displs[r] + p)];
      if (sameMesh(r, member))
        continue;
      return weft_rt_fail(
          ctx, WEFT_RT_INVALID_ARGUMENT,
          "%s: world rank %d belongs to two meshes: rank %d puts it in %s, "
          "but rank %d in %s; the ranks of a mesh must all pass that mesh",
          fn, member, r, describeMesh(header, &lists[displs[r]]).c_str(),
          member,
          describeMesh(headers[static_cast<size_t>(member)],
                       &lists[displs[member]])
              .c_str());
    }
  }

  comm.meshWorldRanks.assign(mesh_world_ranks, mesh_world_ranks + devices);
  comm.meshPosition = position;
  comm.meshSize = static_cast<int>(devices);
  // One communicator per mesh: the mesh's lowest world rank names it.
  int color =
      *std::min_element(comm.meshWorldRanks.begin(), comm.meshWorldRanks.end());
  WEFT_MPI_CHECK(ctx, MPI_Comm_split(comm.world, color, position, &comm.mesh));
  WEFT_MPI_CHECK(ctx, MPI_Comm_set_errhandler(comm.mesh, MPI_ERRORS_RETURN));
  int meshRank = -1, meshSize = 0;
  WEFT_MPI_CHECK(ctx, MPI_Comm_rank(comm.mesh, &meshRank));
  WEFT_MPI_CHECK(ctx, MPI_Comm_size(comm.mesh, &meshSize));
  if (meshRank != position || meshSize != comm.meshSize)
    return weft_rt_fail(ctx, WEFT_RT_INTERNAL,
                        "%s: the mesh communicator has rank %d of %d, not "
                        "position %d of %d",
                        fn, meshRank, meshSize, position, comm.meshSize);
  return finishSetUp(ctx, comm);
}

weft_rt_status weft_rt_comm_create_mpi_pipeline(weft_rt_context *ctx,
                                                int32_t mesh_rank,
                                                const int64_t *mesh_dims,
                                                const int32_t *mesh_world_ranks,
                                                int32_t world_size,
                                                weft_rt_comm **out_comm) {
  if (!ctx)
    return WEFT_RT_INVALID_ARGUMENT;
  if (!out_comm)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "weft_rt_comm_create_mpi_pipeline: out_comm is NULL");
  *out_comm = nullptr;
  // Bad arguments still join the collective check, so that the other ranks
  // fail with this one instead of waiting for it.
  std::vector<int64_t> dims;
  std::string localError = checkMeshShape(mesh_rank, mesh_dims, dims);
  if (localError.empty() && !mesh_world_ranks)
    localError = "mesh_world_ranks is NULL";
  if (!localError.empty())
    dims.clear();
  return createComm(ctx, "weft_rt_comm_create_mpi_pipeline", out_comm,
                    [&](weft_rt_comm &comm) {
                      comm.dims = std::move(dims);
                      return setUpPipeline(ctx, comm, std::move(localError),
                                           mesh_world_ranks, world_size);
                    });
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
