//===- CommAccess.cpp - Reading a mesh communicator without MPI -----------===//
//
// What the model and the driver ask of a communicator that needs no MPI
// call: its rank and size, attaching it to a context and checking it fits
// a program. Apart from Comm.cpp so that executables of one device, which
// never create a communicator, link without MPI.
//
//===----------------------------------------------------------------------===//

#include "comm/Comm.h"
#include "core/Context.h"

using namespace weft::rt;

std::string weft::rt::formatMesh(const std::vector<int64_t> &mesh) {
  std::string out = "[";
  for (size_t i = 0; i < mesh.size(); ++i)
    out += (i ? "," : "") + std::to_string(mesh[i]);
  return out + "]";
}

std::string weft::rt::formatRankList(const std::vector<int32_t> &ranks) {
  std::string out = "{";
  for (size_t i = 0; i < ranks.size(); ++i)
    out += (i ? "," : "") + std::to_string(ranks[i]);
  return out + "}";
}

int32_t weft_rt_comm_rank(const weft_rt_comm *comm) {
  return comm ? comm->rank : 0;
}

int32_t weft_rt_comm_size(const weft_rt_comm *comm) {
  return comm ? comm->size : 0;
}

int32_t weft_rt_comm_mesh_position(const weft_rt_comm *comm) {
  return comm ? comm->meshPosition : 0;
}

int32_t weft_rt_comm_mesh_size(const weft_rt_comm *comm) {
  return comm ? comm->meshSize : 0;
}

void weft_rt_context_set_comm(weft_rt_context *ctx, weft_rt_comm *comm) {
  if (!ctx)
    return;
  ctx->comm = comm;
  // The posted receives are the old communicator's.
  ctx->progressTransfers = nullptr;
}

weft_rt_status
weft::rt::checkMeshComm(weft_rt_context *ctx, const std::vector<int64_t> &mesh,
                        int64_t worldSize,
                        const std::vector<int32_t> &meshWorldRanks) {
  int64_t devices = 1;
  for (int64_t d : mesh)
    devices *= d;
  bool pipeline = !meshWorldRanks.empty();
  if (!pipeline)
    worldSize = devices;
  if (worldSize <= 1)
    return WEFT_RT_OK;
  if (!ctx->comm) {
    if (pipeline)
      return weft_rt_fail(
          ctx, WEFT_RT_INVALID_ARGUMENT,
          "the program is the mesh %s at world ranks %s of a pipeline of "
          "%lld processes and needs a communicator "
          "(weft_rt_comm_create_mpi_pipeline, weft_rt_context_set_comm); the "
          "driver attaches one when every stage is launched with weft-run or "
          "mpirun",
          formatMesh(mesh.empty() ? std::vector<int64_t>{1} : mesh).c_str(),
          formatRankList(meshWorldRanks).c_str(),
          static_cast<long long>(worldSize));
    return weft_rt_fail(
        ctx, WEFT_RT_INVALID_ARGUMENT,
        "the program is one device of the mesh %s (%lld devices) and needs a "
        "communicator (weft_rt_context_set_comm); the driver attaches one "
        "when launched with weft-run or mpirun -np %lld",
        formatMesh(mesh).c_str(), static_cast<long long>(devices),
        static_cast<long long>(devices));
  }
  const weft_rt_comm &comm = *ctx->comm;
  // A stage of one device may say "mesh 1" or nothing at all.
  bool sameShape = comm.dims == mesh || (devices == 1 && comm.meshSize == 1);
  if (!sameShape)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "the program was compiled for the mesh %s, but the "
                        "context's communicator spans the mesh %s",
                        formatMesh(mesh).c_str(),
                        formatMesh(comm.dims).c_str());
  if (pipeline &&
      (comm.size != worldSize || comm.meshWorldRanks != meshWorldRanks))
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "the program is the mesh at world ranks %s of a "
                        "pipeline of %lld processes, but the context's "
                        "communicator has it at world ranks %s of %d",
                        formatRankList(meshWorldRanks).c_str(),
                        static_cast<long long>(worldSize),
                        formatRankList(comm.meshWorldRanks).c_str(), comm.size);
  return WEFT_RT_OK;
}
