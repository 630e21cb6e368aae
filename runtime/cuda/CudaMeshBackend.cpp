//===- CudaMeshBackend.cpp - The CUDA backend for meshes of GPUs ----------===//
//
// NcclMesh::create behind the factory the model calls, so that only
// executables of a mesh (whose main calls installCudaMeshBackend) link NCCL
// communicators and MPI.
//
//===----------------------------------------------------------------------===//

#include "cuda/CudaBackend.h"
#include "cuda/NcclComm.h"

using namespace weft::rt::cuda;

static weft_rt_status createNcclMesh(weft_rt_context *ctx, weft_rt_comm *comm,
                                     cudaStream_t stream,
                                     std::shared_ptr<NcclMesh> *out) {
  std::unique_ptr<NcclMesh> mesh;
  if (weft_rt_status status = NcclMesh::create(ctx, comm, stream, &mesh))
    return status;
  *out = std::move(mesh);
  return WEFT_RT_OK;
}

void weft::rt::cuda::installCudaMeshBackend() {
  installCudaBackend();
  setNcclMeshFactory(createNcclMesh);
}
