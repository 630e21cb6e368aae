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

int32_t weft_rt_comm_rank(const weft_rt_comm *comm) {
  return comm ? comm->rank : 0;
}

int32_t weft_rt_comm_size(const weft_rt_comm *comm) {
  return comm ? comm->size : 0;
}

void weft_rt_context_set_comm(weft_rt_context *ctx, weft_rt_comm *comm) {
  if (ctx)
    ctx->comm = comm;
}

weft_rt_status weft::rt::checkMeshComm(weft_rt_context *ctx,
                                       const std::vector<int64_t> &mesh) {
  int64_t devices = 1;
  for (int64_t d : mesh)
    devices *= d;
  if (devices <= 1)
    return WEFT_RT_OK;
  if (!ctx->comm)
    return weft_rt_fail(
        ctx, WEFT_RT_INVALID_ARGUMENT,
        "the program is one device of the mesh %s (%lld devices) and needs a "
        "communicator (weft_rt_context_set_comm); the driver attaches one "
        "when launched with weft-run or mpirun -np %lld",
        formatMesh(mesh).c_str(), static_cast<long long>(devices),
        static_cast<long long>(devices));
  if (ctx->comm->dims != mesh)
    return weft_rt_fail(ctx, WEFT_RT_INVALID_ARGUMENT,
                        "the program was compiled for the mesh %s, but the "
                        "context's communicator spans the mesh %s",
                        formatMesh(mesh).c_str(),
                        formatMesh(ctx->comm->dims).c_str());
  return WEFT_RT_OK;
}
