//===- CudaMeshBackend.cpp - The CUDA backend for meshes of GPUs ----------===//
//
// NcclMesh::create behind the factory the model calls, so that only
// executables of a mesh (whose main calls installCudaMeshBackend) link NCCL
// communicators and MPI.
//
//===----------------------------------------------------------------------===//

#include "comm/Comm.h"
#include "cuda/CudaBackend.h"
#include "cuda/NcclComm.h"

#include <vector>

using namespace weft::rt::cuda;

static weft_rt_status createNcclMesh(weft_rt_context *ctx, weft_rt_comm *comm,
                                     cudaStream_t stream,
                                     cudaStream_t transferStream,
                                     weft_rt_status localStatus,
                                     std::shared_ptr<NcclMesh> *out) {
  // Every rank's GPU set-up (device, memory, weights), gathered first.
  std::vector<int32_t> all(static_cast<size_t>(comm->size));
  int32_t mine = localStatus;
  int code = MPI_Allgather(&mine, 1, MPI_INT32_T, all.data(), 1, MPI_INT32_T,
                           comm->world);
  if (localStatus != WEFT_RT_OK)
    return localStatus;
  if (code != MPI_SUCCESS)
    return weft::rt::mpiFail(ctx, code, "MPI_Allgather", __FILE__, __LINE__);
  for (int r = 0; r < comm->size; ++r)
    if (all[static_cast<size_t>(r)] != WEFT_RT_OK)
      return weft_rt_fail(ctx, WEFT_RT_COMM_ERROR,
                          "rank %d of the mesh could not set up its GPU "
                          "(status %d); that rank's own error says why",
                          r, all[static_cast<size_t>(r)]);
  std::unique_ptr<NcclMesh> mesh;
  if (weft_rt_status status =
          NcclMesh::create(ctx, comm, stream, transferStream, &mesh))
    return status;
  *out = std::move(mesh);
  return WEFT_RT_OK;
}

void weft::rt::cuda::installCudaMeshBackend() {
  installCudaBackend();
  setNcclMeshFactory(createNcclMesh);
}
