//===- NcclId.h - Sharing an NCCL unique id over MPI ------------*- C++ -*-===//
//
// NCCL communicators start from one ncclUniqueId that every rank must hold:
// the root creates it and MPI broadcasts its 128 bytes. How the root creates
// it is a parameter, so that the exchange is testable with a made-up id.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_CUDA_NCCLID_H
#define WEFT_RUNTIME_CUDA_NCCLID_H

#include "weft_rt.h"

#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#include <nccl.h>

#include <functional>

namespace weft::rt::cuda {

/// Creates an id on the root; records a message in ctx on failure.
using NcclIdProducer =
    std::function<weft_rt_status(weft_rt_context *ctx, ncclUniqueId *out_id)>;

/// The producer of real programs: ncclGetUniqueId (which needs no GPU: it
/// opens the root's bootstrap socket). Failures are WEFT_RT_COMM_ERROR.
weft_rt_status getNcclUniqueId(weft_rt_context *ctx, ncclUniqueId *out_id);

/// Collective over `comm`: rank `root` calls `produce` (no other rank does)
/// and every rank receives the root's id in *out_id. If the root's producer
/// fails, every rank fails (no rank waits forever): the root with its
/// producer's status and message, the others with WEFT_RT_COMM_ERROR naming
/// the root. `comm` must return MPI errors (MPI_ERRORS_RETURN), which become
/// WEFT_RT_COMM_ERROR.
weft_rt_status exchangeNcclId(weft_rt_context *ctx, MPI_Comm comm, int root,
                              const NcclIdProducer &produce,
                              ncclUniqueId *out_id);

} // namespace weft::rt::cuda

#endif // WEFT_RUNTIME_CUDA_NCCLID_H
