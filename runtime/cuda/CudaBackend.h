//===- CudaBackend.h - Installing the CUDA backend in an executable -*- C++
//-*-===//
//
// A --target=cuda executable's main installs the backend before running the
// driver. The mesh variant also installs NCCL communicators; it lives in
// its own file so that executables of one GPU link neither NCCL's
// communicators nor MPI.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_CUDA_CUDABACKEND_H
#define WEFT_RUNTIME_CUDA_CUDABACKEND_H

#include "weft_rt.h"

#include <cuda_runtime_api.h>

#include <memory>

namespace weft::rt::cuda {

class NcclMesh;

/// Lets weft_rt_model_create run "target cuda" programs of one GPU.
void installCudaBackend();
/// installCudaBackend, and mesh programs too: their NCCL communicators are
/// made from the driver's MPI communicator (CudaMeshBackend.cpp).
void installCudaMeshBackend();

/// Creates a mesh's NCCL communicators. Every rank calls it, also one whose
/// own set-up already failed (`localStatus`, whose message stays in ctx):
/// the ranks first agree over MPI, so that one rank's failure makes every
/// rank fail instead of waiting for it. `stream` and `transferStream` are
/// the DeviceState's (NcclMesh::create). The shared_ptr's deleter is made
/// where NcclMesh is, so that the model's code does not refer to it.
using NcclMeshFactory = weft_rt_status (*)(weft_rt_context *ctx,
                                           weft_rt_comm *comm,
                                           cudaStream_t stream,
                                           cudaStream_t transferStream,
                                           weft_rt_status localStatus,
                                           std::shared_ptr<NcclMesh> *out);
void setNcclMeshFactory(NcclMeshFactory factory);

} // namespace weft::rt::cuda

#endif // WEFT_RUNTIME_CUDA_CUDABACKEND_H
